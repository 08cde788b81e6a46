"""Real production traffic for the serving lab: the Azure LLM inference trace 2023.

Patel et al., "Splitwise: Efficient generative LLM inference using phase splitting"
(ISCA 2024) published one hour of requests from two Azure services: a conversation
service (19,366 requests) and a coding service (8,819). Each request has an arrival
time, a prompt length (`ContextTokens`) and an answer length (`GeneratedTokens`). The
trace is CC BY 4.0; `data/traces/README.md` holds the credit and how the compact files
here were derived from the CSVs.

Where the files are: the wheel does not carry them (a reader who never opens the lab
should not download them). In CPython they are read from the repository's
`data/traces/`. In the browser the page's worker downloads them into Pyodide's file
system, under `BROWSER_DIR`: while Python starts, when the lab is on the page that boots
it, or else before the lab's first call (`widgets/worker.js`, the `files` of the boot and
of the call). `load` looks in both places.

What a reader can change, and how:
- a window: `minutes` of the hour, starting `start_min` minutes after the first request;
- a rate scale: arrival gaps divided by the scale (2x = the same requests, twice as
  dense), so the length mix and the burst pattern are kept;
- or synthetic Poisson arrivals at the window's own mean rate (times the scale), with
  the same requests in the same order: what `vllm bench serve --request-rate R`
  sends (exponential gaps, rescaled so the last one lands at N / R, as
  `vllm/benchmarks/serve.py` `get_request` does).
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass
from pathlib import Path

from .prng import SplitMix64

TRACES = {"conv": "conversation service", "code": "coding service"}
# Where the browser worker writes the files (see widgets/worker.js).
BROWSER_DIR = "/pysim-data/traces"
REPO_DIR = Path(__file__).resolve().parent.parent / "data" / "traces"


@dataclass(frozen=True)
class TraceRequest:
    arrival_s: float  # seconds after the window's first arrival (after scaling)
    num_prompt_tokens: int
    max_tokens: int  # the answer length the service generated


@dataclass(frozen=True)
class Trace:
    name: str
    offsets_ms: tuple[int, ...]  # arrival after the file's first request
    prompt_tokens: tuple[int, ...]
    output_tokens: tuple[int, ...]

    @property
    def span_minutes(self) -> float:
        return self.offsets_ms[-1] / 60_000

    def __len__(self) -> int:
        return len(self.offsets_ms)


def file_name(name: str) -> str:
    return f"{name}.txt.gz"


def site_files() -> dict[str, Path]:
    """What the site ships for the lab: Pyodide path -> the repository's file.

    The build copies each under a content-hashed name and gives the lab widget the
    map from these paths to those names; the page sends it with Python's boot and the
    widget with its calls, and the worker writes what is missing before it runs the call
    (widgets/worker.js).
    """
    return {f"{BROWSER_DIR}/{file_name(n)}": REPO_DIR / file_name(n) for n in TRACES}


def find(name: str) -> Path:
    """The trace file: the repository's copy, or the one the worker fetched."""
    for folder in (Path(BROWSER_DIR), REPO_DIR):
        path = folder / file_name(name)
        if path.is_file():
            return path
    raise FileNotFoundError(f"trace {name!r} not found in {BROWSER_DIR} or {REPO_DIR}")


_CACHE: dict[str, Trace] = {}


def load(name: str) -> Trace:
    """Read and parse a trace once per process (the page's worker keeps it)."""
    if name not in TRACES:
        raise KeyError(name)
    if name not in _CACHE:
        _CACHE[name] = parse(gzip.decompress(find(name).read_bytes()).decode("ascii"), name)
    return _CACHE[name]


def parse(text: str, name: str = "") -> Trace:
    """The compact file's lines, each "offset_ms prompt_tokens answer_tokens"; lines
    starting with # are its header. One split of the whole body, not one per line:
    this runs in the reader's browser on the lab's first call, and the 19,366 lines of
    the conversation trace take about half as long this way."""
    rows = [line for line in text.splitlines() if line and not line.startswith("#")]
    numbers = list(map(int, " ".join(rows).split()))
    assert len(numbers) == 3 * len(rows), "a trace line is not three numbers"
    offsets = numbers[0::3]
    assert all(a <= b for a, b in zip(offsets, offsets[1:])), "trace not in time order"
    return Trace(name, tuple(offsets), tuple(numbers[1::3]), tuple(numbers[2::3]))


def window(trace: Trace, start_min: float, minutes: float) -> range:
    """Indices of the requests arriving in [start, start + minutes) minutes."""
    lo_ms, hi_ms = start_min * 60_000, (start_min + minutes) * 60_000
    offsets = trace.offsets_ms
    lo = _bisect(offsets, lo_ms)
    hi = _bisect(offsets, hi_ms)
    return range(lo, hi)


def _bisect(a, x) -> int:
    """First index with a[i] >= x (the stdlib's bisect_left, kept local for clarity)."""
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def requests(trace: Trace, start_min: float, minutes: float, rate_scale: float,
             arrivals: str = "trace", seed: int = 0) -> list[TraceRequest]:
    """The window's requests with arrival times in seconds from the first of them.

    `arrivals="trace"` keeps the real gaps divided by `rate_scale`; `"poisson"` draws
    exponential gaps at the window's mean rate times `rate_scale`.
    """
    idx = window(trace, start_min, minutes)
    if not idx:
        return []
    offsets = trace.offsets_ms
    t0 = offsets[idx.start]
    if arrivals == "trace":
        times = [(offsets[i] - t0) / 1000 / rate_scale for i in idx]
    elif arrivals == "poisson":
        times = poisson_times(len(idx), len(idx) / (minutes * 60) * rate_scale, seed)
    else:
        raise ValueError(arrivals)
    return [TraceRequest(t, trace.prompt_tokens[i], trace.output_tokens[i])
            for t, i in zip(times, idx)]


def poisson_times(n: int, rate: float, seed: int) -> list[float]:
    """n arrival times of a Poisson process at `rate` per second, first at 0.

    Like `vllm bench serve`, the cumulative gaps are rescaled so the n-th arrival lands
    at n / rate exactly: two seeds then differ in the pattern, not the average rate.
    """
    if n == 0:
        return []
    rng = SplitMix64(seed)
    times, t = [0.0], 0.0
    for _ in range(n - 1):
        t += -math.log(1.0 - rng.random()) / rate
        times.append(t)
    if n > 1 and t > 0:
        factor = (n / rate) / t
        times = [x * factor for x in times]
    return times


def mean_rate(trace: Trace, start_min: float, minutes: float) -> float:
    """Requests per second the service really received in the window (scale 1)."""
    return len(window(trace, start_min, minutes)) / (minutes * 60)


def stats(trace: Trace, idx: range | None = None) -> dict:
    """Counts and medians, for the page and the tests (the README's table)."""
    idx = idx if idx is not None else range(len(trace))
    prompts = sorted(trace.prompt_tokens[i] for i in idx)
    outputs = sorted(trace.output_tokens[i] for i in idx)
    return {"num_requests": len(idx),
            "num_prompt_tokens_median": _median(prompts), "num_prompt_tokens_max": prompts[-1] if prompts else 0,
            "max_tokens_median": _median(outputs), "max_tokens_max": outputs[-1] if outputs else 0}


def _median(sorted_values: list[int]) -> float:
    n = len(sorted_values)
    if n == 0:
        return 0.0
    mid = n // 2
    return float(sorted_values[mid]) if n % 2 else (sorted_values[mid - 1] + sorted_values[mid]) / 2
