"""The engine's waiting queue per policy (pysim.engine.request_queue), and the registry's rules."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

import pysim
from pysim import registry
from pysim.engine.request_queue import FCFSRequestQueue, PriorityRequestQueue, create_request_queue
from pysim.utils import cdiv, percentile


def req(name, priority=0, arrival=0, seq=0):
    return SimpleNamespace(name=name, priority=priority, arrival=arrival, seq=seq)


def test_fcfs_keeps_arrival_order_and_a_preempted_request_goes_first():
    a, b, c = req("a"), req("b"), req("c")
    q = create_request_queue("fcfs")
    assert isinstance(q, FCFSRequestQueue)
    for r in (a, b, c):
        q.add_request(r)
    assert q.peek_request() is a and q.pop_request() is a
    q.prepend_request(a)  # preempted: back to the very front, ahead of b
    assert [r.name for r in q] == ["a", "b", "c"]
    q.remove_request(b)
    assert [r.name for r in q] == ["a", "c"] and len(q) == 2
    # The victim under FCFS is the most recently admitted running request.
    assert FCFSRequestQueue.preemption_victim([a, b, c]) is c


def test_priority_orders_by_priority_then_arrival_then_add_order():
    # Lower priority value first; equal priorities by arrival; equal arrivals by seq.
    late_urgent = req("late_urgent", priority=0, arrival=5, seq=2)
    early_batch = req("early_batch", priority=1, arrival=0, seq=0)
    tie_first = req("tie_first", priority=1, arrival=3, seq=1)
    tie_second = req("tie_second", priority=1, arrival=3, seq=3)
    q = create_request_queue("priority")
    assert isinstance(q, PriorityRequestQueue)
    for r in (tie_second, early_batch, late_urgent, tie_first):
        q.add_request(r)
    assert [r.name for r in q] == ["late_urgent", "early_batch", "tie_first", "tie_second"]
    assert q.peek_request() is late_urgent and q.pop_request() is late_urgent
    # "Prepending" a preempted batch request re-inserts it by its key, not at the front.
    q.prepend_request(late_urgent)
    assert q.peek_request() is late_urgent
    q.remove_request(early_batch)
    assert [r.name for r in q] == ["late_urgent", "tie_first", "tie_second"]
    # The victim under PRIORITY is the running request that sorts last.
    assert PriorityRequestQueue.preemption_victim([late_urgent, tie_second, tie_first]) is tie_second


def test_an_unknown_policy_is_refused():
    with pytest.raises(KeyError):
        create_request_queue("sjf")


def test_cdiv_and_percentile():
    # 17 tokens in 16-token blocks take 2 blocks; 16 take 1; 0 take 0.
    assert (cdiv(17, 16), cdiv(16, 16), cdiv(0, 16)) == (2, 1, 0)
    # numpy's linear percentile, as vllm bench serve takes it. 1..10: p90 sits at rank
    # 9 x 0.9 = 8.1 (0-based), between 9 and 10: 9.1; p50 at rank 4.5: 5.5.
    values = list(range(1, 11))
    assert percentile(values, 90) == pytest.approx(9.1) and percentile(values, 50) == 5.5
    assert (percentile(values, 0), percentile(values, 100)) == (1, 10)
    # An odd count's median is its middle value; one value is every percentile of itself.
    assert percentile([1, 2, 3], 50) == 2 and percentile([7], 99) == 7
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([], 50) == 0.0  # vLLM's np.percentile(x or 0, p)


def test_every_registered_module_defines_its_simulation():
    for name, sim in registry.simulations().items():
        assert sim.name == name
    with pytest.raises(pysim.config.ConfigError):
        registry.simulation("race")  # an old name is not an alias


def test_no_simulation_imports_the_bridge():
    # Dependencies point one way: bridge -> registry -> simulations. Read each module's
    # imports from its source, so importing nothing is needed to check it.
    package = Path(pysim.__file__).parent
    for path in sorted(package.glob("*.py")):
        if path.name in ("bridge.py", "__main__.py"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                     and node.module in (None, "pysim") for a in node.names}
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        assert not {"bridge", "pysim.bridge"} & imported, f"{path.name} imports the bridge"
