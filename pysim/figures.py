"""The numbers the chapter's prose states, computed here so the text cannot drift.

A page writes `{{ group.key }}` or `{{ group.key:format }}` (a Python format spec, e.g.
`{{ little.w_s:.1f }}`) and the build hook replaces it with `figure(name)` formatted.
An unknown name stops the build. tests/unit/test_figures.py checks every figure against
a hand computation.

A simulation's own numbers live with it: `{{ naive_batching.static_steps }}` is
`pysim.naive_batching.figures()["static_steps"]`, found through the registry (a
Simulation's `figures`). This module holds the rest, the chapter's simple formula models:
- decode step time t(B) = t0 + beta * B, so throughput B / t(B) approaches 1 / beta;
- Little's law L = lambda * W;
- paged KV blocks of a fixed size, cdiv(tokens, block_size) blocks per sequence;
and the worked examples built from them (the exercises, page 7's priority arithmetic,
page 8's pool sizes).
"""

from __future__ import annotations

import math

from .chunked_prefill import StepTime
from .chunked_prefill import ChunkedPrefillConfig as _StepTimeDefaults
from .prng import SplitMix64
from . import registry
from .toy_scheduler import OUTPUTS as OUTPUT_MIX
from .toy_scheduler import PROMPTS as PROMPT_MIX
from .utils import cdiv


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


def littles_law(t0_ms=20.0, beta_ms=0.2, b_max=64, rate_per_s=20.0, max_tokens=500) -> dict:
    """The stability check of page 2: what the device delivers vs what users ask for."""
    delivered = throughput_tok_s(t0_ms, beta_ms, b_max)
    per_stream = 1000 / step_ms(t0_ms, beta_ms, b_max)
    w_s = max_tokens / per_stream  # time one request stays resident
    return {
        "t0_ms": t0_ms, "beta_ms": beta_ms, "b_max": b_max, "rate_per_s": rate_per_s,
        "max_tokens": max_tokens,
        "step_ms": step_ms(t0_ms, beta_ms, b_max),
        "delivered_tok_s": delivered,
        "per_stream_tok_s": per_stream,
        "w_s": w_s,
        "l_resident": rate_per_s * w_s,
        # Little's L against the batch the KV cache holds: how many times too many.
        "resident_ratio": rate_per_s * w_s / b_max,
        "offered_tok_s": rate_per_s * max_tokens,
        "oversubscription": rate_per_s * max_tokens / delivered,
        # Requests per second the device can finish, and how fast the queue grows beyond it.
        "served_per_s": delivered / max_tokens,
        "queue_growth_per_s": rate_per_s - delivered / max_tokens,
        "queue_growth_per_min": 60 * (rate_per_s - delivered / max_tokens),
        # Identical replicas needed to serve the offered load (each delivering `delivered`).
        # (rounded to 9 places first, so 5.000000001 from float error still means 5)
        "replicas": math.ceil(round(rate_per_s * max_tokens / delivered, 9)),
        # Even with unlimited KV memory one device tops out at 1 / beta.
        "offered_over_roofline": rate_per_s * max_tokens / roofline_tok_s(beta_ms),
    }


# ------------------------------------------------------------------ page 1: the waste


def context_for_beta(beta_ms: float, gpu="H100", model="llama-3.1-8b") -> float:
    """The context whose KV read takes `beta_ms` on this GPU: beta = tokens x kv bytes / bandwidth.

    beta is the per-request term of t(B) = t0 + beta B, one request's KV cache read per
    step, so a page that uses another beta is speaking of another context length.
    """
    from .catalog import GPUS, MODELS

    per_token_s = MODELS[model].kv_bytes_per_token(kv_fp8=False) / GPUS[gpu].bandwidth_bytes_per_s
    return beta_ms / 1000 / per_token_s


def decode_step(gpu="H100", model="llama-3.1-8b", context_tokens=2_048, wide=32,
                short_context=128) -> dict:
    """Why a decode step is nearly free to widen, from the batch-size page's roofline.

    One step over B requests reads the weights once plus each request's KV cache, and does
    2 FLOPs per parameter per request. Arithmetic intensity = FLOPs / bytes read; the GPU
    stays memory-bound until it reaches peak_flops / bandwidth (the ridge point).
    """
    from .batch_size import BatchSizeConfig, roofline
    from .catalog import GB, GPUS, MODELS

    g, m = GPUS[gpu], MODELS[model]
    roof = roofline(g, m, BatchSizeConfig(gpu=gpu, model=model, context_tokens=context_tokens))

    def intensity(b: int) -> float:
        return roof.flops_per_token * b / roof.bytes_per_step(b)

    return {
        "gpu": g.name, "model": m.name, "context_tokens": context_tokens, "wide": wide,
        "weights_gb": roof.weight_bytes / GB,
        "kv_mb_per_request": roof.request_kv_bytes / 1e6,
        "ridge": g.peak_flops / g.bandwidth_bytes_per_s,
        "intensity_b1": intensity(1),
        "intensity_wide": intensity(wide),
        # As B grows, FLOPs and KV bytes grow together: intensity tends to 2P / kv bytes.
        "intensity_limit": roof.flops_per_token / roof.request_kv_bytes,
        "crossover": roof.crossover() or 0,  # 0: compute never binds at this context
        # With a short context the KV term is small and compute does bind, at this B.
        "short_context": short_context,
        "short_crossover": roofline(g, m, BatchSizeConfig(gpu=gpu, model=model,
                                                          context_tokens=short_context)).crossover(),
        "step_ms_b1": roof.step_seconds(1) * 1000,
        "step_ms_wide": roof.step_seconds(wide) * 1000,
        "slowdown_wide": roof.step_seconds(wide) / roof.step_seconds(1),
        # The same roofline as the linear model of page 2: t(B) = t0 + beta * B.
        "t0_ms": roof.weight_bytes / roof.bandwidth * 1000,
        "beta_ms": roof.request_kv_bytes / roof.bandwidth * 1000,
        # The contexts that page 2's illustrative beta and page 5's stand for.
        "beta_context_page2": context_for_beta(littles_law()["beta_ms"], gpu, model),
        "beta_context_chunk": context_for_beta(STEP_DECODE_MS, gpu, model),
    }


def padding(prompts=(50, 60, 2000)) -> dict:
    """Leak 3: a padded prefill computes every prompt at the longest prompt's length."""
    padded = len(prompts) * max(prompts)
    real = sum(prompts)
    return {
        "prompts": ", ".join(f"{n:,}" for n in prompts), "longest": max(prompts),
        "real_tokens": real, "padded_tokens": padded, "pad_tokens": padded - real,
        "useful": real / padded,
    }


def head_of_line(batch=64, t0_ms=20.0, beta_ms=0.2, window_ms=20.0) -> dict:
    """Leak 2: a request that arrives just after a batch formed waits for all of it.

    With the chapter's output mix, a batch of 64 almost surely holds a longest answer
    (max(OUTPUT_MIX) tokens), and it runs that many steps at t(batch) each.
    """
    drain_ms = max(OUTPUT_MIX) * step_ms(t0_ms, beta_ms, batch)
    return {
        "batch": batch, "longest": max(OUTPUT_MIX), "window_ms": window_ms,
        "step_ms": step_ms(t0_ms, beta_ms, batch),
        "drain_s": drain_ms / 1000,
        "window_share": window_ms / drain_ms,
        "drain_windows": drain_ms / window_ms,
        # Tail idling: expected useful fraction of a static batch is mean / max length.
        "mix_mean": sum(OUTPUT_MIX) / len(OUTPUT_MIX),
        "mix_utilisation": sum(OUTPUT_MIX) / len(OUTPUT_MIX) / max(OUTPUT_MIX),
    }


# ------------------------------------------------------------------ static vs continuous


# OUTPUT_MIX, imported above, is the toy driver's heavy-tailed answer mix: most answers
# are short, two in five are long.


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


# ------------------------------------------------------------------ exercises


def exercise2(t0_ms=20.0, beta_ms=0.2) -> dict:
    out = {f"tok_s_b{b}": throughput_tok_s(t0_ms, beta_ms, b) for b in (8, 32, 64)}
    out["roofline_tok_s"] = roofline_tok_s(beta_ms)
    out["fraction_b64"] = out["tok_s_b64"] / out["roofline_tok_s"]
    out["b_for_half"] = batch_for_fraction(t0_ms, beta_ms, 0.5)
    for b in (8, 32, 64):
        out[f"step_ms_b{b}"] = step_ms(t0_ms, beta_ms, b)
        out[f"fraction_b{b}"] = out[f"tok_s_b{b}"] / out["roofline_tok_s"]
    # At B = 64 most of each step is the fixed cost of reading the weights.
    out["fixed_share_b64"] = t0_ms / step_ms(t0_ms, beta_ms, 64)
    out["tok_s_b1"] = throughput_tok_s(t0_ms, beta_ms, 1)
    out["gain_b8_to_b64"] = out["tok_s_b64"] / out["tok_s_b8"]
    out["step_ms_half"] = step_ms(t0_ms, beta_ms, out["b_for_half"])
    return out


def exercise3(block_size=16, num_gpu_blocks=400, max_num_seqs=64) -> dict:
    long_prompt_blocks = cdiv(600, block_size)
    short_prompt_blocks = cdiv(40, block_size)
    per_request_100 = cdiv(100, block_size)
    return {
        "long_prompt_blocks": long_prompt_blocks,
        "long_prompts_fit": num_gpu_blocks // long_prompt_blocks,
        "short_prompt_blocks": short_prompt_blocks,
        # Tokens the short prompt's last block still has room for; the next one needs a block.
        "short_free_slots": short_prompt_blocks * block_size - 40,
        "short_next_block_at_token": short_prompt_blocks * block_size - 40 + 1,
        "short_next_block_number": short_prompt_blocks + 1,
        "len100_blocks_each": per_request_100,
        "len100_blocks_total": 64 * per_request_100,
        "len100_fit": num_gpu_blocks // per_request_100,
        # Admitting ten 600-token prompts leaves this many blocks for their answers,
        # and each prompt's last block has this many free slots.
        "long_spare_blocks": num_gpu_blocks - (num_gpu_blocks // long_prompt_blocks) * long_prompt_blocks,
        "long_free_slots": long_prompt_blocks * block_size - 600,
        # Growing together, each answer gets its last block's free slots and an equal
        # share of the spare blocks before the pool is empty.
        "long_spare_each": (num_gpu_blocks - (num_gpu_blocks // long_prompt_blocks) * long_prompt_blocks)
                           // (num_gpu_blocks // long_prompt_blocks),
        "long_tokens_before_preempt": long_prompt_blocks * block_size - 600
                                      + block_size * ((num_gpu_blocks - (num_gpu_blocks // long_prompt_blocks)
                                                       * long_prompt_blocks) // (num_gpu_blocks // long_prompt_blocks)),
        # 64 x 100 tokens is exactly the pool's token capacity, yet it does not fit: each
        # request's last block is partly empty.
        "max_num_seqs": max_num_seqs,
        "pool_tokens": num_gpu_blocks * block_size,
        "len100_tokens_total": 64 * 100,
        "len100_slack_each": per_request_100 * block_size - 100,
        "len100_slack_total": 64 * (per_request_100 * block_size - 100),
        "len100_running": min(max_num_seqs, num_gpu_blocks // per_request_100),
        "binding": "KV-cache memory" if num_gpu_blocks // per_request_100 < max_num_seqs else "max_num_seqs",
        "len100_next_block_at_token": per_request_100 * block_size - 100 + 1,
    }


def exercise4() -> dict:
    """Exercise 4, traced on the page-4 toy itself (pysim/toy_self_victim.py)."""
    from .toy_self_victim import figures

    return figures()


# ------------------------------------------------------------------ page 3: paged KV cache

# PROMPT_MIX, imported above, is the toy driver's prompt lengths (page 4); answers come
# from OUTPUT_MIX.


def paged_vs_contiguous(block_size=16, pool_tokens=65_536) -> dict:
    """Memory a request really uses, under worst-case contiguous reservation vs paging.

    The requests are every (prompt, answer) pair of PROMPT_MIX x OUTPUT_MIX once, each
    holding prompt + answer tokens of KV when it finishes. A contiguous server reserves
    room for the longest possible request for every one of them; a paged server holds
    whole blocks, so it wastes at most block_size - 1 slots per request.
    """
    lengths = [p + o for p in PROMPT_MIX for o in OUTPUT_MIX]
    n = len(lengths)
    longest = max(PROMPT_MIX) + max(OUTPUT_MIX)
    used = sum(lengths)
    paged = sum(cdiv(x, block_size) * block_size for x in lengths)
    return {
        "block_size": block_size, "requests": n, "longest": longest,
        "mean_tokens": used / n,
        "contiguous_used_pct": 100 * used / (longest * n),
        "paged_used_pct": 100 * used / paged,
        "paged_waste_max": block_size - 1,
        "pool_tokens": pool_tokens,
        "contiguous_fit": pool_tokens // longest,
        # Requests of the mix's average paged size that fit in the same pool.
        "paged_fit": pool_tokens * n // paged,
    }


def prefix_sharing(system_tokens=1000, block_size=16, chats=50, model="llama-3.1-8b") -> dict:
    """What prefix caching saves when `chats` conversations start with one system prompt.

    Only full blocks are hashed, and a block's hash covers everything before it, so the
    shared part is the system prompt's whole blocks; the block holding its last few
    tokens also holds each user's own words and is never shared.
    """
    from .catalog import MODELS

    shared_blocks = system_tokens // block_size
    block_bytes = block_size * MODELS[model].kv_bytes_per_token(kv_fp8=False)
    saved_blocks = (chats - 1) * shared_blocks
    return {
        "system_tokens": system_tokens, "block_size": block_size, "chats": chats,
        "shared_blocks": shared_blocks,
        "shared_tokens": shared_blocks * block_size,
        "tail_tokens": system_tokens - shared_blocks * block_size,
        "block_mib": block_bytes / 2**20,
        "saved_blocks": saved_blocks,
        "saved_gib": saved_blocks * block_bytes / 2**30,
        "skipped_tokens": saved_blocks * block_size,
    }


def hit_cap(block_size=16, num_prompt_tokens=48) -> dict:
    """vLLM's cap on a prefix-cache hit: at most prompt - 1 tokens, whole blocks only."""
    hit = (num_prompt_tokens - 1) // block_size * block_size
    return {
        "block_size": block_size, "num_prompt_tokens": num_prompt_tokens,
        "prompt_blocks": cdiv(num_prompt_tokens, block_size),
        "hit_tokens": hit, "hit_blocks": hit // block_size,
        "recomputed": num_prompt_tokens - hit,
    }


# The step-time model of the chunked-prefill simulation (page 5), at its defaults.
STEP_BASE_MS = _StepTimeDefaults.base_ms
STEP_DECODE_MS = _StepTimeDefaults.per_decode_ms
STEP_PREFILL_MS = _StepTimeDefaults.per_prefill_token_ms


def admission_run(requests: int, prompt: int, answer: int, num_gpu_blocks: int,
                  max_num_seqs: int, block_size=16, budget=2048) -> dict:
    """One run of the chapter's engine (vLLM V1 rules, FCFS, recompute preemption):
    `requests` identical requests all waiting at time 0. Times use page 5's step-time
    model; KV usage is vLLM's gauge (1 - free / usable blocks, the null block left out,
    as vLLM 0.33's `BlockPool.get_usage` does), averaged over time."""
    from .engine import Engine, EngineConfig, run_timed

    engine = Engine(EngineConfig(max_num_batched_tokens=budget, max_num_seqs=max_num_seqs,
                                 num_gpu_blocks=num_gpu_blocks, block_size=block_size))
    for i in range(requests):
        engine.add_request(i, prompt, answer)
    step_us = StepTime(STEP_BASE_MS, STEP_DECODE_MS, STEP_PREFILL_MS)

    steps = computed = sampled = 0
    end_us = usage_us = 0
    for result, start, duration in run_timed(engine, step_us):
        steps += 1
        computed += result.num_tokens
        sampled += len(result.sampled)
        usage_us += (1 - result.num_free_blocks / (num_gpu_blocks - 1)) * duration
        end_us = start + duration
    done = engine.requests.values()
    recomputed = sum(r.recomputed_tokens for r in done)
    return {
        "max_num_seqs": max_num_seqs, "steps": steps,
        "preemptions": engine.num_preemptions,
        "most_preempted": max(r.num_preemptions for r in done),
        "never_preempted": sum(r.num_preemptions == 0 for r in done),
        "computed_tokens": computed, "recomputed_tokens": recomputed,
        "recomputed_pct": 100 * recomputed / computed,
        "sampled_tokens": sampled,
        "seconds": end_us / 1e6,
        "tok_s": sampled / (end_us / 1e6),
        "kv_usage_pct": 100 * usage_us / end_us,
    }


def thrashing(block_size=16) -> dict:
    """Admitting more requests than the pool can finish: two workloads, each run with the
    largest max_num_seqs that never preempts ("calm") and with 64 ("busy").

    short: 64 chats, 64-token prompts, 512-token answers, a 256-block pool;
    long:  24 requests, 3000-token prompts, 1000-token answers, a 1024-block pool.
    A request holds prompt + answer - 1 tokens of KV at its longest.
    """
    workloads = {"short": (64, 64, 512, 256), "long": (24, 3000, 1000, 1024)}
    out = {"block_size": block_size, "step_base_ms": STEP_BASE_MS,
           "step_decode_ms": STEP_DECODE_MS, "step_prefill_ms": STEP_PREFILL_MS}
    for name, (n, prompt, answer, pool) in workloads.items():
        longest_blocks = cdiv(prompt + answer - 1, block_size)
        calm = (pool - 1) // longest_blocks  # the pool's blocks but vLLM's null block
        out.update({f"{name}_requests": n, f"{name}_prompt": prompt, f"{name}_answer": answer,
                    f"{name}_pool": pool, f"{name}_longest_blocks": longest_blocks})
        for label, seqs in (("calm", calm), ("busy", 64)):
            run = admission_run(n, prompt, answer, pool, seqs, block_size)
            out.update({f"{name}_{label}_{k}": v for k, v in run.items()})
        out[f"{name}_speedup"] = out[f"{name}_busy_tok_s"] / out[f"{name}_calm_tok_s"]
    return out


# ------------------------------------------------------------------ page 7: priority


def priority_examples(batch_priority=10, aging_every_s=5, weights=(3, 1), budget=2048,
                      batch_answer=2000,
                      victims=(("A", 1800), ("B", 900), ("C", 120))) -> dict:
    """The small worked examples of page 7.

    Aging: a batch request's priority value (lower runs first, as in vLLM) drops by one
    for every `aging_every_s` seconds it waits, so it reaches the interactive tier's 0.
    Weighted fair queueing: each step's token budget is split in proportion to tenant
    weights. Victims: running requests in admission order with the tokens whose KV they
    hold; recompute preemption throws those tokens away.
    """
    total_weight = sum(weights)
    newest, oldest = victims[-1], victims[0]
    # Without preemption, an interactive request that finds every seat taken by batch
    # jobs waits for one of them to finish: up to a whole long answer at page 2's
    # per-stream speed (a full batch of 64 on the t0 + beta B model).
    stream = littles_law()["per_stream_tok_s"]
    return {
        "batch_answer": batch_answer, "stream_tok_s": stream,
        "worst_wait_s": batch_answer / stream,
        "batch_priority": batch_priority, "aging_every_s": aging_every_s,
        "catch_up_s": batch_priority * aging_every_s,
        "weight_a": weights[0], "weight_b": weights[1], "budget": budget,
        "share_a": budget * weights[0] // total_weight,
        "share_b": budget * weights[1] // total_weight,
        "oldest_name": oldest[0], "oldest_tokens": oldest[1],
        "middle_name": victims[1][0], "middle_tokens": victims[1][1],
        "newest_name": newest[0], "newest_tokens": newest[1],
        "waste_ratio": oldest[1] / newest[1],
    }


# ------------------------------------------------------------------ page 8: real systems


def vllm_pool(gpu="H100", model="llama-3.1-8b", block_size=16, context_tokens=4096) -> dict:
    """How --gpu-memory-utilization becomes the toy's number of blocks, with page 6's
    rough model: memory x 0.9 - weights - 4 GB for activations and the runtime."""
    from .batch_size import RESERVE_BYTES, usable_bytes
    from .catalog import GPUS, MODELS

    g, m = GPUS[gpu], MODELS[model]
    kv_per_token = m.kv_bytes_per_token(kv_fp8=False)
    pool_bytes = usable_bytes(g) - m.weight_bytes(weights_fp8=False) - RESERVE_BYTES
    blocks = pool_bytes // (block_size * kv_per_token)
    tokens = blocks * block_size
    return {
        "memory_gb": g.memory_bytes / 1e9, "usable_gb": usable_bytes(g) / 1e9,
        "weights_gb": m.weight_bytes(weights_fp8=False) / 1e9,
        "reserve_gb": RESERVE_BYTES / 1e9, "pool_gb": pool_bytes / 1e9,
        "kv_kib_per_token": kv_per_token / 1024,
        "block_mib": block_size * kv_per_token / 2**20,
        "blocks": blocks, "tokens": tokens,
        "context_tokens": context_tokens,
        "context_mib": context_tokens * kv_per_token / 2**20,
        "full_contexts": tokens // context_tokens,
    }


def cpu_overlap(gpu_ms=4.0, cpu_ms=2.0) -> dict:
    """An illustrative step of a small model: when the CPU's scheduling and input
    preparation run between GPU steps, the GPU idles; overlapped, the step is the longer
    of the two."""
    serial = gpu_ms + cpu_ms
    overlapped = max(gpu_ms, cpu_ms)
    return {
        "gpu_ms": gpu_ms, "cpu_ms": cpu_ms, "serial_ms": serial,
        "gpu_busy_pct": 100 * gpu_ms / serial,
        "overlapped_ms": overlapped, "speedup": serial / overlapped,
    }


def llamacpp_slots(ctx_tokens=32_768, slots=8) -> dict:
    """llama-server splits its context (-c) evenly between its parallel slots (-np)."""
    return {"ctx_tokens": ctx_tokens, "slots": slots, "per_slot": ctx_tokens // slots}


def load_test(rate_per_s=20, prompts=1000, input_len=1024, output_len=256) -> dict:
    """The vllm bench serve example of page 8 and its stability check (page 2)."""
    return {
        "rate_per_s": rate_per_s, "prompts": prompts, "input_len": input_len,
        "output_len": output_len,
        "offered_tok_s": rate_per_s * output_len,
        "offered_prompt_tok_s": rate_per_s * input_len,
        "arrivals_s": prompts / rate_per_s,
    }


# ------------------------------------------------------------------ lookup


def _formula_groups() -> dict:
    """The chapter's own figure groups (the simulations' come from the registry)."""
    return {
        "little": littles_law(),
        "multiplier": static_vs_continuous(),
        "ex2": exercise2(),
        "ex3": exercise3(),
        "ex4": exercise4(),
        "decode": decode_step(),
        "padding": padding(),
        "hol": head_of_line(),
        "paged": paged_vs_contiguous(),
        "prefix": prefix_sharing(),
        "hitcap": hit_cap(),
        "thrash": thrashing(),
        "tiers": priority_examples(),
        "vpool": vllm_pool(),
        "overlap": cpu_overlap(),
        "llamacpp": llamacpp_slots(),
        "bench": load_test(),
    }


_CACHE: dict | None = None  # group -> {key: value}, filled as groups are asked for


def _group(group: str) -> dict:
    """One figure group, computed on first use. The formula groups are cheap and come
    together; a simulation's group (its Simulation.figures) is computed only when a page
    names one of its figures: the serving lab's runs two capacity sweeps, seconds of work
    that a build of any other page, or a test, should not pay for."""
    global _CACHE
    if _CACHE is None:
        _CACHE = _formula_groups()
    if group not in _CACHE and group in registry.MODULES:
        sim = registry.simulation(group)
        if sim.figures is not None:
            _CACHE[group] = sim.figures()
    if group not in _CACHE:
        raise KeyError(f"unknown figure group {group!r}")
    return _CACHE[group]


def figure(name: str):
    """The value of a dotted figure name such as 'little.w_s'."""
    group, _, key = name.partition(".")
    values = _group(group)
    if key not in values:
        raise KeyError(f"unknown figure {name!r}")
    return values[key]


def names(skip: tuple = ()) -> list[str]:
    """Every figure name but those of the groups in `skip` (computing every other group:
    skip "lab" to spare its sweeps)."""
    groups = list(_formula_groups()) + [n for n, sim in registry.simulations().items() if sim.figures]
    return [f"{g}.{k}" for g in groups if g not in skip for k in _group(g)]
