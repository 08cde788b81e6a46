"""The scheduling-policy lab (page 9): the policy interface, the built-ins, the traffic,
the simulation, a reader's code and the puzzles.

The interface versions of vLLM's two policies must be vLLM's, exactly: they run the
recordings of vLLM 0.33.0's own Scheduler (tests/data/fidelity/sched) and must agree with
them, and with the engine's native queues, step for step.
"""

from __future__ import annotations

import pytest

from pysim.builtin_policies import BUILTINS
from pysim.engine import Engine, EngineConfig

try:  # as a test module (pytest puts tests/unit on sys.path) or run as a script
    import test_fidelity_sched as recorded
except ImportError:  # pragma: no cover
    from tests.unit import test_fidelity_sched as recorded

CASES = recorded.CASES


# ============================================================== vLLM's two, through the interface

def _interface_engine(config, policy=None):
    return Engine(config, policy=BUILTINS[config.policy])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_fcfs_and_priority_through_the_interface_agree_with_vllm(case, monkeypatch):
    monkeypatch.setattr(recorded, "Engine", _interface_engine)
    assert type(recorded.engine_of(case).waiting).__name__ == "PolicyRequestQueue"
    assert recorded.disagreement(case) is None


@pytest.mark.parametrize("case", CASES[::4], ids=[c["id"] for c in CASES[::4]])
def test_the_interface_and_the_native_queues_agree_step_for_step(case, monkeypatch):
    native = recorded.engine_of(case)
    monkeypatch.setattr(recorded, "Engine", _interface_engine)
    coded = recorded.engine_of(case)
    clock = 0
    while native.has_unfinished():
        assert coded.has_unfinished()
        for engine in (native, coded):
            engine.step(clock)
        a, b = native.snapshot(), coded.snapshot()
        a["waiting"], b["waiting"] = sorted(a["waiting"]), sorted(b["waiting"])
        assert a == b, f"step {clock}"
        assert native.running_ids() == coded.running_ids()
        assert [r.num_preemptions for r in native.requests.values()] == \
               [r.num_preemptions for r in coded.requests.values()]
        clock += 1
    assert not coded.has_unfinished()
