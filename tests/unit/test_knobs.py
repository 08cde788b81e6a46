"""One home for vLLM's scheduler knobs: each reaches every caller that stands for vLLM.

pysim.engine.scheduler.SchedulerConfig holds the knobs (vLLM: `SchedulerConfig`). The lab and the
cluster inherit them as settings, the benchmark records carry them in their server,
and calibration replays a pasted run with the lab's. Nothing names a knob on its way to
the engine, so these tests walk every field of SchedulerConfig, set each to a value
that is not its default, and check the engine each caller builds receives it. A knob
added to SchedulerConfig is in these tests with no edit; one that some caller drops
fails here, naming the knob and the caller.
"""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from pysim.engine import replay
from pysim.sims.cluster import config as cluster_config, simulate as cluster_simulate
from pysim.sims.lab import calibrate as lab_calibrate, config as lab_config, view as lab_view
from pysim.timing import fit, realbench
from pysim.traffic import bench_serve
from pysim.config import from_mapping
from pysim.engine.scheduler import EngineConfig, SchedulerConfig
from pysim.timing.steptime import DEFAULTS

KNOBS = [f.name for f in fields(SchedulerConfig)]


def other_value(name: str):
    """A value of knob `name` in its range that is not its default."""
    f = next(f for f in fields(SchedulerConfig) if f.name == name)
    if f.metadata["kind"] == "bool":
        return not f.default
    lo = f.metadata["lo"]
    return max(lo, f.default // 2) if f.default // 2 != f.default else lo + 1


@pytest.fixture
def engines(monkeypatch):
    """The EngineConfig of every engine the code under test builds, in order."""
    seen: list[EngineConfig] = []

    class Recording(replay.Engine):
        def __init__(self, config, policy=None):
            seen.append(config)
            super().__init__(config, policy)

    monkeypatch.setattr(replay, "Engine", Recording)
    return seen


def test_the_engine_and_the_callers_inherit_every_knob():
    for cls in (EngineConfig, lab_config.LabConfig, cluster_config.ClusterConfig):
        assert issubclass(cls, SchedulerConfig)
        assert set(KNOBS) <= {f.name for f in fields(cls)}
    assert [f.name for f in fields(fit.ServerSetup)][2] == "scheduler"


@pytest.mark.parametrize("knob", KNOBS)
def test_a_knob_reaches_the_labs_engine(knob, engines):
    value = other_value(knob)
    lab_view.run(from_mapping(lab_config.LabConfig, {knob: value, "window_minutes": 1}), [])
    assert engines and all(getattr(c, knob) == value for c in engines), knob


@pytest.mark.parametrize("knob", KNOBS)
def test_a_knob_reaches_every_replica_of_the_cluster(knob, engines):
    value = other_value(knob)
    cluster_simulate.simulate(from_mapping(cluster_config.ClusterConfig, {knob: value, "window_minutes": 1,
                                                          "replicas": 2}))
    assert len(engines) == 2 and all(getattr(c, knob) == value for c in engines), knob


def _record(flags: dict) -> str:
    """A benchmark record (data/realbench/README.md) whose server sets `flags`."""
    return json.dumps({
        "id": "knobs", "vllm_version": "0.34.0", "gpu": "H100", "gpu_catalog_id": "H100",
        "gpu_count": 1, "model": "meta-llama/Llama-3.1-8B-Instruct",
        "model_catalog_id": "llama-3.1-8b",
        "workload": {"dataset": "random", "num_prompts": 20, "random_input_len": 300, "random_output_len": 20,
                     "request_rate": "inf", "max_concurrency": 4},
        "server_flags": flags,
        "metrics": {"mean_ttft_ms": 50.0, "mean_tpot_ms": 8.0, "output_token_throughput": 400.0}})


@pytest.mark.parametrize("knob", KNOBS)
def test_a_knob_a_record_gives_reaches_the_benchmark_replay(knob, engines):
    value = other_value(knob)
    flags = {knob: value}
    if knob == "max_num_seqs":  # the budget defaults to at least max_num_seqs: keep it apart
        flags["max_num_batched_tokens"] = 8192
    [record] = realbench.parse(_record(flags))
    assert record.run is not None, record.skipped
    assert getattr(record.run.server.scheduler, knob) == value
    fit.predict(record.run, DEFAULTS["H100"])
    assert engines and all(getattr(c, knob) == value for c in engines), knob


@pytest.mark.parametrize("knob", KNOBS)
def test_a_knob_reaches_the_calibrations_replays(knob, engines):
    # A benchmark pasted into the lab is replayed on the lab's own scheduler.
    value = other_value(knob)
    b = bench_serve.Benchmark(num_prompts=20, random_input_len=300, random_output_len=20,
                              max_concurrency=4)
    run = fit.Run(b, fit.ServerSetup("H100", "llama-3.1-8b", SchedulerConfig()), {})
    text = "$ " + b.command() + "\n" + bench_serve.summary_text(fit.predict(run, DEFAULTS["H100"]), b)
    engines.clear()
    config = from_mapping(lab_config.LabConfig, {knob: value, "bench_text": text, "window_minutes": 1})
    lab_calibrate.calibrate(config)
    assert engines and all(getattr(c, knob) == value for c in engines), knob
