"""The scheduling-policy lab (page 9): the policy interface, the built-ins, the traffic,
the simulation, a reader's code and the puzzles.

The interface versions of vLLM's two policies must be vLLM's, exactly: they run the
recordings of vLLM 0.33.0's own Scheduler (tests/data/fidelity/sched) and must agree with
them, and with the engine's native queues, step for step.
"""

from __future__ import annotations

import pytest

from pysim.policy.builtin import BUILTINS
from pysim.engine.scheduler import Engine, EngineConfig

try:  # as a test module (pytest puts tests/unit on sys.path) or run as a script
    import test_fidelity_async as recorded_async
    import test_fidelity_sched as recorded
except ImportError:  # pragma: no cover
    from tests.unit import test_fidelity_async as recorded_async
    from tests.unit import test_fidelity_sched as recorded

CASES = [case for _, case in recorded.CASES]  # every recorded release's, synchronous
ASYNC_CASES = recorded_async.CASES  # the cited release's AsyncScheduler


# ============================================================== vLLM's two, through the interface

def _interface_engine(config, policy=None):
    return Engine(config, policy=BUILTINS[config.policy])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_fcfs_and_priority_through_the_interface_agree_with_vllm(case, monkeypatch):
    monkeypatch.setattr(recorded, "Engine", _interface_engine)
    assert type(recorded.engine_of(case).waiting).__name__ == "PolicyRequestQueue"
    assert recorded.disagreement(case) is None


@pytest.mark.parametrize("case", ASYNC_CASES, ids=[c["id"] for c in ASYNC_CASES])
def test_fcfs_and_priority_through_the_interface_agree_with_vllms_async_scheduler(case, monkeypatch):
    monkeypatch.setattr(recorded_async, "Engine", _interface_engine)
    assert type(recorded_async.engine_of(case).waiting).__name__ == "PolicyRequestQueue"
    assert recorded_async.disagreement(case) is None


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


# ============================================================== each built-in keeps its promise

from pysim.policy import reader as reader_policy
from pysim.sims import policies, puzzles  # noqa: E402
from pysim.__main__ import main  # noqa: E402
from pysim.policy.api import Policy  # noqa: E402


def _engine(policy, labels=None, **config):
    cfg = EngineConfig(**{"max_num_batched_tokens": 64, "max_num_seqs": 1, "num_gpu_blocks": 200,
                          "block_size": 4, **config})
    return Engine(cfg, policy=policy.with_labels(labels or {}))


def _admissions(engine, until=10_000):
    order = []
    clock = 0
    while engine.has_unfinished() and clock < until:
        order += engine.step(clock).admitted
        clock += 1
    return order


def test_lpm_admits_the_longest_cached_prefix_first():
    # Seat for one. Request "warm" (prompt 0..39) runs first and caches its 10 blocks.
    # Then three wait: x shares nothing, y shares 2 blocks (8 tokens), z shares 8 blocks
    # (32 tokens). lpm admits z, y, x; FCFS would admit x, y, z (their arrival order).
    warm = list(range(40))
    prompts = {"x": [900 + i for i in range(40)], "y": warm[:8] + [700 + i for i in range(32)],
               "z": warm[:32] + [800 + i for i in range(8)]}
    got = {}
    for name in ("lpm", "fcfs"):
        engine = _engine(BUILTINS[name], enable_prefix_caching=True)
        engine.add_request("warm", 40, 2, arrival=0, token_ids=warm)
        for k, (rid, ids) in enumerate(prompts.items()):
            engine.add_request(rid, 40, 2, arrival=1 + k * 0.001, token_ids=ids)
        got[name] = _admissions(engine)
    assert got["lpm"] == ["warm", "z", "y", "x"]
    assert got["fcfs"] == ["warm", "x", "y", "z"]


def test_sjf_admits_the_shortest_uncached_prefill_first():
    engine = _engine(BUILTINS["sjf"])
    engine.add_request("first", 30, 2, arrival=0)
    for rid, n in (("long", 60), ("short", 10), ("middle", 30)):
        engine.add_request(rid, n, 2, arrival=1)
    assert _admissions(engine) == ["first", "short", "middle", "long"]


def test_aging_lets_a_long_request_go_before_the_stream_of_short_ones_ends():
    # One long prompt (200 tokens) waits behind a stream of short ones (10 tokens), one
    # arriving every step. sjf serves the stream while it lasts: the long request goes
    # last. HRRN ranks by waited / uncached: the long request's ratio passes a fresh short
    # one's (which waits a step or two, ratio ~ 2 / 10) once it has waited ~ 2 / 10 x 200
    # = 40 s; with each short request taking 2 steps here, its bound is 2 x 40 = 80 steps.
    def run(name):
        engine = _engine(BUILTINS[name])
        engine.add_request("long", 200, 2, arrival=0)
        engine.add_request("s0", 10, 2, arrival=0)
        for k in range(1, 400):
            engine.add_request(f"s{k}", 10, 2, arrival=k)
        engine.step(0)  # s0 goes first (added first, equal keys until someone waits)
        clock = 1
        while engine.requests["long"].first_token_step is None:
            engine.step(clock)
            clock += 1
        return clock
    assert run("sjf") > 400  # starved until the stream ended
    assert run("aging") <= 80


def test_vtc_keeps_the_gap_between_two_backlogged_tenants_bounded():
    # Tenant a sends costly requests (prompt 40, 20 out: weight 40 + 2 x 20 = 80), tenant b
    # cheap ones (8, 4: 16), both always backlogged (everything arrives at 0, a's first).
    # VTC admits from the tenant with the smaller weighted count, so the gap never exceeds
    # what one admission adds plus what the running requests add meanwhile: at most one
    # request's weight per seat, 4 x 80. FCFS serves a's backlog first: the gap grows.
    labels = {**{f"a{k}": ("a", "interactive") for k in range(40)},
              **{f"b{k}": ("b", "interactive") for k in range(40)}}

    def run(name):
        engine = _engine(BUILTINS[name], labels, max_num_seqs=4, max_num_batched_tokens=128,
                         num_gpu_blocks=400)
        for k in range(40):
            engine.add_request(f"a{k}", 40, 20, arrival=0)
        for k in range(40):
            engine.add_request(f"b{k}", 8, 4, arrival=0)
        view = engine.waiting.view
        widest = clock = 0
        while clock == 0 or {engine.requests[i].id[0] for i in engine.waiting_ids()} == {"a", "b"}:
            engine.step(clock)
            clock += 1
            engine.waiting.on_schedule(clock)  # a new schedule: counts are brought up to date,
            view._update()  # as the queue does before it asks the policy
            served = {t: view.served_input_tokens[t] + 2 * view.served_output_tokens[t] for t in "ab"}
            widest = max(widest, abs(served["a"] - served["b"]))
        return widest
    assert run("vtc") <= 4 * 80
    assert run("fcfs") > 4 * 80


def test_victims_are_chosen_as_stated():
    # The pool runs dry while three run: FCFS preempts the newest admitted; PRIORITY the
    # one with the largest (priority, arrival); a policy's own victim() is obeyed.
    def preempted(policy):
        engine = _engine(policy, max_num_seqs=3, num_gpu_blocks=9, max_num_batched_tokens=64)
        for rid, prio in (("a", 1), ("b", 0), ("c", 0)):
            engine.add_request(rid, 8, 12, arrival=0, priority=prio)
        out = []
        clock = 0
        while engine.has_unfinished() and not out:
            out = engine.step(clock).preempted
            clock += 1
        return out[0]
    assert preempted(BUILTINS["fcfs"]) == "c"
    assert preempted(BUILTINS["priority"]) == "a"
    assert preempted(Policy("mine", lambda r, e: r.arrival_time, lambda running, e: running[1])) == "b"


# ============================================================== the simulation and a reader's code

SMALL = {"window_minutes": 1}


def _config(**over):
    from pysim.config import from_mapping
    return from_mapping(policies.PoliciesConfig, {**SMALL, **over})


def test_the_view_has_both_policies_per_tenant_and_tier():
    view = policies.run(_config(policy="priority", compare="fcfs"), [])
    assert [r["name"] for r in view["results"]] == ["priority", "fcfs"]
    for r in view["results"]:
        assert set(r["tenants"]) == {"conv", "code"} and set(r["tiers"]) == {"interactive", "batch"}
        assert sum(f["num_requests"] for f in r["tiers"].values()) == view["traffic"]["num_requests"]
        assert set(r["series"]["wait_s"]) == {"interactive", "batch"}
        assert len(r["series"]["t_s"]) == policies.NUM_BINS
        assert r["prefix_cache"] is None
    prio, fcfs = view["results"]
    assert prio["tiers"]["interactive"]["ttft_ms"]["p90"] <= fcfs["tiers"]["interactive"]["ttft_ms"]["p90"]


def test_the_reader_code_of_a_builtin_gives_the_builtins_result():
    from pysim.policy.builtin import source
    config = _config(policy="vtc")
    traffic = policies.traffic_of(config)
    mine, report = policies.run_code(traffic, source("vtc"), config)
    assert report["error"] is None
    assert mine["summary"] == policies.run_builtin(traffic, "vtc", config)["summary"]


@pytest.mark.parametrize("code, line, words", [
    ("def order(request, engine):\n    x = 1\n    return 1 / 0\n", 3, "ZeroDivisionError"),
    ("def order(request, engine):\n    return 'soon'\n", 2, "a key must be a number or a tuple of numbers"),
    ("def order(request, engine):\n    return None\n", 2, "a key must be a number"),
    ("def order(request, engine):\n    return 1 if request.tier == 'batch' else (0, 1)\n", 2, "cannot be compared"),
    ("def order(request, engine):\n    request.priority = -5\n    return 0\n", 2, "the request is read-only"),
    ("def order(request, engine):\n    engine.now = 0\n    return 0\n", 2, "the engine is read-only"),
    ("def order(request, engine):\n    engine.served_tokens['conv'] = 0\n    return 0\n", 2, "TypeError"),
    ("def order(request, engine):\n    while True:\n        pass\n", 3, "budget"),
    ("x = 0\nwhile True:\n    x += 1\n", 3, "budget"),
    ("def order(request, engine:\n    return 0\n", 1, "SyntaxError"),
    ("x = 1\n", None, "must define order"),
])
def test_a_readers_mistake_is_named_with_its_line_and_nothing_else_changes(code, line, words):
    config = _config()
    traffic = policies.traffic_of(config)
    before = policies.run_builtin(traffic, "fcfs", config)
    mine, report = policies.run_code(traffic, code, config, max_steps=200_000)
    assert mine is None
    assert words in report["error"], report["error"]
    if line is not None:
        assert report["error_line"] == line, report
    assert policies.run_builtin(traffic, "fcfs", config) == before  # later runs unaffected


def test_a_victim_that_is_not_running_is_named():
    from pysim.sims.exercises import ReaderError
    policy = reader_policy.load("def order(r, e):\n    return 0\n\ndef victim(running, engine):\n"
                                "    return 'c'\n")
    engine = _engine(policy, max_num_seqs=3, num_gpu_blocks=9, max_num_batched_tokens=64)
    for rid in "abc":
        engine.add_request(rid, 8, 12, arrival=0)
    with pytest.raises(ReaderError, match="must return one of the running requests") as err:
        for clock in range(100):
            engine.step(clock)
    assert err.value.line == 5


def test_the_budget_counts_each_call_and_loop_turn_of_the_readers_code_only():
    policy = reader_policy.load(
        "def order(request, engine):\n"
        "    for _ in range(5):\n"
        "        pass\n"
        "    return sorted([3, 1, 2], key=lambda x: x)[0] + sum(1 for _ in 'ab')\n")
    for _ in range(7):
        policy.guard.run(policy.order, None, None, what="order()")
    # per call: 1 entry + 5 turns + 3 lambda calls + 2 generator turns; pysim's own
    # code (the guard, sorted's C loop) counts nothing
    assert policy.guard.steps == 7 * 11
    config = _config()
    mine, report = policies.run_code(policies.traffic_of(config),
                                     "def order(request, engine):\n    return request.arrival_time\n",
                                     config, max_steps=10)
    assert mine is None and "10 steps" in report["error"] and report["error_line"] == 2


@pytest.mark.parametrize("code, line", [
    ("def order(request, engine):\n    try:\n        while True:\n            pass\n"
     "    except BaseException:\n        return 0\n", 4),  # a budget swallowed is spent still
    ("def order(request, engine):\n    return sum(1 for _ in iter(int, 1))\n", 2),
    ("f = lambda n: f(n - 1) + f(n - 1) if n else 1\n\ndef order(request, engine):\n    return f(60)\n", 1),
    ('def order(request, engine):\n    """Doc."""\n    return [x for x in iter(int, 1)]\n', 3),
])
def test_a_policy_that_never_returns_is_stopped_whatever_runs_forever(code, line):
    config = _config()
    mine, report = policies.run_code(policies.traffic_of(config), code, config, max_steps=100_000)
    assert mine is None and "budget" in report["error"] and report["error_line"] == line, report


def test_a_budget_spent_on_time_and_swallowed_still_says_time_and_its_line():
    code = ("def order(request, engine):\n    try:\n        while True:\n            pass\n"
            "    except BaseException:\n        return 0\n")
    config = _config()
    mine, report = policies.run_code(policies.traffic_of(config), code, config, max_seconds=0)
    assert mine is None and report["error_line"] == 4, report
    assert "after more than 0 s" in report["error"], report["error"]


def test_the_budgets_own_name_is_refused():
    config = _config()
    mine, report = policies.run_code(policies.traffic_of(config),
                                     "def order(request, engine):\n    return _pysim_step(1)\n", config)
    assert mine is None and report["error_line"] == 2 and "pysim's" in report["error"]


# ============================================================== puzzles

HARD_CODED = '''
# The visible window's requests, recognised by arrival and prompt: the order a good
# policy gave them there; everything else first come, first served.
TABLE = {TABLE}

def order(request, engine):
    return TABLE.get((round(request.arrival_time, 3), request.num_prompt_tokens), (1, request.arrival_time))
'''


def _hard_coded(puzzle) -> str:
    config = puzzles.window_config(puzzle, puzzle.visible_start_min)
    traffic = policies.traffic_of(config)
    out = policies.simulate(traffic, BUILTINS[puzzle.good_policy], config)
    ranked = sorted(range(len(traffic)), key=lambda i: out.admitted[i])
    table = {(round(traffic.arrivals[i], 3), traffic.prompt_tokens[i]): (0, rank)
             for rank, i in enumerate(ranked)}
    return HARD_CODED.replace("{TABLE}", repr(table))


@pytest.mark.parametrize("name", list(puzzles.PUZZLES))
def test_a_puzzle_passes_a_good_policy_and_fails_fcfs_and_a_hard_coded_one(name):
    puzzle = puzzles.PUZZLES[name]
    assert puzzles.grade(puzzle, lambda: BUILTINS[puzzle.good_policy])["passed"]
    assert not puzzles.grade(puzzle, lambda: BUILTINS["fcfs"])["passed"]
    code = _hard_coded(puzzle)
    view = puzzles.run(puzzles.PuzzleConfig(puzzle=name, policy_code=code), [])
    assert view["error"] is None and not view["passed"]
    assert puzzle.visible_start_min not in puzzle.held_out


# ============================================================== the command line

def test_cli_policies_and_a_policy_file(tmp_path, capsys):
    assert main(["policies", "--set", "window_minutes=1", "--set", "compare=fcfs"]) == 0
    assert "First come, first served" in capsys.readouterr().out
    good = tmp_path / "good.py"
    good.write_text("def order(request, engine):\n    return (request.priority, request.arrival_time)\n")
    assert main(["policies", "--set", "window_minutes=1", "--policy-file", str(good)]) == 0
    assert "Your policy" in capsys.readouterr().out
    bad = tmp_path / "bad.py"
    bad.write_text("def order(request, engine):\n    return 'x'\n")
    assert main(["policies", "--set", "window_minutes=1", "--policy-file", str(bad)]) == 2
    assert "Line 2" in capsys.readouterr().err
    assert main(["policies", "--policy-file", str(tmp_path / "missing.py")]) == 2
    assert main(["policies", "--set", "conv_rate_scale=9"]) == 2
    assert "0.1 to 4" in capsys.readouterr().err


def test_cli_puzzles(tmp_path, capsys):
    assert main(["puzzle", "--list"]) == 0
    assert capsys.readouterr().out.split() == list(puzzles.PUZZLES)
    fcfs = tmp_path / "fcfs.py"
    fcfs.write_text("def order(request, engine):\n    return request.arrival_time\n")
    assert main(["puzzle", "flood", "--policy-file", str(fcfs)]) == 1
    assert "FAIL" in capsys.readouterr().out
    from pysim.policy.builtin import source
    vtc = tmp_path / "vtc.py"
    vtc.write_text(source("vtc"))
    assert main(["puzzle", "flood", "--policy-file", str(vtc)]) == 0
    assert "PASS" in capsys.readouterr().out
    broken = tmp_path / "broken.py"
    broken.write_text("def order(request, engine):\n    return request.nope\n")
    assert main(["puzzle", "flood", "--policy-file", str(broken)]) == 2
    assert main(["puzzle", "nope", "--policy-file", str(fcfs)]) == 2


def test_a_window_too_heavy_for_a_page_is_refused_naming_the_window():
    from pysim.config import ConfigError, from_mapping
    from pysim.sims.policies import MAX_REQUESTS, PoliciesConfig, traffic_of

    with pytest.raises(ConfigError) as err:
        from_mapping(PoliciesConfig, {"flood_tenant": "conv", "flood_factor": 4})
    assert err.value.field == "window_minutes" and f"{MAX_REQUESTS:,}" in err.value.message
    # The suggested window is accepted, and ten minutes of the default traffic fit.
    most = int(err.value.message.split("at most ")[2].split(" min")[0])
    fine = from_mapping(PoliciesConfig, {"flood_tenant": "conv", "flood_factor": 4, "window_minutes": most})
    assert len(traffic_of(fine)) <= MAX_REQUESTS
    assert len(traffic_of(from_mapping(PoliciesConfig, {"window_minutes": 10}))) <= MAX_REQUESTS


@pytest.mark.parametrize("async_scheduling", [False, True])
@pytest.mark.parametrize("caching", [False, True])
def test_what_tenants_were_served_is_each_requests_served_tokens_summed(async_scheduling, caching):
    # The engine counts each tenant's tokens as it hands them out and samples them
    # (pysim.policy.api.Tally). At every call of a policy the counts must equal the sum,
    # over the tenant's requests, of what each says it was served: `served_tokens` less
    # its samples fed back as input, and its samples. A small pool, so requests are
    # preempted and recomputed; shared prompts with prefix caching, so some are hits.
    import random

    from pysim.engine.replay import Replica, engine_config
    from pysim.engine.scheduler import SchedulerConfig

    rng = random.Random(7)
    n = 160
    labels = {i: ("ab"[i % 3 == 0], "interactive") for i in range(n)}
    checked = {"calls": 0}

    def order(request, engine):
        inputs, outputs = engine.served_input_tokens, engine.served_output_tokens
        sums_in, sums_out = {"a": 0, "b": 0}, {"a": 0, "b": 0}
        for r in engine._engine.requests.values():
            t = labels[r.id][0]
            sums_in[t] += r.served_tokens - max(r.num_output - 1, 0)
            sums_out[t] += r.num_output
        assert dict(inputs) == sums_in and dict(outputs) == sums_out
        assert dict(engine.served_tokens) == {t: sums_in[t] + sums_out[t] for t in "ab"}
        checked["calls"] += 1
        return request.arrival_time

    stm, _blocks = policies.hardware(policies.PoliciesConfig())
    scheduler = SchedulerConfig(max_num_seqs=16, max_num_batched_tokens=256, async_scheduling=async_scheduling)
    cfg = engine_config(48, 16, scheduler, enable_prefix_caching=caching)
    server = Replica(cfg, stm, policy=Policy("tallied", order).with_labels(labels))
    for i in range(n):
        prompt = rng.randrange(40, 120)
        ids = [i % 4] * 32 + [1000 + i] * (prompt - 32) if caching else None  # four shared prefixes
        server.engine.add_request(i, prompt, rng.randrange(2, 60), arrival=i * 0.004, token_ids=ids)
    server.now = 0.0
    server.advance()
    engine = server.engine
    assert len(server.done) == n
    assert checked["calls"] > 50, checked
    assert sum(r.num_preemptions for r in engine.requests.values()) > 0
    assert not caching or engine.prefix_cache_hits > 0
