"""The lab's settings (LabConfig): what the reader set, checked, and what it names.

vLLM's scheduler knobs come whole (pysim.engine.scheduler.SchedulerConfig); the traffic is
a trace window or `vllm bench serve`'s flags under their own names (vLLM 0.34.0,
vllm/benchmarks/serve.py). `defaults`, `server` and `benchmark` turn the settings into
vLLM's defaults on that GPU, the fit's server and the benchmark they describe; `echo`
is the config as every view repeats it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pysim import fields
from pysim.config import ConfigError, bounded, choice, data
from pysim.engine import vllm_defaults
from pysim.engine.scheduler import SchedulerConfig
from pysim.timing import fit
from pysim.timing.catalog import GPUS
from pysim.timing.steptime import check_fits
from pysim.traffic import bench_serve, traces

# The slowest benchmark rate the lab takes, in requests per second (0 aside: all at once).
# 1,000 prompts at 0.01 req/s already span 28 hours; far lower, the gaps between sends
# no longer fit in a float (1,000 / 5e-324 is infinite).
MIN_RATE = 0.01


MAX_BENCH_CHARS = 20_000


# A --save-detailed JSON carries every request's ITLs and text: about 2 MB for 640 requests
# of 128 tokens. Its size is bounded here and its requests by fit.MAX_PROMPTS.
MAX_DETAILED_CHARS = 4_000_000


def _check_bench_text(value):
    if not isinstance(value, str):
        raise ConfigError("bench_text", "expected text: a vllm bench serve summary or result JSON")
    limit = MAX_DETAILED_CHARS if value.lstrip().startswith("{") else MAX_BENCH_CHARS
    if len(value) > limit:
        raise ConfigError("bench_text", f"got {len(value):,} characters; at most {MAX_BENCH_CHARS:,} "
                                        f"of printed summaries, or {MAX_DETAILED_CHARS:,} of "
                                        f"--save-result JSON")
    return value


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


def echo(config: LabConfig) -> dict:
    out = {k: getattr(config, k) for k in config.__dataclass_fields__}
    # A pasted benchmark can be 20,000 characters: echo its size, not its text.
    out["bench_text"] = f"<{len(config.bench_text):,} characters>" if config.bench_text else ""
    return out
