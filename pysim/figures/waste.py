"""Page 1's leaks: why a decode step is nearly free to widen, padding, head-of-line waits."""

from __future__ import annotations

from pysim.figures.throughput import littles_law, step_ms
from pysim.toy.scheduler import OUTPUTS as OUTPUT_MIX


def context_for_beta(beta_ms: float, gpu="H100", model="llama-3.1-8b") -> float:
    """The context whose KV read takes `beta_ms` on this GPU: beta = tokens x kv bytes / bandwidth.

    beta is the per-request term of t(B) = t0 + beta B, one request's KV cache read per
    step, so a page that uses another beta is speaking of another context length.
    """
    from pysim.timing.catalog import GPUS, MODELS

    per_token_s = MODELS[model].kv_bytes_per_token(kv_fp8=False) / GPUS[gpu].bandwidth_bytes_per_s
    return beta_ms / 1000 / per_token_s


def decode_step(gpu="H100", model="llama-3.1-8b", context_tokens=2_048, wide=32,
                short_context=128) -> dict:
    """Why a decode step is nearly free to widen, from the batch-size page's ceilings
    (the chapter's step-time model with no overheads, pysim.sims.batch_size).

    One step over B requests reads the weights once plus each request's KV cache, and does
    2 FLOPs per parameter per request plus attention's. Arithmetic intensity = FLOPs /
    bytes read; the GPU stays memory-bound until it reaches peak_flops / bandwidth (the
    ridge point).
    """
    from pysim.sims.batch_size import crossover, decode_work, step_seconds
    from pysim.timing.catalog import GB, GPUS, MODELS
    from pysim.timing.steptime import IDEAL, step_time_model

    g, m = GPUS[gpu], MODELS[model]
    stm = step_time_model(g, m, IDEAL)
    ctx = context_tokens
    weights = decode_work(stm, ctx, 0)[0]
    one_read, one_flops = decode_work(stm, ctx, 1)
    request_kv = one_read - weights  # one request's KV read

    def intensity(b: int) -> float:
        read, flops = decode_work(stm, ctx, b)
        return flops / read

    return {
        "gpu": g.name, "model": m.name, "context_tokens": ctx, "wide": wide,
        "weights_gb": weights / GB,
        "kv_mb_per_request": request_kv / 1e6,
        "ridge": g.peak_flops / g.bandwidth_bytes_per_s,
        "intensity_b1": intensity(1),
        "intensity_wide": intensity(wide),
        # As B grows, FLOPs and KV bytes grow together: intensity tends to one request's
        # FLOPs over its KV bytes.
        "intensity_limit": one_flops / request_kv,
        "crossover": crossover(stm, ctx) or 0,  # 0: compute never binds at this context
        # With a short context the KV term is small and compute does bind, at this B.
        "short_context": short_context,
        "short_crossover": crossover(stm, short_context),
        "step_ms_b1": step_seconds(stm, ctx, 1) * 1000,
        "step_ms_wide": step_seconds(stm, ctx, wide) * 1000,
        "slowdown_wide": step_seconds(stm, ctx, wide) / step_seconds(stm, ctx, 1),
        # The same roofline as the linear model of page 2: t(B) = t0 + beta * B.
        "t0_ms": weights / stm.bandwidth * 1000,
        "beta_ms": request_kv / stm.bandwidth * 1000,
        # The contexts that page 2's illustrative beta and page 5's stand for.
        "beta_context_page2": context_for_beta(littles_law()["beta_ms"], gpu, model),
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
