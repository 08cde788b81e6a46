"""Read published `vllm bench serve` results (data/realbench/records.jsonl) as fit runs.

One JSON object a line, in the format of data/realbench/README.md: the hardware
(`gpu`, `gpu_count` or `num_gpus`, `tensor_parallel_size`, with `gpu_catalog_id` where
the gatherer matched it to pysim's catalog), the `model` (and `model_catalog_id`), the
`workload` under vLLM's flag names, the `server_flags`, and the measured `metrics`.
Records are written by people from what reports show, so a field may hold a note
beside its value ("inf (presumed)", "1 assumed (...)", "not set (default 0.0)"): we take
the value and keep the note.

A record becomes a pysim.timing.fit.Run, or is *skipped* with the reason (a GPU or model not
in the catalog, several GPUs, no lengths, nothing measured we compare). A line that
is not a record at all (not JSON, no `metrics`) raises RecordError naming the line
and what was expected there.

What a record does not say is filled in as its own vLLM release would have run it
(pysim.engine.vllm_defaults, for the release its free-text `vllm_version` names: "v0.11.0 (doc
'Engine Version')" is 0.11.0):
- `--max-num-seqs` and `--max-num-batched-tokens`: that release's defaults for
  `vllm serve` (V1: 1024 and 8192 on GPUs with at least 70 GiB that are not A100s, 256
  and 2048 on the others; the old V0 engine, before 0.8: a budget of
  max(max_model_len, 2048) without chunked prefill);
- `--gpu-memory-utilization` (0.9 before v0.21) and the block size (16 before v0.34);
- a record that names no release (or says only "latest") runs ASSUMED_VERSION's
  defaults, what pysim assumed of every record before it read their versions, and
  says so in its notes;
- prompt and answer lengths of a non-random dataset (ShareGPT): the run's means, from
  its token totals (pysim.traffic.bench_serve says what that leaves out).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, fields as dataclass_fields
from pathlib import Path

from pysim.config import ConfigError
from pysim.engine import vllm_defaults
from pysim.engine.scheduler import SchedulerConfig
from pysim.timing.catalog import GPUS, MODELS
from pysim.timing.fit import Run, ServerSetup, check
from pysim.traffic.bench_serve import Benchmark

REPO_FILE = Path(__file__).resolve().parents[2] / "data" / "realbench" / "records.jsonl"
SHARED_FILE = Path(__file__).resolve().parents[3] / "shared" / "realbench" / "records.jsonl"

# Model names as published -> the catalog's id. Meta-Llama-3-8B has Llama 3.1 8B's
# architecture (same layers, heads and size), so it runs as that.
MODEL_NAMES = {
    "llama-3.1-8b": "llama-3.1-8b", "meta-llama-3.1-8b": "llama-3.1-8b",
    "meta-llama-3-8b": "llama-3.1-8b", "llama-3-8b": "llama-3.1-8b",
    "llama-3.1-70b": "llama-3.1-70b", "meta-llama-3.1-70b": "llama-3.1-70b",
    "qwen3-8b": "qwen3-8b", "qwen3-14b": "qwen3-14b", "qwen3-32b": "qwen3-32b",
    "qwen2.5-3b": "qwen2.5-3b", "mistral-7b-v0.3": "mistral-7b-v0.3",
}
# GPU names as published (nvidia-smi's "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-40GB",
# "NVIDIA L4", "NVIDIA A10G", a report's "1xH100-80GB-SXM") -> the catalog's id: the first
# pattern that matches the name in capitals with spaces and hyphens dropped. The order
# matters: the PCIe H100 and the 40 GB A100 before their larger siblings, the L40S before
# the L4 (whose name it contains).
GPU_NAMES = (("H100PCIE", "H100-PCIe"), ("H100", "H100"), ("H200", "H200"),
             ("L40S", "L40S"), ("A10040GB", "A100-40GB"), ("A100", "A100"),
             ("A10G", "A10G"), ("L4", "L4"), ("MI300X", "MI300X"))
FIGURE_KEYS = {"mean_ttft_ms": ("mean_ttft_ms",), "mean_tpot_ms": ("mean_tpot_ms",),
               "output_throughput": ("output_throughput", "output_token_throughput")}


# The release a record that names none is replayed with: V1 with two tiers of batch
# defaults, --gpu-memory-utilization 0.9, 16-token blocks (pysim's rule for every record
# before records were read by version).
ASSUMED_VERSION = "0.11.0"
V0_STANDIN = (0, 7, 0)  # a record that says "V0" but names no release: V0's defaults


class RecordError(ValueError):
    """A line that is not a record: says which line and what was expected."""


@dataclass(frozen=True)
class Record:
    id: str
    line: int
    run: Run | None  # None: skipped
    skipped: str  # why, when skipped
    raw: dict


def load(path: Path | str | None = None) -> list[Record]:
    """Every record of a JSONL file: the shared records by default (the project's own
    copy when the shared folder is not beside it)."""
    if path is None:
        path = SHARED_FILE if SHARED_FILE.is_file() else REPO_FILE
    return parse(Path(path).read_text(encoding="utf-8"))


def parse(text: str) -> list[Record]:
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordError(f"line {number}: expected one JSON object per line ({exc.msg} "
                              f"at column {exc.colno})") from None
        if not isinstance(raw, dict):
            raise RecordError(f"line {number}: expected a JSON object, got {type(raw).__name__}")
        for key in ("id", "workload", "metrics"):
            if key not in raw:
                raise RecordError(f"line {number}: expected a record with '{key}' "
                                  f"(see data/realbench/README.md)")
        if not isinstance(raw["workload"], dict) or not isinstance(raw["metrics"], dict):
            raise RecordError(f"line {number}: expected 'workload' and 'metrics' to be objects")
        run, why = _run(raw)
        out.append(Record(str(raw["id"]), number, run, why, raw))
    return out


def usable(records: list[Record]) -> list[Record]:
    return [r for r in records if r.run is not None]


# --- reading one record ------------------------------------------------------------------
def _number(value, default=None):
    """A value that may carry a note: "inf (presumed)" -> inf, "1 assumed (...)" -> 1,
    "not set (v0.11.0 default 0.0 = fixed lengths)" -> 0.0 (the default it names)."""
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().lower().replace(",", "")
    if text.startswith("inf"):
        return math.inf
    m = re.match(r"-?\d+(?:\.\d+)?", text) or re.search(r"default\s+(-?\d+(?:\.\d+)?)", text)
    if not m:
        return default
    return float(m.group(m.lastindex or 0))


def _gpu(raw) -> str | None:
    cat = str(raw.get("gpu_catalog_id") or "").split(" ")[0]
    if cat in GPUS:
        return cat
    return gpu_id(str(raw.get("gpu") or ""))


def gpu_id(name: str) -> str | None:
    """The catalog's id for a GPU's published name, or None when the catalog lacks it."""
    squashed = re.sub(r"[\s_-]", "", name.upper())
    # Cards the catalog does not hold, though their names contain one it does: the
    # H100 NVL (94 GB, more bandwidth than the PCIe), the GH200, the L40 and L4's
    # neighbours, an A100 PCIe 80GB is held as the SXM's (same memory, 1,935 GB/s).
    if "GH200" in squashed or ("H100" in squashed and "NVL" in squashed):
        return None
    squashed = squashed.replace("A100SXM440GB", "A10040GB").replace("A100PCIE40GB", "A10040GB")
    for key, gpu in GPU_NAMES:
        if key == "L4":  # the L4 alone: not an L40, L40S or L4x
            if re.search(r"(?<![A-Z0-9])L4(?![0-9])", re.sub(r"[_-]", " ", name.upper())):
                return gpu
            continue
        if key in squashed:
            return gpu
    return None


def _model(raw) -> str | None:
    cat = str(raw.get("model_catalog_id") or "").split(" ")[0]
    if cat in MODELS:
        return cat
    name = str(raw.get("model") or "").split("/")[-1].lower()
    name = re.sub(r"-(instruct|chat|hf)(?=-|$)", "", name)  # Mistral-7B-Instruct-v0.3 too
    return MODEL_NAMES.get(name)


def _flag(flags: dict, key: str):
    """A server flag from its own field, or from the printed command line."""
    if flags.get(key) is not None:
        return _number(flags[key])
    command = " ".join(str(flags.get(k) or "") for k in ("command", "recipe_command"))
    m = re.search(r"--" + key.replace("_", "-") + r"[ =]+([0-9.]+)", command)
    return float(m.group(1)) if m else None


def _switch(flags: dict, key: str) -> bool | None:
    """An on/off server flag from its own field, or from the printed command line
    (`--key` or `--no-key`, vLLM's boolean flags); None when the record does not say."""
    if isinstance(flags.get(key), bool):
        return flags[key]
    command = " ".join(str(flags.get(k) or "") for k in ("command", "recipe_command"))
    flag = "--" + key.replace("_", "-")
    if re.search(r"--no-" + flag[2:] + r"\b", command):
        return False
    return True if re.search(re.escape(flag) + r"\b", command) else None


def _version(raw) -> tuple[vllm_defaults.Version, str]:
    """The release whose defaults a record runs with, and a note when it names none."""
    named = vllm_defaults.parse_version(raw.get("vllm_version"))
    v = named or vllm_defaults.version(ASSUMED_VERSION)
    note = "" if named else (f"names no vLLM release: replayed with v{ASSUMED_VERSION}'s defaults "
                             f"(pysim's assumption)")
    # The pre-V1 engine (vLLM < 0.8): its scheduler ran prompts in steps of their own.
    if str(raw.get("engine") or "").upper().startswith("V0") and not vllm_defaults.is_v0(v):
        v = V0_STANDIN
    return v, note


def _run(raw) -> tuple[Run | None, str]:
    gpu, model = _gpu(raw), _model(raw)
    if gpu is None:
        return None, f"GPU {raw.get('gpu')!r} is not in pysim's catalog"
    if model is None:
        return None, f"model {raw.get('model')!r} is not in pysim's catalog"
    dtype = str(raw.get("dtype") or "").strip().lower()
    if re.match(r"(fp8|float8|int8|int4|w8a8|w4a16|awq|gptq|nvfp4|mxfp4)", dtype):
        return None, f"{dtype.split()[0]} weights: the model times 16-bit weights and KV"
    gpus = _number(raw.get("tensor_parallel_size"), 1) or 1
    gpus = max(gpus, _number(raw.get("gpu_count", raw.get("num_gpus")), 1) or 1)
    if gpus != 1:
        return None, f"{gpus:g} GPUs: the model times one GPU (no tensor parallelism)"
    w, m = raw["workload"], raw["metrics"]
    measured = {}
    for key, names in FIGURE_KEYS.items():
        for name in names:
            value = _number(m.get(name))
            if value is not None and 0 < value < math.inf:
                measured[key] = value
                break
    if not measured:
        return None, "no mean TTFT, mean TPOT or output throughput to compare"
    completed = _number(m.get("successful_requests", m.get("completed")))
    num_prompts = _number(w.get("num_prompts"), completed)
    if not num_prompts:
        return None, "the number of prompts is not given"
    dataset = str(w.get("dataset_name") or w.get("dataset") or "").lower()
    dataset = dataset.replace("inferred", "").strip()
    kind = "random" if dataset.startswith("random") else (
        "sharegpt" if dataset.startswith("sharegpt") else "other")
    notes = []
    if kind == "random" and w.get("random_input_len") is not None:
        input_len = _number(w["random_input_len"])
        output_len = _number(w.get("random_output_len"))
    else:
        total_in = _number(m.get("total_input_tokens")) or _number(_total(w.get("input_len")))
        total_out = _number(m.get("total_generated_tokens", m.get("total_output_tokens"))) \
            or _number(_total(w.get("output_len")))
        if not total_in or not total_out or not completed:
            return None, f"{kind} dataset without token totals: its lengths are unknown"
        input_len, output_len = total_in / completed, total_out / completed
        notes.append(f"{kind}: every request at the run's mean lengths")
    if not input_len or not output_len:
        return None, "prompt or answer length not given"
    rate = _number(w.get("request_rate"), math.inf)
    conc = _number(w.get("max_concurrency"))
    flags = raw.get("server_flags") if isinstance(raw.get("server_flags"), dict) else {}
    v, unnamed = _version(raw)
    v0 = vllm_defaults.is_v0(v)
    max_model_len = _flag(flags, "max_model_len")
    default_seqs, default_budget = vllm_defaults.batch_defaults(
        v, GPUS[gpu].reported_bytes, GPUS[gpu].name, max_model_len=int(max_model_len or 0) or None)
    seqs = _flag(flags, "max_num_seqs") or default_seqs
    budget = _flag(flags, "max_num_batched_tokens")
    if budget is None:
        budget = default_budget if v0 else max(default_budget, seqs)
    if unnamed:
        notes.append(unnamed)
    if v0:
        notes.append("vLLM V0 engine: replayed on V1's scheduler")
    util = _flag(flags, "gpu_memory_utilization") or vllm_defaults.gpu_memory_utilization(v, GPUS[gpu])
    bench = Benchmark(
        num_prompts=int(num_prompts),
        random_input_len=max(1, round(input_len)), random_output_len=max(1, round(output_len)),
        random_range_ratio=min(max(_number(w.get("random_range_ratio"), 0.0) or 0.0, 0.0), 0.99)
        if kind == "random" else 0.0,
        random_prefix_len=int(_number(w.get("random_prefix_len"), 0) or 0),
        request_rate=rate if rate and rate > 0 else math.inf,
        burstiness=_number(w.get("burstiness"), 1.0) or 1.0,
        max_concurrency=int(conc) if conc and conc < math.inf else None,
        dataset_name=kind)
    # Every scheduler knob the record gives (as its own field or on the command line);
    # the release's default for those pysim.engine.vllm_defaults knows, else the knob's own.
    knobs = {"max_num_seqs": int(min(seqs, budget)), "max_num_batched_tokens": int(budget),
             "async_scheduling": vllm_defaults.async_scheduling(v)}
    for f in dataclass_fields(SchedulerConfig):
        given = _switch(flags, f.name) if f.metadata.get("kind") == "bool" else _flag(flags, f.name)
        if given is not None and f.name not in ("max_num_seqs", "max_num_batched_tokens"):
            knobs[f.name] = given if isinstance(given, bool) else type(f.default)(given)
    scheduler = SchedulerConfig(**knobs)
    server = ServerSetup(gpu, model, scheduler, min(max(util, 0.1), 1.0),
                         vllm_version=".".join(map(str, v)))
    run = Run(bench, server, measured, str(raw.get("id")), tuple(notes))
    try:
        check(run, "record", max_prompts=None)  # its requests fit the KV pool
    except ConfigError as err:
        return None, err.message
    return run, ""


def _total(text) -> float | None:
    """"ShareGPT (total 23260 input tokens over 100 prompts)" -> 23260."""
    m = re.search(r"total\s+([\d,]+)", str(text or ""))
    return float(m.group(1).replace(",", "")) if m else None
