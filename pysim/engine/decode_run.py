"""Many plain decode steps at once: the serving lab's shortcut beside the engine.

A busy server spends most of its steps on plain decodes: every running request computes
the one token it sampled last and samples the next, nobody is admitted, nobody is
preempted. While that lasts, each step changes the engine's state the same way, so
`plan_decode_run(engine)` says how many of the next steps are sure to be such decodes,
and `advance_decodes(engine, k)` applies k of them in one go, leaving the engine exactly
as k calls of `Engine.step` would (the same tokens, block tables, finishes and free
blocks). The step-time model sums their time in closed form
(pysim.timing.steptime.StepTimeModel.decode_run_seconds), and pysim.engine.replay.Replica uses the
two when `fast` is on; tests/unit/test_lab.py and test_cluster.py replay with the
shortcut and stepped one by one, and check the two agree step for step.

vLLM has no such shortcut: it runs every step (vllm/v1/core/sched/scheduler.py,
`Scheduler.schedule`). It is pysim's, to make a replay of thousands of requests fast
enough for a page; pysim.engine holds the scheduler itself.
"""

from __future__ import annotations

import math

from pysim.engine.scheduler import FINISHED, Engine


def plan_decode_run(engine: Engine) -> tuple[int, int]:
    """(k, context): how many next steps are sure to be plain decodes of every running
    request, and the KV tokens those requests hold before the first of them.

    Such a step schedules one token for each running request and nothing else: no
    prompt chunk, no admission, no preemption; only the last of them may finish
    requests (those with the fewest tokens left). Arrivals are the caller's to check
    (they depend on time). k is 0 when the next step is anything else.

    With prefix caching, a run still admits nobody, so nobody looks the cache up
    during it: the blocks that fill are cached at its end, where the next lookup
    can see them. Blocks handed out in the run come off the free queue's head in
    the same number whatever the order, so the same cached blocks are evicted.
    """
    cfg = engine.config
    running = engine.running
    b = len(running)
    if not b or b > cfg.max_num_batched_tokens:
        return 0, 0
    free = engine.pool.num_free_blocks
    if engine.waiting:
        # Admission must stay blocked for the whole run. Free blocks only shrink
        # in it, so blocked now is blocked throughout.
        left_budget = cfg.max_num_batched_tokens - b
        if not (b >= cfg.max_num_seqs or left_budget <= 0):
            # A policy written as code may put any waiting request at the head of a
            # later step (its keys change with time): then none of them may fit.
            others = getattr(engine.waiting, "least_demanding", None)
            for head in others() if others else (engine.waiting.peek_request(),):
                # With caching, what the head needs counts its hits. A run can only evict
                # free cached blocks, and each it evicts turns one hit into one new block:
                # the need stays the same while the free count shrinks.
                hits = engine.kv.lookup(head.token_ids, head.block_hashes)[0] if cfg.enable_prefix_caching else ()
                blocked = (engine.kv.blocks_needed(head.id, head.num_tokens, hits) > free
                           or (not cfg.enable_chunked_prefill and head.num_tokens > left_budget))
                if not blocked:
                    return 0, 0
    k = math.inf  # the fewest tokens any request has left to sample
    context = 0
    for r in reversed(running):  # a prompt in progress is most likely the newest
        c = r.num_computed
        if r.num_tokens - c != 1 or not r.num_output:
            return 0, 0  # a prompt (or a recompute) still in progress
        left = r.max_tokens - r.num_output  # steps until it finishes, that one included
        if left < k:
            k = left
        context += c
    # New blocks the run needs: it must never find the pool empty (no preemption).
    # A table that covers c tokens gains at most ceil(k / block_size) blocks in k
    # steps, so the exact count is needed only when that bound does not fit.
    bs = cfg.block_size
    if b * -(-k // bs) > free:
        need = 0
        for r in running:
            grow = -(-(r.num_computed + k) // bs) - engine.kv.num_blocks(r.id)
            if grow > 0:
                need += grow
        if need > free:
            return 0, 0
    return k, context


def advance_decodes(engine: Engine, k: int) -> list:
    """Apply k plain decode steps (see `plan_decode_run`): each running request
    computes and samples k tokens, and its table grows to what step-by-step
    allocation would have given it. Returns the ids that finished in the last
    step, in batch order; their blocks are free, as after `Engine.step`.

    Without prefix caching a table only grows, to whole blocks covering its tokens,
    and all tables grow at once. With it, each request appends its k sampled ids and
    asks for the blocks that cover them, which caches every block they filled (as the
    step that filled each would have). Then the finished free theirs.
    """
    assert k > 0  # and k <= plan_decode_run(engine)[0]: the caller's promise (tests check it)
    caching = engine.config.enable_prefix_caching
    bs = engine.config.block_size
    kv = engine.kv
    grown, finished = [], []
    last_step = engine.next_index + k - 1
    for r in engine.running:
        c = r.num_computed + k
        if caching:
            r.token_ids.extend([-(r.seq + 1)] * k)  # the made-up ids `Engine._sample` appends
            if c > r.limit:
                ok = kv.allocate_slots(r.id, r.token_ids, c, (), r.block_hashes)
                assert ok, "plan_decode_run counted these blocks"
                engine._set_limit(r)
        elif c > r.limit:
            blocks = -(-c // bs)  # plan_decode_run counted these blocks
            grown.append((r.id, blocks - r.limit // bs))
            r.limit = blocks * bs
        r.num_computed = c
        r.num_tokens = c + 1  # the token sampled last is not computed yet
        out = r.num_output = r.num_output + k
        if r.tally is not None:
            r.tally.served += k
            r.tally.output += k
        if out >= r.max_tokens:
            assert out == r.max_tokens, "a decode run longer than an answer"
            r.status = FINISHED
            r.finish_step = last_step
            finished.append(r.id)
    if grown:
        kv.grow_all(grown)
    for rid in finished:
        kv.free(rid)
    engine.num_unfinished -= len(finished)
    engine._drop_finished(finished)
    engine.num_steps += k
    engine.next_index += k
    return finished
