"""vLLM's defaults by release (pysim/engine/vllm_defaults.py), checked against the values read in
vLLM's source (the module's docstring cites each file and line)."""

from __future__ import annotations

import pytest

from pysim.engine import vllm_defaults as vd
from pysim.timing import realbench
from pysim.timing.catalog import GPUS

GIB = 2**30
V034, V033, V021, V020, V011, V013, V014, V054 = (
    (0, 34, 0), (0, 33, 0), (0, 21, 0), (0, 20, 2), (0, 11, 0), (0, 13, 0), (0, 14, 0), (0, 5, 4))


def test_latest_is_0_34_on_an_h100():
    d = vd.defaults(GPUS["H100"])
    assert (d.version, d.block_size, d.gpu_memory_utilization) == ("0.34.0", 64, 1.0)
    assert (d.max_num_seqs, d.max_num_batched_tokens) == (1024, 8192)
    assert d.enable_chunked_prefill and d.enable_prefix_caching and d.async_scheduling
    assert d.label == "vLLM 0.34.0 defaults"


def test_block_size_by_release_and_platform():
    # 0.34: CacheConfig.DEFAULT_BLOCK_SIZE 64, kept by FLASH_ATTN (CUDA); ROCM_ATTN asks for 16.
    assert [vd.block_size(V034, GPUS[g]) for g in ("H100", "H200", "A100", "L40S")] == [64] * 4
    assert vd.block_size(V034, GPUS["MI300X"]) == 16
    # 0.33 and before: 16 everywhere.
    assert {vd.block_size(v, g) for v in (V033, V011, V054) for g in GPUS.values()} == {16}


def test_memory_share_by_release():
    # 0.34: None -> 1.0 with the extensible KV cache (CUDA and ROCm); 0.21-0.33: 0.92; before: 0.9.
    assert {vd.gpu_memory_utilization(V034, g) for g in GPUS.values()} == {1.0}
    assert vd.gpu_memory_utilization(V033, GPUS["H100"]) == 0.92
    assert vd.gpu_memory_utilization(V021, GPUS["H100"]) == 0.92
    assert vd.gpu_memory_utilization(V020, GPUS["H100"]) == 0.9
    assert vd.gpu_memory_utilization(V054, GPUS["A100"]) == 0.9


@pytest.mark.parametrize("v", [V034, V033])
def test_three_batch_tiers_at_their_thresholds(v):
    assert vd.batch_defaults(v, 160 * GIB, "NVIDIA B200") == (1024, 16384)
    assert vd.batch_defaults(v, 160 * GIB - 1, "NVIDIA B200") == (1024, 8192)
    assert vd.batch_defaults(v, 70 * GIB, "NVIDIA H100 80GB HBM3") == (1024, 8192)
    assert vd.batch_defaults(v, 70 * GIB - 1, "NVIDIA H100 80GB HBM3") == (256, 2048)
    # An A100 and a GB10 (compute capability 12.1) stay small whatever their memory.
    assert vd.batch_defaults(v, 80 * GIB, "NVIDIA A100-SXM4-80GB") == (256, 2048)
    assert vd.batch_defaults(v, 119 * GIB, "NVIDIA GB10", capability=(12, 1)) == (256, 2048)
    # ...but an A100 with 160 GiB would take the top tier: the name check is in the middle one.
    assert vd.batch_defaults(v, 160 * GIB, "a100") == (1024, 16384)


def test_two_tiers_before_0_33():
    assert vd.batch_defaults(V011, 192 * GIB, "AMD Instinct MI300X") == (1024, 8192)
    assert vd.batch_defaults(V011, 80 * GIB, "NVIDIA A100") == (256, 2048)


def test_catalog_gpus_against_the_thresholds():
    # nvidia-smi's totals in GiB: H100 79.6, H200 140.4, L40S 45.0, A100 80.0, MI300X 192.0.
    gib = {g: GPUS[g].reported_bytes / GIB for g in GPUS}
    assert 70 <= gib["H100"] < 160 and 70 <= gib["H200"] < 160 and gib["MI300X"] >= 160
    assert gib["L40S"] < 70 and gib["A100"] == 80
    got = {g: vd.serve_batch_defaults(V034, GPUS[g]) for g in GPUS}
    # H100 PCIe 79.6 GiB (not an A100); A100 40GB by name and size; L4 22.5, A10G 22.5.
    assert got == {"H100": (1024, 8192), "H200": (1024, 8192), "L40S": (256, 2048),
                   "A100": (256, 2048), "H100-PCIe": (1024, 8192), "A100-40GB": (256, 2048),
                   "L4": (256, 2048), "A10G": (256, 2048), "MI300X": (1024, 16384)}


def test_v0_and_async_scheduling():
    assert vd.batch_defaults(V054, 80 * GIB, "H100", max_model_len=32768) == (256, 32768)
    assert vd.batch_defaults(V054, 80 * GIB, "H100") == (256, 2048)
    assert not vd.enable_chunked_prefill(V054) and not vd.enable_prefix_caching(V054)
    assert vd.enable_chunked_prefill((0, 8, 0)) and vd.enable_prefix_caching((0, 8, 0))
    # async scheduling became the default in v0.14.0 (PR #27614).
    assert (vd.async_scheduling(V013), vd.async_scheduling(V014), vd.async_scheduling(V033)) == (False, True, True)


@pytest.mark.parametrize("text, expected", [
    ("v0.11.0 (doc 'Engine Version')", (0, 11, 0)),
    ("0.5.4 per the repo README/benchmark_v0.md ('This benchmark was conducted with vLLM v0.5.4')", (0, 5, 4)),
    ('0.27.1 (server log and bench pod "vllm --version")', (0, 27, 1)),
    ("vllm/vllm-openai:latest at the time (~v0.10.1-0.10.2, exact tag not stated)", (0, 10, 1)),
    ("vllm/vllm-openai-rocm (latest as of 2026-04-30; exact version not visible)", None),
    ("v0.34", (0, 34, 0)), ("", None), (None, None),
])
def test_a_records_version_is_parsed(text, expected):
    assert vd.parse_version(text) == expected


def _record(version, gpu="H100 SXM", flags=None):
    import json
    raw = {"id": "r", "gpu": gpu, "model": "meta-llama/Llama-3.1-8B", "dtype": "bfloat16",
           "workload": {"dataset_name": "random", "random_input_len": 1000, "random_output_len": 100,
                        "num_prompts": 10},
           "metrics": {"mean_ttft_ms": 100.0}, "server_flags": flags or {}}
    if version is not None:
        raw["vllm_version"] = version
    (rec,) = realbench.parse(json.dumps(raw))
    return rec.run


def test_older_records_get_their_releases_defaults():
    old = _record("v0.11.0").server
    assert (old.vllm_version, old.block_size, old.utilization) == ("0.11.0", 16, 0.9)
    assert (old.scheduler.max_num_seqs, old.scheduler.max_num_batched_tokens) == (1024, 8192)
    assert not old.scheduler.async_scheduling  # the default from v0.14.0 on
    # 0.9 x 81,559 MiB - 16.06 GB - 2 GB, in blocks of 16 x 128 KiB: 28,089 (as before).
    assert old.num_gpu_blocks() == 28_089
    mid = _record("0.27.1").server
    assert (mid.block_size, mid.utilization) == (16, 0.92)
    assert mid.scheduler.async_scheduling
    assert not _record("0.27.1", flags={"command": "vllm serve m --no-async-scheduling"}).server.scheduler.async_scheduling
    assert _record("v0.11.0", flags={"command": "vllm serve m --async-scheduling"}).server.scheduler.async_scheduling
    new = _record("vLLM 0.34.0").server
    assert (new.block_size, new.utilization) == (64, 1.0)
    # 81,559 MiB - 16.06 GB - 2 GB = 67,460,809,984 B over 64 x 131,072 B: 8,041 blocks.
    assert new.num_gpu_blocks() == 8_041
    flagged = _record("0.27.1", flags={"command": "vllm serve m --gpu-memory-utilization 0.85"}).server
    assert flagged.utilization == 0.85


def test_a_record_naming_no_release_keeps_the_old_assumption_and_says_so():
    run = _record("latest as of 2026-04-30")
    assert run.server.vllm_version == realbench.ASSUMED_VERSION == "0.11.0"
    assert (run.server.block_size, run.server.utilization) == (16, 0.9)
    assert any("names no vLLM release" in n for n in run.notes)
    assert not any("names no" in n for n in _record("v0.11.0").notes)
