"""Fit the step-time model's efficiency to a reader's own `vllm bench serve` runs.

Each pasted run says what the benchmark sent (how many requests, at which rate or
concurrency, and, from its token totals, the mean prompt and answer lengths) and what
it measured (mean TTFT and TPOT). We replay the same kind of traffic through the
engine with the reader's GPU, model and scheduler settings, and look for the one
efficiency at which the replay's mean TPOT matches the measured one.

Why TPOT: it is made of step times almost alone (a decode waits for each step of the
batch it is in), so it scales close to 1 / efficiency; TTFT also holds queueing,
which the fit should predict, not be tuned on. The fit is a fixed-point iteration:
    efficiency <- efficiency x geometric mean over runs of (replayed TPOT / measured TPOT)
which converges in a few rounds because the ratio moves almost in proportion. The
error we show is the replay's relative error per run on TTFT, TPOT and output
throughput at the fitted efficiency.

The replayed traffic uses fixed lengths (the run's means, as `--dataset-name random`
sends by default) and Poisson arrivals at the run's rate (`vllm bench serve`'s default
burstiness 1), at most MAX_SIM_REQUESTS requests per run, so the fit stays quick.
"""

from __future__ import annotations

import math

from .benchsummary import BenchRun
from .config import ConfigError
from .replay import replay
from .steptime import StepTimeModel
from .traces import poisson_times

MAX_SIM_REQUESTS = 200
ROUNDS = 6
EFFICIENCY_RANGE = (0.05, 1.0)


def simulate(run: BenchRun, engine_cfg, model: StepTimeModel, num_gpu_blocks: int) -> dict:
    n = min(run.completed, MAX_SIM_REQUESTS)
    if math.isinf(run.request_rate):
        arrivals = [0.0] * n
    else:
        arrivals = poisson_times(n, run.request_rate, seed=1)
    result = replay(arrivals, [run.mean_prompt_tokens] * n, [run.mean_output_tokens] * n,
                    engine_cfg, model, num_gpu_blocks, max_concurrency=run.max_concurrency)
    ttfts = result.ttfts
    tpots = [(lat - t) / (run.mean_output_tokens - 1)
             for lat, t in zip(result.latencies, ttfts)] if run.mean_output_tokens > 1 else [0.0]
    # (math.fsum: the same last bits in CPython 3.11 and Pyodide's newer Python.)
    return {"mean_ttft_ms": math.fsum(ttfts) / n * 1000,
            "mean_tpot_ms": math.fsum(tpots) / len(tpots) * 1000,
            "output_throughput": sum(result.output_tokens) / result.duration}


def fit(runs: list[BenchRun], engine_cfg, model: StepTimeModel, num_gpu_blocks: int) -> dict:
    """The fitted efficiency, each run's measured and replayed figures, and the errors."""
    assert runs
    block_size = engine_cfg.block_size
    for k, run in enumerate(runs, 1):
        longest = run.mean_prompt_tokens + run.mean_output_tokens
        if -(-longest // block_size) > num_gpu_blocks - 1:
            raise ConfigError("bench_text", f"run {k}: a request of {longest:,} tokens does not fit "
                                            f"the KV pool of this GPU and model")
    lo, hi = EFFICIENCY_RANGE
    efficiency = model.efficiency
    history = [efficiency]
    for _ in range(ROUNDS):
        m = model.with_efficiency(efficiency)
        log_ratio = math.fsum(math.log(simulate(r, engine_cfg, m, num_gpu_blocks)["mean_tpot_ms"]
                                 / r.mean_tpot_ms) for r in runs) / len(runs)
        new = min(hi, max(lo, efficiency * math.exp(log_ratio)))
        history.append(new)
        done = abs(new - efficiency) <= 1e-3 * efficiency
        efficiency = new
        if done:
            break
    fitted = model.with_efficiency(efficiency)
    rows = []
    for run in runs:
        sim = simulate(run, engine_cfg, fitted, num_gpu_blocks)
        measured = {"mean_ttft_ms": run.mean_ttft_ms, "mean_tpot_ms": run.mean_tpot_ms,
                    "output_throughput": run.output_throughput}
        errors = {k: (sim[k] - measured[k]) / measured[k] * 100 if measured[k] else None
                  for k in measured}
        rows.append({"settings": run.record(), "measured": measured, "replayed": sim,
                     "error_pct": errors})
    tpot_err = [abs(r["error_pct"]["mean_tpot_ms"]) for r in rows]
    ttft_err = [abs(r["error_pct"]["mean_ttft_ms"]) for r in rows if r["error_pct"]["mean_ttft_ms"] is not None]
    return {
        "efficiency_before": model.efficiency,
        "efficiency": efficiency,
        "at_bound": efficiency in (lo, hi),
        "rounds": len(history) - 1,
        "runs": rows,
        "mean_abs_error_pct": {"mean_tpot_ms": math.fsum(tpot_err) / len(tpot_err),
                               "mean_ttft_ms": math.fsum(ttft_err) / len(ttft_err) if ttft_err else None},
    }
