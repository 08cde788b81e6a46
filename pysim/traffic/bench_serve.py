"""`vllm bench serve`, replayed: the traffic it sends and the figures it prints.

A benchmark run of vLLM's client (vllm-project/vllm, `vllm/benchmarks/serve.py` and
`vllm/benchmarks/datasets.py`) is three choices, each mirrored here:

- the requests (`--dataset-name random`): `--num-prompts` prompts whose lengths are
  drawn uniformly from the whole numbers in [floor(L (1 - r)), ceil(L (1 + r))] for
  `--random-input-len` L and
  `--random-range-ratio` r (0 by default: every prompt exactly L), answers likewise
  from `--random-output-len`, and the same `--random-prefix-len` tokens in front of
  every prompt (`RandomDataset.sample`). With `--ignore-eos` each answer has exactly
  its drawn length; we assume that (a model that stops early sends fewer tokens);
- when they are sent (`get_request`): all at once for `--request-rate inf`, otherwise
  gaps drawn from a gamma distribution with shape `--burstiness` (1 is a Poisson
  process) and mean 1 / rate, rescaled so the last request goes out at N / rate;
  `--max-concurrency C` lets at most C requests be in flight, the next one sent when
  one finishes (its TTFT counts from then: the client takes its clock after the
  semaphore);
- what is reported (`calculate_metrics`): TTFT from sending to the first token; TPOT
  (latency - TTFT) / (output tokens - 1) for answers longer than one token; ITL every
  gap between two tokens of a request; E2EL the whole latency; throughputs over the
  duration from the benchmark's start (before the first gap) to the last answer;
  mean, median and P99 with numpy's percentile (linear between ranks). Read at
  commit 009e6d4a of serve.py and 0056b87f of datasets.py.

Other datasets (ShareGPT, say) send recorded conversations, of many lengths. Only
their totals are in a summary, so a replay of one gives every prompt the mean length
and spreads the answers around their mean (`_spread`); `dataset_name` records which
it was, so a reader sees it.

vLLM draws its random numbers with numpy (`--seed 0`); we use pysim's SplitMix64, so
the lengths and gaps follow the same distributions but are not the same draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pysim.engine.replay import ReplayResult
from pysim.prng import SplitMix64
from pysim.utils import percentile

DATASETS = ("random", "sharegpt", "other")
# The figures a summary prints and --save-result writes (the JSON's names).
STATS = ("ttft", "tpot", "itl", "e2el")


@dataclass(frozen=True)
class Benchmark:
    """One `vllm bench serve` run's traffic, under its own flags' names."""

    num_prompts: int = 1000
    random_input_len: int = 1024
    random_output_len: int = 128
    random_range_ratio: float = 0.0
    random_prefix_len: int = 0
    request_rate: float = math.inf
    burstiness: float = 1.0
    max_concurrency: int | None = None
    dataset_name: str = "random"
    seed: int = 0
    # A run saved with --save-result --save-detailed names every request: (prompt tokens,
    # answer tokens, seconds since the first was sent), replayed as they are instead of
    # drawn (the lengths above then bound them: the longest prompt and answer).
    recorded: tuple | None = None

    def __post_init__(self):
        assert self.num_prompts >= 1 and self.random_input_len >= 1 and self.random_output_len >= 1
        assert 0 <= self.random_range_ratio < 1 and self.random_prefix_len >= 0
        assert self.request_rate > 0 and self.burstiness > 0
        assert self.max_concurrency is None or self.max_concurrency >= 1
        assert self.dataset_name in DATASETS

    def command(self) -> str:
        """The client command line that sends this traffic (model and server omitted)."""
        parts = ["vllm bench serve", "--dataset-name random",
                 f"--random-input-len {self.random_input_len}",
                 f"--random-output-len {self.random_output_len}"]
        if self.random_range_ratio:
            parts.append(f"--random-range-ratio {self.random_range_ratio:g}")
        if self.random_prefix_len:
            parts.append(f"--random-prefix-len {self.random_prefix_len}")
        parts.append(f"--num-prompts {self.num_prompts}")
        parts.append("--request-rate " + ("inf" if math.isinf(self.request_rate)
                                          else f"{self.request_rate:g}"))
        if self.burstiness != 1 and not math.isinf(self.request_rate):
            parts.append(f"--burstiness {self.burstiness:g}")
        if self.max_concurrency is not None:
            parts.append(f"--max-concurrency {self.max_concurrency}")
        parts.append("--ignore-eos")
        if self.recorded is not None:  # the lengths above only bound them
            return (f"{self.num_prompts:,} requests recorded by vllm bench serve --save-detailed, "
                    f"each with its own lengths and send time")
        return " ".join(parts)

    def record(self) -> dict:
        return {"dataset_name": self.dataset_name, "num_prompts": self.num_prompts,
                "recorded": self.recorded is not None,
                "random_input_len": self.random_input_len,
                "random_output_len": self.random_output_len,
                "random_range_ratio": self.random_range_ratio,
                "random_prefix_len": self.random_prefix_len,
                "request_rate": None if math.isinf(self.request_rate) else self.request_rate,
                "burstiness": self.burstiness, "max_concurrency": self.max_concurrency,
                "command": self.command()}


@dataclass(frozen=True)
class Requests:
    """What the client sends: times (s), prompt and answer lengths, in sending order."""

    arrivals: list[float]
    prompt_tokens: list[int]
    output_tokens: list[int]
    prefix_len: int

    def token_ids(self, i: int) -> list[int]:
        """Request i's prompt ids: the shared prefix, then ids no other request has
        (vLLM's random prompts share nothing but the prefix)."""
        own = (i + 1) << 32
        n = self.prompt_tokens[i] - self.prefix_len
        return list(range(self.prefix_len)) + list(range(own, own + n))


def requests(bench: Benchmark) -> Requests:
    if bench.recorded is not None:  # a detailed result: its own requests, sent when they were
        return Requests([r[2] for r in bench.recorded], [r[0] for r in bench.recorded],
                        [r[1] for r in bench.recorded], 0)
    rng = SplitMix64(bench.seed)
    n, r = bench.num_prompts, bench.random_range_ratio
    if bench.dataset_name != "random":
        inputs = [bench.random_input_len] * n
        outputs = _spread(rng, n, bench.random_output_len)
    else:
        lo_in, hi_in = _range(bench.random_input_len, r)
        lo_out, hi_out = _range(bench.random_output_len, r)
        inputs = [max(1, rng.randint(lo_in, hi_in)) + bench.random_prefix_len for _ in range(n)]
        outputs = [rng.randint(max(1, lo_out), hi_out) for _ in range(n)]
    return Requests(send_times(n, bench.request_rate, bench.burstiness, bench.seed), inputs,
                    outputs, bench.random_prefix_len)


def _spread(rng: SplitMix64, n: int, mean: int) -> list[int]:
    """n answer lengths of a recorded-conversation dataset whose mean is all a summary
    gives: exponentially spread (an assumption, not ShareGPT's measured shape), then
    scaled so they add up to n x mean exactly. The spread matters when every request is
    sent at once: the run lasts as long as its longest answer."""
    draws = [-math.log(1.0 - rng.random()) for _ in range(n)]
    total = math.fsum(draws) or 1.0
    out = [max(1, round(d * n * mean / total)) for d in draws]
    out[out.index(max(out))] += n * mean - sum(out)  # the rounding's remainder
    return out if min(out) >= 1 else [mean] * n


def _range(length: int, ratio: float) -> tuple[int, int]:
    """[floor(L (1 - r)), ceil(L (1 + r))], both ends drawn (vLLM's RandomDataset)."""
    return math.floor(length * (1 - ratio)), math.ceil(length * (1 + ratio))


def send_times(n: int, rate: float, burstiness: float, seed: int) -> list[float]:
    """When the client sends each of n requests, in seconds from the benchmark's start:
    all at 0 for an infinite rate; otherwise cumulative gaps from a gamma distribution
    (shape `burstiness`, mean 1 / rate; the first request waits one gap too), rescaled
    so the last is sent at n / rate exactly (vLLM >= 0.10, `get_request`)."""
    if math.isinf(rate):
        return [0.0] * n
    rng = SplitMix64(seed)
    times, t = [], 0.0
    for _ in range(n):
        t += _gamma(rng, burstiness) / (rate * burstiness)
        times.append(t)
    factor = (n / rate) / t
    return [x * factor for x in times]


def _gamma(rng: SplitMix64, shape: float) -> float:
    """A draw from Gamma(shape, 1). Shape 1 is the exponential, -ln(1 - U); other
    shapes use Marsaglia and Tsang's method (ACM TOMS 26(3), 2000), with
    Gamma(a) = Gamma(a + 1) x U^(1/a) for a < 1."""
    if shape == 1:
        return -math.log(1.0 - rng.random())
    if shape < 1:
        return _gamma(rng, shape + 1) * (1.0 - rng.random()) ** (1 / shape)
    d = shape - 1 / 3
    c = 1 / math.sqrt(9 * d)
    while True:
        # A standard normal from two uniforms (Box and Muller, 1958).
        z = math.sqrt(-2 * math.log(1.0 - rng.random())) * math.cos(2 * math.pi * rng.random())
        v = (1 + c * z) ** 3
        if v > 0 and math.log(1.0 - rng.random()) < z * z / 2 + d - d * v + d * math.log(v):
            return d * v


# --- what vLLM reports --------------------------------------------------------------
def metrics(result: ReplayResult, prompt_tokens: list[int]) -> dict:
    """The --save-result JSON's figures for a finished replay (times in ms)."""
    n = len(result.sent)
    assert n == len(prompt_tokens) and result.itl is not None, "replay(..., itl=True)"
    duration = max(result.finished)  # from the benchmark's start, time 0
    ttfts = sorted(result.ttfts)
    e2els = sorted(result.latencies)
    tpots = sorted((lat - t) / (out - 1) for lat, t, out in
                   zip(result.latencies, result.ttfts, result.output_tokens) if out > 1)
    out_tokens, in_tokens = sum(result.output_tokens), sum(prompt_tokens)
    m = {"completed": n, "duration": duration,
         "total_input_tokens": in_tokens, "total_output_tokens": out_tokens,
         "request_throughput": n / duration, "output_throughput": out_tokens / duration,
         "total_token_throughput": (in_tokens + out_tokens) / duration}
    for name, values in (("ttft", ttfts), ("tpot", tpots), ("e2el", e2els)):
        m[f"mean_{name}_ms"] = math.fsum(values) / len(values) * 1000 if values else 0.0
        m[f"median_{name}_ms"] = percentile(values, 50) * 1000
        m[f"p99_{name}_ms"] = percentile(values, 99) * 1000
    gaps = sorted(result.itl)
    count = sum(w for _, w in gaps)
    m["mean_itl_ms"] = math.fsum(v * w for v, w in gaps) / count * 1000 if count else 0.0
    m["median_itl_ms"] = weighted_percentile(gaps, 50) * 1000
    m["p99_itl_ms"] = weighted_percentile(gaps, 99) * 1000
    return m


def weighted_percentile(sorted_pairs: list[tuple[float, int]], p: float) -> float:
    """numpy's default percentile of the values (value, count) stand for, each
    repeated count times (ITL: a run of decodes gives every request the same gaps)."""
    total = sum(w for _, w in sorted_pairs)
    if not total:
        return 0.0
    h = (total - 1) * p / 100
    lo = math.floor(h)
    lo_value = hi_value = None
    seen = 0
    for value, w in sorted_pairs:
        if lo_value is None and lo < seen + w:
            lo_value = value
        if lo + 1 < seen + w or seen + w == total:
            hi_value = value
            if lo_value is not None:
                break
        seen += w
    return lo_value + (hi_value - lo_value) * (h - lo)


SECTIONS = (("ttft", "Time to First Token", "TTFT"),
            ("tpot", "Time per Output Token (excl. 1st token)", "TPOT"),
            ("itl", "Inter-token Latency", "ITL"),
            ("e2el", "End-to-end Latency", "E2EL"))


def summary_text(m: dict, bench: Benchmark) -> str:
    """The result block as `vllm bench serve` prints it (same labels and widths), for the
    figures pysim computes. Left out: the peak throughput lines of newer versions."""
    row = lambda label, value: f"{label:<40} {value:<10}"  # noqa: E731
    lines = ["{:=^50}".format(" Serving Benchmark Result "),
             row("Successful requests:", m["completed"])]
    if bench.max_concurrency is not None:
        lines.append(row("Maximum request concurrency:", bench.max_concurrency))
    if not math.isinf(bench.request_rate):
        lines.append(row("Request rate configured (RPS):", f"{bench.request_rate:.2f}"))
    lines += [row("Benchmark duration (s):", f"{m['duration']:.2f}"),
              row("Total input tokens:", m["total_input_tokens"]),
              row("Total generated tokens:", m["total_output_tokens"]),
              row("Request throughput (req/s):", f"{m['request_throughput']:.2f}"),
              row("Output token throughput (tok/s):", f"{m['output_throughput']:.2f}"),
              row("Total Token throughput (tok/s):", f"{m['total_token_throughput']:.2f}")]
    for key, title, short in SECTIONS:
        lines.append("{s:{c}^{n}}".format(s=title, n=50, c="-"))
        lines.append(row(f"Mean {short} (ms):", f"{m[f'mean_{key}_ms']:.2f}"))
        lines.append(row(f"Median {short} (ms):", f"{m[f'median_{key}_ms']:.2f}"))
        lines.append(row(f"P99 {short} (ms):", f"{m[f'p99_{key}_ms']:.2f}"))
    lines.append("=" * 50)
    return "\n".join(lines)
