"""vLLM's `AsyncScheduler` in pysim.engine (`EngineConfig(async_scheduling=True)`).

vLLM 0.34 schedules step k + 1 while step k runs (vllm/v1/core/sched/async_scheduler.py,
driven by `EngineCore.step_with_batch_queue` in vllm/v1/engine/core.py). These tests
trace what that changes by hand, each beside the synchronous loop on the same requests:
- a request decodes every step although its last token is not back yet (a placeholder
  stands in for it), and its last token is never scheduled twice;
- a request that finishes in step k still holds its blocks and its seat when step k + 1
  is scheduled: whoever waits for them gets in one step later;
- a request preempted while its batch is in flight still receives that batch's token
  (stale output) and is not re-admitted before it has.
The recordings of vLLM's own AsyncScheduler are checked in test_fidelity_async.py.
"""

from __future__ import annotations

import random

import pytest

from pysim.engine.scheduler import DECODE, PREFILL, Engine, EngineConfig, run_timed


def config(**kw) -> EngineConfig:
    base = dict(max_num_batched_tokens=64, max_num_seqs=8, num_gpu_blocks=64, block_size=4)
    base.update(kw)
    return EngineConfig(**base)


def timed(engine: Engine) -> list:
    """Every step of `run_timed` at one second a step: (result, start)."""
    out = []
    for result, start, _ in run_timed(engine, lambda r: 1.0):
        engine.check_invariants()
        out.append((result, start))
    return out


@pytest.mark.parametrize("asynchronous", [False, True])
def test_one_request_decodes_every_step_and_never_past_its_answer(asynchronous):
    # Prompt 10, answer 4: one prefill step (samples token 1), then 3 decodes.
    # With async, the decode of token 1 is scheduled before token 1 is back: the
    # placeholder stands in for it. No fifth step: vLLM skips a request whose last
    # token is in flight.
    e = Engine(config(async_scheduling=asynchronous))
    e.add_request("a", 10, 4)
    steps = timed(e)
    assert [r.parts for r, _ in steps] == [[("a", PREFILL, 10)]] + [[("a", DECODE, 1)]] * 3
    assert [start for _, start in steps] == [0, 1, 2, 3]
    assert e.requests["a"].served_tokens == 10 + 4 - 1
    assert e.requests["a"].finish_step == 3 and e.requests["a"].first_token_step == 0


def test_a_schedule_ahead_does_not_see_the_running_batch_finish():
    # Budget 64, max_num_seqs 1. A (prompt 4, answer 2) runs; B waits for the seat.
    # Sync: A finishes in step 1 and B is admitted in step 2.
    # Async: step 2 is scheduled while step 1 runs, when A still holds the seat, so
    # it is empty; B gets in at step 2's schedule after A's outputs are back.
    results = {}
    for asynchronous in (False, True):
        e = Engine(config(max_num_seqs=1, async_scheduling=asynchronous))
        e.add_request("A", 4, 2)
        e.add_request("B", 4, 1)
        results[asynchronous] = [r.parts for r, _ in timed(e)]
    assert results[False] == [[("A", PREFILL, 4)], [("A", DECODE, 1)], [("B", PREFILL, 4)]]
    assert results[True] == results[False]  # same steps: the empty batch costs no step here
    # The difference shows when a second request could have been admitted beside a
    # finishing one: check the engine half-step by half-step.
    e = Engine(config(max_num_seqs=1, async_scheduling=True))
    e.add_request("A", 4, 2)
    e.add_request("B", 4, 1)
    s0 = e.schedule(0)              # A's prompt; samples token 1
    s1 = e.schedule(0)              # A's decode, scheduled before token 1 is back
    assert e.scheduled() == {"A": 1}
    e.update_from_output(s0)
    assert e.requests["A"].num_output == 1
    s2 = e.schedule(0)              # A's last token is in flight: nothing to do; B has no seat
    assert e.scheduled() == {} and e.waiting_ids() == ["B"]
    e.update_from_output(s1)
    assert s1.finished == ["A"]      # A finishes now, a schedule after the one that skipped it
    e.update_from_output(s2)
    s3 = e.schedule(0)
    assert s3.admitted == ["B"]


def test_blocks_freed_by_a_finish_are_seen_one_step_later():
    # 7 usable blocks of 4 tokens. A (prompt 8, answer 2) finishes in step 1; C (prompt
    # 4, answer 8) keeps decoding; B (prompt 9, answer 2: 10 tokens, 3 blocks at its
    # longest) arrives at 0.5 and the full-sequence gate keeps it out until A's blocks
    # are back. Each step lasts 1 s.
    def admitted_at(asynchronous):
        e = Engine(config(num_gpu_blocks=8, async_scheduling=asynchronous))
        e.add_request("A", 8, 2)
        e.add_request("C", 4, 8)
        e.add_request("B", 9, 2, arrival=0.5)
        for result, start in timed(e):
            if "B" in result.admitted:
                return result.index, start
    # Sync: A finishes at the end of step 1, and step 2 admits B.
    assert admitted_at(False) == (2, 2)
    # Async: step 2 was scheduled while step 1 ran, before A's blocks came back (it
    # holds C's decode alone); B gets in at step 3, a step later.
    assert admitted_at(True) == (3, 3)


def test_a_request_preempted_in_flight_gets_its_token_and_waits_for_it():
    # Force a preemption with a batch in flight: a tight pool, two long answers.
    e = Engine(config(num_gpu_blocks=5, max_num_batched_tokens=16, async_scheduling=True))
    e.add_request("A", 4, 9)   # 12 tokens at its longest: 3 blocks
    e.add_request("B", 4, 9)
    seen_stale = False
    ahead = None
    while e.has_unfinished():
        cur = ahead or e.schedule(0)
        ahead = e.schedule(0) if (e.running or e.waiting) else None
        for rid in cur.preempted + (ahead.preempted if ahead else []):
            r = e.requests[rid]
            if r.stale:
                seen_stale = True
                # It cannot be admitted until the stale token is back.
                assert rid not in e.scheduled()
        before = {rid: e.requests[rid].num_output for rid in e.requests}
        e.update_from_output(cur)
        for rid in cur.sampled:
            assert e.requests[rid].num_output == before[rid] + 1
        if ahead is not None and not ahead.parts:
            e.update_from_output(ahead)
            ahead = None
        e.check_invariants()
    assert seen_stale and e.num_preemptions > 0
    for r in e.requests.values():
        assert r.num_output == r.max_tokens


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("caching, policy", [(False, "fcfs"), (True, "fcfs"), (False, "priority")])
def test_random_workloads_finish_with_every_token_and_hold_the_invariants(seed, caching, policy):
    rnd = random.Random(seed)
    e = Engine(config(max_num_batched_tokens=48, max_num_seqs=6, num_gpu_blocks=40,
                      enable_prefix_caching=caching, policy=policy, async_scheduling=True))
    for i in range(30):
        p, m = rnd.randint(1, 50), rnd.randint(1, 30)
        ids = [rnd.randint(0, 3) for _ in range(p)] if caching else None
        e.add_request(i, p, m, arrival=rnd.random() * 10, token_ids=ids, priority=rnd.randint(0, 2))
    served = 0
    for result, _ in timed(e):
        served += result.num_tokens
    assert e.num_inflight() == 0
    for r in e.requests.values():
        assert r.num_output == r.max_tokens and r.placeholders == 0 and r.in_flight == 0
    # Every token the steps computed is accounted for: no token is scheduled past an answer.
    assert served == sum(r.served_tokens for r in e.requests.values())


def test_async_is_refused_unless_a_bool():
    with pytest.raises(ValueError, match="async_scheduling"):
        EngineConfig(async_scheduling="yes")


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
def test_the_replays_shortcuts_change_nothing_with_async_scheduling(policy):
    # The lab's replay (pysim.engine.replay.Replica) with async scheduling, stepped one batch at a
    # time with vLLM's block pool, and with both shortcuts (counted blocks; settling the
    # pipeline, then runs of plain decodes): the same steps, preemptions and times. And
    # `run_timed`, the engine's own async loop, agrees with the stepped replay.
    from dataclasses import replace

    from pysim.sims.lab import config as lab_config, workload as lab_workload
    from pysim.timing.catalog import GPUS, MODELS
    from pysim.engine.replay import engine_config, replay
    from pysim.timing.steptime import num_gpu_blocks, step_time_model

    c = lab_config.LabConfig(gpu="L40S", model="qwen3-8b", window_minutes=1, window_start_min=30,
                      rate_scale=8, max_num_seqs=512, max_num_batched_tokens=8192)
    stm = step_time_model(GPUS[c.gpu], MODELS[c.model])
    blocks = num_gpu_blocks(GPUS[c.gpu], MODELS[c.model], 16)
    t = lab_workload.workload(c, c.rate_scale)
    ec = engine_config(blocks, 16, replace(c, async_scheduling=True), policy=policy)
    args = (t.arrivals, t.prompt_tokens, t.output_tokens, ec, stm, blocks)
    slow = replay(*args, fast=False, count_blocks=False)
    quick = replay(*args)
    assert slow.num_preemptions > 0
    assert slow.num_steps == quick.num_steps and slow.num_preemptions == quick.num_preemptions
    assert quick.first_token == pytest.approx(slow.first_token, rel=1e-9)
    assert quick.finished == pytest.approx(slow.finished, rel=1e-9)
    assert len(quick.seg_end) < len(slow.seg_end)  # the shortcut still does its job

    e = Engine(ec)
    for i, (a, p, m) in enumerate(zip(*args[:3])):
        e.add_request(i, p, m, arrival=a)
    finished = {}
    for result, start, duration in run_timed(e, stm.step_seconds):
        for rid in result.finished:
            finished[rid] = start + duration
    assert [finished[i] for i in range(len(t.arrivals))] == pytest.approx(slow.finished, rel=1e-9)

    # And the async loop is not the sync one: the same traffic, other times.
    sync = replay(*args[:3], replace(ec, async_scheduling=False), stm, blocks)
    assert sync.finished != pytest.approx(quick.finished, rel=1e-6)


@pytest.mark.parametrize("window_start_min, rate_scale", [(10, 1.0), (30, 0.5), (0, 2.0)])
def test_the_shortcut_through_finishes_is_exact_when_nobody_waits(window_start_min, rate_scale):
    # At the lab's default load the queue is mostly empty, and the decode runs go through
    # the steps that finish requests (`Replica._finishes_unseen`). Stepped one batch at a
    # time, the async loop must give the same times.
    from pysim.sims.lab import config as lab_config, workload as lab_workload
    from pysim.timing.catalog import GPUS, MODELS
    from pysim.engine.replay import engine_config, replay
    from pysim.timing.steptime import num_gpu_blocks, step_time_model

    c = lab_config.LabConfig(window_minutes=2, window_start_min=window_start_min, rate_scale=rate_scale)
    assert c.async_scheduling  # vLLM's default, and the lab's
    stm = step_time_model(GPUS[c.gpu], MODELS[c.model])
    bs = lab_config.defaults(c).block_size
    blocks = num_gpu_blocks(GPUS[c.gpu], MODELS[c.model], bs)
    t = lab_workload.workload(c, c.rate_scale)
    args = (t.arrivals, t.prompt_tokens, t.output_tokens, engine_config(blocks, bs, c), stm, blocks)
    slow = replay(*args, fast=False, count_blocks=False)
    quick = replay(*args)
    assert slow.num_steps == quick.num_steps
    assert quick.first_token == pytest.approx(slow.first_token, rel=1e-9)
    assert quick.finished == pytest.approx(slow.finished, rel=1e-9)
    assert len(quick.seg_end) < len(slow.seg_end) / 2
