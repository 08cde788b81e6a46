"""Drive vLLM's own scheduler code on recorded workloads; run by tools/record_vllm.py.

This module is executed by the Python of a throwaway venv that has vLLM installed
(`python tools/vllm_recorder.py CASES_IN RECORDS_OUT`). It reads the cases that
record_vllm.py generated (JSON lines: kind, id, seed, config, requests or actions),
runs each one through vLLM's real `Scheduler` / `AsyncScheduler` / `KVCacheManager` /
`BlockPool`, and writes one JSON line per case with what vLLM did.

Only the model is mocked: the "model" samples one token per request whose prefill is
complete in a batch, with made-up token ids. Every scheduling and block decision is
vLLM's.

The two driving loops (`drive_sync`, `drive_async`) do not import vLLM: they talk to
any object with vLLM's scheduler method names (`has_requests`, `schedule`,
`update_from_output`) through a small `Hooks` object, so that tests/build can check
the order of the calls with a fake scheduler, without vLLM installed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from collections import deque

# A run that needs more clock ticks than this is a bug in the loop, not a long case.
MAX_TICKS = 200_000
# The batch queue that `--async-scheduling` gives EngineCore: two batches in flight.
ASYNC_BATCH_QUEUE_SIZE = 2


def sampled_token_id(position: int, k: int) -> int:
    """The mocked model's k-th sampled token for the request at `position` in the case's
    request list. Above every prompt id (< 100000) and distinct between requests."""
    return 100000 + 1000 * position + k


def word_id(word: str) -> int:
    """The KV recordings' token id of a word: the first 4 bytes of its SHA-256."""
    return int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:4], "big")


# ----------------------------------------------------------------------------------
# The driving loops (no vLLM here)
# ----------------------------------------------------------------------------------

class Hooks:
    """What a loop needs besides the scheduler. The vLLM adapter below fills these in;
    the tests use a fake. `batch` is whatever `after_schedule` returns for a batch."""

    def add_arrivals(self, clock: int) -> None:
        """Add the requests that arrive at this clock tick (`add_request`)."""

    def arrivals_left(self, clock: int) -> bool:
        """True while some request arrives after `clock`."""
        return False

    def before_schedule(self) -> None:
        """Called right before each `schedule()` (to note who is running/waiting)."""

    def after_schedule(self, out, clock: int):
        """Called right after each `schedule()`; returns this batch's bookkeeping."""
        return None

    def model_output(self, out, batch):
        """The mocked model's output for a batch, built when the batch is collected."""
        return None

    def after_update(self, out, batch, clock: int) -> None:
        """Called right after `update_from_output()` of that batch."""


def _scheduled_any(out) -> bool:
    return getattr(out, "total_num_scheduled_tokens", 0) > 0


def drive_sync(scheduler, hooks: Hooks) -> int:
    """vLLM's synchronous engine step (`EngineCore.step`), once per clock tick:
    add the tick's arrivals; if the scheduler holds requests, schedule, run the mocked
    model and update. A tick where the scheduler holds nothing is idle. Stops once no
    request is left to arrive and the scheduler holds nothing. Returns the ticks run."""
    clock = 0
    while clock < MAX_TICKS:
        hooks.add_arrivals(clock)
        if not scheduler.has_requests():
            if not hooks.arrivals_left(clock):
                return clock
            clock += 1  # idle tick: waiting for the next arrival
            continue
        hooks.before_schedule()
        out = scheduler.schedule()
        batch = hooks.after_schedule(out, clock)
        scheduler.update_from_output(out, hooks.model_output(out, batch))
        hooks.after_update(out, batch, clock)
        clock += 1
    raise RuntimeError(f"the sync loop did not finish in {MAX_TICKS} ticks")


def drive_async(scheduler, hooks: Hooks, queue_size: int = ASYNC_BATCH_QUEUE_SIZE) -> int:
    """vLLM's `EngineCore.step_with_batch_queue`, once per clock tick.

    Each tick: add the tick's arrivals, then
    - if the scheduler holds requests: schedule a batch and push it on the queue, even
      an empty one (vLLM queues it too). If the queue is not full and the batch
      scheduled something or the scheduler still holds requests, the tick ends here:
      filling the queue comes before collecting results.
    - else, if the queue is empty, the tick is idle.
    - otherwise collect the OLDEST batch: build its model output and call
      `update_from_output` with it.
    Stops once no request is left to arrive, the scheduler holds nothing and the queue
    is empty. Returns the ticks run."""
    queue: deque = deque()  # newest on the left, oldest popped from the right, as vLLM
    clock = 0
    while clock < MAX_TICKS:
        hooks.add_arrivals(clock)
        if scheduler.has_requests():
            hooks.before_schedule()
            out = scheduler.schedule()
            batch = hooks.after_schedule(out, clock)
            queue.appendleft((out, batch))
            if len(queue) < queue_size and (_scheduled_any(out) or scheduler.has_requests()):
                clock += 1
                continue
        elif not queue:
            if not hooks.arrivals_left(clock):
                return clock
            clock += 1  # idle tick
            continue
        out, batch = queue.pop()
        scheduler.update_from_output(out, hooks.model_output(out, batch))
        hooks.after_update(out, batch, clock)
        clock += 1
    raise RuntimeError(f"the async loop did not finish in {MAX_TICKS} ticks")


# ----------------------------------------------------------------------------------
# vLLM's scheduler on a sched case
# ----------------------------------------------------------------------------------

def _vllm_config(c: dict, model_dir: str):
    """vLLM's config objects for a case, built as vLLM's tests build them (a
    SchedulerConfig, a CacheConfig, a ModelConfig for a tiny local model) and
    checked: the values vLLM ends up using must be the case's."""
    from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig

    model = ModelConfig(model=model_dir, skip_tokenizer_init=True, dtype="float32",
                        max_model_len=c["max_model_len"], seed=0)
    sched = SchedulerConfig(
        max_num_seqs=c["max_num_seqs"], max_num_batched_tokens=c["max_num_batched_tokens"],
        max_model_len=c["max_model_len"], is_encoder_decoder=False,
        enable_chunked_prefill=c["enable_chunked_prefill"], policy=c["policy"],
        long_prefill_token_threshold=0, watermark=0.0, scheduler_reserve_full_isl=True,
        async_scheduling=c["async_scheduling"])
    cache = CacheConfig(block_size=c["block_size"],
                        enable_prefix_caching=c["enable_prefix_caching"],
                        prefix_caching_hash_algo="sha256")
    # device="cpu" names the device instead of asking the platform to detect one.
    vllm_config = VllmConfig(model_config=model, scheduler_config=sched, cache_config=cache,
                             device_config=DeviceConfig(device="cpu"))
    vllm_config.cache_config.num_gpu_blocks = c["num_gpu_blocks"]
    return vllm_config


def build_scheduler(c: dict, model_dir: str):
    import torch
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.structured_output import StructuredOutputManager

    vllm_config = _vllm_config(c, model_dir)
    kv_cache_config = KVCacheConfig(
        num_blocks=c["num_gpu_blocks"], kv_cache_tensors=[],
        kv_cache_groups=[KVCacheGroupSpec(["layer"], FullAttentionSpec(
            block_size=c["block_size"], num_kv_heads=1, head_size=1, dtype=torch.float32))])
    cls = AsyncScheduler if c["async_scheduling"] else Scheduler
    scheduler = cls(vllm_config=vllm_config, kv_cache_config=kv_cache_config,
                    structured_output_manager=StructuredOutputManager(vllm_config),
                    block_size=c["block_size"], log_stats=False)
    # As EngineCore: requests get a block hasher only when prefix caching is on.
    hasher = None
    if c["enable_prefix_caching"]:
        fn = get_hash_fn_by_name(vllm_config.cache_config.prefix_caching_hash_algo)
        init_none_hash(fn)
        hasher = get_request_block_hasher(c["block_size"], fn)
    # The settings vLLM really uses must be the case's (a config default or a
    # platform rule could change them silently).
    sc = vllm_config.scheduler_config
    got = dict(block_size=scheduler.block_size, max_num_seqs=scheduler.max_num_running_reqs,
               max_num_batched_tokens=scheduler.max_num_scheduled_tokens,
               enable_chunked_prefill=sc.enable_chunked_prefill, policy=scheduler.policy.value,
               enable_prefix_caching=scheduler.kv_cache_manager.enable_caching,
               max_model_len=scheduler.max_model_len,
               num_gpu_blocks=scheduler.kv_cache_manager.block_pool.num_gpu_blocks,
               async_scheduling=bool(sc.async_scheduling))
    want = {k: c[k] for k in got}
    assert got == want, f"vLLM changed the config: {got} != {want}"
    assert sc.long_prefill_token_threshold == 0 and sc.watermark == 0
    assert sc.scheduler_reserve_full_isl
    if c["async_scheduling"]:
        assert vllm_config.max_concurrent_batches == ASYNC_BATCH_QUEUE_SIZE
    return scheduler, hasher


class VllmSchedHooks(Hooks):
    """Hooks that add a case's requests to vLLM's scheduler and record each batch."""

    def __init__(self, case: dict, scheduler, hasher):
        from vllm.sampling_params import SamplingParams
        from vllm.v1.request import Request, RequestStatus

        self.status = RequestStatus
        self.scheduler = scheduler
        self.steps: list[dict] = []
        self.finish_step: dict[str, int] = {}
        self.requests = {}  # id -> vLLM Request (kept after vLLM forgets finished ones)
        self.position = {}
        self.arrivals: dict[int, list] = {}
        for i, r in enumerate(case["requests"]):  # sorted by arrival_step
            params = SamplingParams(max_tokens=r["output_len"], ignore_eos=True, temperature=0.0)
            req = Request(request_id=r["id"], prompt_token_ids=list(r["prompt"]),
                          sampling_params=params, pooling_params=None,
                          arrival_time=r["arrival_step"] + 0.001 * i,
                          priority=r["priority"], block_hasher=hasher)
            self.requests[r["id"]] = req
            self.position[r["id"]] = i
            self.arrivals.setdefault(r["arrival_step"], []).append(req)
        self.last_arrival = max(self.arrivals)

    def add_arrivals(self, clock):
        for req in self.arrivals.get(clock, ()):
            self.scheduler.add_request(req)

    def arrivals_left(self, clock):
        return clock < self.last_arrival

    def before_schedule(self):
        self.was_running = {r.request_id for r in self.scheduler.running}

    def after_schedule(self, out, clock):
        kvm = self.scheduler.kv_cache_manager
        sched = dict(out.num_scheduled_tokens)  # vLLM's scheduling order
        # What vLLM decided for each request at schedule time: a request whose prefill
        # is still partial after this batch samples nothing from it.
        samples = {i: not self.requests[i].is_prefill_chunk for i in sched}
        if not sched:
            return {"record": None, "samples": samples}
        record = {"step": clock, "sched": sched}
        adm = {i: self.requests[i].num_computed_tokens - n for i, n in sched.items()
               if i not in self.was_running}
        if adm:  # admitted from the waiting queue: the prefix-cache hit is where it starts
            record["adm"] = adm
        pre = sorted(i for i in self.was_running
                     if self.requests[i].status == self.status.PREEMPTED)
        if pre:
            record["pre"] = pre
        record["tables"] = {i: list(kvm.get_block_ids(i)[0]) for i in sched}
        record["free"] = kvm.block_pool.get_num_free_blocks()
        self.steps.append(record)
        return {"record": record, "samples": samples}

    def model_output(self, out, batch):
        from vllm.v1.outputs import ModelRunnerOutput

        req_ids = list(out.num_scheduled_tokens)
        sampled = []
        for i in req_ids:
            k = len(self.requests[i].output_token_ids)  # tokens it has received so far
            sampled.append([sampled_token_id(self.position[i], k)] if batch["samples"][i] else [])
        self.unfinished = {i for i, r in self.requests.items() if not r.is_finished()}
        kwargs = dict(req_ids=req_ids, sampled_token_ids=sampled)
        if "req_id_to_index" in {f.name for f in dataclasses.fields(ModelRunnerOutput)}:
            kwargs["req_id_to_index"] = {i: n for n, i in enumerate(req_ids)}  # older vLLMs
        return ModelRunnerOutput(**kwargs)

    def after_update(self, out, batch, clock):
        fin = sorted(i for i in self.unfinished if self.requests[i].is_finished())
        record = batch["record"]
        if record is None:
            assert not fin, "a batch that scheduled nothing finished a request"
            return
        if fin:
            record["fin"] = fin
            for i in fin:
                self.finish_step[i] = record["step"]
        record["free_end"] = self.scheduler.kv_cache_manager.block_pool.get_num_free_blocks()
        if self.scheduler.vllm_config.scheduler_config.async_scheduling:
            record["upd"] = clock

    def summary(self):
        return {i: {"preemptions": r.num_preemptions, "finish_step": self.finish_step[i]}
                for i, r in self.requests.items()}


def record_sched(case: dict, model_dir: str) -> dict:
    scheduler, hasher = build_scheduler(case["config"], model_dir)
    hooks = VllmSchedHooks(case, scheduler, hasher)
    if case["config"]["async_scheduling"]:
        drive_async(scheduler, hooks)
    else:
        drive_sync(scheduler, hooks)
    unfinished = [i for i, r in hooks.requests.items() if not r.is_finished()]
    assert not unfinished, f"{case['id']}: never finished: {unfinished}"
    return dict(case, steps=hooks.steps, summary=hooks.summary())


# ----------------------------------------------------------------------------------
# vLLM's KVCacheManager on a kv case (the KV-cache widget's actions)
# ----------------------------------------------------------------------------------

class KVWidget:
    """The widget's actions (tests/data/fidelity/kv/README.md) as calls to vLLM's
    KVCacheManager, made the way vLLM's Scheduler makes them. The queues and the order
    of the calls are the widget's; every block decision is vLLM's."""

    def __init__(self, config: dict):
        import torch
        from vllm.sampling_params import SamplingParams
        from vllm.utils.hashing import get_hash_fn_by_name
        from vllm.v1.core.kv_cache_manager import KVCacheManager
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
        from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig,
                                                KVCacheGroupSpec)
        from vllm.v1.request import Request

        bs = config["block_size"]
        kv_cache_config = KVCacheConfig(
            num_blocks=config["num_blocks"], kv_cache_tensors=[],
            kv_cache_groups=[KVCacheGroupSpec(["layer"], FullAttentionSpec(
                block_size=bs, num_kv_heads=1, head_size=1, dtype=torch.float32))])
        self.kvm = KVCacheManager(kv_cache_config=kv_cache_config, max_model_len=4096,
                                  scheduler_block_size=bs, hash_block_size=bs,
                                  enable_caching=config["caching"])
        self.pool = self.kvm.block_pool
        assert self.pool.null_block.block_id == config["null_block"] == 0
        hasher = None
        if config["caching"]:
            fn = get_hash_fn_by_name("sha256")
            init_none_hash(fn)
            hasher = get_request_block_hasher(bs, fn)
        # The recordings' word ids are 32-bit unsigned; vLLM 0.34 keeps token ids in an
        # int32 array, where half of them do not fit. Ids only matter to vLLM through
        # equality (block hashes), so vLLM gets each distinct id's rank instead: equal
        # tokens stay equal, different ones stay different.
        ids = sorted({t for r in config["requests"] for t in r["prompt_ids"] + r["output_ids"]})
        self.vid = {t: n + 1 for n, t in enumerate(ids)}
        self.reqs = {}
        self.order = []
        for r in config["requests"]:
            name = r["name"]
            self.reqs[name] = Request(
                request_id=name, prompt_token_ids=[self.vid[t] for t in r["prompt_ids"]],
                sampling_params=SamplingParams(max_tokens=r["answer_tokens"], ignore_eos=True),
                pooling_params=None, arrival_time=float(len(self.order)), block_hasher=hasher)
            self.order.append(name)
        self.spec = {r["name"]: r for r in config["requests"]}
        self.status = {n: "waiting" for n in self.order}
        self.preemptions = {n: 0 for n in self.order}
        self.pending = {n: False for n in self.order}  # sampled a token without a KV slot
        self.waiting = deque(self.order)
        self.running: list[str] = []
        self.steps = 0
        self.last: dict = {}

    def note(self, kind, item):
        self.last.setdefault(kind, []).append(item)

    def try_admit(self, name: str, log_refusal: bool = True) -> bool:
        """vLLM's admission of a waiting request, whole sequence, no chunking."""
        req = self.reqs[name]
        found = self.kvm.get_computed_blocks(req)
        blocks, hit = found[0], found[1]
        num_tokens = req.num_tokens
        new = self.kvm.allocate_slots(req, num_tokens - hit, num_new_computed_tokens=hit,
                                      new_computed_blocks=blocks, full_sequence_must_fit=True,
                                      has_scheduled_reqs=bool(self.running))
        if new is None:
            if log_refusal:
                self.note("adm", [name, False, hit, num_tokens])
            return False
        self.note("adm", [name, True, hit, num_tokens])
        req.num_computed_tokens = num_tokens
        self.waiting.remove(name)
        self.running.append(name)
        self.status[name] = "running"
        self.pending[name] = False  # its prefill samples its first token at the next gen
        return True

    def preempt(self, victim: str, requester: str):
        self.kvm.free(self.reqs[victim])
        self.reqs[victim].num_computed_tokens = 0
        self.status[victim] = "preempted"
        self.preemptions[victim] += 1
        self.waiting.appendleft(victim)
        self.note("pre", [requester, victim, self.steps])

    def gen(self):
        self.steps += 1
        i = 0
        while i < len(self.running):
            name = self.running[i]
            req = self.reqs[name]
            if self.pending[name]:
                while self.kvm.allocate_slots(req, 1) is None:
                    victim = self.running.pop()  # the newest running request
                    self.preempt(victim, name)
                    if victim == name:
                        break
                if self.status[name] != "running":
                    break  # it preempted itself: the step ends
                req.num_computed_tokens += 1
            k = len(req.output_token_ids)
            req.append_output_token_ids(self.vid[self.spec[name]["output_ids"][k]])
            self.pending[name] = True
            i += 1
        for name in [n for n in self.running
                     if len(self.reqs[n].output_token_ids) == self.spec[n]["answer_tokens"]]:
            self.kvm.free(self.reqs[name])
            self.reqs[name].num_computed_tokens = 0
            self.running.remove(name)
            self.status[name] = "finished"
            self.note("fin", [name, self.steps])

    def run(self):
        limit = 100_000
        for _ in range(limit):
            if not self.waiting and not self.running:
                return
            if self.waiting and self.try_admit(self.waiting[0], log_refusal=False):
                self.note("prims", f"+{self.running[-1]}")
                continue
            assert self.running, "run: the head of the waiting queue can never fit"
            self.note("prims", "g")
            self.gen()
        raise RuntimeError("run did not finish")

    def apply(self, action: str):
        self.last = {}
        if action == "gen":
            if self.running:
                self.gen()
            else:
                self.last["noop"] = True
        elif action == "run":
            if self.waiting or self.running:
                self.run()
            else:
                self.last["noop"] = True
        elif action == "admit":
            if self.waiting:
                self.try_admit(self.waiting[0])
            else:
                self.last["noop"] = True
        else:
            name = action.partition(":")[2]
            if name in self.waiting:
                self.try_admit(name)
            else:
                self.last["noop"] = True

    def state(self) -> dict:
        blocks = self.pool.blocks
        state = {
            "step": self.steps,
            "req": [[self.status[n],
                     self.reqs[n].num_computed_tokens if self.status[n] == "running" else 0,
                     len(self.reqs[n].output_token_ids), self.preemptions[n]]
                    for n in self.order],
            "running": list(self.running),
            "waiting": list(self.waiting),
            "tables": {n: list(self.kvm.get_block_ids(n)[0]) for n in self.running},
            "ref": {str(b.block_id): b.ref_cnt for b in blocks
                    if b.ref_cnt >= 1 and b.block_id != 0},
            "free": [b.block_id for b in self.pool.free_block_queue.get_all_free_blocks()],
            "cached": sorted(b.block_id for b in blocks
                             if b.block_hash is not None and b.block_id != 0),
        }
        state.update(self.last)
        return state


def record_kv(case: dict) -> dict:
    widget = KVWidget(case["config"])
    after = []
    for action in case["actions"]:
        widget.apply(action)
        after.append(widget.state())
    return dict(case, after=after)


# ----------------------------------------------------------------------------------

def vllm_version() -> str:
    import vllm
    return vllm.__version__


PROBE_CONFIG = {"block_size": 4, "num_gpu_blocks": 8, "max_num_batched_tokens": 16,
                "max_num_seqs": 2, "enable_prefix_caching": True, "enable_chunked_prefill": True,
                "policy": "fcfs", "max_model_len": 64, "async_scheduling": True}


def main(argv: list[str]) -> None:
    if argv[0] == "--probe":  # can vLLM's scheduler be built here? (exit status says)
        build_scheduler(PROBE_CONFIG, argv[1])
        return
    cases_in, records_out, model_dir = argv
    with open(cases_in, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    with open(records_out, "w", encoding="utf-8") as out:
        out.write(json.dumps({"vllm_version": vllm_version()}) + "\n")
        for n, case in enumerate(cases):
            kind = case.pop("kind")
            record = record_kv(case) if kind == "kv" else record_sched(case, model_dir)
            out.write(json.dumps({"kind": kind, "case": record}) + "\n")
            if (n + 1) % 20 == 0:
                print(f"  recorded {n + 1} of {len(cases)} cases", file=sys.stderr, flush=True)


if __name__ == "__main__":
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    main(sys.argv[1:])
