"""A toy continuous-batching scheduler, small enough to read in one sitting.

Page 4 of the chapter walks through this file; the page includes its pieces from here
when the site is built, so the text and the code cannot drift apart. It keeps only the
rules that make continuous batching work:

- three states: WAITING (no KV memory yet), RUNNING (holds KV blocks), FINISHED;
- one `schedule()` per iteration (one forward pass) that decides the batch from scratch;
- decode tokens first, then whole prompts. There is no chunking: a prompt that does not
  fit in what is left of the token budget waits, and so does everyone behind it;
- KV memory counted in blocks: an admitted request takes blocks for its whole prompt,
  and one more block each time its sequence crosses a block boundary;
- when a running request needs a block while the pool is empty, the most recently
  admitted request *other than itself* is preempted (its blocks freed, its work recomputed later), and
  the allocation is retried.

Where they overlap, these are the rules of pysim.engine (vLLM V1's scheduler) with
chunked prefill and prefix caching off and the FCFS policy, and tests/unit/test_toy_scheduler.py
checks that both make the same decisions. One difference is on purpose: the engine, like
vLLM, lets the newest running request preempt itself; the toy never picks the requester.

The file runs on its own (the exercise editor runs a copy of it): the scheduler uses only
the standard library, the config's ranges and the seeded random numbers come from pysim.
What the page's widget draws from it (the summary per policy and the batch-size series)
is in pysim/toy/view.py.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from pysim import fields
from pysim.config import ConfigError
from pysim.prng import SplitMix64
from pysim.utils import cdiv

# --8<-- [start:constants]
BLOCK_SIZE = 16      # tokens per KV-cache block
NUM_GPU_BLOCKS = 401   # blocks in the KV pool, counted as vLLM counts them: block 0 is
                       # the null block, never handed out, so 400 hold KV (the memory limit)
MAX_NUM_BATCHED_TOKENS = 1024  # tokens one iteration may compute, prefill and decode together
MAX_NUM_SEQS = 32        # requests that may be running at once

WAITING, RUNNING, FINISHED = "waiting", "running", "finished"
# --8<-- [end:constants]

POLICIES = ("fcfs", "priority", "shortest")
PROMPTS = (20, 40, 80, 600)          # the driver's prompt lengths
OUTPUTS = (8, 16, 32, 256, 256)      # and answer lengths: two in five are long
# The longest sequence the driver makes: without chunking, a preempted request must
# prefill all of it (prompt and generated tokens) in one iteration.
LONGEST = max(PROMPTS) + max(OUTPUTS) - 1
MAX_ITERATIONS = 200_000  # a scheduler that needs more than this is stuck


@dataclass(frozen=True)
class ToyConfig:
    """The toy's knobs: the constants above, unless the page (or a test) says otherwise."""

    policy: str = fields.policy("fcfs", POLICIES)
    block_size: int = fields.block_size(BLOCK_SIZE, 1, 128, slider_max=64)
    num_gpu_blocks: int = fields.num_gpu_blocks(NUM_GPU_BLOCKS, 2, 10_000, slider_max=2000)
    max_num_batched_tokens: int = fields.max_num_batched_tokens(MAX_NUM_BATCHED_TOKENS, LONGEST, 8192,
                                                                slider_max=4096)
    max_num_seqs: int = fields.max_num_seqs(MAX_NUM_SEQS, 1, 256, slider_max=128)
    num_requests: int = fields.num_requests(200, 1, 300)  # what the driver sends
    seed: int = fields.seed(12, 0, 999_999, slider_max=999)  # of the driver's random arrivals

    def check(self):
        need = blocks_for(LONGEST, self.block_size)
        if self.num_gpu_blocks - 1 < need:
            raise ConfigError("num_gpu_blocks", f"got {self.num_gpu_blocks}, expected at least {need + 1}: "
                              f"the longest request ({LONGEST} tokens) must fit in the pool "
                              f"({need} blocks, besides the null block)")


# --8<-- [start:request]
@dataclass(eq=False, slots=True)  # eq=False: two requests are the same only if they are the same object
class Request:
    id: int
    arrival: int          # the iteration it arrives at
    num_prompt_tokens: int  # prompt length, tokens
    max_tokens: int         # answer length: it finishes when it has sampled this many
    priority: int = 0     # smaller is more urgent (the "priority" policy)
    state: str = WAITING
    generated: int = 0    # tokens sampled so far
    blocks: int = 0       # KV blocks it holds
    preemptions: int = 0
    first_token: int | None = None  # iteration that sampled its first token
    finished_at: int | None = None

    @property
    def tokens(self) -> int:
        """Its sequence so far: the prompt and every token sampled."""
        return self.num_prompt_tokens + self.generated


def blocks_for(tokens: int, block_size: int) -> int:
    return cdiv(tokens, block_size)  # whole blocks: a part-full block counts
# --8<-- [end:request]


# --8<-- [start:policies]
def waiting_order(policy: str):
    """Sort key of the waiting queue: the request to admit next comes first.

    A preempted request goes before every other: it was admitted once already and
    keeps the tokens it generated. Among the rest the policy decides, and ties go to
    the earlier arrival.
    """
    key = {
        "fcfs": lambda r: (r.arrival, r.id),
        "priority": lambda r: (r.priority, r.arrival, r.id),
        "shortest": lambda r: (r.num_prompt_tokens, r.arrival, r.id),
    }[policy]
    return lambda r: (r.preemptions == 0, key(r))
# --8<-- [end:policies]


class ToyScheduler:
    """The waiting queue, the running set, the free blocks, and one `step()` per iteration."""

    def __init__(self, config: ToyConfig = ToyConfig()):
        self.config = config
        self.order = waiting_order(config.policy)
        self.free_blocks = config.num_gpu_blocks - 1  # block 0 is the null block (vLLM's BlockPool)
        self.waiting: list[Request] = []  # kept sorted by self.order
        self.running: list[Request] = []  # in admission order: the newest is last

    def add(self, r: Request) -> None:
        bisect.insort(self.waiting, r, key=self.order)

    def step(self, now: int) -> dict:
        """One iteration: decide the batch, run it, and report what happened."""
        batch, preempted = self.schedule()
        finished = self.update(batch, now)
        return {"iteration": now, "batch": [(r.id, kind, n) for r, kind, n in batch],
                "preempted": preempted, "finished": finished}

    # --8<-- [start:schedule]
    def schedule(self):
        """Build this iteration's batch from scratch: a list of (request, kind, tokens)."""
        cfg = self.config
        budget = cfg.max_num_batched_tokens
        batch, preempted = [], []
        # 1. Decodes first: each running request computes the token it sampled last.
        for r in list(self.running):  # a copy: a preemption removes requests from it
            if r.state != RUNNING:
                continue  # preempted a moment ago, to make room for an older request
            if r.tokens > r.blocks * cfg.block_size:  # its last block is full: it needs one more
                batch = self.grow(r, batch, preempted)
            batch.append((r, "decode", 1))
        budget -= len(batch)  # one token per decode
        assert budget >= 0, "max_num_batched_tokens >= LONGEST > max_num_seqs: every decode fits"
        # 2. Then whole prompts, from the head of the waiting queue, while they fit.
        #    Nobody is admitted in an iteration that had to preempt: memory is short.
        while self.waiting and not preempted and len(self.running) < cfg.max_num_seqs:
            r = self.waiting[0]
            need = blocks_for(r.tokens, cfg.block_size)  # a resumed one recomputes it all
            if r.tokens > budget or need > self.free_blocks:
                break  # head-of-line blocking: nobody behind it is tried
            self.waiting.pop(0)
            self.free_blocks -= need
            r.blocks, r.state = need, RUNNING
            self.running.append(r)
            batch.append((r, "prefill", r.tokens))
            budget -= r.tokens
        return batch, preempted

    def grow(self, r: Request, batch: list, preempted: list) -> list:
        """Give `r` one more block for each its sequence has outgrown, preempting others
        while the pool is empty. Returns the batch without any victim it already held."""
        while r.tokens > r.blocks * self.config.block_size:  # it has outgrown its blocks
            if self.free_blocks > 0:
                self.free_blocks -= 1
                r.blocks += 1
                continue
            victim = self.preempt_for(r)
            preempted.append(victim.id)
            # If the victim stood before r and was served already, take its token back.
            batch = [entry for entry in batch if entry[0] is not victim]
        return batch
    # --8<-- [end:schedule]

    # --8<-- [start:preempt]
    def preempt_for(self, requester: Request) -> Request:
        """Free the blocks of the newest running request other than `requester`.

        Never the requester itself: it would go back to `waiting` while the loop in
        schedule() is still serving it, so it would be in the queue and in the batch at
        once, counted twice, and holding blocks the queue thinks it has not got.
        """
        others = [req for req in self.running if req is not requester]
        assert others, "a request alone in the pool always fits (ToyConfig.check)"
        victim = others[-1]
        self.running.remove(victim)
        self.free_blocks += victim.blocks
        victim.blocks, victim.state = 0, WAITING
        victim.preemptions += 1  # which also puts it at the front of the queue
        self.add(victim)  # its KV is recomputed when it is admitted again
        return victim
    # --8<-- [end:preempt]

    # --8<-- [start:update]
    def update(self, batch, now: int) -> list[int]:
        """The forward pass ran: every request in the batch samples one token."""
        finished = []
        for r, kind, n in batch:
            r.generated += 1
            if r.first_token is None:
                r.first_token = now
            if r.generated == r.max_tokens:
                r.state, r.finished_at = FINISHED, now
                self.free_blocks += r.blocks  # usable from the next iteration on
                r.blocks = 0
                self.running.remove(r)
                finished.append(r.id)
        return finished
    # --8<-- [end:update]


# --8<-- [start:driver]
def iterate(scheduler, requests):
    """Feed `requests` to `scheduler` as they arrive; yield each iteration's report.

    Time is counted in iterations. When nothing is running or waiting, the clock
    jumps to the next arrival (those idle iterations are not counted).
    """
    pending = sorted(requests, key=lambda r: (r.arrival, r.id))
    now, k, count = 0, 0, 0
    while k < len(pending) or scheduler.running or scheduler.waiting:
        if not scheduler.running and not scheduler.waiting:
            now = max(now, pending[k].arrival)
        while k < len(pending) and pending[k].arrival <= now:
            scheduler.add(pending[k])
            k += 1
        report = scheduler.step(now)
        yield report
        if not report["batch"]:  # nothing ran, so nothing will ever change
            raise RuntimeError(f"iteration {now} scheduled nothing while requests were "
                               "waiting: the scheduler is stuck")
        count += 1
        if count > MAX_ITERATIONS:
            raise RuntimeError(f"still running after {MAX_ITERATIONS} iterations")
        now += 1


def workload(n: int, seed: int) -> list[dict]:
    """`n` requests arriving in bursts: up to 100 quiet iterations, then 1 to 16 at once."""
    rng = SplitMix64(seed)
    out, now = [], 0
    while len(out) < n:
        now += rng.randint(0, 100)
        for _ in range(min(rng.randint(1, 16), n - len(out))):
            out.append({"id": len(out), "arrival": now, "num_prompt_tokens": rng.choice(PROMPTS),
                        "max_tokens": rng.choice(OUTPUTS),
                        "priority": 0 if rng.randint(1, 4) == 1 else 1})  # 1 in 4 is urgent
    return out


def simulate(specs, config=ToyConfig(), scheduler_class=ToyScheduler, request_class=Request):
    """Run the requests described by `specs` to the end: (requests, iteration reports)."""
    requests = [request_class(**spec) for spec in specs]
    return requests, list(iterate(scheduler_class(config), requests))


def summarize(requests, reports) -> dict:
    done = [r for r in requests if r.finished_at is not None]
    ttft = [r.first_token - r.arrival + 1 for r in done]  # iterations, the last included
    urgent = [t for r, t in zip(done, ttft) if r.priority == 0]
    tokens = sum(n for rep in reports for _, _, n in rep["batch"])
    iterations = max(1, len(reports))
    return {"finished": len(done), "iterations": len(reports), "tokens": tokens,
            "tokens_per_iteration": tokens / iterations,
            "mean_batch": sum(len(rep["batch"]) for rep in reports) / iterations,
            "mean_ttft": sum(ttft) / max(1, len(ttft)), "max_ttft": max(ttft, default=0),
            "mean_ttft_urgent": sum(urgent) / max(1, len(urgent)),
            "preemptions": sum(len(rep["preempted"]) for rep in reports)}


def run_driver(config: ToyConfig = ToyConfig()) -> dict:
    """The page's experiment: the driver's workload under `config`, summarised."""
    return summarize(*simulate(workload(config.num_requests, config.seed), config))
# --8<-- [end:driver]
