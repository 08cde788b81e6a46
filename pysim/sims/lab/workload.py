"""The lab's traffic and one replay of it: what the engine is sent, and what it did.

`workload` builds the requests (a trace window, pysim.traffic.traces, or a benchmark,
pysim.traffic.bench_serve); `run_once` replays them through the engine on the step-time
model (pysim.engine.replay, pysim.timing.steptime) and scores them as `vllm bench serve`
does (pysim.traffic.slo).
"""

from __future__ import annotations

from dataclasses import dataclass

from pysim.config import ConfigError
from pysim.engine.replay import engine_config, replay
from pysim.sims.lab.config import LabConfig, benchmark, defaults
from pysim.timing.catalog import GPUS, MODELS
from pysim.timing.steptime import Coefficients, num_gpu_blocks, step_time_model
from pysim.traffic import bench_serve, slo, traces


@dataclass(frozen=True)
class Traffic:
    """What the engine is sent: arrival times (s), lengths, and for a benchmark its
    settings (prompt ids too, when they share a prefix to cache)."""

    arrivals: list
    prompt_tokens: list
    output_tokens: list
    bench: bench_serve.Benchmark | None = None
    token_ids: object = None
    trace: object = None
    window: range | None = None


def workload(config: LabConfig, rate_scale: float) -> Traffic:
    if config.traffic == "benchmark":
        bench = benchmark(config, rate_scale)
        reqs = bench_serve.requests(bench)
        # A shared prefix shorter than one block fills no block: nothing can hit.
        cached = bench.random_prefix_len >= defaults(config).block_size
        return Traffic(reqs.arrivals, reqs.prompt_tokens, reqs.output_tokens, bench,
                       reqs.token_ids if cached else None)
    trace = traces.load(config.trace)
    reqs = traces.requests(trace, config.window_start_min, config.window_minutes, rate_scale,
                           config.arrivals, config.seed)
    # A trace that names its prompts' blocks runs with prefix caching on.
    token_ids = (lambda i: traces.PromptTokens(reqs[i].hash_ids, reqs[i].num_prompt_tokens)) \
        if trace.hash_ids else None
    return Traffic([r.arrival_s for r in reqs], [r.num_prompt_tokens for r in reqs],
                   [r.max_tokens for r in reqs], token_ids=token_ids, trace=trace,
                   window=traces.window(trace, config.window_start_min, config.window_minutes))


def run_once(config: LabConfig, rate_scale: float, coefficients: Coefficients):
    gpu, model = GPUS[config.gpu], MODELS[config.model]
    stm = step_time_model(gpu, model, coefficients)
    bs = defaults(config).block_size
    blocks = num_gpu_blocks(gpu, model, bs)
    t = workload(config, rate_scale)
    longest = max(p + o for p, o in zip(t.prompt_tokens, t.output_tokens))
    if -(-longest // bs) > blocks - 1:
        raise ConfigError("model", f"the longest request ({longest:,} tokens) needs more "
                                   f"KV blocks than {model.name} leaves on one {gpu.name} "
                                   f"({blocks - 1:,} usable); pick a smaller model or a larger GPU")
    cfg = engine_config(blocks, bs, config, enable_prefix_caching=t.token_ids is not None)
    bench = t.bench
    result = replay(t.arrivals, t.prompt_tokens, t.output_tokens, cfg, stm, blocks,
                    max_concurrency=bench.max_concurrency if bench else None,
                    token_ids=t.token_ids, itl=bench is not None)
    # A benchmark's duration runs from its start, before the first request's gap.
    duration = max(result.finished) if bench else result.duration
    metrics = slo.summarize(result.ttfts, result.latencies, result.output_tokens,
                            duration, config.slo_ttft_ms, config.slo_tpot_ms)
    return t, result, metrics, stm, blocks
