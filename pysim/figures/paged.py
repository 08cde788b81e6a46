"""Page 3's paged KV cache: memory used under paging, prefix sharing, and admission runs
of the chapter's engine that show thrashing. Requests come from the toy driver's mixes
(PROMPT_MIX x OUTPUT_MIX, page 4)."""

from __future__ import annotations

from pysim.sims.chunked_prefill import clock
from pysim.timing.steptime import microseconds
from pysim.toy.scheduler import OUTPUTS as OUTPUT_MIX, PROMPTS as PROMPT_MIX
from pysim.utils import cdiv


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
    from pysim.timing.catalog import MODELS

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


def admission_run(requests: int, prompt: int, answer: int, num_gpu_blocks: int,
                  max_num_seqs: int, block_size=16, budget=2048) -> dict:
    """One run of the chapter's engine (vLLM V1 rules, FCFS, recompute preemption):
    `requests` identical requests all waiting at time 0. Times use the chapter's clock
    (pysim.timing.steptime: Llama 3.1 8B on one H100, as on page 5); KV usage is vLLM's gauge (1 - free / usable blocks, the null block left out,
    as vLLM 0.33's `BlockPool.get_usage` does), averaged over time."""
    from pysim.engine.scheduler import Engine, EngineConfig, run_timed

    engine = Engine(EngineConfig(max_num_batched_tokens=budget, max_num_seqs=max_num_seqs,
                                 num_gpu_blocks=num_gpu_blocks, block_size=block_size))
    for i in range(requests):
        engine.add_request(i, prompt, answer)
    step_us = microseconds(clock())

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
    c = clock().coefficients
    out = {"block_size": block_size, "step_overhead_ms": c.step_overhead_ms,
           "request_overhead_us": c.request_overhead_us}
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
