"""Tests for pysim.sims.naive_batching (simulation 1, the scheduler race; docs/naive-batching.md).

The small cases below were traced by hand, step by step, from the spec's rules;
the traces are written out in the comments and the asserts check the results.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from pysim.config import ConfigError, from_mapping
from pysim.prng import SplitMix64
from pysim.sims.naive_batching import (SCHEDULERS, NaiveBatchingConfig, admit_limit, min_pool, run, simulate,
                                       text, trace_digest, workload)

from hypothesis import given, settings
from hypothesis import strategies as st


def summary(result: dict) -> tuple:
    per = result["per_request"]
    return (result["steps_to_finish"], result["preemptions"],
            [r["wait"] for r in per], [r["finish"] for r in per])


# ---------------------------------------------------------------------------
# Case A: four requests, no preemption. longest = 10, pool = 20, max_num_seqs = 3.
#   R0 prompt 2, answer 3 | R1 prompt 3, answer 1 | R2 prompt 2, answer 4 | R3 prompt 4, answer 2
#   total answer blocks = 3 + 1 + 4 + 2 = 10
CASE_A = [(2, 3), (3, 1), (2, 4), (4, 2)]


def test_case_a_static():
    # Batch size = min(3, floor(20 / 10)) = 2, each member reserves 10 blocks.
    # step 0: batch {R0, R1}, waits 0, 0. R0 writes 1/3; R1 writes 1/1 (finish 0).
    # step 1: R1 is done but keeps its slot. R0 writes 2/3.
    # step 2: R0 writes 3/3 (finish 2).
    # step 3: retire: every member done -> batch ends. Batch {R2, R3}, waits 3, 3.
    #         R2 finishes 3 + 4 - 1 = 6, R3 finishes 3 + 2 - 1 = 4 and idles at steps 5, 6.
    # steps to finish = 7; waits [0, 0, 3, 3]: mean 1.5; p90: rank (4 - 1) x 0.9 = 2.7, between
    # the 3rd and 4th smallest (3 and 3) = 3.
    # mean running = 10 blocks written / 7 steps = 1.429.
    r = simulate("static", CASE_A, 20, 3, 10)
    assert summary(r) == (7, 0, [0, 0, 3, 3], [2, 0, 6, 4])
    assert r["mean_wait_steps"] == 1.5
    assert r["p90_wait_steps"] == 3
    assert r["mean_running"] == round(10 / 7, 3)
    assert r["max_concurrent"] == 2
    # Frames: [id, prompt, generated, reserved_unused, state]; unused = 10 - prompt - generated.
    assert r["frames"][0] == [[0, 2, 1, 7, "new"], [1, 3, 1, 6, "new"]]
    assert r["frames"][1] == [[0, 2, 2, 6, "run"], [1, 3, 1, 6, "done"]]
    assert r["frames"][3] == [[2, 2, 1, 7, "new"], [3, 4, 1, 5, "new"]]
    assert r["frames"][5] == [[2, 2, 3, 5, "run"], [3, 4, 2, 4, "done"]]
    # Step 1 holds R0 (2 + 2) and done R1 (3 + 1): prompt 5, answer 3, unused 20 - 8 = 12.
    assert r["kv"][1] == [5, 3, 12]


def test_case_a_continuous_reserved():
    # Admit while running < 3 and at least 10 of the 20 blocks are unreserved: at most 2.
    # step 0: admit R0, R1 (20 reserved). R0 1/3; R1 1/1 (finish 0).
    # step 1: retire R1. admit R2 (wait 1), finishes 1 + 4 - 1 = 4. R0 2/3.
    # step 2: R0 3/3 (finish 2). Nothing is free: R3 waits.
    # step 3: retire R0. admit R3 (wait 3), finishes 3 + 2 - 1 = 4.
    # step 5: retire R2 and R3; nothing left. steps to finish = 4 + 1 = 5.
    # waits [0, 0, 1, 3]: mean 1.0; p90 at rank 2.7 = 1 + 0.7 x (3 - 1) = 2.4. mean running 10 / 5 = 2.0.
    r = simulate("continuous_reserved", CASE_A, 20, 3, 10)
    assert summary(r) == (5, 0, [0, 0, 1, 3], [2, 0, 4, 4])
    assert (r["mean_wait_steps"], r["p90_wait_steps"], r["mean_running"]) == (1.0, 2.4, 2.0)
    assert r["frames"][1] == [[0, 2, 2, 6, "run"], [2, 2, 1, 7, "new"]]  # R2 takes free slot 1
    assert r["frames"][3] == [[3, 4, 1, 5, "new"], [2, 2, 3, 5, "run"]]  # R3 takes slot 0


def test_case_a_continuous_paged():
    # Admission limit floor(0.9 * 20) = 18.
    # step 0: R0: 0 + 2 + 1 = 3 <= 18, used 2. R1: 2 + 3 + 1 = 6, used 5.
    #         R2: 5 + 2 + 1 = 8, used 7. R3: 3 running = max_num_seqs, stop.
    #         grow R0, R1 (finish 0), R2: used 10.
    # step 1: retire R1 (4 blocks): used 6. R3: 6 + 4 + 1 = 11 <= 18, used 10, wait 1.
    #         grow R0, R2, R3: used 13.
    # step 2: grow R0 (3/3, finish 2), R2 (3/4), R3 (2/2, finish 2): used 16.
    # step 3: retire R0 (5) and R3 (6): used 5. grow R2 (4/4, finish 3).
    # steps to finish = 4; waits [0, 0, 0, 1]: mean 0.25, p90 at rank 2.7 = 0.7; mean running 10 / 4 = 2.5.
    r = simulate("continuous_paged", CASE_A, 20, 3, 10)
    assert summary(r) == (4, 0, [0, 0, 0, 1], [2, 0, 3, 2])
    assert (r["mean_wait_steps"], r["p90_wait_steps"], r["mean_running"]) == (0.25, 0.7, 2.5)
    # kv at the end of each step: prompt blocks held, answer blocks held, 0 reserved.
    assert r["kv"] == [[7, 3, 0], [8, 5, 0], [8, 8, 0], [2, 4, 0]]
    assert r["mean_kv"] == {"prompt": 6.25, "answer": 5.0, "reserved_unused": 0.0}


# ---------------------------------------------------------------------------
# Case B: a small pool forces a paged preemption of a request other than the requester.
# longest = 8, pool = 10 (admission limit floor(9.0) = 9), max_num_seqs = 4.
#   R0 prompt 2, answer 6 | R1 prompt 2, answer 6
CASE_B = [(2, 6), (2, 6)]


def test_case_b_paged_preempts_the_newest():
    # step 0: R0: 0 + 2 + 1 = 3 <= 9, used 2. R1: 2 + 2 + 1 = 5 <= 9, used 4. grow both: 6.
    # step 1: grow both: 8.   step 2: grow both: 10 = pool (R0 and R1 have 3 answer blocks).
    # step 3: R0 (oldest) needs a block, none free -> preempt the newest, R1 (2 + 3 = 5
    #         blocks freed, used 5, R1 to the front of waiting, writes nothing). R0 4/6: 6.
    # step 4: R1 needs 6 + 2 + 3 + 1 = 12 > 9: not admitted. R0 5/6: 7.
    # step 5: R0 6/6 (finish 5): 8.
    # step 6: retire R0: 0. R1: 0 + 2 + 3 + 1 = 6 <= 9, recomputes 5 blocks, writes 4/6.
    # step 7: R1 5/6.  step 8: R1 6/6 (finish 8). steps to finish = 9.
    # Wait counts R1's first first block (step 0), so waits are [0, 0].
    r = simulate("continuous_paged", CASE_B, 10, 4, 8)
    assert summary(r) == (9, 1, [0, 0], [5, 8])
    assert [q["preemptions"] for q in r["per_request"]] == [0, 1]
    assert r["frames"][3] == [[0, 2, 4, 0, "run"], [1, 2, 3, 0, "pre"]]
    assert r["frames"][4] == [[0, 2, 5, 0, "run"]]
    assert r["frames"][6] == [[1, 2, 4, 0, "new"]]  # resumed, in the lowest free slot
    assert r["kv"] == [[4, 2, 0], [4, 4, 0], [4, 6, 0], [2, 4, 0], [2, 5, 0], [2, 6, 0],
                       [2, 4, 0], [2, 5, 0], [2, 6, 0]]
    assert r["mean_running"] == round(12 / 9, 3)


@pytest.mark.parametrize("name", ["static", "continuous_reserved"])
def test_case_b_reserved_schedulers_run_one_at_a_time(name):
    # floor(10 / 8) = 1 request at a time. R0 runs steps 0..5 (finish 5), leaves at step 6;
    # R1 runs 6..11. steps 12; waits [0, 6]: mean 3.0; p90 at rank 0.9 = 0.9 x 6 = 5.4.
    r = simulate(name, CASE_B, 10, 4, 8)
    assert summary(r) == (12, 0, [0, 6], [5, 11])
    assert (r["mean_wait_steps"], r["p90_wait_steps"], r["mean_running"]) == (3.0, 5.4, 1.0)
    # While R0 runs it holds its whole 8-block reservation: 2 prompt + k answer + rest unused.
    assert r["kv"][0] == [2, 1, 5]


# ---------------------------------------------------------------------------
# Case C: the requester preempts itself, then head-of-line blocking.
# longest = 8, pool = 10 (limit 9), max_num_seqs = 4.
#   R0 prompt 2, answer 5 | R1 prompt 2, answer 5 | R2 prompt 1, answer 2
CASE_C = [(2, 5), (2, 5), (1, 2)]


def test_case_c_paged_self_preemption():
    # step 0: R0 3 <= 9 (used 2); R1 2 + 2 + 1 = 5 (used 4); R2 4 + 1 + 1 = 6 (used 5).
    #         grow all three: used 8. Waits 0, 0, 0.
    # step 1: R0 grows (9), R1 grows (10). R2 needs a block, none free: the newest is R2
    #         itself -> it preempts itself (frees 1 + 1, used 8), writes nothing.
    # step 2: R2 needs 8 + 1 + 1 + 1 = 11 > 9: stays waiting. R0, R1 grow: 10.
    # step 3: R0 needs a block: preempt the newest, R1 (frees 2 + 3, used 5), R1 goes to
    #         the front: waiting = [R1, R2]. R0 grows 4/5: 6.
    # step 4: head R1 needs 6 + 2 + 3 + 1 = 12 > 9: stop. R2 would fit (6 + 1 + 1 + 1 = 9)
    #         but is behind R1 (head-of-line blocking). R0 grows 5/5 (finish 4): 7.
    # step 5: retire R0: 0. R1: 0 + 5 + 1 = 6 (used 5); R2: 5 + 2 + 1 = 8 (used 7).
    #         R1 grows 4/5, R2 grows 2/2 (finish 5).
    # step 6: retire R2. R1 grows 5/5 (finish 6). steps to finish 7, preemptions 2.
    r = simulate("continuous_paged", CASE_C, 10, 4, 8)
    assert summary(r) == (7, 2, [0, 0, 0], [4, 6, 5])
    assert [q["preemptions"] for q in r["per_request"]] == [0, 1, 1]
    assert r["frames"][1] == [[0, 2, 2, 0, "run"], [1, 2, 2, 0, "run"], [2, 1, 1, 0, "pre"]]
    assert r["kv"][1] == [4, 4, 0]  # R2's blocks are already freed
    assert r["frames"][4] == [[0, 2, 5, 0, "run"]]  # R2 not admitted: head-of-line
    assert r["frames"][5] == [[1, 2, 4, 0, "new"], [2, 1, 2, 0, "new"]]
    assert (r["mean_wait_steps"], r["p90_wait_steps"]) == (0.0, 0)


@pytest.mark.parametrize("name", ["static", "continuous_reserved"])
def test_case_c_reserved_schedulers(name):
    # One at a time (floor(10 / 8) = 1): R0 steps 0..4, R1 5..9, R2 10..11. steps 12.
    # waits [0, 5, 10]: mean 5.0; p90 at rank 1.8 = 5 + 0.8 x 5 = 9.
    r = simulate(name, CASE_C, 10, 4, 8)
    assert summary(r) == (12, 0, [0, 5, 10], [4, 9, 11])
    assert (r["mean_wait_steps"], r["p90_wait_steps"]) == (5.0, 9.0)


# Case D: a request admitted in a step preempts itself in that step, before its first
# block, so its wait is the step of its later first block.
# longest = 8, pool = 10 (limit 9), max_num_seqs = 4.
#   R0 prompt 1, answer 2 | R1 prompt 1, answer 2 | R2 prompt 6, answer 2
CASE_D = [(1, 2), (1, 2), (6, 2)]


def test_case_d_paged_preempted_before_its_first_block():
    # step 0: R0 0 + 1 + 1 = 2 <= 9 (used 1); R1 1 + 1 + 1 = 3 (used 2);
    #         R2 2 + 6 + 1 = 9 <= 9 (used 8). Grow R0 (9), R1 (10). R2 needs a block,
    #         none free, the newest is R2 itself: it preempts itself (used 4), having
    #         written nothing, so it has no wait yet.
    # step 1: R2 needs 4 + 6 + 0 + 1 = 11 > 9: waits. R0, R1 write 2/2 (finish 1): used 6.
    # step 2: retire R0, R1 (used 0). R2: 0 + 6 + 1 = 7 <= 9, writes 1/2: wait 2.
    # step 3: R2 writes 2/2 (finish 3). steps 4; waits [0, 0, 2]: mean 0.667, p90 at rank 1.8 = 1.6.
    r = simulate("continuous_paged", CASE_D, 10, 4, 8)
    assert summary(r) == (4, 1, [0, 0, 2], [1, 1, 3])
    assert r["frames"][0] == [[0, 1, 1, 0, "new"], [1, 1, 1, 0, "new"], [2, 6, 0, 0, "pre"]]
    assert r["kv"][0] == [2, 2, 0]
    assert (r["mean_wait_steps"], r["p90_wait_steps"]) == (0.667, 1.6)
    # One at a time for the reserved ones: R0 steps 0..1, R1 2..3, R2 4..5.
    for name in ("static", "continuous_reserved"):
        assert summary(simulate(name, CASE_D, 10, 4, 8)) == (6, 0, [0, 2, 4], [1, 3, 5])


def test_static_batch_capped_by_max_running():
    # pool 100, longest 10: memory allows 10 but max_num_seqs = 2, so batches of 2.
    # {R0 a=1, R1 a=3} steps 0..2; {R2 a=2} from step 3, finishes 4. steps 5.
    r = simulate("static", [(1, 1), (1, 3), (1, 2)], 100, 2, 10)
    assert summary(r) == (5, 0, [0, 0, 3], [0, 2, 4])
    assert r["frames"][1][0] == [0, 1, 1, 8, "done"]


# ---------------------------------------------------------------------------
# Config, workload, output


def test_workload_draw_order_is_prompt_then_answer_per_request():
    config = NaiveBatchingConfig(num_requests=5, seed=42)
    rng = SplitMix64(42)
    expected = []
    for _ in range(5):
        p = rng.randint(2, 6)
        a = rng.randint(2, 24)
        expected.append((p, a))
    assert workload(config) == expected
    view = run(config, [])
    assert view["workload"] == [{"id": i, "prompt_blocks": p, "answer_blocks": a}
                                for i, (p, a) in enumerate(expected)]


def test_default_shape_static_slowest_paged_fastest_by_a_wide_margin():
    s = run(NaiveBatchingConfig(), [])["schedulers"]
    static, reserved, paged = (s[n]["steps_to_finish"] for n in SCHEDULERS)
    assert static > 1.3 * reserved
    assert reserved > 1.5 * paged
    assert s["static"]["preemptions"] == s["continuous_reserved"]["preemptions"] == 0
    assert s["continuous_paged"]["mean_running"] > 2 * s["continuous_reserved"]["mean_running"]
    # Reserving 30 blocks each in a 160-block pool caps both reserved schedulers at 5.
    assert s["static"]["max_concurrent"] == s["continuous_reserved"]["max_concurrent"] == 5


def test_mean_running_is_total_answer_blocks_over_steps():
    view = run(NaiveBatchingConfig(), [])
    total = sum(w["answer_blocks"] for w in view["workload"])
    for r in view["schedulers"].values():
        assert r["mean_running"] == round(total / r["steps_to_finish"], 3)


# The digest of the default view model. CPython and Pyodide must both give it.
DEFAULT_DIGEST = "35f1e0c5cd0a5c3b476c9574b17783be8078fbdedcf72ddcb2b272a89c3062bf"


def test_default_digest_is_stable():
    first = trace_digest(run(NaiveBatchingConfig(), []))
    assert first == trace_digest(run(NaiveBatchingConfig(), []))
    assert first == DEFAULT_DIGEST


def test_digest_changes_with_the_seed():
    assert trace_digest(run(NaiveBatchingConfig(seed=2), [])) != trace_digest(run(NaiveBatchingConfig(), []))


def test_default_view_is_small_json():
    view = run(NaiveBatchingConfig(), [])
    encoded = json.dumps(view, allow_nan=False, separators=(",", ":"))
    assert len(encoded) < 300_000
    assert json.loads(encoded) == view


def test_one_scheduler_only():
    view = run(NaiveBatchingConfig(scheduler="continuous_paged"), [])
    assert list(view["schedulers"]) == ["continuous_paged"]
    full = run(NaiveBatchingConfig(), [])
    assert view["schedulers"]["continuous_paged"] == full["schedulers"]["continuous_paged"]


def test_pool_minimum_keeps_the_longest_request_under_the_paged_limit():
    assert min_pool(30) == 34 and admit_limit(34) == 30 and admit_limit(33) == 29
    for longest in range(2, 49):
        assert admit_limit(min_pool(longest)) >= longest > admit_limit(min_pool(longest) - 1)
    # num_gpu_blocks counts vLLM's null block too: 34 usable blocks need 35.
    with pytest.raises(ConfigError) as err:
        NaiveBatchingConfig(num_gpu_blocks=34).check()
    assert err.value.field == "num_gpu_blocks" and "35" in err.value.message
    NaiveBatchingConfig(num_gpu_blocks=35).check()


@pytest.mark.parametrize("raw, field", [
    ({"prompt_blocks_min": 7}, "prompt_blocks_min"),
    ({"answer_blocks_min": 25}, "answer_blocks_min"),
    ({"num_gpu_blocks": 0}, "num_gpu_blocks"),
    ({"max_num_seqs": 65}, "max_num_seqs"),
    ({"num_requests": 401}, "num_requests"),
    ({"scheduler": "fastest"}, "scheduler"),
])
def test_config_refuses(raw, field):
    with pytest.raises(ConfigError) as err:
        from_mapping(NaiveBatchingConfig, raw)
    assert err.value.field == field


def test_actions_are_refused():
    with pytest.raises(ConfigError) as err:
        run(NaiveBatchingConfig(), ["step"])
    assert err.value.field == "actions"


def test_text_table_lists_every_scheduler():
    view = run(NaiveBatchingConfig(), [])
    out = text(view)
    assert "steps to finish" in out
    for name in SCHEDULERS:
        row = next(line for line in out.splitlines() if line.startswith(name))
        assert str(view["schedulers"][name]["steps_to_finish"]) in row.split()


# ---------------------------------------------------------------------------
# Properties over many small configs


def check_properties(view: dict) -> None:
    c = view["config"]
    pool, max_num_seqs = c["num_gpu_blocks"], c["max_num_seqs"]
    answers = [w["answer_blocks"] for w in view["workload"]]
    for name, r in view["schedulers"].items():
        per = r["per_request"]
        steps = r["steps_to_finish"]
        # every request finishes, after its first block, within the run
        assert all(q["finish"] is not None and q["wait"] <= q["finish"] < steps for q in per)
        assert max(q["finish"] for q in per) == steps - 1
        assert sum(q["preemptions"] for q in per) == r["preemptions"]
        if name != "continuous_paged":
            assert r["preemptions"] == 0
            assert all(q["finish"] == q["wait"] + a - 1 for q, a in zip(per, answers))
        assert len(r["frames"]) == len(r["kv"]) == steps
        written = 0
        previous: dict[int, int] = {}
        for t, (frame, kv) in enumerate(zip(r["frames"], r["kv"])):
            assert len(frame) <= max_num_seqs and (not frame or frame[-1] is not None)
            entries = [e for e in frame if e is not None]
            ids = [e[0] for e in entries]
            assert len(ids) == len(set(ids)), f"{name} step {t}: a request twice"
            working = [e for e in entries if e[4] in ("new", "run")]
            assert len(working) <= max_num_seqs
            written += len(working)
            held = [e for e in entries if e[4] != "pre"]
            assert kv == [sum(e[1] for e in held), sum(e[2] for e in held), sum(e[3] for e in held)]
            assert sum(kv) <= pool  # paged: used blocks; reserved: reservations
            if name == "continuous_paged":
                assert kv[2] == 0
            else:
                assert all(e[1] + e[2] + e[3] == view["longest_blocks"] for e in held)
            # a running request keeps its slot
            slots = {e[0]: s for s, e in enumerate(frame) if e is not None}
            for e in entries:
                if e[4] in ("run", "done"):
                    assert previous.get(e[0]) == slots[e[0]]
            previous = {i: s for i, s in slots.items()
                        if next(e for e in entries if e[0] == i)[4] != "pre"}
        assert written == sum(answers)


def test_properties_on_a_fixed_sweep():
    # Small pools and many seeds, beside the random configs below.
    for seed in range(12):
        config = NaiveBatchingConfig(num_requests=20, num_gpu_blocks=min_pool(14) + 1 + seed, max_num_seqs=1 + seed % 6,
                            seed=seed, prompt_blocks_min=1, prompt_blocks_max=4,
                            answer_blocks_min=1, answer_blocks_max=10)
        check_properties(run(config, []))


@st.composite
def small_configs(draw):
    pmin = draw(st.integers(1, 4))
    pmax = draw(st.integers(pmin, 6))
    amin = draw(st.integers(1, 6))
    amax = draw(st.integers(amin, 12))
    least = min_pool(pmax + amax) + 1  # + 1: vLLM's null block
    pool = draw(st.integers(least, least + 60))
    return NaiveBatchingConfig(num_requests=draw(st.integers(1, 25)), num_gpu_blocks=pool,
                      max_num_seqs=draw(st.integers(1, 10)), seed=draw(st.integers(0, 2**32 - 1)),
                      prompt_blocks_min=pmin, prompt_blocks_max=pmax,
                      answer_blocks_min=amin, answer_blocks_max=amax)


@settings(max_examples=80, deadline=None)
@given(small_configs())
def test_properties_random_small_configs(config):
    check_properties(run(config, []))


def test_config_fields_are_all_bounded_with_help():
    for f in dataclasses.fields(NaiveBatchingConfig):
        assert f.metadata["help"]
        assert f.metadata["kind"] in ("int", "choice")
