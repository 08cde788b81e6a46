"""vLLM's defaults, release by release: what `vllm serve MODEL` does when given no flag.

The lab, the cluster, the page-6 calculator and the replay of published benchmarks
stand for "what vLLM does"; they take every default from here. The chapter runs the
latest release read (LATEST); a benchmark record runs its own release's defaults
(`parse_version` reads the free text of its `vllm_version`).

At v0.34.0 (source read from the release wheel; file:line in vllm/):

- `block_size` 64: `CacheConfig.DEFAULT_BLOCK_SIZE` (config/cache.py:185), which a
  None `--block-size` takes (cache.py:482-491). The platform may then raise or lower it
  to one the attention backend prefers (platforms/interface.py:760-791). On CUDA the
  catalog's GPUs run FLASH_ATTN (platforms/cuda.py:166-178), which accepts any multiple
  of 16 and keeps 64 (v1/attention/backends/flash_attn.py:357-379). On ROCm the first
  backend is ROCM_ATTN (platforms/rocm.py:558-562), which asks for 16 to keep its
  native kernel (v1/attention/backends/rocm_attn.py:166-172): the MI300X stays at 16.
  v0.33.0 and every release before: 16 (v0.33.0 config/cache.py:185).
- the memory the KV pool is cut from: `gpu_memory_utilization` is None (cache.py:216)
  and resolves to 1.0 when the extensible KV cache is on, else 0.92
  (`resolved_gpu_memory_utilization`, cache.py:186 and 494-502). The extensible KV cache
  is on by default on CUDA and ROCm (`VllmConfig._resolve_extensible_kv_cache`,
  config/vllm.py:3180-3254). The budget is total memory x utilization
  (`request_memory`, v1/worker/utils.py:734-743), total being what the driver reports
  (NVML's total, platforms/cuda.py:845-849: the catalog's `reported_mib`). With the
  extensible cache the pool is not estimated from a profiling run but measured after
  warm-up and CUDA-graph capture (v1/worker/gpu_worker.py:1068-1098 and 1222-1238,
  `measure_kv_cache_bytes` in v1/worker/extensible_kv_cache.py:592-618): the memory
  still free, plus what the cache already holds, minus a margin of
  max(1 GiB, 0.75 x the transient peak) (3 GiB floor on ROCm, extensible_kv_cache.py:64-65)
  and minus the transient peak itself; the budget only caps it.
  pysim cannot measure a GPU, so it keeps one rule for every release:

      pool = reported memory x gpu_memory_utilization - weights - RUNTIME_BYTES

  with RUNTIME_BYTES (pysim.timing.steptime) a constant standing for what vLLM measures: the
  CUDA context, the CUDA graphs, the activations' peak and, at 0.34, the margin.
  v0.21 to v0.33: 0.92 (PR #38284 made it the default with CUDA-graph memory
  profiling, "default since v0.21.0" in the log of gpu_worker.py:809-816; v0.33.0
  config/cache.py:215), the pool estimated from a profiling run
  (v0.33.0 v1/worker/gpu_worker.py:753-757). Before v0.21: 0.9.
- `max_num_seqs`, `max_num_batched_tokens` for `vllm serve` (the OpenAI server's usage
  context): `EngineArgs.get_batch_defaults` (engine/arg_utils.py:2977-3043) on the
  memory the driver reports (GiB = 2^30 bytes) and the device's name:
  >= 160 GiB: 1,024 and 16,384; >= 70 GiB, not an A100 and not a GB10 (compute
  capability 12.1): 1,024 and 8,192; else 256 and 2,048. v0.33.0 has the same function
  (arg_utils.py:2940). The >= 160 GiB tier is not in the releases the benchmark records
  name (v0.9 to v0.27: two tiers, >= 70 GiB and not an A100, vllm/engine/arg_utils.py
  `_set_default_args` in v0.10 and v0.11, PR #17073 and #17885); which release between
  0.28 and 0.33 brought it was not checked, and here it starts at 0.33. No record falls
  in between. Without chunked prefill the budget is at least max_model_len
  (arg_utils.py:3227-3236).
- chunked prefill and prefix caching: on (config/scheduler.py:146, config/cache.py:267),
  as in every V1 release (the V1 engine is the default from v0.8). The V0 engine
  (before 0.8) ran neither by default here: V0 could turn chunked prefill on by itself
  for contexts over 32K tokens, which pysim does not model; the records that ran V0
  say it was off. Its budget was max(max_model_len, 2,048) and max_num_seqs 256.
- `async_scheduling`: None, resolved to True unless something is incompatible
  (config/vllm.py:1610-1637; the same in v0.33.0, config/vllm.py:1685). It became the
  default in v0.14.0 (PR #27614, released 17 January 2026); before, False. pysim's
  engine is synchronous unless its config asks otherwise: this says what vLLM does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pysim.timing.catalog import GPU

LATEST = "0.34.0"  # the release the chapter's "what vLLM does" follows
GIB = 1 << 30

Version = tuple[int, int, int]


def version(text: str) -> Version:
    """'0.34.0' -> (0, 34, 0); a missing patch number is 0."""
    v = parse_version(text)
    assert v is not None, f"not a vLLM version: {text!r}"
    return v


def parse_version(text) -> Version | None:
    """The first release named in free text ("v0.11.0 (doc 'Engine Version')", "0.5.4 per
    the README", "~v0.10.1-0.10.2") as (major, minor, patch), or None when it names none
    ("latest as of 2026-04-30": a date is no version)."""
    m = re.search(r"(?<![\d.])v?(\d+)\.(\d+)(?:\.(\d+))?(?!\d)", str(text or ""))
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def is_v0(v: Version) -> bool:
    """The V0 engine: the default before v0.8."""
    return v < (0, 8, 0)


def block_size(v: Version, gpu: GPU) -> int:
    """Tokens per KV block that `vllm serve` picks for a 16-bit dense model."""
    if v >= (0, 34, 0) and gpu.platform == "cuda":
        return 64
    return 16


def gpu_memory_utilization(v: Version, gpu: GPU) -> float:
    """The share of the reported memory the KV pool is cut from (see the docstring)."""
    if v >= (0, 34, 0):
        return 1.0 if gpu.platform in ("cuda", "rocm") else 0.92
    if v >= (0, 21, 0):
        return 0.92
    return 0.9


def batch_defaults(v: Version, total_bytes: int, device_name: str,
                   capability: tuple[int, int] | None = None,
                   max_model_len: int | None = None) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) of `vllm serve` on a device with
    `total_bytes` of memory, as the driver reports it, named `device_name`."""
    if is_v0(v):
        return 256, max(max_model_len or 2048, 2048)
    big = (total_bytes >= 70 * GIB and "a100" not in device_name.lower()
           and capability != (12, 1))
    if v >= (0, 33, 0) and total_bytes >= 160 * GIB:
        return 1024, 16384
    return (1024, 8192) if big else (256, 2048)


def serve_batch_defaults(v: Version, gpu: GPU) -> tuple[int, int]:
    """`batch_defaults` for a GPU of the catalog (none of them is a GB10)."""
    return batch_defaults(v, gpu.reported_bytes, gpu.name)


def enable_chunked_prefill(v: Version) -> bool:
    return not is_v0(v)


def enable_prefix_caching(v: Version) -> bool:
    return not is_v0(v)


def async_scheduling(v: Version) -> bool:
    return v >= (0, 14, 0)


@dataclass(frozen=True)
class Defaults:
    """Every default above, for one release on one GPU."""

    version: str
    block_size: int
    gpu_memory_utilization: float
    max_num_seqs: int
    max_num_batched_tokens: int
    enable_chunked_prefill: bool
    enable_prefix_caching: bool
    async_scheduling: bool

    def __post_init__(self):
        assert self.block_size % 16 == 0 and 0 < self.gpu_memory_utilization <= 1
        assert self.max_num_batched_tokens >= self.max_num_seqs or not self.enable_chunked_prefill

    @property
    def label(self) -> str:
        return f"vLLM {self.version} defaults"


def defaults(gpu: GPU, text: str = LATEST) -> Defaults:
    """The defaults of the release `text` names (LATEST by default) on `gpu`."""
    v = version(text)
    seqs, budget = serve_batch_defaults(v, gpu)
    return Defaults(".".join(map(str, v)), block_size(v, gpu), gpu_memory_utilization(v, gpu),
                    seqs, budget, enable_chunked_prefill(v), enable_prefix_caching(v),
                    async_scheduling(v))
