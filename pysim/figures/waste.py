"""Page 1's leaks: why a decode step is nearly free to widen, padding, head-of-line waits."""

from __future__ import annotations

from ..toy_scheduler import OUTPUTS as OUTPUT_MIX
from .throughput import littles_law, step_ms


def context_for_beta(beta_ms: float, gpu="H100", model="llama-3.1-8b") -> float:
    """The context whose KV read takes `beta_ms` on this GPU: beta = tokens x kv bytes / bandwidth.

    beta is the per-request term of t(B) = t0 + beta B, one request's KV cache read per
    step, so a page that uses another beta is speaking of another context length.
    """
    from ..catalog import GPUS, MODELS

    per_token_s = MODELS[model].kv_bytes_per_token(kv_fp8=False) / GPUS[gpu].bandwidth_bytes_per_s
    return beta_ms / 1000 / per_token_s


def decode_step(gpu="H100", model="llama-3.1-8b", context_tokens=2_048, wide=32,
                short_context=128) -> dict:
    """Why a decode step is nearly free to widen, from the batch-size page's roofline.

    One step over B requests reads the weights once plus each request's KV cache, and does
    2 FLOPs per parameter per request. Arithmetic intensity = FLOPs / bytes read; the GPU
    stays memory-bound until it reaches peak_flops / bandwidth (the ridge point).
    """
    from ..batch_size import BatchSizeConfig, roofline
    from ..catalog import GB, GPUS, MODELS

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
