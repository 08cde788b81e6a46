"""Read what a reader pastes from `vllm bench serve`: the settings and the results.

The results: the block the client prints (vllm-project/vllm, `vllm/benchmarks/serve.py`,
function `benchmark`, read at commit 009e6d4a): a header line
`"{:=^50}".format(" Serving Benchmark Result ")`, one line per figure written as
`"{:<40} {:<10}"` (rates and milliseconds with `.2f`), section rules such as
`---------------Time to First Token----------------`, and a closing line of 50 `=`.
Lines it prints only sometimes: `Maximum request concurrency:` (with
`--max-concurrency`), `Request rate configured (RPS):` (for a finite rate),
`Total generated tokens:` (with a tokenizer). Or the `--save-result` JSON: one object
(`completed`, `duration`, `total_input_tokens`, `total_output_tokens`, `request_rate`,
`burstiness`, `max_concurrency`, `num_prompts`, `mean_ttft_ms`, ...), one per line with
`--append-result`.

The settings, from whatever the paste holds before each summary: the command line
(`--random-input-len 1024`), the `Namespace(...)` that older clients print
(`random_input_len=1024`), the client's log lines (`Traffic request rate: inf`,
`Burstiness factor: 1.0`), or the JSON's own keys. What none of them says is taken from
the summary where it can be (the prompt and answer lengths from its token totals, the
number of prompts from its successful requests, the rate from `Request rate
configured`, whose absence means inf) and the view says so (`notes`); what cannot be
known (lengths without totals or flags) is asked for, naming the line to paste.

The server's flags, from a `vllm serve` line pasted before a summary (`SERVE_FLAGS`: the
model, `--max-num-seqs`, `--max-num-batched-tokens`, `--block-size`,
`--[no-]async-scheduling`), go with that run (`Pasted.server`), so the lab can write its
settings as the two commands and read them back.

A result saved with `--save-result --save-detailed` (vLLM 0.34.0, `vllm/benchmarks/serve.py`,
`benchmark`: `input_lens`, `output_lens`, `ttfts`, `itls`, `latencies`, `start_times`,
`errors`) names every request: its lengths and send time become the replayed traffic
(`Benchmark.recorded`), and what it measured per request (`Pasted.requests`) is what the
lab compares its replay with, request by request. Failed requests (an error) are left out.

`parse` raises ConfigError(`field`, "line N: expected ..., got ...") for text that is
not vLLM's.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field as dataclass_field

from pysim.config import ConfigError
from pysim.traffic.bench_serve import Benchmark

HEADER = "Serving Benchmark Result"
MAX_RUNS = 4  # each run is replayed by the fit: keep a paste cheap
# `vllm serve` flags (vLLM 0.34.0, vllm/engine/arg_utils.py) -> the lab's names.
SERVE_FLAGS = {"max-num-seqs": "max_num_seqs", "max-num-batched-tokens": "max_num_batched_tokens",
               "block-size": "block_size"}
SERVE_SWITCHES = {"--async-scheduling": ("async_scheduling", True),
                  "--no-async-scheduling": ("async_scheduling", False)}
_SERVE = re.compile(r"\bvllm\s+serve\s+([^\s-][^\s]*)?")
_MODEL = re.compile(r"--model[ =]+([^\s]+)")

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
    "P99 TTFT (ms):": "p99_ttft_ms",
    "Mean TPOT (ms):": "mean_tpot_ms",
    "Median TPOT (ms):": "median_tpot_ms",
    "P99 TPOT (ms):": "p99_tpot_ms",
    "Mean ITL (ms):": "mean_itl_ms",
    "Median ITL (ms):": "median_itl_ms",
    "P99 ITL (ms):": "p99_itl_ms",
}
REQUIRED = ("completed", "duration", "mean_ttft_ms", "mean_tpot_ms")
# The client's flags we read, under their Namespace names (the flag is --NAME-WITH-HYPHENS).
SETTINGS = ("dataset_name", "random_input_len", "random_output_len", "random_range_ratio",
            "random_prefix_len", "num_prompts", "request_rate", "burstiness",
            "max_concurrency", "seed")
LOG_LINES = {"Traffic request rate:": "request_rate", "Burstiness factor:": "burstiness",
             "Maximum request concurrency:": "max_concurrency"}
# Labels vLLM prints that we do not use: known, so a summary whose line breaks were lost
# (pasted from a rendered issue) can be cut back into lines at every label.
OTHER_LABELS = ("Request goodput (req/s):", "Peak output token throughput (tok/s):",
                "Peak concurrent requests:", "Total Token throughput (tok/s):",
                "Total token throughput (tok/s):", "RTFx:")
_LINE_START = re.compile(r"\s+(?=" + "|".join(re.escape(x) for x in (*LABELS, *OTHER_LABELS))
                         + r"|-{5,}[A-Za-z]|={10,}\s*$)")
_FIGURE = re.compile(r"^(?P<label>[^:]+:)\s+(?P<value>-?\d+(?:\.\d+)?|inf|nan)\s*$")
_RULE = re.compile(r"^[=\-]{3,}.*[=\-]{3,}$|^[=\-]{10,}$")
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)(?:[ =]+([^\s\-][^\s]*))?")
_KWARG = re.compile(r"\b([a-z_][a-z0-9_]*)=('[^']*'|\"[^\"]*\"|[^,)\s]+)")


@dataclass(frozen=True)
class Pasted:
    """One pasted run: the traffic it sent, what it measured, and how we know."""

    bench: Benchmark
    measured: dict  # mean_ttft_ms, mean_tpot_ms, output_throughput, and more where printed
    source: str  # "summary at line 12" or "JSON object 2": for messages
    notes: tuple  # what was assumed or derived, in words
    # The `vllm serve` line's settings (SERVE_FLAGS' names, "model" the name it served).
    server: dict = dataclass_field(default_factory=dict)
    # A detailed result's requests, in its order: (TTFT s, TPOT s or None), as measured.
    requests: tuple | None = None

    def record(self) -> dict:
        return {"source": self.source, "benchmark": self.bench.record(),
                "notes": list(self.notes)}


def parse(text: str, field: str = "bench_text") -> list[Pasted]:
    """Every run in `text` (printed summaries or result JSON), or ConfigError."""
    if not text.strip():
        return []
    if text.lstrip().startswith("{"):
        runs = _parse_json(text, field)
    else:
        runs = _parse_text(text, field)
    if len(runs) > MAX_RUNS:
        raise ConfigError(field, f"{len(runs)} runs pasted; at most {MAX_RUNS}")
    return runs


def _unfold(text: str) -> str:
    """Put a summary pasted on one line (its breaks lost) back on its lines."""
    out = []
    for line in text.splitlines():
        if HEADER in line and len(line.strip()) > 60:
            line = _LINE_START.sub("\n", line)
        out.append(line)
    return "\n".join(out)


def _parse_text(text: str, field: str) -> list[Pasted]:
    runs, current, start = [], None, 0
    settings: dict = {}  # flags seen since the last summary: they belong to the next one
    lines = _unfold(text).splitlines()
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if HEADER in line:
            if current is not None:
                runs.append(_run(current, settings, f"summary at line {start}", field))
                settings = {}
            current, start = {}, number
            continue
        if current is None:
            _read_settings(line, settings)  # the command, a Namespace, log lines
            continue
        if not line:
            continue
        if _RULE.match(line):
            if set(line) == {"="}:  # the closing rule ends this run
                runs.append(_run(current, settings, f"summary at line {start}", field))
                current, settings = None, {}
            continue
        m = _FIGURE.match(line)
        if not m and number == len(lines) and line.endswith(("...", "\u2026")):
            continue  # a paste cut short at its very end ("P99 TPOT (ms)..."): keep the rest
        if not m:
            raise ConfigError(field, f"line {number}: expected 'Label: number' as vllm bench serve "
                                     f"prints it (e.g. 'Mean TTFT (ms):  41.20'), got {_quote(line)}")
        key = LABELS.get(m["label"])
        if key is not None:
            current[key] = float(m["value"])
    if current is not None:
        runs.append(_run(current, settings, f"summary at line {start}", field))
    if not runs:
        raise ConfigError(field, f"line 1: expected a '{'{:=^50}'.format(' ' + HEADER + ' ')}' line "
                                 f"(the summary vllm bench serve prints) or a --save-result JSON "
                                 f"object, got {_quote(lines[0].strip() if lines else '')}")
    return runs


def read_server(line: str, server: dict) -> None:
    """The server's settings a `vllm serve ...` line (or a client line's --model) names."""
    m = _SERVE.search(line)
    if m:
        if m[1]:
            server["model"] = m[1]
        for flag, value in _FLAG.findall(line[m.end():]):
            if flag in SERVE_FLAGS and value:
                server[SERVE_FLAGS[flag]] = value
        for word in line[m.end():].split():
            if word in SERVE_SWITCHES:
                key, on = SERVE_SWITCHES[word]
                server[key] = on
    elif "model" not in server:
        m = _MODEL.search(line)
        if m:
            server["model"] = m[1]


def _read_settings(line: str, settings: dict) -> None:
    read_server(line, settings.setdefault("_server", {}))
    for label, key in LOG_LINES.items():
        if line.startswith(label):
            settings[key] = line[len(label):].strip().split()[0] if line[len(label):].strip() else ""
            return
    if "Namespace(" in line:
        for name, value in _KWARG.findall(line):
            if name in SETTINGS:
                settings[name] = value.strip("'\"")
        return
    for flag, value in _FLAG.findall(line):
        name = flag.replace("-", "_")
        if name in SETTINGS and value:
            settings[name] = value


def _parse_json(text: str, field: str) -> list[Pasted]:
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
        where = f"JSON object {len(runs) + 1}"
        values, settings = {}, {}
        for key in set(LABELS.values()):
            if key in obj and obj[key] is not None and key not in ("request_rate", "max_concurrency"):
                value = obj[key]
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ConfigError(field, f"{where}: '{key}' should be a number, got "
                                             f"{_quote(json.dumps(value))}")
                values[key] = float(value)
        for key in SETTINGS:
            if obj.get(key) is not None:
                settings[key] = str(obj[key])
        if isinstance(obj.get("model_id"), str):
            settings["_server"] = {"model": obj["model_id"]}
        run = _run(values, settings, where, field)
        runs.append(_detailed(run, obj, where, field) if "input_lens" in obj else run)
    return runs


DETAILED = ("input_lens", "output_lens", "ttfts")  # what a per-request replay needs, at least


def _detailed(run: Pasted, obj: dict, where: str, field: str) -> Pasted:
    """A --save-detailed result: its requests replayed as they were, and their measurements."""
    n = len(obj["input_lens"]) if isinstance(obj["input_lens"], list) else -1
    for key in DETAILED + ("itls", "latencies", "start_times", "errors"):
        if key in obj and (not isinstance(obj[key], list) or len(obj[key]) != n):
            raise ConfigError(field, f"{where}: '{key}' should be a list with one entry per request, "
                                     f"as many as 'input_lens' ({max(n, 0):,})")
    missing = [k for k in DETAILED if k not in obj]
    if missing or ("latencies" not in obj and "itls" not in obj):
        raise ConfigError(field, f"{where}: a --save-detailed result needs "
                                 f"{', '.join(repr(k) for k in DETAILED)} and 'latencies' or 'itls'")

    def number(key, i, lo=0.0):
        x = obj[key][i]
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not lo <= x < math.inf:
            raise ConfigError(field, f"{where}: {key}[{i}] should be a number of at least {lo:g}, "
                                     f"got {_quote(json.dumps(x))}")
        return x

    errors = obj.get("errors") or [""] * n
    starts = obj.get("start_times")
    rows, skipped = [], 0
    for i in range(n):
        if errors[i] or not obj["output_lens"][i]:
            skipped += 1  # a failed request: vLLM counts it apart, with no times
            continue
        prompt, answer = int(number("input_lens", i, 1)), int(number("output_lens", i, 1))
        ttft = number("ttfts", i)
        if "latencies" in obj:
            latency = number("latencies", i)
        else:
            gaps = obj["itls"][i]
            if not isinstance(gaps, list) or not all(isinstance(g, (int, float)) and not isinstance(g, bool) for g in gaps):
                raise ConfigError(field, f"{where}: itls[{i}] should be a list of seconds")
            latency = ttft + math.fsum(gaps)
        tpot = (latency - ttft) / (answer - 1) if answer > 1 else None
        rows.append((number("start_times", i, -math.inf) if starts else None, prompt, answer, ttft, tpot, i))
    if not rows:
        raise ConfigError(field, f"{where}: no request succeeded: nothing to replay")
    notes = list(run.notes)
    bench = run.bench
    if starts:
        rows.sort(key=lambda r: r[0])  # replayed in the order they were sent
        t0 = rows[0][0]
        sent = [r[0] - t0 for r in rows]
        notes.append(f"{len(rows):,} requests replayed as recorded: their lengths, and their send "
                     f"times from start_times (seconds after the first)")
        if bench.max_concurrency is not None:
            notes.append(f"--max-concurrency {bench.max_concurrency}: already in the recorded send "
                         f"times, so not applied again")
    else:
        from pysim.traffic.bench_serve import send_times  # noqa: PLC0415

        sent = send_times(len(rows), bench.request_rate, bench.burstiness, bench.seed)
        notes.append(f"{len(rows):,} requests replayed with their recorded lengths; no start_times "
                     f"(an older vLLM): sent as the benchmark's rate draws them")
    if skipped:
        notes.append(f"{skipped:,} failed requests left out")
    recorded = tuple((r[1], r[2], x) for r, x in zip(rows, sent))
    bench = Benchmark(num_prompts=len(rows), random_input_len=max(r[1] for r in rows),
                      random_output_len=max(r[2] for r in rows), request_rate=bench.request_rate,
                      burstiness=bench.burstiness,
                      max_concurrency=None if starts else bench.max_concurrency,
                      dataset_name=bench.dataset_name, seed=bench.seed, recorded=recorded)
    measured = tuple((r[3], r[4], r[5]) for r in rows)
    return Pasted(bench, run.measured, run.source, tuple(n for n in notes if "on average" not in n
                                                           and "spread" not in n),
                  run.server, measured)


# --- one run ----------------------------------------------------------------------------
def _setting(settings: dict, key: str, where: str, field: str, lo: float, hi: float,
             integer: bool = True):
    """A flag's value as a number in [lo, hi] ("inf" for the rate), or None if absent."""
    if key not in settings:
        return None
    text = str(settings[key]).strip().lower()
    if key == "request_rate" and text in ("inf", "infinity", "float('inf')"):
        return math.inf
    if key == "max_concurrency" and text in ("none", "null", ""):
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not lo <= value <= hi or (integer and value != int(value)):
        kind = "a whole number" if integer else "a number"
        raise ConfigError("bench_text", f"{where}: --{key.replace('_', '-')} is {_quote(text)}; "
                                        f"expected {kind} from {lo:g} to {hi:g}")
    return int(value) if integer else value


def _run(values: dict, settings: dict, where: str, field: str) -> Pasted:
    missing = [k for k in REQUIRED if k not in values]
    if missing:
        wanted = {v: k for k, v in LABELS.items()}
        names = ", ".join(f"'{wanted[k]}'" if "summary" in where else f"'{k}'" for k in missing)
        raise ConfigError(field, f"{where}: missing {names}; vllm bench serve prints it with the "
                                 f"default --percentile-metrics")
    completed = values["completed"]
    if completed < 1 or completed != int(completed) or not 0 < values["duration"] < math.inf:
        raise ConfigError(field, f"{where}: expected at least 1 successful request and a "
                                 f"positive duration")
    completed = int(completed)
    for key in ("mean_ttft_ms", "mean_tpot_ms"):
        if not 0 < values[key] < math.inf:
            raise ConfigError(field, f"{where}: '{key}' should be a number above 0 (a TPOT of 0 "
                                     f"means answers of one token: nothing to fit a decode to)")
    notes = []
    dataset = str(settings.get("dataset_name", "random")).strip("'\"").lower()
    kind = dataset if dataset in ("random", "sharegpt") else "other"
    n = _setting(settings, "num_prompts", where, field, 1, 1e9)
    if n is None:
        n = completed
        notes.append(f"--num-prompts not pasted: {n:,}, the successful requests")
    lengths = {}
    for key, total in (("random_input_len", "total_input_tokens"),
                       ("random_output_len", "total_output_tokens")):
        value = _setting(settings, key, where, field, 1, 1e7) if kind == "random" else None
        if value is None:
            if total not in values or values[total] <= 0:
                flag = "--" + key.replace("_", "-")
                line = "Total input tokens:" if total == "total_input_tokens" else "Total generated tokens:"
                raise ConfigError(field, f"{where}: the {'prompt' if 'input' in key else 'answer'} "
                                         f"length is unknown: paste the command line with {flag}, "
                                         f"or the summary with its '{line}' line")
            value = max(1, round(values[total] / completed))
            notes.append(f"{'prompts' if 'input' in key else 'answers'} of {value:,} tokens on "
                         f"average, from the summary's total")
        lengths[key] = value
    ratio = _setting(settings, "random_range_ratio", where, field, 0, 0.99, integer=False) or 0.0
    prefix = _setting(settings, "random_prefix_len", where, field, 0, 1e7) or 0
    rate = _setting(settings, "request_rate", where, field, 1e-6, 1e9, integer=False)
    if rate is None:
        rate = values.get("request_rate", math.inf)
        if math.isinf(rate):
            notes.append("no request rate pasted and no 'Request rate configured' line: inf, "
                         "every request sent at once")
    burst = _setting(settings, "burstiness", where, field, 0.01, 100, integer=False) or 1.0
    conc = _setting(settings, "max_concurrency", where, field, 1, 1e9)
    if conc is None and "max_concurrency" in values:
        conc = int(values["max_concurrency"])
    if kind != "random":
        notes.append(f"dataset {dataset}: every prompt at the mean length, answers spread "
                     f"around theirs")
    seed = _setting(settings, "seed", where, field, 0, 2**63) or 0
    bench = Benchmark(num_prompts=n, random_input_len=lengths["random_input_len"],
                      random_output_len=lengths["random_output_len"],
                      random_range_ratio=ratio if kind == "random" else 0.0,
                      random_prefix_len=prefix if kind == "random" else 0,
                      request_rate=rate, burstiness=burst, max_concurrency=conc,
                      dataset_name=kind, seed=seed)
    measured = {k: values[k] for k in values if k.endswith("_ms")}
    measured["output_throughput"] = values.get(
        "output_throughput", values.get("total_output_tokens", 0) / values["duration"]) or None
    return Pasted(bench, measured, where, tuple(notes), _server(settings.get("_server", {}), where, field))


def _server(raw: dict, where: str, field: str) -> dict:
    """The `vllm serve` settings pasted, as numbers and a switch (the model as written)."""
    out = {}
    for key, lo, hi in (("max_num_seqs", 1, 1e6), ("max_num_batched_tokens", 1, 1e7), ("block_size", 1, 1024)):
        value = _setting(raw, key, where, field, lo, hi)
        if value is not None:
            out[key] = value
    for key in ("async_scheduling", "model"):
        if key in raw:
            out[key] = raw[key]
    return out


def _quote(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
