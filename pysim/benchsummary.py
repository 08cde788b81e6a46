"""Read what `vllm bench serve` reports: its printed summary or its `--save-result` JSON.

The printed format (vllm-project/vllm, `vllm/benchmarks/serve.py`, function
`benchmark`, read at commit 009e6d4a, the newest copy we could open): a header line
`"{:=^50}".format(" Serving Benchmark Result ")`, then one line per figure written as
`"{:<40} {:<10}"` (the label padded to 40 characters, then the value; `.2f` for
rates and milliseconds), section rules such as `---------------Time to First
Token----------------`, and a closing line of 50 `=`. Lines it prints only sometimes:
`Maximum request concurrency:` (with `--max-concurrency`), `Request rate configured
(RPS):` (when the rate is not inf), `Request goodput (req/s):` (with `--goodput`),
`Total generated tokens:` (with a tokenizer).

`--save-result` writes one JSON object (`main_async`): `completed`, `duration`,
`total_input_tokens`, `total_output_tokens`, `request_rate` (a number or "inf"),
`max_concurrency` (null or a number), `mean_ttft_ms`, `median_ttft_ms`,
`mean_tpot_ms`, ...; `--append-result` appends further objects, one per line.

`parse` accepts several runs in one text (summaries one after another, or JSON objects),
and raises ConfigError(`field`, "line N: expected ..., got ...") for anything else.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from .config import ConfigError

HEADER = "Serving Benchmark Result"
MAX_RUNS = 4  # each run is simulated a few times by the fit: keep a paste cheap

# Printed label -> our key. Labels not listed are read (they must still look like
# "Label: number") and ignored, so a newer vLLM's extra lines do not break the paste.
LABELS = {
    "Successful requests:": "completed",
    "Failed requests:": "failed",
    "Maximum request concurrency:": "max_concurrency",
    "Request rate configured (RPS):": "request_rate",
    "Benchmark duration (s):": "duration",
    "Total input tokens:": "total_input_tokens",
    "Total generated tokens:": "total_output_tokens",
    "Request throughput (req/s):": "request_throughput",
    "Output token throughput (tok/s):": "output_throughput",
    "Mean TTFT (ms):": "mean_ttft_ms",
    "Median TTFT (ms):": "median_ttft_ms",
    "Mean TPOT (ms):": "mean_tpot_ms",
    "Median TPOT (ms):": "median_tpot_ms",
}
REQUIRED = ("completed", "duration", "total_input_tokens", "total_output_tokens",
            "mean_ttft_ms", "mean_tpot_ms")
_FIGURE = re.compile(r"^(?P<label>[^:]+:)\s+(?P<value>-?\d+(?:\.\d+)?|inf|nan)\s*$")
_RULE = re.compile(r"^[=\-]{3,}.*[=\-]{3,}$|^[=\-]{10,}$")


@dataclass(frozen=True)
class BenchRun:
    """One benchmark run: what was sent and what was measured."""

    completed: int
    duration: float
    total_input_tokens: int
    total_output_tokens: int
    request_rate: float  # math.inf: all requests sent at once
    max_concurrency: int | None
    mean_ttft_ms: float
    mean_tpot_ms: float
    source: str  # "summary" or "json", and where: for messages

    @property
    def mean_prompt_tokens(self) -> int:
        return max(1, round(self.total_input_tokens / self.completed))

    @property
    def mean_output_tokens(self) -> int:
        return max(1, round(self.total_output_tokens / self.completed))

    @property
    def output_throughput(self) -> float:
        return self.total_output_tokens / self.duration

    def record(self) -> dict:
        return {"completed": self.completed, "duration_s": self.duration,
                "request_rate": None if math.isinf(self.request_rate) else self.request_rate,
                "max_concurrency": self.max_concurrency,
                "num_prompt_tokens": self.mean_prompt_tokens,
                "max_tokens": self.mean_output_tokens,
                "mean_ttft_ms": self.mean_ttft_ms, "mean_tpot_ms": self.mean_tpot_ms,
                "output_throughput": self.output_throughput, "source": self.source}


def parse(text: str, field: str = "bench_text") -> list[BenchRun]:
    """Every run in `text` (printed summaries or result JSON), or ConfigError."""
    if not text.strip():
        return []
    if text.lstrip().startswith("{"):
        runs = _parse_json(text, field)
    else:
        runs = _parse_summaries(text, field)
    if len(runs) > MAX_RUNS:
        raise ConfigError(field, f"{len(runs)} runs pasted; at most {MAX_RUNS}")
    return runs


def _parse_summaries(text: str, field: str) -> list[BenchRun]:
    runs, current, start = [], None, 0
    lines = text.splitlines()
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if HEADER in line:
            if current is not None:
                runs.append(_run(current, f"summary at line {start}", field))
            current, start = {}, number
            continue
        if current is None or not line:
            continue  # text before the first summary: vLLM's progress lines, the command
        if _RULE.match(line):
            if set(line) == {"="}:  # the closing rule ends this run
                runs.append(_run(current, f"summary at line {start}", field))
                current = None
            continue
        m = _FIGURE.match(line)
        if not m:
            raise ConfigError(field, f"line {number}: expected 'Label: number' as vllm bench serve "
                                     f"prints it (e.g. 'Mean TTFT (ms):  41.20'), got {_quote(line)}")
        key = LABELS.get(m["label"])
        if key is not None:
            current[key] = float(m["value"])
    if current is not None:
        runs.append(_run(current, f"summary at line {start}", field))
    if not runs:
        raise ConfigError(field, f"line 1: expected a '{'{:=^50}'.format(' ' + HEADER + ' ')}' line "
                                 f"(the summary vllm bench serve prints) or a --save-result JSON "
                                 f"object, got {_quote(lines[0].strip() if lines else '')}")
    return runs


def _parse_json(text: str, field: str) -> list[BenchRun]:
    decoder = json.JSONDecoder()
    runs, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ConfigError(field, f"line {exc.lineno}: expected a --save-result JSON object "
                                     f"({exc.msg})") from None
        line = text.count("\n", 0, pos) + 1
        if not isinstance(obj, dict):
            raise ConfigError(field, f"line {line}: expected a JSON object, got {type(obj).__name__}")
        values = {}
        for key in set(LABELS.values()):
            if key in obj:
                value = obj[key]
                if key == "request_rate" and value == "inf":
                    value = math.inf
                if key == "max_concurrency" and value is None:
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ConfigError(field, f"run {len(runs) + 1} (JSON): '{key}' should be a number, "
                                             f"got {_quote(json.dumps(value))}")
                values[key] = float(value)
        runs.append(_run(values, f"JSON object {len(runs) + 1}", field))
    return runs


def _run(values: dict, where: str, field: str) -> BenchRun:
    missing = [k for k in REQUIRED if k not in values]
    if missing:
        wanted = {v: k for k, v in LABELS.items()}
        names = ", ".join(f"'{wanted[k]}'" if "summary" in where else f"'{k}'" for k in missing)
        raise ConfigError(field, f"{where}: missing {names}; vllm bench serve prints it with a "
                                 f"tokenizer and the default --percentile-metrics")
    completed = values["completed"]
    if completed < 1 or completed != int(completed) or not 0 < values["duration"] < math.inf:
        raise ConfigError(field, f"{where}: expected at least 1 successful request and a "
                                 f"positive duration")
    rate = values.get("request_rate", math.inf)
    conc = values.get("max_concurrency")
    for key in ("mean_ttft_ms", "mean_tpot_ms", "total_input_tokens", "total_output_tokens"):
        if not 0 <= values[key] < math.inf:
            raise ConfigError(field, f"{where}: '{key}' should be a finite number >= 0")
    if values["mean_tpot_ms"] <= 0:
        raise ConfigError(field, f"{where}: the mean TPOT is 0; calibration needs answers longer "
                                 f"than one token")
    if not rate > 0:
        raise ConfigError(field, f"{where}: the request rate should be above 0")
    if conc is not None and (conc < 1 or conc != int(conc)):
        raise ConfigError(field, f"{where}: the maximum concurrency should be a whole number >= 1")
    return BenchRun(int(completed), values["duration"], int(values["total_input_tokens"]),
                    int(values["total_output_tokens"]), rate,
                    None if conc is None else int(conc), values["mean_ttft_ms"],
                    values["mean_tpot_ms"], where)


def _quote(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
