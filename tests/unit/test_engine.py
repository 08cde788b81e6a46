"""The scheduler engine (pysim.engine): hand-traced steps, then properties.

Notation in the traces: `A d` = A decodes one token, `A p5` = A gets a 5-token prefill
chunk. c = num_computed, t = num_tokens (prompt + sampled) after the step; with
block size 4 a request holding k blocks can compute up to 4k tokens, so it needs a new
block in the step where c + n first exceeds 4k.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from pysim.engine.scheduler import DECODE, PREFILL, Engine, EngineConfig, run_timed


def parts_of(engine: Engine, now=0):
    return engine.step(now).parts


def d(rid):
    return (rid, DECODE, 1)


def p(rid, n):
    return (rid, PREFILL, n)


def drain(engine: Engine, now=0):
    """Step until done; return each step's result."""
    results = []
    while engine.has_unfinished():
        results.append(engine.step(now))
        engine.check_invariants()
    return results


# --- a single long prompt, chunked ---------------------------------------------------

@pytest.mark.parametrize("budget, chunks", [
    (4000, [4000]),              # fits one step
    (2000, [2000, 2000]),        # two equal chunks
    (1500, [1500, 1500, 1000]),  # 1500 + 1500 + the last 1000
])
def test_long_prompt_is_cut_into_chunks(budget, chunks):
    # A 4,000-token prompt with a 3-token answer: the step with the last chunk samples
    # token 1, then two decodes sample tokens 2 and 3 (vLLM `update_from_output`: chunks + (3 - 1) steps).
    e = Engine(EngineConfig(max_num_batched_tokens=budget))
    e.add_request("a", 4000, 3)
    results = drain(e)
    assert [r.parts for r in results] == [[p("a", n)] for n in chunks] + [[d("a")], [d("a")]]
    assert [r.sampled for r in results] == [[]] * (len(chunks) - 1) + [["a"]] * 3
    assert e.requests["a"].first_token_step == len(chunks) - 1
    assert results[-1].finished == ["a"]
    # Served 4,000 + 3 - 1 tokens: the last sampled token is never fed back (vLLM: `Scheduler.update_from_output`).
    assert e.requests["a"].served_tokens == 4002


def test_decodes_come_before_prefill_chunks():
    # Budget 10. Step 0: X (prompt 4) and Y (prompt 4) are admitted, 8 tokens; Z
    # (prompt 30) gets the last 2 as its first chunk. From step 1 on, X and Y decode
    # first (1 token each) and Z's chunk fills the other 8.
    e = Engine(EngineConfig(max_num_batched_tokens=10))
    e.add_request("X", 4, 5)
    e.add_request("Y", 4, 5)
    e.add_request("Z", 30, 2)
    assert parts_of(e) == [p("X", 4), p("Y", 4), p("Z", 2)]
    assert parts_of(e) == [d("X"), d("Y"), p("Z", 8)]  # Z: 10 of 30
    assert parts_of(e) == [d("X"), d("Y"), p("Z", 8)]  # Z: 18
    assert parts_of(e) == [d("X"), d("Y"), p("Z", 8)]  # Z: 26
    # Step 4: X and Y sample their 5th token and finish; Z's last 4 tokens sample its
    # first token. Step 5: Z decodes its 2nd and last.
    r4 = e.step()
    assert r4.parts == [d("X"), d("Y"), p("Z", 4)] and r4.sampled == ["X", "Y", "Z"]
    assert r4.finished == ["X", "Y"]
    assert parts_of(e) == [d("Z")]
    assert not e.has_unfinished()


def test_max_num_seqs_is_respected():
    # max_num_seqs 2. Step 0: A and B admitted, C has no seat. Step 1: A decodes its
    # 2nd and last token and finishes, but only after admission ran: C still waits.
    # Step 2: C is admitted beside B's last decode.
    e = Engine(EngineConfig(max_num_seqs=2))
    e.add_request("A", 4, 2)
    e.add_request("B", 4, 3)
    e.add_request("C", 4, 1)
    r0 = e.step()
    assert r0.parts == [p("A", 4), p("B", 4)] and e.waiting_ids() == ["C"]
    r1 = e.step()
    assert r1.parts == [d("A"), d("B")] and r1.finished == ["A"] and e.waiting_ids() == ["C"]
    r2 = e.step()
    assert r2.parts == [d("B"), p("C", 4)] and r2.finished == ["B", "C"]


def test_arrival_during_a_step_waits_for_the_next():
    # Every step lasts 10. A arrives at 0, B at 3 (while step 0 runs), C at exactly 10
    # (the start of step 1), D at 100 (after everything: time jumps to 100).
    e = Engine(EngineConfig())
    e.add_request("A", 4, 3)
    e.add_request("B", 4, 1, arrival=3)
    e.add_request("C", 4, 1, arrival=10)
    e.add_request("D", 4, 1, arrival=100)
    steps = [(r.index, start, r.arrived, r.parts) for r, start, _ in run_timed(e, lambda r: 10)]
    assert steps == [
        (0, 0, ["A"], [p("A", 4)]),
        (1, 10, ["B", "C"], [d("A"), p("B", 4), p("C", 4)]),
        (2, 20, [], [d("A")]),
        (3, 100, ["D"], [p("D", 4)]),
    ]


def test_chunked_prefill_off_needs_the_whole_prompt_in_the_budget():
    # Budget 10, chunking off. Step 0: A (prompt 8) admitted whole. Step 1: A decodes
    # (1 token); B (prompt 10) needs 10 > 9 left: admission stops. Step 2: A finished
    # in step 1 (2 tokens), so B gets the whole budget.
    e = Engine(EngineConfig(max_num_batched_tokens=10, enable_chunked_prefill=False))
    e.add_request("A", 8, 2)
    e.add_request("B", 10, 1)
    assert parts_of(e) == [p("A", 8)]
    assert parts_of(e) == [d("A")]
    assert parts_of(e) == [p("B", 10)]
    with pytest.raises(ValueError, match="chunked prefill is off"):
        e.add_request("C", 10, 2)  # 11 tokens at its longest > budget 10


# --- memory: head-of-line blocking and preemption ------------------------------------

def test_head_of_line_blocking_on_memory():
    # 4 usable blocks of 4 tokens (num_gpu_blocks 5: block 0 is the null block). R (prompt 8) holds 2 blocks after step 0. Step 1: R needs a
    # 3rd block for its 9th token (1 left free). W1 (prompt 12) heads the queue and
    # needs 3 blocks for its whole prompt (vLLM: `Scheduler.schedule`): admission stops, and W2 (prompt 2,
    # 1 block, would fit) is never tried.
    e = Engine(EngineConfig(num_gpu_blocks=5, block_size=4))
    e.add_request("R", 8, 4)
    e.add_request("W1", 12, 1, arrival=1)
    e.add_request("W2", 2, 1, arrival=1)
    assert parts_of(e, 0) == [p("R", 8)]
    r1 = e.step(1)
    assert r1.parts == [d("R")] and r1.num_free_blocks == 1
    assert e.waiting_ids() == ["W1", "W2"]
    # Steps 2 and 3: R decodes tokens 3 and 4 and finishes (freeing all 4 blocks).
    assert parts_of(e, 2) == [d("R")]
    assert e.step(3).finished == ["R"]
    # Step 4: W1 (3 blocks) and then W2 (1 block) fit.
    assert parts_of(e, 4) == [p("W1", 12), p("W2", 2)]


def test_fcfs_preempts_the_newest_running_request():
    # 6 usable blocks of 4 (+ the null block). A, B, C: prompt 4, answer 7, all at 0.
    # Step 0: A p4, B p4, C p4 (1 block each, 3 free); c=4, t=5.
    # Step 1: each needs a 2nd block (c + n = 5 > 4): 0 free. Steps 2-4: no new block.
    # Step 5: c=8, t=9: A needs a 3rd block, none free. FCFS victim = running.pop() = C
    #   (freeing 2 blocks). A takes one, B the other. A step that preempted admits
    #   nobody, so C waits.
    # Step 6: A and B sample their 7th token, finish, free everything.
    # Step 7: C comes back: prompt 4 + 5 sampled tokens = 9 tokens to prefill again,
    #   samples its 6th token. Step 8: C decodes its 7th and finishes.
    e = Engine(EngineConfig(num_gpu_blocks=7, block_size=4))
    for rid in "ABC":
        e.add_request(rid, 4, 7)
    results = drain(e)
    assert [r.parts for r in results] == (
        [[p("A", 4), p("B", 4), p("C", 4)]] + [[d("A"), d("B"), d("C")]] * 4
        + [[d("A"), d("B")], [d("A"), d("B")], [p("C", 9)], [d("C")]])
    assert [r.preempted for r in results][5] == ["C"]
    assert e.requests["C"].num_preemptions == 1
    # C was served 4 + 7 - 1 tokens, plus the 8 it had computed when preempted.
    assert e.requests["C"].served_tokens == 4 + 7 - 1 + 8 == 18


def test_fcfs_request_can_preempt_itself():
    # 3 usable blocks of 4 (+ the null block). Step 0: A (prompt 5, 2 blocks) and B (prompt 4, 1 block): 0 free.
    # Step 1: A computes token 6 (fits its 8 slots). B needs a block for token 5; the
    # newest running request is B itself: it preempts itself and the running loop
    # ends (FCFS). Step 2: B (resumed, 5 tokens = 2 blocks) does not fit 1 free block.
    # Step 3: A samples its 4th token and finishes. Step 4: B re-prefills 5 tokens.
    e = Engine(EngineConfig(num_gpu_blocks=4, block_size=4))
    e.add_request("A", 5, 4)
    e.add_request("B", 4, 4)
    results = drain(e)
    assert [r.parts for r in results] == [
        [p("A", 5), p("B", 4)], [d("A")], [d("A")], [d("A")], [p("B", 5)], [d("B")], [d("B")]]
    assert results[1].preempted == ["B"]
    assert results[3].finished == ["A"]
    assert e.requests["B"].served_tokens == 4 + 4 - 1 + 4


def _three_way(policy):
    # 6 usable blocks of 4 (+ the null block), budget 100. A (priority 0, prompt 2) and C (priority 2, prompt 4)
    # arrive at 0, D (priority 1, prompt 3) at 1: running order is A, C, D.
    # Block needs (a request with c computed needs a block when c is a multiple of 4):
    #   step 0: A 1 block, C 1 block                       -> 4 free
    #   step 1: C c=4 -> 2nd block; D admitted, 1 block    -> 2 free
    #   step 3: A c=4 -> 2nd block; D c=4 -> 2nd block     -> 0 free
    #   step 5: C c=8 needs a 3rd block, and none is free.
    e = Engine(EngineConfig(max_num_batched_tokens=100, num_gpu_blocks=7, block_size=4,
                            policy=policy))
    e.add_request("A", 2, 20, priority=0)
    e.add_request("C", 4, 20, priority=2)
    e.add_request("D", 3, 20, arrival=1, priority=1)
    results = [e.step(k) for k in range(6)]
    e.check_invariants()
    assert results[1].parts == [d("A"), d("C"), p("D", 3)]
    assert results[4].num_free_blocks == 0
    return e, results[5]


def test_fcfs_victim_is_the_tail_even_with_priorities():
    # Step 5 under FCFS: C's victim is the tail of running, D (2 blocks freed); C takes 1.
    e, r5 = _three_way("fcfs")
    assert r5.preempted == ["D"] and r5.parts == [d("A"), d("C")]
    assert r5.num_free_blocks == 1 and e.waiting_ids() == ["D"]


def test_priority_request_preempts_itself_and_the_loop_goes_on():
    # Step 5 under PRIORITY: victim = max (priority, arrival) = C itself (priority 2).
    # C preempts itself; vLLM 0.33 then moves on to D, which fits its blocks. No
    # admissions in a step that preempted.
    e, r5 = _three_way("priority")
    assert r5.preempted == ["C"] and r5.parts == [d("A"), d("D")]
    assert r5.num_free_blocks == 2 and e.waiting_ids() == ["C"]


def test_priority_victim_already_scheduled_gives_its_tokens_back():
    # 4 usable blocks of 4 (+ the null block), priority. B (priority 2, prompt 4) arrives at 0, A (priority 0,
    # prompt 7) at 1: running order B, A.
    #   step 0: B p4 (1 block, 3 free)
    #   step 1: B c=4 -> 2nd block; A admitted with 2 blocks   -> 0 free
    #   step 2: B c=5, A c=7: no new block
    #   step 3: B d is scheduled first (c=6). Then A (c=8) needs a 3rd block. Victim =
    #           max (priority, arrival) = B, already in the batch: it is taken out of
    #           the batch, its token goes back to the budget, and its 2 blocks are freed.
    #           A takes 1. B's 6 computed tokens are thrown away.
    e = Engine(EngineConfig(max_num_batched_tokens=100, num_gpu_blocks=5, block_size=4,
                            policy="priority"))
    e.add_request("B", 4, 10, priority=2)
    e.add_request("A", 7, 10, arrival=1, priority=0)
    results = [e.step(k) for k in range(4)]
    assert results[1].parts == [d("B"), p("A", 7)]
    assert results[3].parts == [d("A")] and results[3].preempted == ["B"]
    assert results[3].num_free_blocks == 1
    assert e.requests["B"].recomputed_tokens == 6
    rest = drain(e)
    assert all(r.num_tokens <= 100 for r in rest)
    b = e.requests["B"]
    assert b.status == "finished" and b.recomputed_tokens >= 6
    assert b.served_tokens == 4 + 10 - 1 + b.recomputed_tokens


def test_priority_queue_admits_lower_values_first():
    # All arrive at 0; priority admits (priority, arrival, add order): Y, Z, X.
    e = Engine(EngineConfig(policy="priority"))
    e.add_request("X", 4, 1, priority=3)
    e.add_request("Y", 4, 1, priority=0)
    e.add_request("Z", 4, 1, priority=0)
    assert parts_of(e) == [p("Y", 4), p("Z", 4), p("X", 4)]


def test_prefix_cache_hit_in_the_same_step():
    # Blocks of 4, caching on. A and B share their first 8 token ids of 9. A is
    # scheduled first and its 2 full blocks are cached at schedule time (vLLM: `BlockPool.cache_full_blocks`), so B,
    # admitted later in the same step, hits both: it prefills only its 9th token.
    e = Engine(EngineConfig(block_size=4, enable_prefix_caching=True))
    e.add_request("A", 9, 2, token_ids=list(range(9)))
    e.add_request("B", 9, 2, token_ids=list(range(8)) + [99])
    assert parts_of(e) == [p("A", 9), p("B", 1)]
    assert e.requests["B"].cached_tokens == 8
    drain(e)
    assert e.requests["B"].served_tokens == 9 + 2 - 1 - 8


def test_prefilled_request_starts_by_decoding():
    # A user already streaming: prompt 100 computed and token 1 sampled before step 0.
    e = Engine(EngineConfig())
    e.add_request("s", 100, 3, prefilled=True)
    results = drain(e)
    assert [r.parts for r in results] == [[d("s")], [d("s")]]
    assert e.requests["s"].first_token_step == -1 and e.requests["s"].served_tokens == 2


def test_bad_requests_are_refused():
    e = Engine(EngineConfig(num_gpu_blocks=5, block_size=4))
    with pytest.raises(ValueError, match="needs 5 blocks"):
        e.add_request("big", 16, 2)  # 17 tokens at its longest = 5 blocks > 4 usable
    e.add_request("ok", 4, 1)
    with pytest.raises(ValueError, match="added twice"):
        e.add_request("ok", 4, 1)
    with pytest.raises(ValueError):
        EngineConfig(policy="sjf")


# --- properties ------------------------------------------------------------------------

request_st = st.tuples(
    st.integers(1, 120),  # prompt
    st.integers(1, 40),   # answer
    st.integers(0, 60),   # arrival
    st.integers(0, 2),    # priority
    st.lists(st.integers(0, 2), min_size=1, max_size=3),  # token-id pattern (caching)
)


@st.composite
def workloads(draw):
    config = EngineConfig(
        max_num_batched_tokens=draw(st.integers(1, 300)),
        max_num_seqs=draw(st.integers(1, 8)),
        num_gpu_blocks=draw(st.integers(9, 61)),
        block_size=draw(st.sampled_from([1, 2, 4, 16])),
        enable_prefix_caching=draw(st.booleans()),
        enable_chunked_prefill=draw(st.booleans()),
        policy=draw(st.sampled_from(["fcfs", "priority"])),
    )
    reqs = []
    for prompt, answer, arrival, prio, pattern in draw(st.lists(request_st, min_size=1, max_size=10)):
        longest = prompt + answer - 1
        if -(-longest // config.block_size) > config.num_gpu_blocks - 1:
            continue  # could never fit the pool: add_request refuses it
        if not config.enable_chunked_prefill and longest > config.max_num_batched_tokens:
            continue
        reqs.append((prompt, answer, arrival, prio, (pattern * prompt)[:prompt]))
    return config, reqs


def simulate(config, reqs):
    e = Engine(config)
    for i, (prompt, answer, arrival, prio, ids) in enumerate(reqs):
        e.add_request(i, prompt, answer, arrival=arrival, priority=prio, token_ids=ids)
    trace = []
    for r, start, _ in run_timed(e, lambda r: 1 + r.num_tokens // 32, max_steps=100_000):
        e.check_invariants()  # includes: nobody both waiting and running, seats respected
        trace.append((start, r.parts, r.preempted, r.finished))
        # The budget is never exceeded; decodes are served before any prefill chunk.
        assert 0 < r.num_tokens <= config.max_num_batched_tokens
        kinds = [k for _, k, _ in r.parts]
        assert kinds == sorted(kinds, key=lambda k: k != DECODE)
        assert len({rid for rid, _, _ in r.parts}) == len(r.parts)
        assert r.num_requests_running <= config.max_num_seqs
    return e, trace


@settings(max_examples=80, deadline=None)
@given(workloads())
def test_properties(workload):
    config, reqs = workload
    e, trace = simulate(config, reqs)
    served = {}
    for _, parts, _, _ in trace:
        for rid, _, n in parts:
            served[rid] = served.get(rid, 0) + n
    for i, (prompt, answer, *_rest) in enumerate(reqs):
        r = e.requests[i]
        # Every request finishes with its whole answer...
        assert r.status == "finished" and r.num_output == answer
        # ...and was served prompt + answer - 1 tokens, plus what preemptions threw
        # away, minus what prefix-cache hits saved.
        assert served.get(i, 0) == r.served_tokens == \
            prompt + answer - 1 + r.recomputed_tokens - r.cached_tokens
        if not config.enable_prefix_caching:
            assert r.cached_tokens == 0
    assert e.pool.num_free_blocks == config.num_gpu_blocks - 1  # all but the null block
    # Deterministic: the same input gives the same trace.
    assert simulate(config, reqs)[1] == trace


def test_preemption_happens_in_a_tight_pool():
    # A guard that the property test's kind of workload does reach the preemption path.
    config = EngineConfig(max_num_batched_tokens=64, max_num_seqs=8, num_gpu_blocks=13, block_size=4)
    reqs = [(8 + 3 * i, 20, 0, i % 3, [0]) for i in range(8)]
    e, trace = simulate(config, [(pr, a, t, q, ids * pr) for pr, a, t, q, ids in reqs])
    assert e.num_preemptions > 0
    assert sum(len(pre) for _, _, pre, _ in trace) == e.num_preemptions
