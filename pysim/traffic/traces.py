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

from pysim.config import ConfigError
from pysim.prng import SplitMix64
from pysim.utils import percentile

TRACES = {"conv": "conversation service", "code": "coding service",
          "mooncake_conv": "Kimi conversation (Mooncake)", "mooncake_synth": "synthetic (Mooncake)"}
# The traces that name each prompt's blocks, so that shared prefixes are known.
PREFIX_TRACES = ("mooncake_conv", "mooncake_synth")
TRACE_BLOCK = 512  # tokens per block id in the Mooncake traces
# Where the browser worker writes the files (see widgets/worker.js).
BROWSER_DIR = "/pysim-data/traces"
REPO_DIR = Path(__file__).resolve().parents[2] / "data" / "traces"


@dataclass(frozen=True)
class TraceRequest:
    arrival_s: float  # seconds after the window's first arrival (after scaling)
    num_prompt_tokens: int
    max_tokens: int  # the answer length the service generated
    hash_ids: tuple = ()  # the prompt's 512-token blocks, named (Mooncake traces only)


@dataclass(frozen=True)
class Trace:
    name: str
    offsets_ms: tuple[int, ...]  # arrival after the file's first request
    prompt_tokens: tuple[int, ...]
    output_tokens: tuple[int, ...]
    hash_ids: tuple | None = None  # per request, its blocks' ids (Mooncake); None for Azure

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
    """The compact file's lines; lines starting with # are its header.

    Azure lines are "offset_ms prompt_tokens answer_tokens"; Mooncake lines add "parent
    new": the last block id the prompt shares with earlier requests (-1: none) and how
    many fresh ids follow it (data/traces/derive_mooncake.py says why that is lossless).
    One split of the whole body, not one per line: this runs in the reader's browser
    on the lab's first call, and a split per line takes about twice as long.
    """
    rows = [line for line in text.splitlines() if line and not line.startswith("#")]
    numbers = list(map(int, " ".join(rows).split()))
    width = len(numbers) // len(rows) if rows else 3
    assert width in (3, 5) and len(numbers) == width * len(rows), "a trace line is not 3 or 5 numbers"
    offsets = numbers[0::width]
    assert all(a <= b for a, b in zip(offsets, offsets[1:])), "trace not in time order"
    hash_ids = _rebuild_ids(numbers[3::5], numbers[4::5]) if width == 5 else None
    return Trace(name, tuple(offsets), tuple(numbers[1::width]), tuple(numbers[2::width]), hash_ids)


def _rebuild_ids(parents: list[int], fresh: list[int]) -> tuple:
    """Each request's block ids from (last shared id, fresh count). A shared chain is a
    prefix of the ids of the request that introduced its last id; fresh ids continue
    the count."""
    where: list[tuple[int, int]] = []  # block id -> (request that introduced it, position)
    out: list[tuple] = []
    for parent, n in zip(parents, fresh):
        if parent >= 0:
            r, pos = where[parent]
            head = out[r][:pos + 1]
        else:
            head = ()
        start = len(where)
        where.extend((len(out), len(head) + j) for j in range(n))
        out.append(head + tuple(range(start, start + n)))
    return tuple(out)


class PromptTokens:
    """A Mooncake prompt's token ids, derived from its block ids, and the tokens sampled after it.

    Block id k stands for 512 tokens; here they are k*512 + 1 ... k*512 + 512, cut at
    the prompt's length, so two prompts hold the same tokens exactly where the trace
    says they share blocks. The ids are made on demand (a 7,000-token prompt is never
    a list): the engine reads them in block-sized slices, and appends what it samples.

    `block_hashes(block_size)` names each full block of the prompt by (block id, its
    place inside the 512), as one integer, which is what the chained hash of those tokens identifies:
    the id fixes every token before it, as the trace's ids name a prefix, not a block
    alone. The engine takes them as vLLM's `Request.block_hashes`, so the cache never
    hashes a prompt token; the tests check the hits equal those of the spelled-out ids.
    """

    __slots__ = ("ids", "num_prompt_tokens", "sampled")

    def __init__(self, ids: tuple, num_prompt_tokens: int, sampled=None):
        assert len(ids) == -(-num_prompt_tokens // TRACE_BLOCK), "one id per started block"
        self.ids = ids
        self.num_prompt_tokens = num_prompt_tokens
        self.sampled = list(sampled or ())

    def __len__(self) -> int:
        return self.num_prompt_tokens + len(self.sampled)

    def _token(self, p: int) -> int:
        n = self.num_prompt_tokens
        if p < n:
            return self.ids[p // TRACE_BLOCK] * TRACE_BLOCK + p % TRACE_BLOCK + 1
        return self.sampled[p - n]

    def __getitem__(self, key):
        if isinstance(key, slice):
            n = self.num_prompt_tokens
            start, stop = key.start, key.stop
            if key.step is None and start is not None and stop is not None and n <= start <= stop:
                # generated tokens only: the common slice in a decode (a block being hashed)
                return self.sampled[start - n:stop - n]
            start, stop, step = key.indices(len(self))
            return [self._token(p) for p in range(start, stop, step)]
        if key < 0:
            key += len(self)
        if not 0 <= key < len(self):
            raise IndexError(key)
        return self._token(key)

    def append(self, token_id: int) -> None:
        self.sampled.append(token_id)

    def extend(self, token_ids) -> None:
        self.sampled.extend(token_ids)

    def copy(self) -> "PromptTokens":
        return PromptTokens(self.ids, self.num_prompt_tokens, self.sampled)

    def block_hashes(self, block_size: int) -> list[int]:
        """Block g's name: id * (blocks per id) + its place + 1 (never 0, which reads as "no parent")."""
        assert TRACE_BLOCK % block_size == 0, "a block must divide the trace's 512"
        per = TRACE_BLOCK // block_size
        out: list[int] = []
        grow = out.extend
        for k in self.ids:
            grow(range(k * per + 1, k * per + per + 1))
        del out[self.num_prompt_tokens // block_size:]
        return out


def check_window(name: str, start_min: int, minutes: int) -> None:
    """Refuse, naming the field, a trace the worker has not fetched or a window that runs
    past the trace's end (the lab's and the cluster's `trace` and `window_start_min`)."""
    try:
        span = int(load(name).span_minutes)
    except FileNotFoundError:
        raise ConfigError("trace", f"the {name} trace is not loaded; in the page, the widget "
                                   f"downloads it with its first call") from None
    if start_min + minutes > span:
        raise ConfigError("window_start_min",
                          f"got {start_min}, but the {name} trace has {span} whole minutes; "
                          f"expected a whole number from 0 to {span - minutes} for a "
                          f"{minutes}-minute window")


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
    ids = trace.hash_ids or {}
    return [TraceRequest(t, trace.prompt_tokens[i], trace.output_tokens[i], ids[i] if ids else ())
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
            "num_prompt_tokens_median": percentile(prompts, 50), "num_prompt_tokens_max": prompts[-1] if prompts else 0,
            "max_tokens_median": percentile(outputs, 50), "max_tokens_max": outputs[-1] if outputs else 0}
