"""Simulation 1, the scheduler race: static vs continuous (reserved) vs continuous + paged.

The rules below are the page's (docs/naive-batching.md). Where they are silent it
follows vLLM V1's FCFS scheduler (`Scheduler.schedule` in vllm/v1/core/sched/scheduler.py):
the preemption victim is the tail of the running list (the most recently admitted
request, possibly the requester itself), a preempted request goes to the *front*
of the waiting queue and re-enters at the *tail* of the running list, and a head
of the queue that does not fit stops all admissions for that step (head-of-line
blocking: smaller requests behind it are not tried).

The workload
    `requests` requests, ids 0..n-1, all waiting at step 0 in id order. For i in
    0..n-1 the seeded SplitMix64(seed) draws request i's prompt blocks (uniform in
    prompt_blocks_min..max) and then its answer steps (uniform in
    answer_blocks_min..max): p0, a0, p1, a1, ... Every scheduler gets this same list.
    The longest possible request is prompt_blocks_max + answer_blocks_max blocks
    (6 + 24 = 30 by default); the reserved schedulers reserve that much each.
    num_gpu_blocks is vLLM's pool size, null block included (vLLM 0.33
    `BlockPool.__init__`, vllm/v1/core/block_pool.py, reserves block 0), so the
    schedulers below see `pool` = num_gpu_blocks - 1 usable blocks (159 by default).
    The usable pool must be at least ceil(longest / 0.9) (34 by default, so
    num_gpu_blocks >= 35), not just `longest`: with less, a paged request preempted
    late in its answer could need more than floor(0.9 * pool) blocks to come back
    and would wait forever.

One step (a forward pass, numbered from 0)
    1. retire: requests that wrote their last answer block in the previous step
       leave and free their blocks (static: they only become "done", see below);
    2. admit, by scheduler;
    3. every running request writes one answer block (one block = 16 tokens).
    A request admitted at step t and never preempted finishes at t + a - 1.

Schedulers
    static               when nothing runs, admit the next min(max_num_seqs,
                         floor(pool / longest)) waiting requests as one batch, each
                         reserving `longest` blocks; finished members keep slot and
                         reservation until every member is done.
    continuous_reserved  every step admit while running < max_num_seqs and at least
                         `longest` unreserved blocks remain.
    continuous_paged     a request holds prompt + written answer blocks. Admit while
                         running < max_num_seqs and
                         used + prompt + already_written + 1 <= floor(0.9 * pool).
                         In step 3 requests grow oldest first; a request needing a
                         block when used == pool preempts the newest running request
                         (all its blocks freed, progress kept, front of waiting). A
                         preempted request writes nothing in that step. Because
                         growth is oldest first, a victim other than the requester
                         has not grown yet in that step; when the requester is itself
                         the newest, it preempts itself and the step's growth ends.

Metrics (per scheduler)
    steps_to_finish   last finishing step + 1.
    wait              per request: the step of its first answer block, counted from
                      step 0. That is the step it was first admitted, unless it was
                      preempted in that very step before writing; a preemption after
                      its first block does not change it. mean_wait_steps is the mean
                      over requests; p90_wait_steps is their 90th percentile as
                      `vllm bench serve` takes one (linear between ranks:
                      pysim.utils.percentile), to 3 decimals.
    mean_running      mean over steps 0..steps_to_finish-1 of the number of requests
                      that wrote a block in that step. Finished static members holding
                      their slot, and requests preempted in the step, do not count.
                      Progress is never lost, so this equals total answer blocks /
                      steps_to_finish.
    mean_kv           mean over steps of the blocks held at the end of the step,
                      split into prompt, answer (written answer blocks) and
                      reserved_unused (reservation minus blocks written; 0 for paged).
                      A finished static member still holds its blocks and reservation.
    preemptions       number of preemptions (paged only; 0 for the others).

View model (JSON)
    config     the validated config; longest_blocks: the longest possible request;
               usable_blocks: num_gpu_blocks - 1, the pool the schedulers share.
    workload   [{"id", "prompt_blocks", "answer_blocks"}] in id order.
    schedulers {name: result} for the selected scheduler(s), names in the order
               static, continuous_reserved, continuous_paged. Each result holds the
               metrics above plus
        max_concurrent   the most requests its rule lets run at once
        per_request      [{"wait", "finish", "preemptions"}] indexed by request id
        kv               one [prompt, answer, reserved_unused] per step (end of step)
        frames           one list per step: frames[t][s] is slot s at the end of step t,
                         null when idle, else [id, prompt_blocks, generated_blocks,
                         reserved_unused_blocks, state]. Trailing idle slots are left
                         out, so a frame has at most max_num_seqs entries and any slot
                         index past its end is idle. state is
                           "new"  admitted in this step (fresh or resumed) and wrote a block
                           "run"  running, wrote a block
                           "done" static only: finished, still holding slot and reservation
                           "pre"  preempted in this step: its blocks (the numbers shown)
                                  were freed and the slot is free from the next step;
                                  not part of kv
               A request takes the lowest free slot when admitted and keeps it while
               running; a resumed request may get a different slot.
    Means are rounded to 3 decimals; every other number is an exact integer.

Entry points: run(config, actions) -> view model (the bridge's "naive_batching");
simulate(name, [(prompt, answer), ...], pool, max_num_seqs, longest) for one
scheduler on an explicit workload; trace_digest(view) -> sha256 of the canonical
JSON, to compare CPython with Pyodide; text(view) -> the CLI's comparison table.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass

from pysim import fields
from pysim.config import ConfigError, bounded, choice, to_mapping
from pysim.engine.blockpool import BlockPool, KVCacheManager
from pysim.prng import SplitMix64
from pysim.registry import Simulation
from pysim.utils import cdiv, percentile

SCHEDULERS = ("static", "continuous_reserved", "continuous_paged")


@dataclass(frozen=True)
class NaiveBatchingConfig:
    num_requests: int = fields.num_requests(60, 1, 400)  # all waiting at step 0
    num_gpu_blocks: int = fields.num_gpu_blocks(160, 1, 2000, slider_max=640)
    max_num_seqs: int = fields.max_num_seqs(16, 1, 64)
    seed: int = fields.seed(1, 0, 2**32 - 1, slider_max=999)  # every scheduler gets the same requests
    prompt_blocks_min: int = bounded(2, 1, 16, "shortest prompt, in blocks",
                                     label="Shortest prompt", unit="blocks")
    prompt_blocks_max: int = bounded(6, 1, 16, "longest prompt, in blocks",
                                     label="Longest prompt", unit="blocks")
    answer_blocks_min: int = bounded(2, 1, 32, "shortest answer, in blocks (one block per step)",
                                     label="Shortest answer", unit="blocks")
    answer_blocks_max: int = bounded(24, 1, 32, "longest answer, in blocks (one block per step)",
                                     label="Longest answer", unit="blocks")
    scheduler: str = choice("all", ("all",) + SCHEDULERS, "which scheduler to run; all three share the workload",
                            label="Schedulers", option_labels={
                                "all": "All three, same requests", "static": "Static batching",
                                "continuous_reserved": "Continuous, reserved",
                                "continuous_paged": "Continuous, paged"})

    @property
    def longest(self) -> int:
        """Blocks of the longest possible request: what the reserved schedulers reserve."""
        return self.prompt_blocks_max + self.answer_blocks_max

    def check(self) -> None:
        if self.prompt_blocks_min > self.prompt_blocks_max:
            raise ConfigError("prompt_blocks_min", f"got {self.prompt_blocks_min}, must be at most "
                              f"prompt_blocks_max ({self.prompt_blocks_max})")
        if self.answer_blocks_min > self.answer_blocks_max:
            raise ConfigError("answer_blocks_min", f"got {self.answer_blocks_min}, must be at most "
                              f"answer_blocks_max ({self.answer_blocks_max})")
        need = min_pool(self.longest) + 1  # + 1: vLLM's null block
        if self.num_gpu_blocks < need:
            raise ConfigError("num_gpu_blocks", (
                f"got {self.num_gpu_blocks}, must be at least {need} so that the longest possible "
                f"request ({self.prompt_blocks_max} + {self.answer_blocks_max} = {self.longest} blocks) "
                f"fits within 90% of the usable pool (the null block not counted), the paged "
                f"scheduler's admission limit"))


def admit_limit(pool: int) -> int:
    """floor(0.9 * pool) in integer arithmetic (no float rounding surprises)."""
    return pool * 9 // 10


def min_pool(longest: int) -> int:
    """The smallest pool whose 90% admission limit still holds the longest request.

    With a smaller pool a paged request preempted late in its answer could need more
    than floor(0.9 * pool) blocks to come back, and would wait forever.
    """
    return cdiv(longest * 10, 9)


def workload(config: NaiveBatchingConfig) -> list[tuple[int, int]]:
    """(prompt_blocks, answer_blocks) per request id; draws p0, a0, p1, a1, ..."""
    rng = SplitMix64(config.seed)
    out = []
    for _ in range(config.num_requests):
        prompt = rng.randint(config.prompt_blocks_min, config.prompt_blocks_max)
        answer = rng.randint(config.answer_blocks_min, config.answer_blocks_max)
        out.append((prompt, answer))
    return out


class _Request:
    """One request's progress inside one scheduler's run."""

    __slots__ = ("id", "prompt", "answer", "written", "wait", "finish", "preemptions",
                 "slot", "slot_lost", "admitted", "done")

    def __init__(self, rid: int, prompt: int, answer: int):
        self.id, self.prompt, self.answer = rid, prompt, answer
        self.written = 0  # answer blocks written so far (kept across preemption)
        self.wait = None  # step of the first answer block
        self.finish = None  # step of the last answer block
        self.preemptions = 0
        self.slot = None
        self.slot_lost = None  # the slot it had when last preempted (for the frame)
        self.admitted = None  # step of the latest admission
        self.done = False  # static: finished but still holding its slot

    @property
    def held(self) -> int:
        return self.prompt + self.written


class _Scheduler:
    """The step loop shared by the three schedulers; subclasses decide admission."""

    name = ""

    def __init__(self, requests: list[tuple[int, int]], pool: int, max_num_seqs: int, longest: int):
        self.requests = [_Request(i, p, a) for i, (p, a) in enumerate(requests)]
        self.waiting = deque(self.requests)  # FCFS by id; preempted go to the front
        self.running: list[_Request] = []  # admission order, oldest first
        self.pool, self.max_num_seqs, self.longest = pool, max_num_seqs, longest
        self.slots: list[_Request | None] = [None] * max_num_seqs
        self.step = 0
        self.preemptions = 0
        self.preempted_now: list[_Request] = []
        self.frames: list[list] = []
        self.kv: list[list[int]] = []
        self.writers: list[int] = []  # per step: how many requests wrote a block
        self.finished = 0  # requests that wrote their last block
        self.retired = 0  # requests that have left for good

    # The loop -------------------------------------------------------------------
    def run(self) -> "_Scheduler":
        total = sum(r.answer for r in self.requests)
        while self.finished < len(self.requests):
            self.preempted_now = []
            self.retire()
            self.admit()
            self.writers.append(self.produce())
            # Some request always writes (see check() in NaiveBatchingConfig), so the run ends.
            assert self.writers[-1] >= 1, f"{self.name}: no progress at step {self.step}"
            self.check_invariants()
            self.record()
            self.step += 1
            assert self.step <= total
        return self

    def retire(self) -> None:
        for r in [r for r in self.running if r.written == r.answer]:
            self.leave(r)
            self.retired += 1

    def admit(self) -> None:
        while self.waiting and len(self.running) < self.max_num_seqs and self.fits(self.waiting[0]):
            self.start(self.waiting.popleft())

    def fits(self, r: _Request) -> bool:
        raise NotImplementedError

    def produce(self) -> int:
        """Every running request writes one block; returns how many wrote."""
        writers = [req for req in self.running if not req.done]
        for r in writers:
            self.write(r)
        return len(writers)

    # Small verbs ----------------------------------------------------------------
    def start(self, r: _Request) -> None:
        assert r.slot is None and not r.done, f"request {r.id} is already running"
        r.slot = self.slots.index(None)
        self.slots[r.slot] = r
        r.admitted = self.step
        self.running.append(r)

    def leave(self, r: _Request) -> None:
        assert self.slots[r.slot] is r
        self.running.remove(r)
        self.slots[r.slot] = None
        r.slot = None

    def write(self, r: _Request) -> None:
        assert r.written < r.answer
        r.written += 1
        if r.wait is None:
            r.wait = self.step  # its first answer block; a later preemption keeps this
        if r.written == r.answer:
            r.finish = self.step
            self.finished += 1

    def reserved(self) -> int:
        return self.longest * len(self.running)

    def check_invariants(self) -> None:
        # start() refuses a request that holds a slot and only preempt() puts one back
        # in the queue, right after it left running; with the count below adding up,
        # no request can be twice in waiting, twice in running, or in both.
        assert len(self.waiting) + len(self.running) + self.retired == len(self.requests)
        assert len(self.running) <= self.max_num_seqs
        assert self.reserved() <= self.pool

    # Output ---------------------------------------------------------------------
    def record(self) -> None:
        frame: list = [None] * self.max_num_seqs
        prompt = answer = unused = 0
        for r in self.running:
            spare = self.spare(r)
            state = "done" if r.done else ("new" if r.admitted == self.step else "run")
            frame[r.slot] = [r.id, r.prompt, r.written, spare, state]
            prompt, answer, unused = prompt + r.prompt, answer + r.written, unused + spare
        for r in self.preempted_now:  # nobody is admitted after a preemption in a step
            assert frame[r.slot_lost] is None
            frame[r.slot_lost] = [r.id, r.prompt, r.written, 0, "pre"]
        while frame and frame[-1] is None:
            frame.pop()
        self.frames.append(frame)
        self.kv.append([prompt, answer, unused])

    def spare(self, r: _Request) -> int:
        """Reserved-but-unused blocks of a running request."""
        return self.longest - r.held

    def max_concurrent(self) -> int:
        return min(self.max_num_seqs, self.pool // self.longest)

    def result(self) -> dict:
        n = len(self.requests)
        waits = sorted(r.wait for r in self.requests)
        steps = self.step
        assert all(r.finish is not None for r in self.requests)
        assert steps == max(r.finish for r in self.requests) + 1
        assert sum(self.writers) == sum(r.answer for r in self.requests)

        def mean(per_step):
            return round(sum(per_step) / steps, 3)

        return {
            "steps_to_finish": steps,
            "preemptions": self.preemptions,
            "mean_wait_steps": round(sum(waits) / n, 3),
            "p90_wait_steps": round(percentile(waits, 90), 3),
            "mean_running": mean(self.writers),
            "mean_kv": {"prompt": mean([k[0] for k in self.kv]),
                        "answer": mean([k[1] for k in self.kv]),
                        "reserved_unused": mean([k[2] for k in self.kv])},
            "max_concurrent": self.max_concurrent(),
            "per_request": [{"wait": r.wait, "finish": r.finish, "preemptions": r.preemptions}
                            for r in self.requests],
            "kv": self.kv,
            "frames": self.frames,
        }


class Static(_Scheduler):
    """Fixed batches: the next batch forms only when every member of the last is done."""

    name = "static"

    def retire(self) -> None:
        for r in self.running:
            if r.written == r.answer:
                r.done = True  # keeps its slot and reservation: the idle capacity
        if self.running and all(r.done for r in self.running):
            for r in list(self.running):
                self.leave(r)
                self.retired += 1

    def admit(self) -> None:
        if self.running:
            return
        for _ in range(min(self.max_concurrent(), len(self.waiting))):
            self.start(self.waiting.popleft())


class ContinuousReserved(_Scheduler):
    """Admit every step, but each request reserves the longest possible request."""

    name = "continuous_reserved"

    def fits(self, r: _Request) -> bool:
        return self.pool - self.reserved() >= self.longest


class ContinuousPaged(_Scheduler):
    """Hold only written blocks; grow a block at a time; preempt the newest when full."""

    name = "continuous_paged"

    BLOCK_TOKENS = 16  # one block per answer step

    def __init__(self, *args):
        super().__init__(*args)
        # The blocks live in the shared paged pool (pysim.engine.blockpool), caching off:
        # each running request's block table holds its prompt and written answer blocks.
        # The race counts usable blocks; the shared pool also reserves vLLM's null block
        # (block 0), so it is made one block larger and `used` leaves that block out.
        self.blocks = KVCacheManager(BlockPool(self.pool + 1, self.BLOCK_TOKENS,
                                               enable_prefix_caching=False))

    @property
    def used(self) -> int:
        return self.pool - self.blocks.pool.num_free_blocks

    def fits(self, r: _Request) -> bool:
        # +1: the block its next answer block will fill in this step.
        return self.used + r.held + 1 <= admit_limit(self.pool)

    def grow(self, r: _Request) -> None:
        """Extend r's block table to its prompt + written answer blocks."""
        ok = self.blocks.allocate_slots(r.id, (), r.held * self.BLOCK_TOKENS)
        assert ok and len(self.blocks.block_table(r.id)) == r.held

    def start(self, r: _Request) -> None:
        super().start(r)
        self.grow(r)  # prompt + answer blocks already written, recomputed

    def leave(self, r: _Request) -> None:
        super().leave(r)
        self.blocks.free(r.id)

    def write(self, r: _Request) -> None:
        super().write(r)
        self.grow(r)

    def produce(self) -> int:
        wrote = 0
        i = 0
        while i < len(self.running):  # oldest first
            r = self.running[i]
            if self.used == self.pool:
                victim = self.running[-1]  # newest; it has not grown in this step
                self.preempt(victim)
                if victim is r:
                    break  # it was the newest, so everyone else has grown already
            assert self.used < self.pool
            self.write(r)
            wrote += 1
            i += 1
        return wrote

    def preempt(self, r: _Request) -> None:
        r.slot_lost = r.slot
        self.leave(r)  # frees prompt + written blocks; progress (written) is kept
        r.preemptions += 1
        self.preemptions += 1
        self.preempted_now.append(r)
        self.waiting.appendleft(r)

    def reserved(self) -> int:
        return self.used

    def spare(self, r: _Request) -> int:
        return 0

    def max_concurrent(self) -> int:
        return self.max_num_seqs


_CLASSES = {cls.name: cls for cls in (Static, ContinuousReserved, ContinuousPaged)}


def simulate(name: str, requests: list[tuple[int, int]], pool: int, max_num_seqs: int,
             longest: int) -> dict:
    """Run one scheduler on an explicit workload [(prompt_blocks, answer_blocks), ...]."""
    return _CLASSES[name](requests, pool, max_num_seqs, longest).run().result()


def run(config: NaiveBatchingConfig, actions: list) -> dict:
    if actions:
        raise ConfigError("actions", "race takes no actions")
    work = workload(config)
    chosen = SCHEDULERS if config.scheduler == "all" else (config.scheduler,)
    return {
        "config": to_mapping(config),
        "longest_blocks": config.longest,
        "usable_blocks": config.num_gpu_blocks - 1,
        "workload": [{"id": i, "prompt_blocks": p, "answer_blocks": a} for i, (p, a) in enumerate(work)],
        "schedulers": {name: simulate(name, work, config.num_gpu_blocks - 1, config.max_num_seqs, config.longest)
                       for name in chosen},
    }


def trace_digest(view: dict) -> str:
    """sha256 of the view model's canonical JSON: equal digests mean equal traces."""
    text = json.dumps(view, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def text(view: dict) -> str:
    """The comparison table for the command line."""
    c = view["config"]
    head = (f"{c['num_requests']} requests (seed {c['seed']}), pool {c['num_gpu_blocks']} blocks "
            f"({view['usable_blocks']} usable), "
            f"at most {c['max_num_seqs']} running, longest possible request {view['longest_blocks']} blocks")
    rows = [("scheduler", "steps to finish", "mean wait", "p90 wait", "mean running", "preemptions")]
    for name, r in view["schedulers"].items():
        rows.append((name, str(r["steps_to_finish"]), f"{r['mean_wait_steps']:.1f}",
                     str(r["p90_wait_steps"]), f"{r['mean_running']:.2f}", str(r["preemptions"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [head, ""]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def figures(small_pool=100) -> dict:
    """The numbers page 1 quotes ({{ naive_batching.KEY }}): the race at its defaults and
    with a small pool."""
    default = run(NaiveBatchingConfig(), [])
    small = run(NaiveBatchingConfig(num_gpu_blocks=small_pool), [])
    c = default["config"]
    d, sm = default["schedulers"], small["schedulers"]
    longest = c["prompt_blocks_max"] + c["answer_blocks_max"]
    return {
        "num_requests": c["num_requests"], "num_gpu_blocks": c["num_gpu_blocks"], "max_num_seqs": c["max_num_seqs"],
        "prompt_min": c["prompt_blocks_min"], "prompt_max": c["prompt_blocks_max"],
        "answer_min": c["answer_blocks_min"], "answer_max": c["answer_blocks_max"],
        "longest": longest,
        "usable_blocks": default["usable_blocks"],
        "admit_limit": admit_limit(default["usable_blocks"]),
        "reserved_concurrent": d["static"]["max_concurrent"],
        "static_steps": d["static"]["steps_to_finish"],
        "reserved_steps": d["continuous_reserved"]["steps_to_finish"],
        "paged_steps": d["continuous_paged"]["steps_to_finish"],
        "static_over_paged": d["static"]["steps_to_finish"] / d["continuous_paged"]["steps_to_finish"],
        "static_mean_running": d["static"]["mean_running"],
        "paged_mean_running": d["continuous_paged"]["mean_running"],
        "paged_preemptions": d["continuous_paged"]["preemptions"],
        "small_pool": small_pool,
        "small_reserved_concurrent": sm["continuous_reserved"]["max_concurrent"],
        # The most requests the paged scheduler actually ran in one step (from its frames).
        "small_paged_peak": max(sum(1 for slot in frame if slot and slot[4] in ("new", "run"))
                                for frame in sm["continuous_paged"]["frames"]),
        "small_paged_mean_running": sm["continuous_paged"]["mean_running"],
        "small_reserved_mean_running": sm["continuous_reserved"]["mean_running"],
        "small_paged_preemptions": sm["continuous_paged"]["preemptions"],
    }


SIMULATION = Simulation(name="naive_batching", config_cls=NaiveBatchingConfig, run=run, text=text,
                        figures=figures)
