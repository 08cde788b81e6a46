"""The scheduler engine: one step of vLLM V1's `Scheduler`, or of its `AsyncScheduler`, over the shared pool.

This is the one place in pysim where the scheduling rules live: vLLM 0.34's
`Scheduler.schedule` and `Scheduler.update_from_output` (vllm/v1/core/sched/scheduler.py).
The budget simulation runs on it, the chapter's workloads run on it, and the toy
scheduler is compared against it step by step.

There are no prefill and decode phases. Each request has `num_tokens` (prompt plus the
tokens sampled so far) and `num_computed` (tokens whose KV is in the cache); each step
hands every request some tokens so that `num_computed` catches up with `num_tokens`,
all of them under one token budget (`max_num_batched_tokens`):

1. RUNNING requests first, in the order they were admitted. A decoding request
   needs 1 token (the one it sampled last step); a request part-way through its prompt
   needs the rest of it, cut to what is left of the budget (a *chunk*). If its KV needs
   a new block while the pool is empty, a running request is preempted (the waiting
   queue's policy picks it, pysim.engine.request_queue: FCFS the tail of `running`, PRIORITY
   the largest (priority, arrival)) and allocation is retried, until it succeeds or
   the request has preempted itself.
2. WAITING requests next, only if nobody was preempted this step, and only the
   head of the queue: admitted while `len(running) < max_num_seqs`, budget is left and
   the pool can hold the request's whole current sequence. When the head cannot be
   admitted, admission stops for this step: head-of-line blocking.
3. After scheduling (vLLM: `Scheduler._update_after_schedule`, `update_from_output`),
   every request whose computed tokens reached `num_tokens`
   samples one token: a decode, or the last chunk of a prompt, which gives the
   request its first token in that very step. A request that has all its tokens
   finishes and frees its blocks in the same step; they are usable from the next step.

Sync or async (`EngineConfig.async_scheduling`, vLLM's `--async-scheduling`). The
synchronous `Scheduler` applies step k's outputs before it schedules step k + 1. vLLM's
default, the `AsyncScheduler` (vllm/v1/core/sched/async_scheduler.py; the loop is
`EngineCore.step_with_batch_queue` in vllm/v1/engine/core.py), schedules step k + 1
while step k runs. `schedule` then advances computed tokens at once and gives each
request that will sample a *placeholder* for its token, so step k + 1 hands it the
next token without waiting; a request whose last token is in flight is skipped. What
step k's outputs change is seen one schedule later: its finished requests keep their
blocks and seats through the schedule of step k + 1, and a request preempted while a
batch of its was in flight still receives that batch's token (stale output) and is
not admitted again before it has. `run_timed` and pysim.engine.replay drive the engine either
way; `step` applies each batch before the next, as the synchronous loop does.

Preemption is by recompute: the victim's blocks are freed, `num_computed` drops to 0 and
it goes back to the front of the waiting queue (under PRIORITY: into the heap), keeping
the tokens it generated. When re-admitted it prefills prompt + generated tokens again
(prefix caching, if on, may cover part of that), then carries on decoding.

Token accounting: a request with prompt P and answer length M is finished once it has
sampled M tokens. Its last sampled token is never fed back, so across all steps it
is served exactly P + M - 1 tokens, plus, for each preemption, the tokens it had
computed when it was preempted, minus the tokens prefix-cache hits let it skip.

The pool is vLLM's: `num_gpu_blocks` blocks of which block 0 is the null block, never
handed out. Every step (tokens per request in order, admissions and their prefix-cache
hits, preemptions, finishes, block tables, free-queue lengths) agrees with recordings of
vLLM's own schedulers (tests/data/fidelity: 0.33.0's and 0.34.0's `Scheduler`, 80 and 96
workloads, tests/unit/test_fidelity_sched.py; 0.34.0's `AsyncScheduler`, 96 workloads,
tests/unit/test_fidelity_async.py; tools/record_vllm.py records a release);
`schedule` and `update_from_output` are the two halves of a step, so a test can read
the state between them as vLLM's recorder did.

Not modelled (single model, plain decoder): max_model_len, long_prefill_token_threshold,
the watermark (0 by default), speculative decoding, KV connectors, structured output,
and, with async scheduling, pipeline parallelism's decode stagger.

Time is not in here: the engine counts tokens. `run_timed` adds a step-time model given
by the caller (the budget simulation's is in pysim.sims.chunked_prefill).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, fields as dataclass_fields
from itertools import islice
from typing import Callable, Iterator

from pysim import fields
from pysim.config import ConfigError
from pysim.engine import vllm_defaults
from pysim.engine.blockpool import BlockPool, KVCacheManager
from pysim.engine.request_queue import create_request_queue
from pysim.timing.catalog import GPUS
from pysim.utils import cdiv

# Request states. WAITING covers new and preempted requests (vLLM: WAITING, PREEMPTED).
PENDING, WAITING, RUNNING, FINISHED = "pending", "waiting", "running", "finished"
# Kinds of work a request can get in a step.
DECODE, PREFILL = "decode", "prefill"
POLICIES = ("fcfs", "priority")


# `vllm serve`'s own choices on an H100, at the release the chapter follows.
SERVE = vllm_defaults.defaults(GPUS["H100"])


@dataclass(frozen=True)
class SchedulerConfig:
    """vLLM's scheduler knobs, in one place (vLLM: `SchedulerConfig`, vllm/config/scheduler.py).

    Whatever stands for "what vLLM does" takes this whole: the lab's and the cluster's
    configs inherit its fields (so each knob is a setting of theirs, with its label from
    pysim.fields), the benchmark replay's `fit.ServerSetup` holds one, and
    `replay.engine_config` hands every field to the engine, whose `EngineConfig` inherits
    them too. A knob added here reaches the lab, the cluster, the benchmark replay and
    calibration with no other edit (tests/unit/test_knobs.py checks each one does).
    Its defaults are `vllm serve`'s on an H100 (pysim.engine.vllm_defaults).
    """

    max_num_seqs: int = fields.max_num_seqs(SERVE.max_num_seqs, 16, 1024, scale="log")
    max_num_batched_tokens: int = fields.max_num_batched_tokens(SERVE.max_num_batched_tokens, 512,
                                                                16384, scale="log")
    async_scheduling: bool = fields.async_scheduling(SERVE.async_scheduling)

    def check(self) -> None:
        """vLLM's SchedulerConfig refuses a budget below max_num_seqs."""
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ConfigError("max_num_batched_tokens",
                              f"got {self.max_num_batched_tokens:,}, below max_num_seqs "
                              f"({self.max_num_seqs:,}); vLLM needs at least max_num_seqs")

    def scheduler(self) -> SchedulerConfig:
        """Just the scheduler's knobs, of this config or of one that inherits them."""
        return SchedulerConfig(**{f.name: getattr(self, f.name) for f in dataclass_fields(SchedulerConfig)})


# Where the widgets show the knobs: every one of them, in one group (pysim.config.describe).
SchedulerConfig.GROUP = ("Scheduler", tuple(f.name for f in dataclass_fields(SchedulerConfig)))


@dataclass(frozen=True)
class EngineConfig(SchedulerConfig):
    """Everything the engine is built from: the scheduler's knobs (with the engine's own
    defaults, small ones for teaching) and the KV pool's, named after vLLM's flags."""

    max_num_seqs: int = 128  # most requests RUNNING at once
    max_num_batched_tokens: int = 2048  # the per-step token budget
    num_gpu_blocks: int = 4096  # KV pool size, vLLM's null block included: 4095 usable
    block_size: int = 16
    enable_prefix_caching: bool = False  # prefix caching
    enable_chunked_prefill: bool = True
    policy: str = "fcfs"  # or "priority": lower value first, then arrival
    # vLLM's --async-scheduling: step k + 1 is scheduled while step k runs, so it sees
    # step k's samples, finishes and freed blocks one step late (the `AsyncScheduler`;
    # see the module docstring). Off here by default: the teaching widgets step the
    # synchronous loop, whose steps a reader can follow one at a time.
    async_scheduling: bool = False

    def __post_init__(self):
        for name in ("max_num_batched_tokens", "max_num_seqs", "num_gpu_blocks", "block_size"):
            value = getattr(self, name)
            least = 2 if name == "num_gpu_blocks" else 1  # the null block and one more
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} must be a whole number >= {least}, got {value!r}")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        if not isinstance(self.async_scheduling, bool):
            raise ValueError(f"async_scheduling must be true or false, got {self.async_scheduling!r}")


class Request:
    """One request's scheduling state. Read its fields; only the engine changes them."""

    __slots__ = (
        "id", "seq", "arrival", "priority", "num_prompt_tokens", "max_tokens", "token_ids", "block_hashes",
        "external_tokens",
        "num_tokens", "num_computed", "num_output", "status", "limit",
        "num_preemptions", "recomputed_tokens", "cached_tokens",
        "prefilled", "first_token_step", "finish_step", "decode_part",
        "placeholders", "in_flight", "stale", "tally",
    )

    def __init__(self, req_id, seq, arrival, priority, num_prompt_tokens, max_tokens, token_ids):
        self.id = req_id
        self.seq = seq  # add order: breaks every tie, as vLLM's arrival timestamps do
        self.arrival = arrival
        self.priority = priority
        self.num_prompt_tokens = num_prompt_tokens
        self.max_tokens = max_tokens  # answer length: finished after this many samples
        self.token_ids = token_ids  # prompt + sampled tokens; None when caching is off
        self.block_hashes = ()  # the prompt's full-block hashes, if known (vLLM: `Request.block_hashes`)
        self.external_tokens = 0  # leading tokens whose KV another replica computed and sent
        self.num_tokens = num_prompt_tokens  # prompt + tokens sampled so far
        self.num_computed = 0  # tokens whose KV is in the cache
        self.num_output = 0  # tokens sampled so far
        self.status = PENDING
        # The engine asks the KV manager for blocks only when num_computed + n passes
        # `limit`: the slots its table holds (with caching, the next full block too).
        self.limit = 0
        self.num_preemptions = 0
        self.recomputed_tokens = 0  # computed tokens thrown away by preemptions
        self.cached_tokens = 0  # tokens prefix-cache hits saved, over all admissions
        self.prefilled = False  # prompt computed before the first step (already streaming)
        self.first_token_step = None  # step that sampled its first token (-1: before step 0)
        self.finish_step = None
        self.decode_part = (req_id, DECODE, 1)  # its entry in a step's parts when it decodes (made once)
        # Async scheduling only (vLLM: `Request.num_output_placeholders`,
        # `num_in_flight_tokens`, `num_stale_output_tokens`): tokens a batch still in
        # flight will sample, tokens scheduled in batches not yet back, and of those the
        # ones scheduled before a preemption, whose sample arrives "stale".
        self.placeholders = 0
        self.in_flight = 0
        self.stale = 0
        # A policy's count of what its tenant was served (pysim.policy.api.Tally), or None:
        # the engine adds to it as it hands out and samples tokens.
        self.tally = None

    @property
    def served_tokens(self) -> int:
        """Tokens scheduled for it, over all steps: what it holds computed now, plus what
        preemptions threw away, minus what it never computed (prefix-cache hits, and
        the prompt of a request that started prefilled)."""
        unserved = self.cached_tokens + (self.num_prompt_tokens if self.prefilled else 0)
        return self.num_computed + self.recomputed_tokens - unserved

    def __repr__(self):
        return (f"Request({self.id!r}, {self.status}, computed {self.num_computed}/"
                f"{self.num_tokens}, out {self.num_output}/{self.max_tokens})")


class StepResult:
    """What one step did. `parts` is the batch, in the order the tokens were handed out."""

    __slots__ = (
        "index", "parts", "decode_tokens", "prefill_tokens", "sampled", "finished",
        "preempted", "admitted", "arrived", "num_requests_running", "num_requests_waiting", "num_free_blocks",
        "context_tokens", "attention_pairs",
    )

    def __init__(self, index):
        self.index = index
        self.parts: list[tuple] = []  # (request id, DECODE | PREFILL, tokens)
        self.decode_tokens = 0  # = number of decoding requests (1 token each)
        self.prefill_tokens = 0  # prompt (or recompute) tokens, all chunks together
        # KV entries the step's attention read: each scheduled request's whole context,
        # its tokens cached before the step plus the step's own (num_computed after it).
        self.context_tokens = 0
        # Query-key pairs the step's attention computed: a decode's one query meets its
        # whole context; a chunk of n prompt tokens ending at context c meets
        # n x c - n (n - 1) / 2 (each token sees the ones before it, causal masking).
        self.attention_pairs = 0
        self.sampled: list = []  # ids that got a new token this step, in batch order
        self.finished: list = []  # ids that finished (and freed their blocks)
        self.preempted: list = []  # ids preempted, in the order it happened
        self.admitted: list = []  # ids moved from waiting to running (new or resumed)
        self.arrived: list = []  # ids that entered the waiting queue at this step's start
        self.num_requests_running = 0  # after the step
        self.num_requests_waiting = 0
        self.num_free_blocks = 0

    @property
    def num_tokens(self) -> int:
        return self.decode_tokens + self.prefill_tokens

    def __repr__(self):
        return f"StepResult({self.index}, parts={self.parts}, preempted={self.preempted})"


class Engine:
    """vLLM V1's synchronous scheduler loop over a `BlockPool` (see the module docstring).

    Use: `add_request(...)` any number of times, then `step(now)` until
    `has_unfinished()` is false; or let `run_timed` drive it with a step-time model.
    """

    def __init__(self, config: EngineConfig = EngineConfig(), policy=None):
        """`policy`: a scheduling policy written as code (pysim.policy.api.Policy), which
        then orders the waiting queue and picks victims instead of `config.policy`."""
        self.config = config
        self.pool = BlockPool(config.num_gpu_blocks, config.block_size, config.enable_prefix_caching)
        self.kv = KVCacheManager(self.pool)
        self.requests: dict = {}  # every request ever added, by id
        self.running: list[Request] = []  # admission order
        self.waiting = create_request_queue(config.policy, policy, self)  # knows FCFS vs PRIORITY (or the policy's code)
        # request id -> its tenant's Tally, when a policy reads what tenants were served
        self.tally_of = getattr(self.waiting, "tally_of", None)
        self._pending: list = []  # heap of (arrival, seq, request) not yet arrived
        self.num_steps = 0  # forward passes done: batches applied, empty ones aside
        self.next_index = 0  # the next batch's index (with async, empty batches take one too)
        self.num_unfinished = 0
        self.num_preemptions = 0
        # vLLM's prefix-cache counters, in tokens: the prompts first admissions looked
        # up, and what they found cached (vllm/v1/core/kv_cache_manager.py,
        # `record_prefix_cache_stats`: a preempted request's return is kept apart).
        self.prefix_cache_queries = 0
        self.prefix_cache_hits = 0
        # Batches scheduled and not yet applied, oldest first: (result, [(request,
        # tokens)], tokens in all). The synchronous loop holds at most one; the async
        # one two, as vLLM's batch queue (`EngineCore.step_with_batch_queue`).
        self._inflight: deque = deque()

    # --- adding work -------------------------------------------------------------
    def add_request(self, req_id, num_prompt_tokens: int, max_tokens: int, *, arrival=0,
                    priority: int = 0, token_ids=None, block_hashes=(),
                    external_tokens: int = 0, prefilled: bool = False) -> Request:
        """Queue a request that enters `waiting` at the first step starting at or after `arrival`.

        `token_ids` (the prompt's ids) matter only with prefix caching, where a request
        without them gets ids no other request shares. They are copied (`copy()` if they
        have it, else `list()`): the engine appends the tokens it samples. `block_hashes`,
        the hashes of the prompt's full blocks if the caller knows them, spare hashing
        them (pysim.traffic.traces.PromptTokens). `external_tokens`: the first tokens' KV was
        computed elsewhere and arrives with the request, as a disaggregated decode
        replica gets it through vLLM's KV connector (`num_external_computed_tokens`):
        admission writes it into new blocks instead of computing it, once; a preempted
        request recomputes it. `prefilled=True` puts it straight
        into `running` with its prompt computed and its first token sampled before
        step 0 (a user already streaming when the simulation starts): its first step
        is a decode.
        """
        cfg = self.config
        if req_id in self.requests:
            raise ValueError(f"request id {req_id!r} added twice")
        if num_prompt_tokens < 1 or max_tokens < 1 + prefilled:
            raise ValueError(f"request {req_id!r}: needs at least 1 prompt token and "
                             f"{1 + prefilled} output tokens")
        # The longest sequence it ever holds KV for is prompt + answer - 1 tokens.
        longest = num_prompt_tokens + max_tokens - 1
        if cdiv(longest, cfg.block_size) > cfg.num_gpu_blocks - 1:
            raise ValueError(f"request {req_id!r} needs {cdiv(longest, cfg.block_size)} blocks "
                             f"at its longest; the pool has {cfg.num_gpu_blocks - 1} usable "
                             f"(block 0 is vLLM's null block)")
        if not cfg.enable_chunked_prefill and longest > cfg.max_num_batched_tokens:
            # vLLM refuses max_num_batched_tokens < max_model_len without chunking
            # (`SchedulerConfig._verify_args`, vllm/config/scheduler.py):
            # otherwise a resumed request could never be prefilled in one step.
            raise ValueError(f"request {req_id!r} has {longest} tokens at its longest, more than "
                             f"the budget {cfg.max_num_batched_tokens}, and chunked prefill is off")
        seq = len(self.requests)
        if cfg.enable_prefix_caching:
            if token_ids is None:
                token_ids = [-(seq + 1)] * num_prompt_tokens
            else:
                token_ids = token_ids.copy() if hasattr(token_ids, "copy") else list(token_ids)
            if len(token_ids) != num_prompt_tokens:
                raise ValueError(f"request {req_id!r}: {len(token_ids)} token ids for {num_prompt_tokens} tokens")
        else:
            token_ids = None  # nothing is hashed: no need to carry ids
        r = Request(req_id, seq, arrival, priority, num_prompt_tokens, max_tokens, token_ids)
        if self.tally_of is not None:
            r.tally = self.tally_of(req_id)
        assert 0 <= external_tokens < num_prompt_tokens, "the last prompt token is computed here"
        r.external_tokens = external_tokens
        if cfg.enable_prefix_caching and block_hashes:
            assert len(block_hashes) <= num_prompt_tokens // cfg.block_size
            r.block_hashes = block_hashes
        if prefilled:
            self._start_prefilled(r)  # may refuse it: register it only once accepted
        else:
            heapq.heappush(self._pending, (arrival, seq, r))
        self.requests[req_id] = r
        self.num_unfinished += 1
        return r

    def _start_prefilled(self, r: Request) -> None:
        if self.num_steps or len(self.running) >= self.config.max_num_seqs:
            raise ValueError(f"request {r.id!r}: prefilled requests are added before step 0, "
                             f"at most max_num_seqs of them")
        if not self.kv.allocate_slots(r.id, r.token_ids, r.num_prompt_tokens):
            raise ValueError(f"request {r.id!r}: the pool cannot hold its prompt")
        r.status = RUNNING
        r.prefilled = True
        r.num_computed = r.num_prompt_tokens
        r.first_token_step = -1
        self._set_limit(r)
        self.running.append(r)
        self._sample(r, -1)
        assert r.status == RUNNING, "a prefilled request needs max_tokens >= 2"

    # --- reading -----------------------------------------------------------------
    def has_unfinished(self) -> bool:
        return self.num_unfinished > 0

    def is_idle(self) -> bool:
        """Nothing running or waiting (requests may still be pending arrival)."""
        return not self.running and not self.waiting

    def next_arrival(self):
        """Arrival time of the earliest request not yet arrived, or None."""
        return self._pending[0][0] if self._pending else None

    def running_ids(self) -> list:
        return [r.id for r in self.running]

    def waiting_ids(self) -> list:
        """Waiting requests in the order they would be admitted."""
        return [r.id for r in self.waiting]

    def scheduled(self) -> dict:
        """{request id: tokens} of the batch the last `schedule` made, in scheduling order
        (running requests first, then admissions), until `update_from_output`."""
        return {r.id: n for r, n in self._inflight[-1][1]} if self._inflight else {}

    def oldest_finishes_any(self) -> bool:
        """Async: will applying the oldest batch's outputs finish some request?"""
        _, batch, _, samples = self._inflight[0]
        return any(s and r.num_output + 1 >= r.max_tokens for (r, _), s in zip(batch, samples))

    def oldest_inflight(self) -> StepResult:
        """The batch whose outputs `update_from_output` takes next."""
        return self._inflight[0][0]

    def num_inflight(self) -> int:
        """Batches scheduled whose outputs are not applied yet (0 or 1; 2 with async)."""
        return len(self._inflight)

    def snapshot(self) -> dict:
        """The scheduler's visible state, for comparing another scheduler step by step."""
        return {
            "step": self.num_steps,
            "running": self.running_ids(),
            "waiting": self.waiting_ids(),
            "computed": {r.id: r.num_computed for r in self.running},
            "free_blocks": self.pool.num_free_blocks,
        }

    def check_invariants(self) -> None:
        """Assert the engine's and the pool's state are consistent (tests; O(all requests))."""
        cfg = self.config
        waiting = list(self.waiting)
        running_ids = {id(r) for r in self.running}
        assert len(running_ids) == len(self.running) <= cfg.max_num_seqs
        assert not running_ids & {id(r) for r in waiting}, "a request both waiting and running"
        tables = self.kv.tables()
        for r in self.running:
            assert r.status == RUNNING
            assert len(tables.get(r.id, ())) * cfg.block_size >= r.num_computed
            assert r.num_tokens == r.num_prompt_tokens + r.num_output
            # Sync: computed trails the known tokens. Async: it may also cover the
            # positions of tokens still in flight (placeholders).
            assert r.num_computed < r.num_tokens + r.placeholders
            assert r.num_output + r.placeholders <= r.max_tokens
            assert 0 <= r.placeholders <= len(self._inflight) and r.in_flight >= r.stale >= 0
        for r in waiting:
            assert r.status == WAITING and r.num_computed == 0 and not tables.get(r.id)
            assert r.placeholders == 0
        unfinished = 0
        for r in self.requests.values():
            assert r.status in (PENDING, WAITING, RUNNING, FINISHED)
            unfinished += r.status != FINISHED
            if r.status == FINISHED:
                assert r.num_output == r.max_tokens and r.id not in tables
        assert unfinished == self.num_unfinished
        assert set(tables) <= {r.id for r in self.running}
        self.pool.check_invariants(tables.values())

    # --- one step ----------------------------------------------------------------
    def step(self, now=math.inf) -> StepResult:
        """Admit arrivals up to `now`, schedule one batch, apply its outputs (vLLM:
        `EngineCore.step`, which calls `schedule` and then `update_from_output`)."""
        return self.update_from_output(self.schedule(now))

    def schedule(self, now=math.inf) -> StepResult:
        """The first half of a step, vLLM's `Scheduler.schedule()`: arrivals, then the
        batch, with its blocks allocated. Nothing is computed or sampled yet; call
        `update_from_output` with the result to finish the step."""
        cfg = self.config
        assert len(self._inflight) < 1 + cfg.async_scheduling, "schedule() with the batch queue full"
        result = StepResult(self.next_index)
        self.next_index += 1
        self.waiting.on_schedule(now)  # a policy's keys may depend on the time
        self._arrive(now, result)
        budget = cfg.max_num_batched_tokens
        running = self.running
        batch: list[tuple[Request, int]] = []  # (request, tokens), in scheduling order

        # 1. RUNNING, in admission order (vLLM: `Scheduler.schedule`).
        i, end = 0, len(running)
        while i < end and budget > 0:
            r = running[i]
            c = r.num_computed
            ph = r.placeholders  # always 0 in the synchronous loop
            if ph and c + 2 - ph >= r.num_prompt_tokens + r.max_tokens:
                # Async: the batch in flight samples its last token; scheduling it
                # again would compute a token nobody reads (vLLM skips it too).
                i += 1
                continue
            n = r.num_tokens + ph - c  # with async, the in-flight token's position too
            if n > budget:
                n = budget  # chunked prefill: the rest waits for the next step
            if c + n > r.limit:  # crosses into a block it does not hold yet
                if self.kv.allocate_slots(r.id, r.token_ids, c + n, (), r.block_hashes):
                    self._set_limit(r)
                else:
                    # Preempts newer requests until r fits, or r itself; then `i` is
                    # the next request to look at.
                    i, budget = self._preempt_for(r, n, i, budget, batch, result)
                    end = len(running)  # the victims have left it
                    continue
            batch.append((r, n))
            budget -= n
            i += 1

        # 2. WAITING head, only in a step without preemption (vLLM: `Scheduler.schedule`).
        if not result.preempted:
            budget = self._admit(budget, batch, result)

        assert budget >= 0
        tokens = cfg.max_num_batched_tokens - budget
        samples = self._after_schedule(batch, tokens, result) if cfg.async_scheduling else None
        self._inflight.append((result, batch, tokens, samples))
        return result

    def update_from_output(self, result: StepResult) -> StepResult:
        """The second half, vLLM's `update_from_output()`: advance computed tokens,
        sample, finish and free."""
        assert self._inflight, "update_from_output without a schedule"
        oldest, batch, tokens, samples = self._inflight.popleft()
        assert oldest is result, "outputs are applied in the order the batches were scheduled"
        if samples is not None:
            self._apply_async(batch, samples, result)
        else:
            self._apply(batch, tokens, result)
        self.num_steps += bool(batch)  # an empty batch (async: nothing to schedule ahead) is no pass
        result.num_requests_running = len(self.running)
        result.num_requests_waiting = len(self.waiting)
        result.num_free_blocks = self.pool.num_free_blocks
        return result

    def _arrive(self, now, result: StepResult) -> None:
        pending = self._pending
        while pending and pending[0][0] <= now:
            _, seq, r = heapq.heappop(pending)
            r.status = WAITING
            self.waiting.add_request(r)
            result.arrived.append(r.id)

    def _preempt_for(self, r: Request, n: int, i: int, budget: int, batch, result):
        """Free blocks for running request `r` by preempting others, then schedule it.

        Returns the new (index, budget): where the running loop goes on.
        """
        running = self.running
        while True:
            victim = self.waiting.preemption_victim(running)
            k = running.index(victim)
            del running[k]
            if k < i:
                i -= 1
            for pair in batch:
                if pair[0] is victim:
                    # Already scheduled this step (PRIORITY can pick an older request):
                    # give its tokens back.
                    batch.remove(pair)
                    budget += pair[1]
                    break
            self._preempt(victim, result)
            if victim is r:
                # Nothing left to free for it; the loop moves on to the request `i` now
                # points at (vLLM 0.33). Under FCFS r was the newest, so none is left.
                return i, budget
            if self.kv.allocate_slots(r.id, r.token_ids, r.num_computed + n, (), r.block_hashes):
                break
        self._set_limit(r)
        batch.append((r, n))
        return i + 1, budget - n

    def _preempt(self, r: Request, result: StepResult) -> None:
        """Recompute preemption: drop its KV, send it back to the front of the queue."""
        self.kv.free(r.id)
        r.status = WAITING
        r.recomputed_tokens += r.num_computed
        r.num_computed = 0
        r.limit = 0
        # Async: what its batches in flight sample still arrives, as stale output
        # (vLLM: `Scheduler._preempt_request`), and it is not re-admitted before then.
        r.stale = r.in_flight
        r.placeholders = 0
        r.num_preemptions += 1
        self.num_preemptions += 1
        self.waiting.prepend_request(r)
        result.preempted.append(r.id)

    def _admit(self, budget: int, batch, result: StepResult) -> int:
        """Admit waiting requests from the head while they fit (vLLM: `Scheduler.schedule`). Returns the budget."""
        cfg = self.config
        waiting, running, kv = self.waiting, self.running, self.kv
        skipped = []
        while waiting and budget > 0 and len(running) < cfg.max_num_seqs:
            r = waiting.peek_request()
            if r.stale:
                # Async: a preempted request whose last batch is still in flight waits
                # for that output; the requests behind it are still tried (vLLM:
                # `skip_request`, then `prepend_requests`), no head-of-line block.
                skipped.append(waiting.pop_request())
                continue
            hits, hit = kv.lookup(r.token_ids, r.block_hashes) if cfg.enable_prefix_caching else ((), 0)
            ready = max(hit, r.external_tokens)  # KV it need not compute: cached, or sent to it
            n = r.num_tokens - ready  # cache hits and sent KV cost no budget
            if n > budget:
                if not cfg.enable_chunked_prefill:
                    break  # the whole prompt must fit in this step
                n = budget
            # Full-sequence gate: room for everything it holds now, not just this chunk.
            if kv.blocks_needed(r.id, r.num_tokens, hits) > self.pool.num_free_blocks:
                break  # head-of-line blocking: nobody behind it is tried
            ok = kv.allocate_slots(r.id, r.token_ids, ready + n, hits, r.block_hashes)
            assert ok
            waiting.pop_request()
            r.status = RUNNING
            r.num_computed = ready
            if r.tally is not None:
                r.tally.served += ready - hit  # sent KV is served; cached is not (`served_tokens`)
            r.external_tokens = 0  # a preemption drops the sent KV: it would be recomputed
            r.cached_tokens += hit
            if not r.num_preemptions:  # vLLM counts a request's first admission only
                self.prefix_cache_queries += r.num_tokens
                self.prefix_cache_hits += hit
            self._set_limit(r)
            running.append(r)
            batch.append((r, n))
            budget -= n
            result.admitted.append(r.id)
        for r in reversed(skipped):  # back to the front, in the order they were in
            waiting.prepend_request(r)
        return budget

    def _set_limit(self, r: Request) -> None:
        """Tokens its table covers before the KV manager must be asked again."""
        bs = self.config.block_size
        slots = self.kv.num_blocks(r.id) * bs
        if self.config.enable_prefix_caching:
            # Ask again when the next block becomes full, so it is cached on schedule (vLLM: `BlockPool.cache_full_blocks`).
            slots = min(slots, (self.kv.num_cached_blocks(r.id) + 1) * bs - 1)
        r.limit = slots

    def _apply(self, batch, num_tokens: int, result: StepResult) -> None:
        """The forward pass ran: advance each scheduled request; those that caught up sample."""
        # The batch is the running requests (in admission order), then this step's
        # admissions, which are all prefill.
        num_running = len(batch) - len(result.admitted)
        parts, sampled, finished = result.parts, result.sampled, result.finished
        caching = self.config.enable_prefix_caching  # then every sample extends token_ids
        context = 0
        for r, n in islice(batch, num_running):
            c = r.num_computed = r.num_computed + n
            context += c
            tally = r.tally
            if tally is not None:
                tally.served += n
            if n == 1 and c == r.num_tokens and r.num_output:
                # A decode: a running request computed the one token it sampled last
                # step, and samples the next.
                parts.append(r.decode_part)
                sampled.append(r.id)
                out = r.num_output + 1
                if caching or out >= r.max_tokens:
                    if self._sample(r, result.index):
                        finished.append(r.id)
                else:  # the common case: `_sample` without its rarer branches
                    r.num_output = out
                    r.num_tokens = c + 1
                    if tally is not None:
                        tally.output += 1
            else:
                self._prefilled(r, n, result)
        for r, n in islice(batch, num_running, None):
            r.num_computed += n
            context += r.num_computed
            if r.tally is not None:
                r.tally.served += n
            self._prefilled(r, n, result)
        result.decode_tokens = num_tokens - result.prefill_tokens  # one token per decode
        result.context_tokens = context
        result.attention_pairs += context  # each request's last token sees its whole context
        self._drop_finished(finished)

    def _after_schedule(self, batch, tokens: int, result: StepResult) -> list:
        """Async only, at schedule time (vLLM: `AsyncScheduler._update_after_schedule`):
        computed tokens advance now, so the next schedule, made while this batch runs,
        hands out the tokens after them; a request whose prefill this batch completes
        gets a placeholder for the token it will sample. The step's shape (its parts,
        context and attention work) is known now, so a step-time model can price it
        before its outputs are back."""
        parts = result.parts
        prefill = context = pairs = 0
        samples = []  # per entry: does this batch complete its prefill (and so sample)?
        add_part, add_sample = parts.append, samples.append
        for r, n in batch:
            c = r.num_computed = r.num_computed + n
            r.in_flight += n
            if r.tally is not None:
                r.tally.served += n
            context += c
            known = r.num_tokens + r.placeholders  # tokens sampled, or being sampled
            if c >= known:  # the prefill is complete: it samples
                r.placeholders += 1
                if n == 1 and r.num_output + r.placeholders > 1:
                    add_part(r.decode_part)  # the token it sampled, or will have, last
                    add_sample(True)
                    continue
                add_sample(True)
            else:
                add_sample(False)
            add_part((r.id, PREFILL, n))
            prefill += n
            pairs += (n - 1) * c - n * (n - 1) // 2
        result.prefill_tokens = prefill
        result.decode_tokens = tokens - prefill
        result.context_tokens = context
        result.attention_pairs = pairs + context
        return samples

    def _apply_async(self, batch, samples: list, result: StepResult) -> None:
        """Async only: the outputs of `batch` are back (vLLM: `update_from_output`).
        Each request the batch completed samples its token; one that reaches its
        answer length finishes and frees its blocks now, a step after the schedule
        that already ran without it. A request preempted while the batch was in
        flight still takes the token (stale output), waiting; it may even finish."""
        sampled, finished, index = result.sampled, result.finished, result.index
        kv, bs = self.kv, self.config.block_size
        for (r, n), samples_one in zip(batch, samples):
            r.in_flight -= n
            if r.stale:
                r.stale -= n  # scheduled before its preemption: no placeholder left to settle
                if samples_one and r.status == WAITING:
                    sampled.append(r.id)
                    if self._sample(r, index):
                        finished.append(r.id)
                        self.waiting.remove_request(r)
            elif samples_one:
                r.placeholders -= 1
                sampled.append(r.id)
                out = r.num_output + 1
                cache_to = r.num_computed - r.in_flight
                ids = r.token_ids
                if out < r.max_tokens and r.first_token_step is not None and (
                        ids is None or cache_to // bs <= kv.num_cached_blocks(r.id)):
                    # The common case, `_sample` without its rarer branches: not finished,
                    # not its first token, and no block newly full to cache.
                    r.num_output = out
                    r.num_tokens += 1
                    if ids is not None:
                        ids.append(-(r.seq + 1))  # as `_sample` does
                    if r.tally is not None:
                        r.tally.output += 1
                    continue
                # The token is known now: the blocks it fills are cached.
                if self._sample(r, index, cache_to):
                    finished.append(r.id)
                    self.running.remove(r)

    def _prefilled(self, r: Request, n: int, result: StepResult) -> None:
        """Part of `_apply`: r computed n tokens of prefill (its `num_computed` includes
        them). Prefill is a prompt chunk, or, after a preemption, recomputing prompt +
        answer, which an admission always is. The last chunk samples a token: the
        request's first, or its next after a recompute."""
        result.parts.append((r.id, PREFILL, n))
        result.prefill_tokens += n
        # The chunk's earlier tokens see fewer keys than its last (counted in `_apply`).
        result.attention_pairs += (n - 1) * r.num_computed - n * (n - 1) // 2
        if r.num_computed == r.num_tokens:
            result.sampled.append(r.id)
            if self._sample(r, result.index):
                result.finished.append(r.id)

    def _drop_finished(self, ids: list) -> None:
        """Take finished requests out of `running`, keeping its order. Few finish in a
        step, so removing each (a scan in C) beats rebuilding the list in Python."""
        requests, running = self.requests, self.running
        for rid in ids:
            running.remove(requests[rid])

    def _sample(self, r: Request, index: int, cache_to: int = 0) -> bool:
        """Append one sampled token; finish the request if it has them all. True if finished.

        `cache_to` (async): first cache the request's full blocks within that many
        tokens, now that the token is known (vLLM: `cache_blocks` in
        `update_from_output`, before a finished request's blocks are freed)."""
        r.num_output += 1
        r.num_tokens += 1
        if r.tally is not None:
            r.tally.output += 1
            r.tally.first += r.num_output == 1
        if r.token_ids is not None:
            r.token_ids.append(-(r.seq + 1))  # a made-up id only this request produces
            if cache_to:
                self.kv.allocate_slots(r.id, r.token_ids, cache_to, (), r.block_hashes)
                self._set_limit(r)
        if r.first_token_step is None:
            r.first_token_step = index
        if r.num_output < r.max_tokens:
            return False
        r.status = FINISHED
        r.finish_step = index
        self.kv.free(r.id)  # same step (vLLM: `Scheduler.update_from_output`): the blocks are free for the next schedule
        self.num_unfinished -= 1
        return True


def run_timed(engine: Engine, step_time: Callable[[StepResult], float], *, start=0,
              max_steps: int = 10_000_000) -> Iterator[tuple[StepResult, float, float]]:
    """Drive `engine` to the end, yielding (result, start time, duration) for each step.

    Time is whatever unit `step_time` and the arrivals use. A step admits the requests
    that arrived at or before its start; one arriving while a step runs waits for the
    next (as a real server, which batches only what it has when a step starts). When nothing is running or waiting, time jumps to the
    next arrival.
    """
    now = start
    ahead = None  # async: the batch scheduled while the previous one ran
    while engine.has_unfinished():
        if engine.num_steps >= max_steps:
            raise RuntimeError(f"still running after {max_steps} steps")
        if ahead is None:
            if engine.is_idle():
                nxt = engine.next_arrival()
                assert nxt is not None, "unfinished requests but nothing pending, waiting or running"
                if nxt > now:
                    now = nxt
            result = engine.schedule(now)
        else:
            result, ahead = ahead, None
        if engine.config.async_scheduling and (engine.running or engine.waiting):
            # The next batch is scheduled as this one starts, from what the engine
            # knows then: arrivals up to now, and none of this batch's outputs.
            ahead = engine.schedule(now)
        engine.update_from_output(result)
        if ahead is not None and not ahead.parts:
            # Nothing could be scheduled ahead (every running request's last token is
            # in flight): the empty batch returns at once, and the next is scheduled
            # after this one's outputs, as vLLM's batch queue does.
            engine.update_from_output(ahead)
            ahead = None
        assert result.parts, "a step with work to do scheduled nothing"
        duration = step_time(result)
        yield result, now, duration
        now += duration
