"""The serving lab: real production traffic through the V1 engine, with SLOs and goodput.

The question it answers is a reader's own: for this traffic, on this GPU and model,
with these `--max-num-seqs` and `--max-num-batched-tokens`, do requests meet their
latency targets, and how many replicas does the traffic need?

The parts, each in its own module:
- traffic (pysim.traffic.traces): a window of the Azure LLM inference trace 2023 (or of the
  Mooncake traces, below), at a rate
  scale, or Poisson arrivals of the same requests;
- or, instead of the trace, a benchmark as `vllm bench serve --dataset-name random`
  sends it (pysim.traffic.bench_serve), with the figures it prints;
- the step time and the KV pool (pysim.timing.steptime): the roofline of the batch-size
  catalog with four coefficients fitted to real benchmark runs, the GPU's defaults or
  the reader's own fit;
- the scheduler (pysim.engine via pysim.engine.replay): vLLM 0.33's V1 rules, chunked
  prefill on, preemption by recompute, FCFS;
- the metrics (pysim.traffic.slo): TTFT, TPOT and goodput as `vllm bench serve --goodput`
  computes them;
- calibration (pysim.traffic.benchsummary, pysim.timing.fit): pasted benchmark output, each run
  replayed as it was sent, and the coefficients fitted to them.

What is left out, and why:
- traffic can also be a window of the Mooncake FAST'25 traces (Kimi's conversation
  service, and a synthetic one), which name each prompt's 512-token blocks: they run
  with prefix caching on, and the view gives vLLM's two prefix-cache counters;
- prefix caching is off for the Azure trace: it has token counts but no prompt text,
  so there is nothing to find shared prefixes in (a benchmark's --random-prefix-len
  is shared, and cached, as on a real server);
- the waiting-queue policy is FCFS: the trace carries no request priorities, so
  `--scheduling-policy priority` would have nothing to sort by;
- the KV pool, its block size and the scheduler's defaults are vLLM 0.34.0's
  (pysim.engine.vllm_defaults): 64-token blocks on CUDA (16 on ROCm, the MI300X), the pool cut
  from all the memory the driver reports (--gpu-memory-utilization 1.0), and
  `max_num_seqs` 1,024 and `max_num_batched_tokens` 8,192, `vllm serve`'s on an H100.

Four questions, four simulations in the registry, one config and one engine:
- `lab` (`run`): one replay, the full view (distributions, gauges over time, goodput);
- `lab_sweep` (`sweep_view`): the capacity sweep in one call, every rate in
  SWEEP_RATES (the CLI);
- `lab_sweep_point` (`sweep_point_view`): one rate of the sweep,
  SWEEP_RATES[sweep_index] (the page asks for these one by one, so it can show
  progress and stop between calls);
- `lab_capacity` (`capacity_view`): the sweep's conclusion from points already computed
  (`sweep_points`, as lab_sweep_point returned them), without running anything again.

Pin and compare: a pinned configuration is the view model the page already has; the
widget keeps it and draws it beside the new one. Nothing is recomputed for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from pysim import fields
from pysim.engine import vllm_defaults
from pysim.timing import errorband, fit
from pysim.traffic import bench_serve, benchsample, benchsummary, slo, traces
from pysim.timing.catalog import GPUS, MODELS
from pysim.utils import percentile
from pysim.config import ConfigError, bounded, choice, data, to_mapping
from pysim.engine.scheduler import SchedulerConfig
from pysim.engine.replay import engine_config, replay
from pysim.registry import Simulation
from pysim.timing.steptime import DEFAULTS, Coefficients, check_fits, num_gpu_blocks, step_time_model

SWEEP_RATES = (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0)
# The slowest benchmark rate the lab takes, in requests per second (0 aside: all at once).
# 1,000 prompts at 0.01 req/s already span 28 hours; far lower, the gaps between sends
# no longer fit in a float (1,000 / 5e-324 is infinite).
MIN_RATE = 0.01
ATTAINMENT_TARGET = 0.9  # the capacity is the highest rate at which 90% of requests are good
NUM_BINS = 120  # points in each time series
MAX_BENCH_CHARS = 20_000
# A --save-detailed JSON carries every request's ITLs and text: about 2 MB for 640 requests
# of 128 tokens. Its size is bounded here and its requests by fit.MAX_PROMPTS.
MAX_DETAILED_CHARS = 4_000_000
METRICS = {  # view-model key -> vLLM's Prometheus name (vllm/v1/metrics/loggers.py)
    "num_requests_running": "vllm:num_requests_running",
    "num_requests_waiting": "vllm:num_requests_waiting",
    "kv_cache_usage_perc": "vllm:kv_cache_usage_perc",
    "num_preemptions": "vllm:num_preemptions",
}
NOTE = ("A model: step times come from a roofline (weights and KV read, FLOPs) with four "
        "coefficients fitted to published vllm bench serve runs, not from a GPU; the "
        "scheduler is vLLM 0.33's V1 rules.")


def _check_bench_text(value):
    if not isinstance(value, str):
        raise ConfigError("bench_text", "expected text: a vllm bench serve summary or result JSON")
    limit = MAX_DETAILED_CHARS if value.lstrip().startswith("{") else MAX_BENCH_CHARS
    if len(value) > limit:
        raise ConfigError("bench_text", f"got {len(value):,} characters; at most {MAX_BENCH_CHARS:,} "
                                        f"of printed summaries, or {MAX_DETAILED_CHARS:,} of "
                                        f"--save-result JSON")
    return value


def _check_points(value):
    if not isinstance(value, list) or len(value) > len(SWEEP_RATES):
        raise ConfigError("sweep_points", f"expected a list of at most {len(SWEEP_RATES)} sweep points")
    out = []
    for k, p in enumerate(value):
        if not isinstance(p, dict):
            raise ConfigError("sweep_points", f"point {k + 1}: expected an object")
        point = {}
        for key, lo, hi in (("rate_scale", 0.25, 8), ("slo_attainment", 0, 1),
                            ("request_goodput", 0, 1e6), ("request_throughput", 0, 1e6)):
            x = p.get(key)
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not lo <= x <= hi:
                raise ConfigError("sweep_points", f"point {k + 1}: '{key}' should be a number "
                                                  f"from {lo:g} to {hi:g}")
            point[key] = float(x)
        for key in BAND_KEYS:  # the error band's attainments, when the point has them
            x = p.get(key)
            if x is None:
                continue
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= 1:
                raise ConfigError("sweep_points", f"point {k + 1}: '{key}' should be a number "
                                                  f"from 0 to 1")
            point[key] = float(x)
        out.append(point)
    return out


BAND_KEYS = ("slo_attainment_fast", "slo_attainment_slow")


@dataclass(frozen=True)
class LabConfig(SchedulerConfig):
    """The lab's settings: vLLM's scheduler knobs (inherited: pysim.engine.scheduler.SchedulerConfig),
    the traffic, the GPU and model, the targets, and a pasted benchmark to fit to."""

    traffic: str = choice("trace", ("trace", "benchmark"),
                          "the traffic: a window of a production trace, or a benchmark as "
                          "vllm bench serve --dataset-name random sends it", label="Traffic",
                          option_labels={"trace": "Production trace", "benchmark": "vllm bench serve"})
    trace: str = fields.trace("conv", tuple(traces.TRACES))
    arrivals: str = choice("trace", ("trace", "poisson"),
                           "real arrival times, or Poisson arrivals at the same mean rate",
                           label="Arrivals", option_labels={"trace": "Real", "poisson": "Poisson"})
    window_start_min: int = fields.window_start_min(10, 0, 56)
    window_minutes: int = fields.window_minutes(5, 1, 10)
    rate_scale: float = fields.rate_scale(1.0, 0.25, 8.0)
    seed: int = fields.seed(0, 0, 1_000_000, slider_max=100)  # Poisson arrivals, a benchmark's lengths
    # The benchmark's flags, under vllm bench serve's own names (defaults: its defaults).
    num_prompts: int = bounded(1000, 1, fit.MAX_PROMPTS, "requests the benchmark sends (--num-prompts)",
                               label="num_prompts", unit="requests", scale="log")
    random_input_len: int = bounded(1024, 1, 32_768, "prompt length (--random-input-len)",
                                    label="random_input_len", unit="tokens", scale="log")
    random_output_len: int = bounded(128, 1, 8_192, "answer length (--random-output-len)",
                                     label="random_output_len", unit="tokens", scale="log")
    random_range_ratio: float = bounded(0.0, 0.0, 0.99, "lengths drawn from L x (1 - r) to "
                                        "L x (1 + r) (--random-range-ratio)", integer=False,
                                        label="random_range_ratio", step=0.01)
    random_prefix_len: int = bounded(0, 0, 16_384, "tokens every prompt shares in front "
                                     "(--random-prefix-len; cached)", label="random_prefix_len",
                                     unit="tokens", slider_max=4096)
    request_rate: float = bounded(0.0, 0.0, 1000.0, "requests per second (--request-rate); 0 "
                                  "sends them all at once, as --request-rate inf",
                                  integer=False, label="request_rate", unit="req/s",
                                  slider_max=50)
    burstiness: float = bounded(1.0, 0.1, 10.0, "gamma shape of the gaps (--burstiness; 1 is "
                                "Poisson, lower is burstier)", integer=False, label="burstiness",
                                scale="log")
    max_concurrency: int = bounded(0, 0, fit.MAX_PROMPTS, "requests in flight at most "
                                   "(--max-concurrency); 0 sets no cap",
                                   label="max_concurrency", unit="requests", slider_max=512)
    gpu: str = fields.gpu("H100")  # 16-bit weights and KV
    model: str = fields.model("llama-3.1-8b")
    slo_ttft_ms: float = fields.slo_ttft_ms(1000.0, 10, 60_000)
    slo_tpot_ms: float = fields.slo_tpot_ms(50.0, 1, 1000)
    bench_text: str = data(str, "a pasted vllm bench serve summary or --save-result JSON "
                                "(fits the step-time coefficients)", _check_bench_text,
                           label="vllm bench serve output")

    def check(self) -> None:
        if self.traffic == "benchmark":
            self._check_benchmark()
        else:
            self._check_trace()
        SchedulerConfig.check(self)
        check_fits(self.gpu, self.model)

    def _check_benchmark(self) -> None:
        if 0 < self.request_rate < MIN_RATE:
            raise ConfigError("request_rate", f"got {self.request_rate:g}; expected 0 (all at "
                                              f"once) or a number from {MIN_RATE:g} to 1,000")
        run = fit.Run(benchmark(self, 1.0), server(self), {}, "the benchmark")
        try:
            fit.check(run, "random_input_len")
        except ConfigError as err:
            raise ConfigError("random_input_len", err.message.replace("the benchmark: ", "")) from None

    def _check_trace(self) -> None:
        traces.check_window(self.trace, self.window_start_min, self.window_minutes)


# The widget's fieldsets, in order (pysim.config.describe); a knob added to
# SchedulerConfig joins its group with no edit here.
LabConfig.GROUPS = (
    ("Traffic", ("traffic", "rate_scale", "seed")),
    ("Production trace", ("trace", "arrivals", "window_start_min", "window_minutes")),
    ("vllm bench serve", ("num_prompts", "random_input_len", "random_output_len", "random_range_ratio",
                          "random_prefix_len", "request_rate", "burstiness", "max_concurrency")),
    ("GPU and model", ("gpu", "model")),
    SchedulerConfig.GROUP,
    ("Targets (SLOs)", ("slo_ttft_ms", "slo_tpot_ms")),
)


@dataclass(frozen=True)
class SweepConfig(LabConfig):
    """The lab's settings, for a sweep: it scales the request rate, so a benchmark needs one."""

    def check(self) -> None:
        super().check()
        if self.traffic == "benchmark" and not self.request_rate:
            raise ConfigError("request_rate", "got 0 (all at once); the capacity sweep scales the "
                                              f"request rate: expected a number from {MIN_RATE:g} "
                                              "to 1,000")


@dataclass(frozen=True)
class SweepPointConfig(SweepConfig):
    sweep_index: int = bounded(0, 0, len(SWEEP_RATES) - 1, "which rate of the sweep to replay "
                               "(its place in the sweep's list, from the lowest)", label="Sweep point")



SweepPointConfig.UNGROUPED = ("sweep_index",)  # the page's sweep sets it on each call


@dataclass(frozen=True)
class CapacityConfig(LabConfig):
    sweep_points: list = data(list, "sweep points already computed (as lab_sweep_point returns "
                              "them)", _check_points, label="Sweep points")


# --- the parts of a run ---------------------------------------------------------------
def defaults(config: LabConfig) -> vllm_defaults.Defaults:
    """vLLM's defaults (at vllm_defaults.LATEST) on the GPU the settings name."""
    return vllm_defaults.defaults(GPUS[config.gpu])


def server(config: LabConfig) -> fit.ServerSetup:
    return fit.ServerSetup(config.gpu, config.model, config.scheduler())


def benchmark(config: LabConfig, rate_scale: float) -> bench_serve.Benchmark:
    """The benchmark the settings describe, its rate times `rate_scale` (the sweep's)."""
    rate = config.request_rate * rate_scale if config.request_rate else math.inf
    return bench_serve.Benchmark(
        num_prompts=config.num_prompts, random_input_len=config.random_input_len,
        random_output_len=config.random_output_len, random_range_ratio=config.random_range_ratio,
        random_prefix_len=config.random_prefix_len, request_rate=rate,
        burstiness=config.burstiness, max_concurrency=config.max_concurrency or None,
        seed=config.seed)


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


def calibrate(config: LabConfig) -> tuple[Coefficients, dict | None]:
    """The coefficients to run with: the GPU's defaults, or those fitted to the pasted
    runs, each replayed as it was sent on this GPU, model and scheduler."""
    pasted = benchsummary.parse(config.bench_text)
    default = DEFAULTS[config.gpu]
    if not pasted:
        return default, None
    runs = [fit.Run(p.bench, server(config), p.measured, p.source, p.notes) for p in pasted]
    for r in runs:
        fit.check(r)
    fitted = fit.fit(runs, default, source=f"fitted to {len(runs)} pasted "
                                           f"run{'s' * (len(runs) > 1)}")
    rows = []
    for p, r in zip(pasted, runs):
        replayed, compared = replay_pasted(p, r, fitted)
        shown = [k for k in CALIBRATION_FIGURES if r.measured.get(k)]
        rows.append({**p.record(),
                     "measured": {k: r.measured[k] for k in shown},
                     "replayed": {k: replayed[k] for k in shown},
                     "error": {k: (replayed[k] - r.measured[k]) / r.measured[k] for k in shown},
                     "server": p.server, "server_notes": server_notes(config, p),
                     "per_request": compared})
    fitted_errors = {k: [abs(row["error"][k]) for row in rows if k in row["error"]]
                     for k in fit.FIGURES}
    out = {"coefficients_before": default.record(), "coefficients": fitted.record(), "runs": rows,
           "mean_abs_error": {k: math.fsum(v) / len(v) for k, v in fitted_errors.items() if v}}
    out["sentence"] = _fit_sentence(out)
    return fitted, out


def _fit_sentence(cal: dict) -> str:
    """What the fit found, in the words the page and the command line print."""
    def coefficients(c: dict) -> str:
        three = lambda x: f"{float(f'{x:.3g}'):,g}"  # noqa: E731  3 significant digits
        return (f"step overhead {three(c['step_overhead_ms'])} ms, {three(c['request_overhead_us'])} us "
                f"per request, memory efficiency {c['memory_efficiency']:.2f}, compute efficiency "
                f"{c['compute_efficiency']:.2f}")

    e = cal["mean_abs_error"]
    pct = lambda k: "–" if e.get(k) is None else f"{e[k]:.1%}"  # noqa: E731
    n = len(cal["runs"])
    return (f"Fitted to your {'run' if n == 1 else f'{n} runs'}: {coefficients(cal['coefficients'])} "
            f"(the GPU's defaults: {coefficients(cal['coefficients_before'])}). Mean error after the "
            f"fit: TTFT {pct('mean_ttft_ms')}, TPOT {pct('mean_tpot_ms')}, output throughput "
            f"{pct('output_throughput')}. Every number of the lab now uses these coefficients.")


# --- a pasted run, request by request ----------------------------------------------------
LARGEST_MISSES = 8  # requests listed where the replay is furthest from the measurement


def replay_pasted(p: benchsummary.Pasted, run: fit.Run, coefficients: Coefficients):
    """Replay a pasted run with the fitted coefficients: the figures vLLM would print, and
    for a --save-detailed result (its own requests, sent when they were) the comparison
    request by request (`per_request`), else None."""
    result, reqs, _ = fit.replay_run(run, coefficients)
    figures_ = bench_serve.metrics(result, reqs.prompt_tokens)
    return figures_, (per_request(p, result) if p.requests is not None else None)


def per_request(p: benchsummary.Pasted, result) -> dict:
    """Measured against replayed for every request of a detailed result: both TTFT and
    TPOT distributions (pysim.traffic.slo.distribution_ms, a CDF each), the median miss, and the
    requests the replay misses most (TTFT, then TPOT, by absolute difference)."""
    rec = p.bench.recorded
    rows = []
    for k, ((ttft, tpot, index), (prompt, answer, sent)) in enumerate(zip(p.requests, rec)):
        rep_ttft = result.first_token[k] - result.sent[k]
        rep_tpot = slo.request_tpot(result.finished[k] - result.sent[k], rep_ttft, answer)
        rows.append({"index": index, "num_prompt_tokens": prompt, "max_tokens": answer,
                     "sent_s": sent, "ttft_ms": ttft * 1000, "replayed_ttft_ms": rep_ttft * 1000,
                     "tpot_ms": None if tpot is None else tpot * 1000,
                     "replayed_tpot_ms": None if rep_tpot is None else rep_tpot * 1000})

    def pair(key: str) -> dict:
        got = [(r[key], r["replayed_" + key]) for r in rows if r[key] is not None]
        measured, replayed = sorted(a for a, _ in got), sorted(b for _, b in got)
        misses = sorted(abs(b - a) / a for a, b in got if a > 0)
        return {"measured": slo.distribution_ms([x / 1000 for x in measured]),
                "replayed": slo.distribution_ms([x / 1000 for x in replayed]),
                "median_abs_error": percentile(misses, 50) if misses else None, "count": len(got)}

    def worst(key: str) -> list:
        ranked = sorted((r for r in rows if r[key] is not None),
                        key=lambda r: (-abs(r["replayed_" + key] - r[key]), r["index"]))
        return ranked[:LARGEST_MISSES]

    out = {"source": p.source, "num_requests": len(rows), "ttft_ms": pair("ttft_ms"),
           "tpot_ms": pair("tpot_ms"), "largest_ttft_misses": worst("ttft_ms"),
           "largest_tpot_misses": worst("tpot_ms")}
    e = lambda k: "–" if out[k]["median_abs_error"] is None else f"{out[k]['median_abs_error']:.0%}"  # noqa: E731
    out["sentence"] = (f"{p.source}: its {len(rows):,} requests replayed one by one, with their own lengths and "
                       f"send times. Per request, the replay's TTFT is off by {e('ttft_ms')} and its TPOT "
                       f"by {e('tpot_ms')} at the median.")
    return out


def server_notes(config: LabConfig, p: benchsummary.Pasted) -> list[str]:
    """Where the pasted `vllm serve` line differs from the lab's settings (the fit replays
    the lab's own: set them to match the run)."""
    notes = []
    for key in ("max_num_seqs", "max_num_batched_tokens", "async_scheduling"):
        if key in p.server and p.server[key] != getattr(config, key):
            notes.append(f"the paste's vllm serve has {key} {p.server[key]}, the lab {getattr(config, key)}: "
                         f"the replay uses the lab's; set it to match the run")
    bs = defaults(config).block_size
    if "block_size" in p.server and p.server["block_size"] != bs:
        notes.append(f"the paste's vllm serve has --block-size {p.server['block_size']}; the lab replays "
                     f"vLLM {vllm_defaults.LATEST}'s {bs} on this GPU")
    named = model_from_hf(p.server.get("model", ""))
    if p.server.get("model") and named != config.model:
        notes.append(f"the paste served {p.server['model']}; the lab runs {MODELS[config.model].name}")
    return notes


# --- the lab's settings as vLLM commands -------------------------------------------------
def hf_name(model: str) -> str:
    """The model's Hugging Face name, the repo its catalog entry was read from."""
    return MODELS[model].source.split()[0]


def model_from_hf(name: str) -> str | None:
    """The catalog model a Hugging Face name serves (its -Instruct variant too), or None."""
    name = name.strip().strip("'\"").lower().removesuffix("-instruct")
    return next((m for m in MODELS if hf_name(m).lower().removesuffix("-instruct") == name), None)


# The Mooncake traces' published files (kvcache-ai/Mooncake, FAST25-release/traces/).
MOONCAKE_FILES = {"mooncake_conv": "conversation_trace.jsonl", "mooncake_synth": "synthetic_trace.jsonl"}


def commands(config: LabConfig, t: Traffic) -> dict:
    """The two command lines that run the lab's settings on a real server (vLLM 0.34.0's
    flags, vllm/engine/arg_utils.py and vllm/benchmarks/serve.py): `vllm serve` with the
    scheduler's knobs (a flag only where the lab differs from the release's default, but
    always the two knobs the lab is about) and `vllm bench serve` with the traffic. A
    trace window has no exact `vllm bench serve`: the closest is the timed_trace dataset
    on a file of the window's rows, and `cannot` says what that leaves out."""
    d = defaults(config)
    model = hf_name(config.model)
    serve = [f"vllm serve {model}", f"--max-num-seqs {config.max_num_seqs}",
             f"--max-num-batched-tokens {config.max_num_batched_tokens}"]
    if config.async_scheduling != d.async_scheduling:
        serve.append("--async-scheduling" if config.async_scheduling else "--no-async-scheduling")
    bs = d.block_size  # the lab replays the release's block size; a flag only if it ever differs
    if bs != vllm_defaults.defaults(GPUS[config.gpu]).block_size:
        serve.append(f"--block-size {bs}")
    cannot, prepare, prepare_note = [], None, None
    if t.bench is not None:
        bench = t.bench.command().replace("vllm bench serve", f"vllm bench serve --model {model}", 1)
        if t.bench.seed:
            bench += f" --seed {t.bench.seed}"
        cannot.append("vLLM draws its lengths and gaps with numpy; pysim draws the same "
                      "distributions with its own generator, so not the same draws")
    else:
        trace = t.trace
        start_ms = config.window_start_min * 60_000
        end_ms = start_ms + config.window_minutes * 60_000
        hashed = bool(trace.hash_ids)
        bench = (f"vllm bench serve --model {model} --backend openai --dataset-name timed_trace "
                 f"--dataset-path window.jsonl --num-prompts {len(t.arrivals)} "
                 f"--timed-trace-sec-multiplier {0.001 / config.rate_scale:g}"
                 + (f" --timed-trace-chunk-hash-size {traces.TRACE_BLOCK}" if hashed else ""))
        if hashed:
            prepare = (f"jq -c 'select(.timestamp >= {start_ms} and .timestamp < {end_ms}) "
                       f"| .timestamp -= {start_ms}' {MOONCAKE_FILES[config.trace]} > window.jsonl")
            prepare_note = ("window.jsonl: the window's rows of the published trace (timestamp in ms, "
                            "input_length, output_length, hash_ids), cut from the trace's own JSONL")
        else:
            prepare_note = ("window.jsonl: one JSON line per request of the window, {\"timestamp\": ms "
                            "since the window's start, \"input_length\": ..., \"output_length\": ...}, "
                            "made from the Azure trace's CSV (TIMESTAMP, ContextTokens, GeneratedTokens)")
        if config.arrivals == "poisson":
            cannot.append("Poisson arrivals: timed_trace sends at the trace's times; --no-self-timed "
                          "--request-rate R would send Poisson gaps but forget nothing else")
        cannot.append("prompt text: timed_trace makes random tokens (shared where hash_ids are shared), "
                      "so the answers' own lengths hold only with --ignore-eos, which timed_trace sets")
    return {"vllm_version": vllm_defaults.LATEST, "serve": " ".join(serve), "bench": bench,
            "prepare": prepare, "prepare_note": prepare_note, "cannot": cannot}


# What the calibration table compares, where the paste has it (vLLM's JSON names).
CALIBRATION_FIGURES = ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms",
                       "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "output_throughput")


# --- views ----------------------------------------------------------------------------
def run(config: LabConfig, actions: list) -> dict:
    """The `lab` simulation: one replay."""
    assert not actions
    return replay_view(config, *calibrate(config))


def sweep_view(config: SweepConfig, actions: list) -> dict:
    """The `lab_sweep` simulation: every rate of the sweep, and the capacity they give."""
    assert not actions
    coefficients, calibration = calibrate(config)
    points = [sweep_point(config, rate, coefficients) for rate in SWEEP_RATES]
    return {"config": _echo(config), "points": points, "capacity": capacity(config, points),
            "coefficients": coefficients.record(), "calibration": calibration}


def sweep_point_view(config: SweepPointConfig, actions: list) -> dict:
    """The `lab_sweep_point` simulation: one rate of the sweep."""
    assert not actions
    coefficients, _calibration = calibrate(config)
    return {"config": _echo(config), "point": sweep_point(config, SWEEP_RATES[config.sweep_index], coefficients),
            "num_points": len(SWEEP_RATES)}


def capacity_view(config: CapacityConfig, actions: list) -> dict:
    """The `lab_capacity` simulation: the conclusion from the points the page has."""
    assert not actions
    return {"config": _echo(config), "capacity": capacity(config, config.sweep_points)}


def sweep_point(config: LabConfig, rate: float, coefficients: Coefficients) -> dict:
    _t, result, m, _stm, _blocks = run_once(config, rate, coefficients)
    band = errorband.FACTORS[config.gpu]
    # The error band (pysim.timing.errorband): these requests' times at both ends of it, so
    # capacity() can read the real server's curve off the same replays.
    at = {f"slo_attainment_{end}": errorband.attainment(
        result.ttfts, m["tpots"], config.slo_ttft_ms, config.slo_tpot_ms, getattr(band, end))
        for end in ("fast", "slow")}
    return {"rate_scale": rate, "slo_attainment": m["slo_attainment"], **at,
            "request_goodput": m["request_goodput"], "request_throughput": m["request_throughput"],
            "ttft_p90_ms": m["ttft_ms"]["p90"], "tpot_p90_ms": m["tpot_ms"]["p90"],
            "num_preemptions": result.num_preemptions}


def real_rate(config: LabConfig) -> float:
    """Requests per second at rate scale 1: the trace window's, or the benchmark's."""
    if config.traffic == "benchmark":
        return config.request_rate
    return traces.mean_rate(traces.load(config.trace), config.window_start_min,
                            config.window_minutes)


def capacity(config: LabConfig, points: list[dict]) -> dict:
    """Highest rate scale with attainment >= 90%, the req/s it means, replicas needed,
    and the sentence that says so (the page's and the command line's).

    Between the last rate that meets the target and the first that misses it, the
    crossing is interpolated linearly in attainment. Replicas for the real rate
    (scale 1): ceil(1 / that scale), splitting the traffic evenly.
    """
    out = _crossing(config, points)
    out["band"] = capacity_band(config, points)
    out["sentence"] = _capacity_sentence(out) + _band_sentence(out)
    return out


def capacity_band(config: LabConfig, points: list[dict]) -> dict | None:
    """The capacity with every step time at either end of the GPU's error band
    (pysim.timing.errorband): the point at rate R_k, its times x s, is the real server's at
    R_k / s. None when the points lack the band's attainments."""
    points = sorted(points, key=lambda p: p["rate_scale"])
    if not points or any(k not in p for p in points for k in BAND_KEYS):
        return None
    band = errorband.FACTORS[config.gpu]
    out = {"factors": band.record(), "method": errorband.METHOD,
           "checked": "never against a real server's attainment: only times were measured"}
    for end in ("fast", "slow"):
        s = getattr(band, end)
        scale, bound = errorband.crossing([p["rate_scale"] / s for p in points],
                                          [p[f"slo_attainment_{end}"] for p in points],
                                          ATTAINMENT_TARGET)
        out[end] = {"rate_scale": scale, "bound": bound,
                    "replicas": None if bound == "below" else max(1, math.ceil(1 / scale - 1e-9))}
    return out


def _band_sentence(c: dict) -> str:
    b = c.get("band")
    if not b or c["rate_scale"] is None:
        return ""
    f = b["factors"]

    def end(k):
        e = b[k]
        return (f"below x{e['rate_scale']:.2f}" if e["bound"] == "below" else
                f"at least x{e['rate_scale']:.2f}" if e["bound"] == "at_least" else
                f"x{e['rate_scale']:.2f}")
    replicas = sorted(x for x in (b["slow"]["replicas"], b["fast"]["replicas"]) if x)
    span = (f"; {replicas[0]:,} to {replicas[-1]:,} replicas" if len(replicas) == 2 and replicas[0] != replicas[-1]
            else f"; {replicas[-1]:,} replicas" if replicas else "")
    return (f" With every step x{f['slow']:g} to x{f['fast']:g} of the model's (the central 80% of "
            f"its held-out errors, {f['basis']}), it would be {end('slow')} to {end('fast')}{span}: "
            f"a range from measured time errors, never checked against a real server's attainment.")


def _crossing(config: LabConfig, points: list[dict]) -> dict:
    points = sorted(points, key=lambda p: p["rate_scale"])
    out = {"target": ATTAINMENT_TARGET, "real_rate_req_s": real_rate(config), "rate_scale": None,
           "sustained_req_s": None, "replicas": None, "bound": None,
           "num_points": len(points), "complete": len(points) == len(SWEEP_RATES)}
    if not points:
        return out
    if points[0]["slo_attainment"] < ATTAINMENT_TARGET:
        out["bound"] = "below"  # misses the target even at the lowest rate swept
        out["replicas_at_least"] = math.floor(1 / points[0]["rate_scale"]) + 1
        return out
    scale = points[-1]["rate_scale"]
    out["bound"] = "at_least"  # met at every rate swept
    for a, b in zip(points, points[1:]):
        if b["slo_attainment"] < ATTAINMENT_TARGET:
            fa, fb = a["slo_attainment"], b["slo_attainment"]
            scale = a["rate_scale"] + (fa - ATTAINMENT_TARGET) / (fa - fb) * (b["rate_scale"] - a["rate_scale"])
            out["bound"] = None
            break
    out["rate_scale"] = scale
    out["sustained_req_s"] = scale * out["real_rate_req_s"]
    out["replicas"] = max(1, math.ceil(1 / scale - 1e-9))
    return out


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
        "config": _echo(config),
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


def band_view(config: LabConfig, actions: list) -> dict:
    """`lab_band`: the lab's percentiles and attainment at both ends of the error band.
    Its own call, two more replays, so the lab's answer does not wait for it: the page
    asks for it once the replay is drawn."""
    coefficients, _ = calibrate(config)
    band = percentile_band(config, coefficients)
    f, s_ = band["fast"], band["slow"]
    band["sentence"] = (
        f"If every step took {band['factors']['fast']:.2f}x to {band['factors']['slow']:.2f}x the "
        f"model's ({band['factors']['basis']}: the 10th to 90th percentile of its errors out of "
        f"sample), TTFT p90 would be {f['ttft_ms']['p90']:,.0f} to {s_['ttft_ms']['p90']:,.0f} ms, "
        f"TPOT p90 {f['tpot_ms']['p90']:.1f} to {s_['tpot_ms']['p90']:.1f} ms, and "
        f"{s_['slo_attainment']:.0%} to {f['slo_attainment']:.0%} of requests would meet both targets "
        f"(attainment near the knee was never checked against a real server).")
    return {"config": to_mapping(config), **band}


def percentile_band(config: LabConfig, coefficients: Coefficients) -> dict:
    """The replay's percentiles and attainment with every step time at either end of
    the GPU's error band (pysim.timing.errorband): the real server with steps s times the
    model's is the model at the rate x s, its times x s (two more replays)."""
    band = errorband.FACTORS[config.gpu]
    out = {"factors": band.record(), "method": errorband.METHOD}
    for end in ("fast", "slow"):
        s = getattr(band, end)
        _t, result, m, _stm, _blocks = run_once(config, config.rate_scale * s, coefficients)
        out[end] = {"ttft_ms": {k: m["ttft_ms"][k] * s for k in ("mean", "p50", "p90", "p99")},
                    "tpot_ms": {k: m["tpot_ms"][k] * s for k in ("mean", "p50", "p90", "p99")},
                    "slo_attainment": errorband.attainment(result.ttfts, m["tpots"], config.slo_ttft_ms,
                                                           config.slo_tpot_ms, s)}
    return out


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


def _echo(config: LabConfig) -> dict:
    out = {k: getattr(config, k) for k in config.__dataclass_fields__}
    # A pasted benchmark can be 20,000 characters: echo its size, not its text.
    out["bench_text"] = f"<{len(config.bench_text):,} characters>" if config.bench_text else ""
    return out


# --- the CLI's text -------------------------------------------------------------------
def text(view: dict) -> str:
    cfg = view["config"]
    if "capacity" in view and "points" not in view:
        return _capacity_text(view["capacity"])
    if "point" in view:
        p = view["point"]
        return (f"rate x{p['rate_scale']:g}: attainment {p['slo_attainment']:.1%}, goodput "
                f"{p['request_goodput']:.2f} req/s")
    if "points" in view:
        c = view["coefficients"]
        traffic = (f"{cfg['trace']} trace, {cfg['window_minutes']} min from minute "
                   f"{cfg['window_start_min']}" if cfg["traffic"] == "trace" else
                   f"benchmark at {cfg['request_rate']:g} req/s")
        lines = [f"Capacity sweep: {traffic}, {cfg['gpu']} + {cfg['model']}, max_num_seqs "
                 f"{cfg['max_num_seqs']}, max_num_batched_tokens {cfg['max_num_batched_tokens']} "
                 f"(coefficients {c['source']}); SLO TTFT <= {cfg['slo_ttft_ms']:g} ms, "
                 f"TPOT <= {cfg['slo_tpot_ms']:g} ms",
                 f"{'rate':>6} {'attain':>8} {'goodput':>9} {'thruput':>9} {'TTFT p90':>10} "
                 f"{'TPOT p90':>9} {'preempt':>8}"]
        for p in view["points"]:
            lines.append(f"{'x' + format(p['rate_scale'], 'g'):>6} {p['slo_attainment']:>8.1%} "
                         f"{p['request_goodput']:>9.2f} {p['request_throughput']:>9.2f} "
                         f"{p['ttft_p90_ms']:>10.1f} {p['tpot_p90_ms']:>9.1f} {p['num_preemptions']:>8}")
        lines.append(_capacity_text(view["capacity"]))
        return "\n".join(lines)
    s, h, tr = view["summary"], view["hardware"], view["traffic"]
    lines = [
        f"Serving lab ({view['note']})",
        f"  traffic: {tr['sentence']}",
        f"  hardware: {h['sentence']}",
        f"  scheduler: max_num_seqs {cfg['max_num_seqs']}, max_num_batched_tokens "
        f"{cfg['max_num_batched_tokens']}, chunked prefill on",
        f"  duration {s['duration_s']:.1f} s, {s['request_throughput']:.2f} req/s, "
        f"{s['output_throughput']:.0f} output tok/s, {s['num_preemptions']} preemptions",
        f"  TTFT ms: mean {view['ttft_ms']['mean']:.1f}  p50 {view['ttft_ms']['p50']:.1f}  "
        f"p90 {view['ttft_ms']['p90']:.1f}  p99 {view['ttft_ms']['p99']:.1f}",
        f"  TPOT ms: mean {view['tpot_ms']['mean']:.1f}  p50 {view['tpot_ms']['p50']:.1f}  "
        f"p90 {view['tpot_ms']['p90']:.1f}  p99 {view['tpot_ms']['p99']:.1f}",
        f"  SLO TTFT <= {cfg['slo_ttft_ms']:g} ms and TPOT <= {cfg['slo_tpot_ms']:g} ms: "
        f"{s['good']:,} of {s['completed']:,} good ({s['slo_attainment']:.1%}), goodput "
        f"{s['request_goodput']:.2f} req/s",
    ]
    if view.get("commands"):  # the settings on a real server
        cmd = view["commands"]
        lines += [f"  as vLLM {cmd['vllm_version']} commands:", f"    {cmd['serve']}"]
        lines += [f"    {cmd['prepare']}"] if cmd["prepare"] else []
        lines += [f"    ({cmd['prepare_note']})"] if cmd["prepare_note"] else []
        lines += [f"    {cmd['bench']}"] + [f"    (cannot: {x})" for x in cmd["cannot"]]
    if view.get("bench_summary"):
        lines.append(view["bench_summary"]["text"])
    cal = view.get("calibration")
    if cal:
        lines.append("  " + cal["sentence"])
        for run in cal["runs"]:
            lines.append("    " + run["source"] + ": " + ", ".join(
                f"{k} {run['measured'][k]:.4g} measured, {run['replayed'][k]:.4g} replayed "
                f"({run['error'][k]:+.0%})" for k in fit.FIGURES if k in run["measured"]))
    return "\n".join(lines)


def _capacity_text(c: dict) -> str:
    return "Capacity: " + c["sentence"]


def _capacity_sentence(c: dict) -> str:
    target = f"{c['target']:.0%}"
    so_far = "" if c["complete"] else f" (from the {c['num_points']} of {len(SWEEP_RATES)} rates swept)"
    if c["bound"] == "below":
        return (f"Fewer than {target} of requests meet both targets even at the lowest rate swept{so_far}: "
                f"one replica cannot take this traffic even at x{SWEEP_RATES[0]:g} of its rate; the real "
                f"rate needs more than {c['replicas_at_least']} replicas.")
    if c["rate_scale"] is None:
        return "No sweep points yet."
    more = "at least " if c["bound"] == "at_least" else ""
    replicas = f"{c['replicas']:,} {'replica' if c['replicas'] == 1 else 'replicas'}"
    return (f"One replica sustains {more}x{c['rate_scale']:.2f} of the real rate "
            f"({c['sustained_req_s']:.2f} of {c['real_rate_req_s']:.2f} req/s) with {target} of requests "
            f"meeting both targets{so_far}; the real rate needs {replicas}.")


# --- the page's figures ---------------------------------------------------------------
def async_against_sync(base: LabConfig, view: dict) -> dict:
    """What vLLM's default AsyncScheduler changes against the synchronous Scheduler on the
    lab's default traffic, and on it at 4x: TTFT and TPOT percentiles, preemptions."""
    out = {}
    for load, scale in (("", 1.0), ("x4_", 4.0)):
        for mode in ("async", "sync"):
            c = replace(base, rate_scale=scale, async_scheduling=mode == "async")
            v = view if (mode == "async" and scale == base.rate_scale and base.async_scheduling) \
                else run(c, [])
            for key in ("p50", "p90", "p99"):
                out[f"{load}{mode}_ttft_{key}_ms"] = v["ttft_ms"][key]
            out[f"{load}{mode}_tpot_p50_ms"] = v["tpot_ms"]["p50"]
            out[f"{load}{mode}_preemptions"] = v["summary"]["num_preemptions"]
        out[f"{load}async_ttft_p50_extra_ms"] = out[f"{load}async_ttft_p50_ms"] - out[f"{load}sync_ttft_p50_ms"]
    return out


def figures() -> dict:
    """Every number docs/lab.md states, computed at build time (pysim.figures, group "lab")."""
    base = LabConfig()
    view = run(base, [])
    conv, code = traces.load("conv"), traces.load("code")
    out = {
        "conv_requests": len(conv), "code_requests": len(code),
        "conv_minutes": conv.span_minutes, "code_minutes": code.span_minutes,
        "conv_rate": len(conv) / (conv.offsets_ms[-1] / 1000),
        "code_rate": len(code) / (code.offsets_ms[-1] / 1000),
        "window_minutes": base.window_minutes, "window_start_min": base.window_start_min,
        "window_requests": view["traffic"]["num_requests"],
        "window_rate": view["traffic"]["real_rate_req_s"],
        "num_gpu_blocks": view["hardware"]["num_gpu_blocks"],
        "block_size": view["hardware"]["block_size"],
        "gpu_memory_utilization": view["hardware"]["gpu_memory_utilization"],
        "vllm_version": vllm_defaults.LATEST,
        "kv_pool_tokens": view["hardware"]["kv_pool_tokens"],
        "decode_step_ms": view["hardware"]["decode_step_ms_1k_context"],
        "slo_ttft_ms": base.slo_ttft_ms, "slo_tpot_ms": base.slo_tpot_ms,
        "max_num_seqs": base.max_num_seqs, "max_num_batched_tokens": base.max_num_batched_tokens,
        "ttft_p50_ms": view["ttft_ms"]["p50"], "ttft_p99_ms": view["ttft_ms"]["p99"],
        "tpot_p50_ms": view["tpot_ms"]["p50"], "tpot_p99_ms": view["tpot_ms"]["p99"],
        "attainment_pct": view["summary"]["slo_attainment"] * 100,
        "goodput": view["summary"]["request_goodput"],
        # The same traffic on the synchronous Scheduler (--no-async-scheduling), and both
        # at four times the rate, where the queue is long and preemptions happen.
        **async_against_sync(base, view),
        "max_prompts": fit.MAX_PROMPTS,
        "sweep_rates": len(SWEEP_RATES),
        "sweep_lo": SWEEP_RATES[0], "sweep_hi": SWEEP_RATES[-1],
    }
    for key, gpu in (("h100", "H100"), ("l40s", "L40S")):
        sweep = sweep_view(SweepConfig(gpu=gpu), [])
        cap = sweep["capacity"]
        assert cap["rate_scale"] is not None, f"{gpu}: the page expects a crossing"
        out[f"{key}_scale"] = cap["rate_scale"]
        for end in ("fast", "slow"):  # the error band (pysim.timing.errorband)
            out[f"{key}_scale_{end}"] = cap["band"][end]["rate_scale"]
            out[f"{key}_replicas_{end}"] = cap["band"][end]["replicas"] or 0
            out[f"{key}_factor_{end}"] = cap["band"]["factors"][end]
        out[f"{key}_req_s"] = cap["sustained_req_s"]
        out[f"{key}_replicas"] = cap["replicas"]
        out[f"{key}_label"] = GPUS[gpu].label
        for i, p in enumerate(sweep["points"]):  # the page's table of the sweep
            out[f"{key}_att_{i}"] = p["slo_attainment"] * 100
            out[f"{key}_goodput_{i}"] = p["request_goodput"]
            out[f"{key}_ttft_p90_{i}"] = p["ttft_p90_ms"]
            out[f"{key}_tpot_p90_{i}"] = p["tpot_p90_ms"]
    for i, rate in enumerate(SWEEP_RATES):
        out[f"rate_{i}"] = rate
    small = sweep_view(SweepConfig(max_num_batched_tokens=2048, max_num_seqs=256), [])
    out["h100_2048_scale"] = small["capacity"]["rate_scale"]
    out["h100_2048_replicas"] = small["capacity"]["replicas"]
    band = percentile_band(base, calibrate(base)[0])  # the default replay at both ends of the band
    for end in ("fast", "slow"):
        out[f"ttft_p90_ms_{end}"] = band[end]["ttft_ms"]["p90"]
        out[f"tpot_p90_ms_{end}"] = band[end]["tpot_ms"]["p90"]
        out[f"attainment_pct_{end}"] = band[end]["slo_attainment"] * 100
    out["ttft_p90_ms"] = view["ttft_ms"]["p90"]
    out["tpot_p90_ms"] = view["tpot_ms"]["p90"]
    for gpu, c in DEFAULTS.items():  # the model's coefficients, GPU by GPU
        key = gpu.lower().replace("-", "_")
        out[f"{key}_step_overhead_ms"] = c.step_overhead_ms
        out[f"{key}_request_overhead_us"] = c.request_overhead_us
        out[f"{key}_memory_efficiency"] = c.memory_efficiency
        out[f"{key}_compute_efficiency"] = c.compute_efficiency
    return out | fidelity_figures()


def fidelity_figures() -> dict:
    """The error table of "How far to trust the lab": the shipped records replayed
    (pysim.timing.fidelity, as bench/bench_time_fidelity.py does), at build time, every mode
    and figure: err_{mode}_{figure}_{median,largest,records}, the same for the records
    with and without a peer (err_{with_peers,no_peer}_{mode}_...), and the error band's
    factors, checked against pysim.timing.errorband.FACTORS."""
    from pysim.timing import fidelity, realbench  # the records are read at build time only

    records = realbench.load(realbench.REPO_FILE)
    rows = fidelity.evaluate(records)
    out = {"records": len(records), "records_replayed": len(rows),
           "records_gpus": len({r["gpu"] for r in rows}),
           "records_models": len({r["model"] for r in rows}),
           "records_sources": len({r["source"] for r in rows}),
           "records_no_peer": sum(1 for r in rows if not r["peers"])}

    def put(prefix, stats):
        for mode, by_figure in stats.items():
            for figure, s in by_figure.items():
                out[f"{prefix}{mode}_{figure}_records"] = s["records"]
                for stat in ("median", "largest"):
                    out[f"{prefix}{mode}_{figure}_{stat}"] = None if s[stat] is None else s[stat] * 100

    put("err_", fidelity.summary(rows))
    for group, stats in fidelity.split_by_peers(rows).items():
        put(f"err_{group}_", stats)
    factors = fidelity.band_factors(rows)
    for gpu, f in factors.items():
        shipped = errorband.FACTORS[gpu]
        if (abs(shipped.fast - f["fast"]) > 2e-3 or abs(shipped.slow - f["slow"]) > 2e-3
                or shipped.errors != f["errors"]):
            raise AssertionError(f"pysim.timing.errorband.FACTORS[{gpu!r}] is stale: the records give "
                                 f"{f}; run python -m pysim.timing.fidelity and paste its lines")
        key = gpu.lower().replace("-", "_")
        out[f"band_{key}_fast"], out[f"band_{key}_slow"] = f["fast"], f["slow"]
    return out


# figures: computed only when a page names one (pysim.figures looks groups up lazily).
SIMULATION = Simulation(name="lab", config_cls=LabConfig, run=run, text=text, figures=figures,
                        data_files=traces.site_files)
# The capacity sweep answers another question (up to which rate does one replica keep
# 90% of requests within the SLOs?) with another view, so it is a simulation of its own:
# whole (`lab_sweep`: the command line and the build), one rate at a time
# (`lab_sweep_point`: the page, which shows each point arrive and can stop between two),
# and the conclusion from the points there are (`lab_capacity`: the page, last).
SIMULATIONS = (
    SIMULATION,
    Simulation("lab_sweep", SweepConfig, sweep_view, text=text, data_files=traces.site_files),
    Simulation("lab_sweep_point", SweepPointConfig, sweep_point_view, text=text,
               data_files=traces.site_files),
    Simulation("lab_capacity", CapacityConfig, capacity_view, text=text, data_files=traces.site_files),
    Simulation("lab_band", LabConfig, band_view, data_files=traces.site_files),
)
