"""Replay timed requests through the V1 engine, with a step-time model, as a server would.

`replay` is the serving lab's clock: requests arrive at their times (seconds), the
engine (pysim.engine, vLLM 0.33's synchronous scheduler) schedules one step at a time,
and each step lasts what the roofline model (pysim.steptime) says for the tokens it
ran and the KV it read. A request's first token appears at the end of the step that
sampled it, and it is finished at the end of the step that sampled its last token.

Like `vllm bench serve --max-concurrency C`, an optional client-side cap keeps at most
C requests in flight: the next request is sent when one finishes (its TTFT counts from
the moment it is sent, as vLLM's client measures it). The calibration uses it.

The clock follows `engine.run_timed`'s rules (a step admits what arrived by its start;
an idle engine jumps to the next arrival), with one shortcut: a run of steps that are
plain decodes of the same batch (`Engine.decode_run_length`), the last of which may
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

from dataclasses import dataclass

from .blockpool import BlockPool, KVCacheManager
from .engine import Engine, EngineConfig
from .steptime import StepTimeModel


class UncachedBlockPool(BlockPool):
    """The block pool with prefix caching off, as a stack: same blocks, same order.

    Without caching no block carries a hash, so `BlockPool` hands blocks out from the
    head of its free queue and puts freed ones back at the head: last in, first out.
    A Python list used as a stack does exactly that with C-speed slices instead of a
    linked list walked one block at a time, which was half of a replay's time.
    Block ids, counts and order are those of `BlockPool` (a test compares them).
    """

    def __init__(self, num_gpu_blocks: int, block_size: int):
        super().__init__(num_gpu_blocks, block_size, enable_prefix_caching=False)
        # The parent's free queue as it starts (without a null block it reserved, if it
        # does), head at the end of the list.
        self._stack = BlockPool.free_queue(self)[::-1]
        self._num_usable = len(self._stack)

    @property
    def num_free_blocks(self) -> int:
        return len(self._stack)

    def get_new_blocks(self, n: int) -> list[int]:
        stack = self._stack
        assert 0 <= n <= len(stack), f"asked for {n} blocks, {len(stack)} free"
        if not n:
            return []
        out = stack[-n:]
        del stack[-n:]
        out.reverse()
        self.num_allocations += n
        return out

    def free_blocks(self, ordered_block_ids) -> None:
        # Each block is held by one table only (no sharing without caching): all reach
        # ref 0 and go to the head, the first given ending at the very head.
        freed = list(ordered_block_ids)
        freed.reverse()
        self._stack.extend(freed)

    def free_queue(self) -> list[int]:
        return self._stack[::-1]

    def check_invariants(self, block_tables=None) -> None:
        held = [b for t in (block_tables or ()) for b in t]
        assert len(set(self._stack)) == len(self._stack)
        assert not set(held) & set(self._stack)
        if block_tables is not None:
            assert len(held) + len(self._stack) == self._num_usable


@dataclass
class ReplayResult:
    """Per-request times (seconds, in the order given) and gauges per segment.

    A segment is one step, or a run of plain decode steps applied at once (the gauges
    do not change in such a run, except the KV usage, given at its end)."""

    sent: list[float]
    first_token: list[float]
    finished: list[float]
    output_tokens: list[int]
    seg_end: list[float]  # when the segment's last step ended
    seg_steps: list[int]  # steps in the segment
    num_requests_running: list[int]
    num_requests_waiting: list[int]
    kv_usage: list[float]
    seg_output_tokens: list[int]
    seg_preemptions: list[int]
    num_preemptions: int
    num_steps: int

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


def engine_config(num_gpu_blocks: int, block_size: int, max_num_seqs: int,
                  max_num_batched_tokens: int, policy: str = "fcfs") -> EngineConfig:
    """The engine's config for vLLM's `num_gpu_blocks`, chunked prefill on, prefix caching off.

    `num_gpu_blocks` counts vLLM's null block; the engine reserves it once it models
    the null block (issue 17), and until then uses every block.
    """
    return EngineConfig(num_gpu_blocks=num_gpu_blocks, block_size=block_size,
                        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
                        policy=policy, enable_chunked_prefill=True, enable_prefix_caching=False)


def replay(arrivals: list[float], prompt_tokens: list[int], output_tokens: list[int],
           config: EngineConfig, model: StepTimeModel, num_gpu_blocks: int,
           max_concurrency: int | None = None, max_steps: int = 2_000_000,
           fast: bool = True, fast_pool: bool = True) -> ReplayResult:
    n = len(arrivals)
    assert n == len(prompt_tokens) == len(output_tokens) and n > 0
    assert all(a <= b for a, b in zip(arrivals, arrivals[1:])), "arrivals must be sorted"
    engine = Engine(config)
    if fast_pool and not config.enable_prefix_caching:
        # Same scheduling, faster pool (see UncachedBlockPool).
        engine.pool = UncachedBlockPool(engine.pool.num_gpu_blocks, engine.pool.block_size)
        engine.kv = KVCacheManager(engine.pool)
    sent = [0.0] * n
    first = [0.0] * n
    done = [0.0] * n
    # Requests are added as they are sent: all at once, or C at a time.
    cap = n if max_concurrency is None else min(n, max_concurrency)
    for i in range(cap):
        engine.add_request(i, prompt_tokens[i], output_tokens[i], arrival=arrivals[i])
        sent[i] = arrivals[i]
    next_to_send = cap

    requests = engine.requests
    usable = engine.pool.num_free_blocks  # every block but a reserved null block
    pool = engine.pool
    seconds = model.seconds
    run_seconds = model.decode_run_seconds

    def step_time(result) -> float:
        # Attention reads each scheduled request's whole context: what was cached
        # before this step plus this step's own tokens, i.e. num_computed after it.
        # (Every running request is scheduled whenever the budget covers them all.)
        kv = sum(r.num_computed for r in engine.running)
        for rid in result.finished:
            kv += requests[rid].num_computed
        return seconds(result.decode_tokens + result.prefill_tokens, kv)

    def finish(rid, end) -> None:
        nonlocal next_to_send
        done[rid] = end
        if next_to_send < n:  # the client sends the next request now
            j = next_to_send
            next_to_send += 1
            sent[j] = max(arrivals[j], end)
            engine.add_request(j, prompt_tokens[j], output_tokens[j], arrival=sent[j])

    seg_end, seg_steps, running, waiting, usage, outs, preempts = [], [], [], [], [], [], []
    now = arrivals[0]
    while engine.has_unfinished():
        if engine.num_steps >= max_steps:
            raise RuntimeError(f"still running after {max_steps} steps")
        if engine.is_idle():  # nothing to do until the next request arrives
            nxt = engine.next_arrival()
            if nxt > now:
                now = nxt
        k = engine.decode_run_length() if fast else 0
        if k:
            # A run of plain decodes: the same batch of b requests, each step reading
            # one more KV entry per request. Stop before the step that would start
            # at or after the next arrival (found by bisection on the run's closed-form
            # time), and apply the steps at once.
            nxt = engine.next_arrival()
            b = len(engine.running)
            kv = sum(r.num_computed for r in engine.running)
            j = k
            if nxt is not None and now + run_seconds(b, kv, k - 1) >= nxt:
                lo, hi = 0, k - 1  # step lo + 1 starts before nxt; step hi + 1 does not
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if now + run_seconds(b, kv, mid) < nxt:
                        lo = mid
                    else:
                        hi = mid
                j = lo + 1 if now < nxt else 0
            if j:
                n_wait = len(engine.waiting)
                finished = engine.advance_decodes(j)
                now += run_seconds(b, kv, j)
                seg_end.append(now)
                seg_steps.append(j)
                running.append(len(engine.running))
                waiting.append(n_wait)
                usage.append(1.0 - pool.num_free_blocks / usable)
                outs.append(b * j)
                preempts.append(0)
                for rid in finished:
                    finish(rid, now)
                continue
        result = engine.step(now)
        assert result.parts, "a step with work to do scheduled nothing"
        end = now + step_time(result)
        now = end
        seg_end.append(end)
        seg_steps.append(1)
        running.append(result.num_requests_running)
        waiting.append(result.num_requests_waiting)
        usage.append(1.0 - pool.num_free_blocks / usable)
        outs.append(len(result.sampled))
        preempts.append(len(result.preempted))
        index = result.index
        for rid in result.sampled:
            if requests[rid].first_token_step == index:
                first[rid] = end
        for rid in result.finished:
            finish(rid, end)
    assert next_to_send == n
    return ReplayResult(sent, first, done, list(output_tokens), seg_end, seg_steps, running,
                        waiting, usage, outs, preempts, engine.num_preemptions, engine.num_steps)
