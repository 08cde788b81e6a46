"""The chapter's headline multiplier: request-level against iteration-level batching.

Both serve the same answers, drawn from the toy driver's heavy-tailed mix (OUTPUT_MIX:
most answers are short, two in five are long), on page 2's t0 + beta * B step model.
"""

from __future__ import annotations

from pysim.figures.throughput import step_ms
from pysim.prng import SplitMix64
from pysim.toy.scheduler import OUTPUTS as OUTPUT_MIX


def output_lengths(requests: int, seed: int) -> list[int]:
    """The answer lengths of the multiplier's workload, drawn from OUTPUT_MIX."""
    rng = SplitMix64(seed)
    return [OUTPUT_MIX[rng.randint(0, len(OUTPUT_MIX) - 1)] for _ in range(requests)]


def static_batches(lengths: list[int], batch: int) -> list[list[int]]:
    """Request-level batching's batches: `batch` requests at a time, in arrival order."""
    return [lengths[start:start + batch] for start in range(0, len(lengths), batch)]


def static_trace(lengths: list[int], batch: int) -> list[tuple[int, int]]:
    """(rows, requests producing a token) in each step of request-level batching.

    A batch runs until its longest answer is done, then the next one starts. A finished
    member stays in the batch (it is padding: it still costs its share of the step) but
    produces nothing. The last batch may hold fewer than `batch` rows.
    """
    steps = []
    for members in static_batches(lengths, batch):
        for step in range(max(members)):
            steps.append((len(members), sum(1 for n in members if n > step)))
    return steps


def continuous_trace(lengths: list[int], batch: int) -> list[int]:
    """Requests that produce a token in each step of iteration-level batching.

    `batch` slots; a slot whose answer is done is refilled from the queue in the very
    next step, so each step runs min(batch, unfinished requests).
    """
    remaining = list(lengths)
    waiting = list(range(len(lengths)))[::-1]  # pop() takes the next in arrival order
    running: list[int] = []
    busy = []
    while waiting or running:
        while waiting and len(running) < batch:
            running.append(waiting.pop())
        busy.append(len(running))
        for r in running:
            remaining[r] -= 1
        running = [r for r in running if remaining[r] > 0]
    assert all(x == 0 for x in remaining)
    return busy


def static_vs_continuous(requests=1000, batch=64, t0_ms=20.0, beta_ms=0.2, seed=7) -> dict:
    """How much throughput iteration-level scheduling buys over request-level batching.

    Both serve the same `requests` answers (lengths drawn from OUTPUT_MIX), all waiting
    at the start, with decode steps costing t0 + beta * B. Static batching runs batches of
    `batch` requests in arrival order; a batch lasts as long as its longest answer, and
    its finished members still occupy the step (padding), so every step costs t(batch).
    Continuous batching refills a finished request's slot in the next step, so each step
    runs min(batch, still unfinished) requests. Prefill is left out of both: the gap comes
    from decode alone.
    """
    lengths = output_lengths(requests, seed)
    tokens = sum(lengths)

    static = static_trace(lengths, batch)
    static_steps = len(static)
    # Every step costs t(rows): the rows a batch holds, finished or not.
    static_ms = sum(step_ms(t0_ms, beta_ms, rows) for rows, _ in static)
    row_steps = sum(rows for rows, _ in static)

    continuous = continuous_trace(lengths, batch)
    continuous_steps = len(continuous)
    continuous_ms = 0.0
    for b in continuous:
        continuous_ms += step_ms(t0_ms, beta_ms, b)
    assert sum(busy for _, busy in static) == sum(continuous) == tokens

    utilisation = tokens / row_steps  # of the row-steps the batches really hold
    # A continuous server that kept every slot busy to the very end would need only
    # tokens / batch full steps at t(batch): the ceiling of what it can gain.
    ideal_steps = tokens / batch
    return {
        "requests": requests, "batch": batch, "tokens": tokens,
        "t0_ms": t0_ms, "beta_ms": beta_ms, "seed": seed,
        "mix": ", ".join(str(n) for n in OUTPUT_MIX),
        "max_output": max(OUTPUT_MIX),
        "long_share": OUTPUT_MIX.count(max(OUTPUT_MIX)) / len(OUTPUT_MIX),
        "mean_output": tokens / requests,
        "static_steps": static_steps, "static_s": static_ms / 1000,
        "static_tok_s": tokens / (static_ms / 1000),
        "static_mean_batch": tokens / static_steps,
        "continuous_steps": continuous_steps, "continuous_s": continuous_ms / 1000,
        "continuous_tok_s": tokens / (continuous_ms / 1000),
        "continuous_mean_batch": tokens / continuous_steps,
        "multiplier": static_ms / continuous_ms,
        "static_utilisation": utilisation,
        "last_batch": len(static_batches(lengths, batch)[-1]),
        "ideal_steps": ideal_steps,
        "tail_bound": static_ms / (ideal_steps * step_ms(t0_ms, beta_ms, batch)),
    }
