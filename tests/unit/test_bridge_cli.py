"""The race through the two doors: pysim.bridge.call (the page) and the command line.

Bad input must come back as an answer naming the field, never as an exception
(bridge), or as exit status 2 with one line naming the field (CLI).
"""

from __future__ import annotations

import dataclasses
import gc
import json
import subprocess
import sys

import pytest

from pysim import bridge, registry
from pysim.__main__ import main
from pysim.sims.naive_batching import SCHEDULERS, NaiveBatchingConfig, run, trace_digest


def call(payload) -> dict:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return json.loads(bridge.call("naive_batching", text))


# ---------------------------------------------------------------------------
# Bridge


def test_bridge_default_equals_direct_run():
    answer = call({})
    assert answer["ok"] is True
    assert list(answer["result"]["schedulers"]) == list(SCHEDULERS)
    assert trace_digest(answer["result"]) == trace_digest(run(NaiveBatchingConfig(), []))


def test_bridge_accepts_settings_and_one_scheduler():
    answer = call({"config": {"num_requests": 8, "num_gpu_blocks": 100, "scheduler": "static"}})
    assert answer["ok"] is True
    result = answer["result"]
    assert len(result["workload"]) == 8
    assert list(result["schedulers"]) == ["static"]
    assert result["config"]["num_gpu_blocks"] == 100


@pytest.mark.parametrize("config, field, words", [
    ({"num_gpu_blocks": -5}, "num_gpu_blocks", "-5"),
    ({"num_requests": 0}, "num_requests", "1 to 400"),
    ({"num_gpu_blocks": "abc"}, "num_gpu_blocks", "abc"),
    ({"num_gpu_blocks": 160.5}, "num_gpu_blocks", "whole number"),
    ({"num_requests": True}, "num_requests", "True"),
    ({"num_gpu_blocks": 20}, "num_gpu_blocks", "at least 35"),  # ceil(30 / 0.9) = 34 usable + the null block
    ({"prompt_blocks_min": 5, "prompt_blocks_max": 3}, "prompt_blocks_min", "at most"),
    ({"answer_blocks_max": 40}, "answer_blocks_max", "1 to 32"),
    ({"scheduler": "fifo"}, "scheduler", "continuous_paged"),
    ({"pool": 100}, "pool", "unknown setting"),
])
def test_bridge_bad_config_names_the_field(config, field, words):
    answer = call({"config": config})
    assert answer["ok"] is False
    assert answer["error"]["field"] == field
    assert words in answer["error"]["message"]


@pytest.mark.parametrize("text, field", [
    ('{"config": {"num_gpu_blocks": 160', ""),  # malformed JSON
    ('{"config": {"num_gpu_blocks": NaN}}', ""),  # NaN is refused while parsing
    ('{"config": {"num_gpu_blocks": Infinity}}', ""),
    ("[1, 2]", ""),  # not an object
    ('{"config": [1]}', "config"),
    ('{"config": {}, "extra": 1}', "extra"),
    ('{"actions": ["step"]}', "actions"),
    ('{"actions": "step"}', "actions"),
    ("", ""),
])
def test_bridge_never_raises(text, field):
    answer = json.loads(bridge.call("naive_batching", text))
    assert answer["ok"] is False
    assert answer["error"]["field"] == field
    assert answer["error"]["message"]


def test_bridge_overflowing_number_names_the_field():
    # 1e999 is valid JSON but parses to infinity: refused by the field, not the parser.
    answer = call('{"config": {"num_gpu_blocks": 1e999}}')
    assert answer["ok"] is False and answer["error"]["field"] == "num_gpu_blocks"


def test_bridge_nan_message_says_what_is_wrong():
    answer = call('{"config": {"num_gpu_blocks": NaN}}')
    assert "NaN" in answer["error"]["message"]


def test_bridge_non_string_arguments_do_not_raise():
    answer = json.loads(bridge.call("naive_batching", None))  # type: ignore[arg-type]
    assert answer["ok"] is False


def test_describe_exports_the_race_ranges():
    fields = {f["name"]: f for f in json.loads(bridge.call("describe", "{}"))["result"]["naive_batching"]["fields"]}
    assert fields["num_gpu_blocks"]["default"] == 160 and fields["num_gpu_blocks"]["hi"] == 2000
    assert fields["num_requests"]["lo"] == 1 and fields["num_requests"]["hi"] == 400
    assert fields["scheduler"]["options"] == ["all", *SCHEDULERS]


def test_describe_carries_each_control_as_the_widget_shows_it():
    # The race's pool slider: labelled with vLLM's name, 1..640 on the slider (pysim
    # accepts up to 2,000 typed), whole numbers so step 1, a linear slider.
    described = json.loads(bridge.call("describe", "{}"))["result"]
    pool = {f["name"]: f for f in described["naive_batching"]["fields"]}["num_gpu_blocks"]
    assert (pool["label"], pool["unit"], pool["step"], pool["scale"], pool["slider_max"]) == \
        ("num_gpu_blocks", "blocks", 1, "linear", 640)
    # The budget slider walks its range by ratios (eight positions per doubling).
    budget = {f["name"]: f for f in described["chunked_prefill"]["fields"]}["max_num_batched_tokens"]
    assert (budget["label"], budget["unit"], budget["scale"]) == ("max_num_batched_tokens", "tokens", "log")
    # A float field has no fixed step: any value in range may be typed.
    target = {f["name"]: f for f in described["batch_size"]["fields"]}["target_tok_s"]
    assert target["kind"] == "float" and target["step"] is None


@pytest.mark.parametrize("name", sorted(bridge.simulations()))
def test_every_field_has_a_label_and_a_sane_control(name):
    for f in json.loads(bridge.call("describe", "{}"))["result"][name]["fields"]:
        assert isinstance(f["label"], str) and f["label"].strip(), f"{name}.{f['name']} has no label"
        assert f["help"].strip()
        if f["kind"] in ("int", "float"):
            assert f["scale"] in ("linear", "log")
            assert f["lo"] <= f["default"] <= f["hi"]
            assert f["slider_max"] is None or f["lo"] <= f["slider_max"] <= f["hi"]
            assert (f["step"] == 1) if f["kind"] == "int" else (f["step"] is None or f["step"] > 0)
        if f["kind"] == "choice":
            assert list(f["option_labels"]) == f["options"]


def test_field_builders_refuse_inconsistent_metadata():
    from pysim.config import bounded, choice
    with pytest.raises(AssertionError):
        bounded(5, 1, 4, "a default outside its own range")
    with pytest.raises(AssertionError):
        bounded(2, 1, 4, "an unknown slider scale", scale="cubic")
    with pytest.raises(AssertionError):
        choice("a", ("a", "b"), "labels for options that do not exist", option_labels={"a": "A", "c": "C"})


# ---------------------------------------------------------------------------
# Command line


def test_cli_prints_the_comparison_table(capsys):
    assert main(["naive_batching"]) == 0
    out = capsys.readouterr().out
    view = run(NaiveBatchingConfig(), [])
    for name in SCHEDULERS:
        row = next(line for line in out.splitlines() if line.startswith(name))
        assert row.split()[1] == str(view["schedulers"][name]["steps_to_finish"])


def test_cli_json_with_settings(capsys):
    assert main(["naive_batching", "--json", "--set", "num_requests=5", "--set", "scheduler=continuous_paged"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert len(view["workload"]) == 5
    assert list(view["schedulers"]) == ["continuous_paged"]
    config = NaiveBatchingConfig(num_requests=5, scheduler="continuous_paged")
    assert trace_digest(view) == trace_digest(run(config, []))


@pytest.mark.parametrize("setting, field", [
    ("num_gpu_blocks=abc", "num_gpu_blocks"),
    ("num_gpu_blocks=-5", "num_gpu_blocks"),
    ("num_requests=0", "num_requests"),
    ("num_gpu_blocks=20", "num_gpu_blocks"),
    ("pool=100", "pool"),
    ("max_num_seqs=2.5", "max_num_seqs"),
    ("answer_blocks_min=30", "answer_blocks_min"),
])
def test_cli_bad_setting_exits_2_with_one_line(capsys, setting, field):
    assert main(["naive_batching", "--set", setting]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {field}:")


def test_cli_refuses_actions(capsys):
    assert main(["naive_batching", "--actions", "step"]) == 2
    assert "actions" in capsys.readouterr().err


def test_simulations_run_without_the_cycle_collector_and_restore_it(monkeypatch):
    """The bridge pauses gc around a simulation (its p95 in Pyodide) and always puts it
    back, also when the run fails; the exercise, which runs a reader's code, keeps it on."""
    import pysim.sims.naive_batching

    seen = {}
    real_run = pysim.sims.naive_batching.SIMULATION.run
    def spy(config, actions):
        seen["naive_batching"] = gc.isenabled()
        if config.seed == 13:
            raise RuntimeError("a bug in the middle of a run")
        return real_run(config, actions)
    monkeypatch.setattr(pysim.sims.naive_batching, "SIMULATION", dataclasses.replace(pysim.sims.naive_batching.SIMULATION, run=spy))
    assert gc.isenabled()
    assert call({})["ok"] and seen["naive_batching"] is False
    assert gc.isenabled()
    failed = call({"config": {"seed": 13}})
    assert failed["error"]["message"].startswith("internal error: RuntimeError") and gc.isenabled()
    gc.disable()  # a caller that had it off finds it off
    try:
        call({})
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert bridge.simulations()["exercises"].runs_reader_code
    assert not any(s.runs_reader_code for n, s in bridge.simulations().items() if n != "exercises")


@pytest.mark.skipif(sys.platform == "emscripten", reason="needs a fresh interpreter (subprocess)")
def test_a_call_imports_only_its_own_simulation():
    """A page's first answer must not wait for every simulation module to compile."""
    code = ("import json, sys; from pysim import bridge; bridge.call('toy_scheduler', '{}'); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pysim.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out)
    assert "pysim.toy.scheduler" in loaded
    others = {f"pysim.{module}" for name, module in registry.MODULES.items() if name != "toy_scheduler"}
    assert len(others) >= 8 and not (others | {"pysim.engine"}) & set(loaded), loaded
