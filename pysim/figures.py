"""The numbers the chapter's prose states, computed here so the text cannot drift.

A page writes `{{ name }}` or `{{ name:format }}` (a Python format spec, e.g.
`{{ little.w_s:.1f }}`) and the build hook replaces it with `figure(name)` formatted.
An unknown name stops the build. tests/unit/test_figures.py checks every figure against
a hand computation.

The models are the chapter's own simple ones (chapter brief, pages 2 and 9):
- decode step time t(B) = t0 + beta * B, so throughput B / t(B) approaches 1 / beta;
- Little's law L = lambda * W;
- paged KV blocks of a fixed size, cdiv(tokens, block_size) blocks per sequence.
"""

from __future__ import annotations

from .prng import SplitMix64


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------ throughput model


def step_ms(t0_ms: float, beta_ms: float, batch: int) -> float:
    """Time of one decode step over `batch` requests."""
    return t0_ms + beta_ms * batch


def throughput_tok_s(t0_ms: float, beta_ms: float, batch: int) -> float:
    """Tokens per second of the whole batch: one token per request per step."""
    return batch / (step_ms(t0_ms, beta_ms, batch) / 1000)


def roofline_tok_s(beta_ms: float) -> float:
    """The limit of B / (t0 + beta B) as B grows: 1 / beta."""
    return 1000 / beta_ms


def batch_for_fraction(t0_ms: float, beta_ms: float, fraction: float) -> float:
    """Smallest B whose throughput reaches `fraction` of the roofline.

    B / (t0 + beta B) = f / beta  =>  B = f t0 / (beta (1 - f)).
    """
    assert 0 < fraction < 1
    return fraction * t0_ms / (beta_ms * (1 - fraction))


def littles_law(t0_ms=20.0, beta_ms=0.2, b_max=64, rate_per_s=20.0, output_tokens=500) -> dict:
    """The stability check of page 2: what the device delivers vs what users ask for."""
    delivered = throughput_tok_s(t0_ms, beta_ms, b_max)
    per_stream = 1000 / step_ms(t0_ms, beta_ms, b_max)
    w_s = output_tokens / per_stream  # time one request stays resident
    return {
        "t0_ms": t0_ms, "beta_ms": beta_ms, "b_max": b_max, "rate_per_s": rate_per_s,
        "output_tokens": output_tokens,
        "step_ms": step_ms(t0_ms, beta_ms, b_max),
        "delivered_tok_s": delivered,
        "per_stream_tok_s": per_stream,
        "w_s": w_s,
        "l_resident": rate_per_s * w_s,
        "offered_tok_s": rate_per_s * output_tokens,
        "oversubscription": rate_per_s * output_tokens / delivered,
    }


# ------------------------------------------------------------------ static vs continuous


# The heavy-tailed output mix of the chapter's toy driver: most answers are short, two
# in five are long.
OUTPUT_MIX = (8, 16, 32, 256, 256)


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
    rng = SplitMix64(seed)
    lengths = [OUTPUT_MIX[rng.randint(0, len(OUTPUT_MIX) - 1)] for _ in range(requests)]
    tokens = sum(lengths)

    static_steps = 0
    for start in range(0, requests, batch):
        static_steps += max(lengths[start:start + batch])
    static_ms = static_steps * step_ms(t0_ms, beta_ms, batch)

    # Continuous: keep `batch` slots busy; a slot frees when its answer is done.
    remaining = list(lengths)
    waiting = list(range(requests))[::-1]  # pop() takes the next in arrival order
    running: list[int] = []
    continuous_ms = 0.0
    continuous_steps = 0
    while waiting or running:
        while waiting and len(running) < batch:
            running.append(waiting.pop())
        continuous_ms += step_ms(t0_ms, beta_ms, len(running))
        continuous_steps += 1
        for r in running:
            remaining[r] -= 1
        running = [r for r in running if remaining[r] > 0]
    assert all(x == 0 for x in remaining)

    return {
        "requests": requests, "batch": batch, "tokens": tokens,
        "mean_output": tokens / requests,
        "static_steps": static_steps, "static_s": static_ms / 1000,
        "static_tok_s": tokens / (static_ms / 1000),
        "continuous_steps": continuous_steps, "continuous_s": continuous_ms / 1000,
        "continuous_tok_s": tokens / (continuous_ms / 1000),
        "multiplier": static_ms / continuous_ms,
        "static_utilisation": tokens / (static_steps * batch),
    }


# ------------------------------------------------------------------ exercises


def exercise2(t0_ms=20.0, beta_ms=0.2) -> dict:
    out = {f"tok_s_b{b}": throughput_tok_s(t0_ms, beta_ms, b) for b in (8, 32, 64)}
    out["roofline_tok_s"] = roofline_tok_s(beta_ms)
    out["fraction_b64"] = out["tok_s_b64"] / out["roofline_tok_s"]
    out["b_for_half"] = batch_for_fraction(t0_ms, beta_ms, 0.5)
    return out


def exercise3(block_size=16, pool_blocks=400) -> dict:
    long_prompt_blocks = cdiv(600, block_size)
    short_prompt_blocks = cdiv(40, block_size)
    per_request_100 = cdiv(100, block_size)
    return {
        "long_prompt_blocks": long_prompt_blocks,
        "long_prompts_fit": pool_blocks // long_prompt_blocks,
        "short_prompt_blocks": short_prompt_blocks,
        # Tokens the short prompt's last block still has room for; the next one needs a block.
        "short_free_slots": short_prompt_blocks * block_size - 40,
        "short_next_block_at_token": short_prompt_blocks * block_size - 40 + 1,
        "len100_blocks_each": per_request_100,
        "len100_blocks_total": 64 * per_request_100,
        "len100_fit": pool_blocks // per_request_100,
    }


# ------------------------------------------------------------------ lookup


def _all() -> dict:
    return {
        "little": littles_law(),
        "multiplier": static_vs_continuous(),
        "ex2": exercise2(),
        "ex3": exercise3(),
    }


_CACHE: dict | None = None


def figure(name: str):
    """The value of a dotted figure name such as 'little.w_s'."""
    global _CACHE
    if _CACHE is None:
        _CACHE = _all()
    group, _, key = name.partition(".")
    if group not in _CACHE or key not in _CACHE[group]:
        raise KeyError(f"unknown figure {name!r}")
    return _CACHE[group][key]


def names() -> list[str]:
    figure("little.w_s")
    return [f"{g}.{k}" for g, values in _CACHE.items() for k in values]
