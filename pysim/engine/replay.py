"""Replay timed requests through the V1 engine, with a step-time model, as a server would.

`replay` is the serving lab's clock: requests arrive at their times (seconds), the
engine (pysim.engine, vLLM 0.33's synchronous scheduler) schedules one step at a time,
and each step lasts what the roofline model (pysim.timing.steptime) says for the tokens it
ran and the KV it read. A request's first token appears at the end of the step that
sampled it, and it is finished at the end of the step that sampled its last token.

Like `vllm bench serve --max-concurrency C`, an optional client-side cap keeps at most
C requests in flight: the next request is sent when one finishes (its TTFT counts from
the moment it is sent, as vLLM's client measures it). The calibration uses it.

The clock follows `engine.run_timed`'s rules (a step admits what arrived by its start;
an idle engine jumps to the next arrival), with one shortcut: a run of steps that are
plain decodes of the same batch (pysim.engine.decode_run), the last of which may
finish requests, is applied at once, and its time is summed in closed form
(`StepTimeModel.decode_run_seconds`). Most steps of a busy server are such decodes,
so the shortcut cuts most of a replay's steps (bench/bench_lab.py times it against
stepping one by one). `fast=False` steps one at a time; the tests check both give the
same steps and preemptions, and times equal to 1e-9.

The gauges are sampled after each step, or each run of decodes, under vLLM's metric names
(vllm/v1/metrics/loggers.py, `PrometheusStatLogger`): running requests as
`vllm:num_requests_running`, the queue as `vllm:num_requests_waiting`, the pool's fill
as `vllm:kv_cache_usage_perc` (a fraction: 1 is full), and preemptions as the counter
`vllm:num_preemptions`. vLLM's usage leaves out the null block:
1 - free / (num_gpu_blocks - 1) (vllm/v1/core/block_pool.py, `BlockPool.get_usage`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pysim.engine.decode_run import advance_decodes, plan_decode_run
from pysim.engine.scheduler import Engine, EngineConfig, SchedulerConfig
from pysim.timing.steptime import StepTimeModel
from pysim.utils import cdiv


class BlockCounts:
    """The KV cache manager and its pool for prefix caching off, keeping only counts.

    With caching off no block carries a hash, so no scheduling decision depends on
    *which* blocks a request holds: admission, allocation and preemption read only how
    many blocks each request holds and how many are free (vLLM's
    `KVCacheManager.allocate_slots` compares exactly those two numbers). The lab keeps
    those two numbers and nothing else: no block ids, no free queue. The engine takes
    it as both its `pool` and its `kv` (the methods it calls on each). The tests replay
    with vLLM's block pool and with this, and compare every step, preemption and time.
    """

    enable_prefix_caching = False

    def __init__(self, num_gpu_blocks: int, block_size: int):
        self.num_gpu_blocks = num_gpu_blocks
        self.block_size = block_size
        self.num_free_blocks = num_gpu_blocks - 1  # block 0 is vLLM's null block
        self._held: dict = {}  # request id -> blocks in its table

    # The KV cache manager's side (pysim.engine.blockpool.KVCacheManager, same meanings).
    def num_blocks(self, req_id) -> int:
        return self._held.get(req_id, 0)

    def blocks_needed(self, req_id, num_tokens_total: int, hit_blocks=()) -> int:
        assert not hit_blocks
        return max(0, cdiv(num_tokens_total, self.block_size) - self._held.get(req_id, 0))

    def allocate_slots(self, req_id, token_ids, num_tokens_total: int, hit_blocks=(),
                       block_hashes=()) -> bool:
        new = self.blocks_needed(req_id, num_tokens_total, hit_blocks)
        if new > self.num_free_blocks:
            return False
        self._held[req_id] = self._held.get(req_id, 0) + new
        self.num_free_blocks -= new
        return True

    def grow_all(self, grown) -> None:
        held, total = self._held, 0
        for req_id, new in grown:
            held[req_id] += new
            total += new
        assert total <= self.num_free_blocks, "grow_all() without the blocks: use allocate_slots"
        self.num_free_blocks -= total

    def free(self, req_id) -> None:
        self.num_free_blocks += self._held.pop(req_id, 0)

    def tables(self) -> dict:
        """Request id -> a stand-in table of the right length (for invariant checks)."""
        return {rid: [None] * n for rid, n in self._held.items()}

    # The pool's side.
    def check_invariants(self, block_tables=None) -> None:
        held = sum(self._held.values())
        assert 0 <= self.num_free_blocks and held + self.num_free_blocks == self.num_gpu_blocks - 1
        if block_tables is not None:
            assert sum(len(t) for t in block_tables) == held


@dataclass
class ReplayResult:
    """Per-request times (seconds, in the order given) and gauges per segment.

    A segment is one step, or a run of plain decode steps applied at once (the gauges
    do not change in such a run, except the KV usage, given at its end).

    What a fit needs (pysim.timing.fit) is kept too: each segment's work (`seg_work`: a step's
    tokens, requests, KV read and attention pairs, or a decode run's batch, starting
    KV and steps), when it started, and for each request the segment at whose end it
    was sent (-1: at its own arrival time), got its first token, and finished. With
    those, every reported time is a sum of segment times, so a fit can ask what they
    would be under other coefficients without running the engine again.
    """

    sent: list[float]
    first_token: list[float]
    finished: list[float]
    output_tokens: list[int]
    seg_start: list[float]
    seg_end: list[float]  # when the segment's last step ended
    seg_steps: list[int]  # steps in the segment
    seg_work: list[tuple]  # ("step", tokens, requests, kv read, pairs) | ("run", batch, kv, steps)
    num_requests_running: list[int]
    num_requests_waiting: list[int]
    kv_usage: list[float]
    seg_output_tokens: list[int]
    seg_preemptions: list[int]
    num_preemptions: int
    num_steps: int
    sent_seg: list[int]
    first_seg: list[int]
    finish_seg: list[int]
    itl: list | None  # (seconds, how many) pairs: every gap between two tokens of a request
    # vLLM's prefix-cache counters, in tokens (vllm:prefix_cache_queries, vllm:prefix_cache_hits)
    prefix_cache_queries: int = 0
    prefix_cache_hits: int = 0

    @property
    def ttfts(self) -> list[float]:
        return [f - s for f, s in zip(self.first_token, self.sent)]

    @property
    def latencies(self) -> list[float]:
        return [f - s for f, s in zip(self.finished, self.sent)]

    @property
    def duration(self) -> float:
        """First request sent to last one finished, as vLLM's benchmark duration."""
        return max(self.finished) - min(self.sent) if self.sent else 0.0


def engine_config(num_gpu_blocks: int, block_size: int, scheduler: SchedulerConfig,
                  policy: str = "fcfs", enable_prefix_caching: bool = False) -> EngineConfig:
    """The engine's config for vLLM's `num_gpu_blocks`, chunked prefill on, and every
    knob of `scheduler` (a SchedulerConfig, or a config that inherits its fields).

    `num_gpu_blocks` counts vLLM's null block, which the pool reserves: one fewer hold KV.
    """
    knobs = vars(scheduler.scheduler())
    return EngineConfig(num_gpu_blocks=num_gpu_blocks, block_size=block_size, policy=policy,
                        enable_chunked_prefill=True, enable_prefix_caching=enable_prefix_caching,
                        **knobs)


class Replica:
    """One engine and its clock (one vLLM replica), advanced to a given time on demand.

    `replay` drives one to the end; a cluster (pysim.sims.cluster) drives several side by
    side, advancing each to a request's arrival before its router looks at them.
    `add` queues a request arriving at a time no earlier than the clock's last stop;
    `advance(until)` runs every step that starts before `until`.

    It records what `ReplayResult` holds, per segment and per request id (ids are
    0..n-1, the caller's). `on_finish(id, time)` is called as each request finishes;
    `on_first(id, time)` as each samples its first token.
    """

    def __init__(self, config: EngineConfig, model: StepTimeModel, *, fast: bool = True,
                 count_blocks: bool = True, itl: bool = False, max_steps: int = 2_000_000,
                 on_finish=None, on_first=None, policy=None):
        engine = self.engine = Engine(config, policy)  # policy: pysim.policy.api.Policy, or None
        if count_blocks and not config.enable_prefix_caching:
            # Same scheduling, counted blocks (see BlockCounts).
            engine.pool = engine.kv = BlockCounts(config.num_gpu_blocks, config.block_size)
        self.config, self.model, self.fast, self.max_steps = config, model, fast, max_steps
        self.usable = engine.pool.num_free_blocks  # every block but a reserved null block
        self.now = None  # no step yet: the clock starts at the first arrival
        self.on_finish, self.on_first = on_finish, on_first
        self.first: dict = {}  # id -> first token time
        self.done: dict = {}  # id -> finish time
        self.first_seg: dict = {}
        self.finish_seg: dict = {}
        self.last_token: dict = {}  # id -> when it last produced a token (for ITL)
        self.gaps = [] if itl else None
        self.seg_start, self.seg_end, self.seg_steps, self.work = [], [], [], []
        self.running, self.waiting, self.usage, self.outs, self.preempts = [], [], [], [], []
        self.cache_queries, self.cache_hits = [], []  # the engine's prefix-cache counters after each segment
        self.ahead = None  # async scheduling: the batch scheduled while the last one ran
        # Async scheduling: the next batch sees the requests that arrived by this time,
        # when it was (as vLLM runs it) scheduled before the clock's `now`.
        self.cutoff = None

    def add(self, i: int, num_prompt_tokens: int, max_tokens: int, at: float,
            token_ids=None, external_tokens: int = 0) -> None:
        # Prompt ids that know their blocks' hashes (pysim.traffic.traces.PromptTokens) spare hashing them.
        hashes = token_ids.block_hashes(self.config.block_size) if hasattr(token_ids, "block_hashes") else ()
        self.engine.add_request(i, num_prompt_tokens, max_tokens, arrival=at, token_ids=token_ids,
                                block_hashes=hashes, external_tokens=external_tokens)
        if self.now is None:
            self.now = at  # the clock starts at the first request (an idle one jumps in `advance`)

    def outstanding(self) -> int:
        """Requests sent to it and not finished: what a router counts as its load."""
        return self.engine.num_unfinished

    def kv_usage(self) -> float:
        return 1.0 - self.engine.pool.num_free_blocks / self.usable

    def _record(self, start, end, steps, work, running, waiting, outs, preempts) -> int:
        self.seg_start.append(start)
        self.seg_end.append(end)
        self.seg_steps.append(steps)
        self.work.append(work)
        self.running.append(running)
        self.waiting.append(waiting)
        self.usage.append(1.0 - self.engine.pool.num_free_blocks / self.usable)
        self.outs.append(outs)
        self.preempts.append(preempts)
        self.cache_queries.append(self.engine.prefix_cache_queries)
        self.cache_hits.append(self.engine.prefix_cache_hits)
        return len(self.seg_end) - 1

    def _finish(self, rid, end) -> None:
        self.done[rid] = end
        self.finish_seg[rid] = len(self.seg_end) - 1
        if self.on_finish:
            self.on_finish(rid, end)

    def advance(self, until: float = math.inf) -> None:
        """Run every step that starts before `until` (all of them, by default)."""
        engine, model = self.engine, self.model
        gaps, last_token = self.gaps, self.last_token
        run_seconds = model.decode_run_seconds
        pipelined = engine.config.async_scheduling
        while engine.has_unfinished():
            if engine.num_steps >= self.max_steps:
                raise RuntimeError(f"still running after {self.max_steps} steps")
            now = self.now
            if self.ahead is not None:
                if now >= until:
                    return
                result, self.ahead = self.ahead, None
                self._step(result, now, until)
                continue
            if engine.is_idle():  # nothing to do until the next request arrives
                nxt = engine.next_arrival()
                if nxt is None:
                    return  # everything it has is finished, or was added for later
                if nxt > now:
                    now = self.now = nxt
                self.cutoff = now  # an idle server schedules as soon as a request is in
            if now >= until:
                return
            cutoff = now if self.cutoff is None or not pipelined else self.cutoff
            # A request due now is admitted by a full step; otherwise plain decodes may
            # run until just before the next arrival, or `until`.
            nxt = engine.next_arrival()
            stop = until if nxt is None or nxt > until else nxt
            k, kv = plan_decode_run(engine) if self.fast and stop > now else (0, 0)
            if pipelined and k and not self._finishes_unseen(k):
                # With async scheduling the schedule made while the run's last step
                # runs does not see that step's finishes. Where that could matter, the
                # last step is taken one at a time; the steps before it are the same
                # in both loops.
                k -= 1
            j = 0
            if k > 0:
                # A run of plain decodes: the same batch of b requests, each step reading
                # one more KV entry per request. Stop before the step that would start
                # at or after `stop` (from the run's closed-form time), and apply the
                # steps at once.
                b = len(engine.running)
                j = k
                if stop != math.inf and now + run_seconds(b, kv, k - 1 - pipelined) >= stop:
                    # m: the most steps done while the next one still starts before
                    # stop. With async scheduling each step's batch was made as the step
                    # before it started, so one step more is sure to be a plain decode.
                    j = model.decode_steps_within(b, kv, stop - now, k - 1 - pipelined) + 1 + pipelined
            if k > 0 and j > 0:
                if gaps is not None:
                    # Each request's first gap runs from its last token; the other j - 1
                    # are the run's steps, the same for every request in it.
                    t1 = now + run_seconds(b, kv, 1)
                    for r in engine.running:
                        gaps.append((t1 - last_token[r.id], 1))
                    prev = run_seconds(b, kv, 1)
                    for i in range(2, j + 1):
                        total = run_seconds(b, kv, i)
                        gaps.append((total - prev, b))
                        prev = total
                batch_ids = [r.id for r in engine.running] if gaps is not None else ()
                n_wait = len(engine.waiting)
                finished = advance_decodes(engine, j)
                end = self.now = now + run_seconds(b, kv, j)
                self.cutoff = now + run_seconds(b, kv, j - 1)  # the next batch was made as the last step started
                self._record(now, end, j, ("run", b, kv, j), len(engine.running), n_wait, b * j, 0)
                for rid in batch_ids:
                    last_token[rid] = end
                for rid in finished:
                    self._finish(rid, end)
                continue
            self._step(engine.schedule(cutoff), now, until)

    def _finishes_unseen(self, k: int) -> bool:
        """Async scheduling: can a run of k plain decodes (pysim.engine.decode_run) end with the
        step that finishes requests, as in the synchronous loop? The next batch is made
        as that step starts, so it does not see the step's finishes. It is the same
        batch as one made after them when nobody waits (no admission to block or
        allow) and the next step's blocks are there without the finished requests'."""
        engine = self.engine
        if engine.waiting:
            return False
        bs, free, kv_held = engine.config.block_size, engine.pool.num_free_blocks, engine.kv
        if len(engine.running) * -(-(k + 1) // bs) <= free:
            return True  # a table grows by at most that many blocks in k + 1 steps
        need = 0  # blocks every running request holds through one step past the run
        for r in engine.running:
            grow = -(-(r.num_computed + k + 1) // bs) - kv_held.num_blocks(r.id)
            if grow > 0:
                need += grow
        return need <= free

    def _step(self, result, now: float, until: float) -> None:
        """Run one scheduled batch from `now`: with async scheduling, schedule the next
        one as it starts; apply its outputs; record it."""
        engine, model, gaps, last_token = self.engine, self.model, self.gaps, self.last_token
        if engine.config.async_scheduling:
            end = now + model.step_seconds(result)  # its shape is known once scheduled
            nxt = engine.next_arrival()
            # The next batch is scheduled now, before this one's outputs. When those
            # outputs change nothing a schedule can see (no finish, no preemption to
            # settle, no arrival before the end), scheduling after them gives the same
            # batch, and the engine is left with nothing in flight: the decode-run
            # shortcut can then take over.
            settles = (self.fast and not result.preempted and end < until
                       and (nxt is None or nxt > end) and not engine.oldest_finishes_any())
            self.cutoff = now  # a batch made after this one's outputs sees what came by its start
            if not settles and (engine.running or engine.waiting):
                self.ahead = engine.schedule(now)
            engine.update_from_output(result)
            if self.ahead is not None and not self.ahead.parts:
                engine.update_from_output(self.ahead)  # an empty batch comes back at once
                self.ahead = None
                self.cutoff = end  # and the next is made once this one's outputs are in
        else:
            engine.update_from_output(result)
        assert result.parts, "a step with work to do scheduled nothing"
        end = self.now = now + model.step_seconds(result)
        seg = self._record(now, end, 1, ("step", result.num_tokens, len(result.parts),
                                         result.context_tokens, result.attention_pairs),
                           result.num_requests_running, result.num_requests_waiting,
                           len(result.sampled), len(result.preempted))
        requests, index = engine.requests, result.index
        for rid in result.sampled:
            if requests[rid].first_token_step == index:
                self.first[rid] = end
                self.first_seg[rid] = seg
                if self.on_first:
                    self.on_first(rid, end)
            elif gaps is not None:
                gaps.append((end - last_token[rid], 1))
            last_token[rid] = end
        for rid in result.finished:
            self._finish(rid, end)


def replay(arrivals: list[float], prompt_tokens: list[int], output_tokens: list[int],
           config: EngineConfig, model: StepTimeModel, num_gpu_blocks: int,
           max_concurrency: int | None = None, max_steps: int = 2_000_000,
           fast: bool = True, count_blocks: bool = True, token_ids=None,
           itl: bool = False) -> ReplayResult:
    """Run the requests to the end. `token_ids(i)` gives request i's prompt ids (prefix
    caching on); `itl=True` also collects every inter-token gap, for vLLM's ITL."""
    n = len(arrivals)
    assert n == len(prompt_tokens) == len(output_tokens) and n > 0
    assert all(a <= b for a, b in zip(arrivals, arrivals[1:])), "arrivals must be sorted"
    sent = [0.0] * n
    sent_seg = [-1] * n
    next_to_send = 0

    def send(i: int, at: float) -> None:
        sent[i] = at
        server.add(i, prompt_tokens[i], output_tokens[i], at, token_ids(i) if token_ids else None)

    def finish(rid, end) -> None:
        nonlocal next_to_send
        if next_to_send < n:  # the client sends the next request now
            j = next_to_send
            next_to_send += 1
            if arrivals[j] <= end:
                sent_seg[j] = len(server.seg_end) - 1
            send(j, max(arrivals[j], end))

    server = Replica(config, model, fast=fast, count_blocks=count_blocks, itl=itl,
                    max_steps=max_steps, on_finish=finish if max_concurrency is not None else None)
    # Requests are added as they are sent: all at once, or C at a time.
    cap = n if max_concurrency is None else min(n, max_concurrency)
    for i in range(cap):
        send(i, arrivals[i])
    next_to_send = cap
    server.advance()
    assert next_to_send == n and len(server.done) == n
    engine = server.engine
    order = range(n)
    return ReplayResult(sent, [server.first[i] for i in order], [server.done[i] for i in order],
                        list(output_tokens), server.seg_start, server.seg_end, server.seg_steps,
                        server.work, server.running, server.waiting, server.usage, server.outs,
                        server.preempts, engine.num_preemptions, engine.num_steps, sent_seg,
                        [server.first_seg[i] for i in order], [server.finish_seg[i] for i in order],
                        server.gaps, engine.prefix_cache_queries, engine.prefix_cache_hits)
