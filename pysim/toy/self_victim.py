"""Exercise 4's bug, built on the real toy: a victim choice that may pick the requester.

The toy of page 4 (pysim/toy/scheduler.py) preempts the newest running request *other than* the
one asking for a block. `SelfVictimScheduler` "tidies" that into "the newest running
request, whoever it is", and nothing else changes. `trace` runs both versions on the same
small case, one iteration at a time, and reads what a metrics endpoint would show after
each: the running and waiting gauges, the requests in the batch, the blocks in use, the
blocks held by requests that are waiting (which should always be 0), and the
preemptions so far. The exercise's table and its prose come from here.
"""

from __future__ import annotations

from pysim.toy.scheduler import WAITING, Request, ToyConfig, ToyScheduler, blocks_for


class SelfVictimScheduler(ToyScheduler):
    """The toy with the tidied-up victim choice: the last running request, maybe the requester."""

    def preempt_for(self, requester: Request) -> Request:
        victim = self.running[-1]  # the bug: this may be `requester` itself
        self.running.remove(victim)
        self.free_blocks += victim.blocks
        victim.blocks, victim.state = 0, WAITING
        victim.preemptions += 1
        self.add(victim)
        return victim


def gauges(s: ToyScheduler, batch_size: int, preemptions: int) -> dict:
    """What a metrics endpoint would read after one iteration."""
    cfg = s.config
    return {
        "num_requests_running": len(s.running), "num_requests_waiting": len(s.waiting), "batch": batch_size,
        "blocks": cfg.num_gpu_blocks - 1 - s.free_blocks,  # (the null block is never in use)
        "blocks_waiting": sum(r.blocks for r in s.waiting),
        "free": s.free_blocks, "preemptions": preemptions,
    }


def trace(scheduler_class, config: ToyConfig, prompts=(40, 44), max_tokens=20, iterations=40):
    """Run two requests that arrive together; one entry per iteration, then how it ended.

    Returns (entries, requests, end) with end "finished" (everyone done), "stuck"
    (an iteration scheduled nothing while requests waited) or "crashed" (the toy's own
    bookkeeping failed, the message after the colon).
    """
    s = scheduler_class(config)
    requests = [Request(i, 0, p, max_tokens) for i, p in enumerate(prompts)]
    for r in requests:
        s.add(r)
    entries, preemptions = [], 0
    for now in range(iterations):
        try:
            report = s.step(now)
        except (ValueError, AssertionError) as e:  # e.g. removing B from `running` twice
            return entries, requests, f"crashed: {e}"
        preemptions += len(report["preempted"])
        entries.append({"iteration": now, **gauges(s, len(report["batch"]), preemptions)})
        if not report["batch"]:
            return entries, requests, "stuck"
        if all(r.finished_at is not None for r in requests):
            return entries, requests, "finished"
    return entries, requests, "still running"


def figures(block_size=16, num_gpu_blocks=7, prompts=(40, 44), max_tokens=20) -> dict:
    """Exercise 4's numbers: both versions after the first iteration that preempts."""
    cfg = ToyConfig(block_size=block_size, num_gpu_blocks=num_gpu_blocks)
    ok, ok_requests, ok_end = trace(ToyScheduler, cfg, prompts, max_tokens)
    bug, bug_requests, bug_end = trace(SelfVictimScheduler, cfg, prompts, max_tokens)
    assert ok_end == "finished" and bug_end == "stuck", (ok_end, bug_end)
    step = next(e["iteration"] for e in ok if e["preemptions"])
    assert step == next(e["iteration"] for e in bug if e["preemptions"])
    a, b = ok[step], bug[step]
    head = bug_requests[0]  # A, first in line after both were preempted
    out = {
        "block_size": block_size, "num_gpu_blocks": num_gpu_blocks, "usable_blocks": num_gpu_blocks - 1,
        "max_tokens": max_tokens,
        "num_requests": len(prompts), "step": step,
        "prompt_a": prompts[0], "prompt_b": prompts[1],
        "blocks_a": blocks_for(prompts[0], block_size), "blocks_b": blocks_for(prompts[1], block_size),
        "free_slots_a": blocks_for(prompts[0], block_size) * block_size - prompts[0],
        "free_slots_b": blocks_for(prompts[1], block_size) * block_size - prompts[1],
        "ok_a_finished": ok_requests[0].finished_at, "ok_b_finished": ok_requests[1].finished_at,
        "bug_head_needs": blocks_for(head.tokens, block_size),
        "bug_free": bug[-1]["free"],
        "bug_stuck_at": bug[-1]["iteration"],
        "bug_usage": b["blocks"] / (num_gpu_blocks - 1),
    }
    for name, entry in (("ok", a), ("bug", b)):
        out.update({f"{name}_{key}": entry[key] for key in
                    ("num_requests_running", "num_requests_waiting", "batch", "blocks", "blocks_waiting",
                     "preemptions")})
    return out
