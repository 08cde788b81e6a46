"""Page 8's numbers about real servers: vLLM's pool size, CPU overlap, llama.cpp's slots
and the vllm bench serve example."""

from __future__ import annotations


def vllm_pool(gpu="H100", model="llama-3.1-8b", context_tokens=4096) -> dict:
    """How --gpu-memory-utilization becomes the toy's number of blocks: the chapter's one
    KV pool (pysim.timing.steptime.kv_pool_bytes and num_gpu_blocks, as the lab sizes it, with
    vLLM's defaults at pysim.engine.vllm_defaults.LATEST)."""
    from pysim.engine.vllm_defaults import defaults
    from pysim.timing.catalog import GPUS, MODELS
    from pysim.timing.steptime import RUNTIME_BYTES, kv_pool_bytes, num_gpu_blocks, usable_bytes

    g, m = GPUS[gpu], MODELS[model]
    d = defaults(g)
    block_size = d.block_size
    kv_per_token = m.kv_bytes_per_token(kv_fp8=False)
    blocks = num_gpu_blocks(g, m, block_size)
    tokens = (blocks - 1) * block_size  # block 0 is vLLM's null block
    return {
        "reported_mib": g.reported_mib, "utilization": d.gpu_memory_utilization,
        "block_size": block_size, "vllm_version": d.version,
        "usable_gb": usable_bytes(g) / 1e9,
        "weights_gb": m.weight_bytes(weights_fp8=False) / 1e9,
        "runtime_gb": RUNTIME_BYTES / 1e9, "pool_gb": kv_pool_bytes(g, m) / 1e9,
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
