"""The `lab` simulation's view: one replay, as the page draws it.

Distributions, gauges over time under vLLM's Prometheus names (vllm/v1/metrics/loggers.py),
goodput, the hardware and traffic sentences, the prefix cache's counters, the settings
as vLLM commands (pysim.sims.lab.commands) and the calibration (pysim.sims.lab.calibrate).
"""

from __future__ import annotations

import math

from pysim.sims.lab.calibrate import calibrate
from pysim.sims.lab.commands import commands
from pysim.sims.lab.config import LabConfig, defaults, echo
from pysim.sims.lab.sweep import ATTAINMENT_TARGET, SWEEP_RATES
from pysim.sims.lab.workload import Traffic, run_once
from pysim.timing.catalog import GPUS, MODELS
from pysim.timing.steptime import Coefficients
from pysim.traffic import bench_serve, benchsample, traces
from pysim.utils import percentile

NUM_BINS = 120  # points in each time series


METRICS = {  # view-model key -> vLLM's Prometheus name (vllm/v1/metrics/loggers.py)
    "num_requests_running": "vllm:num_requests_running",
    "num_requests_waiting": "vllm:num_requests_waiting",
    "kv_cache_usage_perc": "vllm:kv_cache_usage_perc",
    "num_preemptions": "vllm:num_preemptions",
}


NOTE = ("A model: step times come from a roofline (weights and KV read, FLOPs) with four "
        "coefficients fitted to published vllm bench serve runs, not from a GPU; the "
        "scheduler is vLLM 0.33's V1 rules.")


def run(config: LabConfig, actions: list) -> dict:
    """The `lab` simulation: one replay."""
    assert not actions
    return replay_view(config, *calibrate(config))


def replay_view(config: LabConfig, coefficients: Coefficients, calibration: dict | None) -> dict:
    t, result, m, stm, blocks = run_once(config, config.rate_scale, coefficients)
    gpu, model = GPUS[config.gpu], MODELS[config.model]
    c = coefficients
    d = defaults(config)
    hardware = {
        "gpu": gpu.label, "model": model.name, "coefficients": c.record(),
        "num_gpu_blocks": blocks, "block_size": d.block_size,
        "gpu_memory_utilization": d.gpu_memory_utilization, "vllm_defaults": d.label,
        "kv_pool_tokens": (blocks - 1) * d.block_size,
        "kv_bytes_per_token": stm.kv_bytes_per_token, "weight_bytes": stm.weight_bytes,
        "decode_step_ms_1k_context": stm.seconds(1, 1, 1000, 1000) * 1000,
    }
    hardware["sentence"] = (
        f"{gpu.label}, {model.name}: step overhead {c.step_overhead_ms:.3g} ms, "
        f"{c.request_overhead_us:.3g} µs per request, memory efficiency "
        f"{c.memory_efficiency:.2f}, compute efficiency {c.compute_efficiency:.2f} ({c.source}); "
        f"num_gpu_blocks {blocks:,} of {d.block_size} tokens ({(blocks - 1) * d.block_size:,} tokens "
        f"of KV; block 0 is the null block), from {d.gpu_memory_utilization:.0%} of the "
        f"{gpu.reported_mib:,} MiB the driver reports ({d.label}). "
        + _caching_sentence(config, t, result))
    view = {
        "config": echo(config),
        "note": NOTE,
        "sweep_rates": list(SWEEP_RATES),  # the rate scales the page's sweep asks lab_sweep_point for
        "attainment_target": ATTAINMENT_TARGET,  # the share of good requests the sweep looks for
        "hardware": hardware,
        "traffic": _traffic(config, t),
        "slo": {"ttft_ms": config.slo_ttft_ms, "tpot_ms": config.slo_tpot_ms},
        "summary": {k: m[k] for k in ("completed", "good", "duration_s", "request_throughput",
                                      "request_goodput", "slo_attainment", "output_throughput")}
        | {"num_preemptions": result.num_preemptions, "num_steps": result.num_steps},
        "prefix_cache": prefix_cache(result) if t.token_ids else None,
        "ttft_ms": m["ttft_ms"],
        "tpot_ms": m["tpot_ms"],
        "series": series(result),
        "metric_names": METRICS,
        "calibration": calibration,
        "bench_summary": None,
        "commands": commands(config, t),  # the settings as vllm serve and vllm bench serve
        "sample_bench": benchsample.sample(),  # a real run to paste (a published one)
    }
    if t.bench is not None:
        figures_ = bench_serve.metrics(result, t.prompt_tokens)
        view["bench_summary"] = {"text": bench_serve.summary_text(figures_, t.bench),
                                 "figures": figures_}
    return view


def prefix_cache(result) -> dict:
    """vLLM's two prefix-cache counters (tokens) and their ratio, the hit rate a dashboard
    plots: vllm:prefix_cache_hits / vllm:prefix_cache_queries."""
    q, h = result.prefix_cache_queries, result.prefix_cache_hits
    return {"queries": q, "hits": h, "hit_rate": h / q if q else 0.0,
            "metric_names": {"queries": "vllm:prefix_cache_queries", "hits": "vllm:prefix_cache_hits"}}


def _caching_sentence(config: LabConfig, t: Traffic, result) -> str:
    if not t.token_ids and t.bench is not None:
        prefix = config.random_prefix_len
        if not prefix:
            return "Prefix caching finds nothing: the prompts share no prefix."
        return (f"Prefix caching finds nothing: the prompts share their first {prefix:,} tokens, "
                f"less than one block of {defaults(config).block_size}, and only full blocks are "
                f"cached.")
    if not t.token_ids:
        return "Prefix caching off: the Azure trace has no prompt content, so nothing is shared to cache."
    rate = prefix_cache(result)["hit_rate"]
    if t.bench is not None:
        shared = f"the prompts share their first {config.random_prefix_len:,} tokens"
    else:
        shared = "the Mooncake trace names each prompt's 512-token blocks, so shared prefixes are known"
    return (f"Prefix caching on: {shared}; {rate:.1%} of the prompt tokens admissions looked up "
            f"were cached (vllm:prefix_cache_hits / vllm:prefix_cache_queries).")


def _traffic(config: LabConfig, t: Traffic) -> dict:
    n = len(t.arrivals)
    prompts, outputs = sorted(t.prompt_tokens), sorted(t.output_tokens)
    out = {"traffic": config.traffic, "num_requests": n,
           "num_prompt_tokens_median": percentile(prompts, 50),
           "max_tokens_median": percentile(outputs, 50), "arrivals": config.arrivals}
    if t.bench is not None:
        b = t.bench
        rate = b.request_rate
        out |= {"label": "vllm bench serve", "command": b.command(),
                "real_rate_req_s": None if math.isinf(rate) else config.request_rate,
                "rate_req_s": None if math.isinf(rate) else rate}
        sent = ("all at once" if math.isinf(rate) else
                f"at {rate:.3g} req/s" + (f" (burstiness {b.burstiness:g})" if b.burstiness != 1 else ""))
        cap = f", at most {b.max_concurrency:,} in flight" if b.max_concurrency else ""
        out["sentence"] = (f"{n:,} requests as `{b.command()}` sends them: {sent}{cap}; prompts of "
                           f"{_lengths(b.random_input_len, b.random_range_ratio)} tokens"
                           + (f" after a shared {b.random_prefix_len:,}" if b.random_prefix_len else "")
                           + f", answers of {_lengths(b.random_output_len, b.random_range_ratio)}.")
        return out
    idx = t.window
    rate = len(idx) / (config.window_minutes * 60)
    played = ("" if config.rate_scale == 1 else
              f", played in {config.window_minutes / config.rate_scale:.3g} min")
    out |= {"trace": config.trace, "label": traces.TRACES[config.trace],
            "real_rate_req_s": rate, "rate_req_s": rate * config.rate_scale,
            **traces.stats(t.trace, idx)}
    out["sentence"] = (f"{n:,} requests of the {out['label']}: {config.window_minutes} min of the "
                       f"trace from minute {config.window_start_min}{played}, "
                       f"{'Poisson' if config.arrivals == 'poisson' else 'real'} arrivals at "
                       f"x{config.rate_scale:g} = {rate * config.rate_scale:.2f} req/s (median "
                       f"prompt {out['num_prompt_tokens_median']:,.0f} tokens, median answer "
                       f"{out['max_tokens_median']:,.0f}).")
    return out


def _lengths(length: int, ratio: float) -> str:
    if not ratio:
        return f"{length:,}"
    lo, hi = bench_serve._range(length, ratio)
    return f"{lo:,} to {hi:,}"


def series(result) -> dict:
    """Gauges over time in NUM_BINS bins: the last value in each bin (as a scrape
    would see it), output tokens per second, and preemptions per bin."""
    t0 = result.sent[0]
    span = max(result.seg_end[-1] - t0, 1e-9)
    width = span / NUM_BINS
    t = [round((k + 1) * width, 4) for k in range(NUM_BINS)]
    running = [0] * NUM_BINS
    waiting = [0] * NUM_BINS
    usage = [0.0] * NUM_BINS
    tokens = [0] * NUM_BINS
    preempt = [0] * NUM_BINS
    seen = [False] * NUM_BINS
    for k, end in enumerate(result.seg_end):
        b = min(NUM_BINS - 1, int((end - t0) / width))
        running[b] = result.num_requests_running[k]
        waiting[b] = result.num_requests_waiting[k]
        usage[b] = result.kv_usage[k]
        tokens[b] += result.seg_output_tokens[k]
        preempt[b] += result.seg_preemptions[k]
        seen[b] = True
    for b in range(1, NUM_BINS):  # a bin with no step ending in it keeps the last value
        if not seen[b]:
            running[b], waiting[b], usage[b] = running[b - 1], waiting[b - 1], usage[b - 1]
    return {"t_s": t, "num_requests_running": running, "num_requests_waiting": waiting,
            "kv_cache_usage_perc": [round(u, 4) for u in usage],
            "output_tokens_per_s": [round(x / width, 2) for x in tokens],
            "num_preemptions": preempt, "bin_s": width}
