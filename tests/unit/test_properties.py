"""Invariants of every simulation, over random configs and random action sequences.

The per-module test files already check, over random inputs: the race's frames, slots
and totals (test_race), the block pool under allocate/grow/free (test_blockpool), the
engine's token accounting, budget and finishing through `run_timed` (test_engine), the
KV-cache widget's pool after each action (test_kvcache), the budget's step caps
(test_budget), the batch-size recommendation (test_batch_size) and the toy's queues and
blocks (test_toy). This file adds what they leave out:

- strategies derived from each config's own declared ranges (`pysim.config.describe`),
  scaled down for speed, so a widened range is exercised without editing the test;
- conservation of tokens per request and of blocks in the *view models* the widgets
  draw (not only inside the simulators), metrics that agree with the per-step data;
- the engine stepped by hand at random times, with requests already streaming at t = 0:
  nobody is scheduled before arriving or in two queues, every step's counts agree;
- the pool's lookup is pure and a refused allocation changes nothing;
- the chunked toy (exercise 5's reference answer) under the same invariants as the toy;
- determinism: the same input gives the same output, and fixed digests of a few view
  models, recorded below, so CPython and Pyodide (this same file runs under
  `make test-pyodide`) must produce byte-identical answers.

Sizes are kept small (a replay gets one or two minutes of traffic), so the whole file
runs in well under a minute in CPython.
"""

from __future__ import annotations

import hashlib
import sys
import json
from fractions import Fraction
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pysim import bridge  # noqa: E402
from pysim.engine.blockpool import BlockPool, KVCacheManager, hash_full_blocks  # noqa: E402
from pysim.utils import cdiv  # noqa: E402
from pysim.config import ConfigError, describe, from_mapping  # noqa: E402
from pysim.engine.scheduler import DECODE, FINISHED, PREFILL, Engine, EngineConfig  # noqa: E402

# One profile for the whole file: modest example counts, no per-example deadline (the
# Pyodide run is several times slower than CPython), no example database on disk.
settings.register_profile(
    "pysim-properties", max_examples=40, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                           HealthCheck.data_too_large])
PROPS = settings.get_profile("pysim-properties")
FEW = settings(PROPS, max_examples=25)

SIMS = bridge.simulations()


def fields(name: str) -> dict[str, dict]:
    """A simulation's config fields by name, with kind, lo, hi, options, default."""
    return {f["name"]: f for f in describe(SIMS[name].config_cls)}


def int_range(name: str, field: str, cap: int | None = None) -> tuple[int, int]:
    f = fields(name)[field]
    hi = f["hi"] if cap is None else min(f["hi"], cap)
    return f["lo"], hi


def canonical(view) -> bytes:
    return json.dumps(view, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def digest(view) -> str:
    return hashlib.sha256(canonical(view)).hexdigest()


def call(name: str, payload: dict) -> dict:
    return json.loads(bridge.call(name, json.dumps(payload)))


# ===================================================================== every simulation

def scaled_value(f: dict):
    """A strategy for one field within its declared range, scaled down for speed:
    whole numbers from the lower bound up to the default (a little more for tiny
    defaults; a trace window of one or two minutes), and any float in range. (test_bridge_fuzz.py tries the upper bounds.)"""
    kind = f["kind"]
    if kind == "bool":
        return st.booleans()
    if kind == "choice":
        return st.sampled_from(f["options"])
    if kind == "int":
        lo, hi = f["lo"], f["hi"]
        if f["name"] == "window_minutes":
            # Minutes of traffic scale a replay's cost and nothing in its rules: one or
            # two (rate_scale still reaches overload).
            return st.integers(lo, lo + 1)
        top = min(hi, max(f["default"], lo + 8))
        return st.one_of(st.just(lo), st.just(f["default"]), st.integers(lo, top))
    if kind == "float":
        return st.floats(f["lo"], f["hi"], allow_nan=False, allow_infinity=False)
    return None  # structured data: left at its default here (its own tests fuzz it)


# In-range actions a simulation cannot answer without: one rate of the lab's sweep is
# named by its action, {"sweep_index": i}, i from 0 to 7.
NEEDS = {"lab_sweep_point": st.integers(0, 7).map(lambda i: [{"sweep_index": i}])}


@st.composite
def payloads(draw):
    name = draw(st.sampled_from(sorted(SIMS)))
    config = {}
    for f in describe(SIMS[name].config_cls):
        strategy = scaled_value(f)
        # (The window is always drawn: left out, it would be the page's five minutes.)
        if strategy is not None and (f["name"] == "window_minutes" or draw(st.booleans())):
            config[f["name"]] = draw(strategy)
    return name, config, draw(NEEDS[name]) if name in NEEDS else []


@PROPS
@given(payloads())
def test_every_simulation_answers_in_range_configs_and_is_deterministic(case):
    name, config, actions = case
    text = json.dumps({"config": config, "actions": actions})
    first = bridge.call(name, text)
    answer = json.loads(first)
    if answer["ok"]:
        canonical(answer["result"])  # finite numbers only
    else:
        # In range field by field, so only a cross-field rule can refuse it: the
        # message names a real field and says what would be allowed.
        error = answer["error"]
        assert error["field"] in fields(name), error
        assert not error["message"].startswith("internal error"), error
    # Same input, same output, byte for byte.
    assert bridge.call(name, text) == first


# ===================================================================== race

from pysim.sims.naive_batching import SCHEDULERS, min_pool
from pysim.sims.naive_batching import run as race_run
from pysim.sims.naive_batching import NaiveBatchingConfig


@st.composite
def race_configs(draw):
    f = fields("naive_batching")
    p = sorted(draw(st.integers(*int_range("naive_batching", "prompt_blocks_max"))) for _ in range(2))
    a = sorted(draw(st.integers(*int_range("naive_batching", "answer_blocks_max"))) for _ in range(2))
    need = min_pool(p[1] + a[1]) + 1  # + 1: vLLM's null block
    lo, hi = int_range("naive_batching", "num_gpu_blocks")
    pool = draw(st.integers(max(lo, need), min(hi, need + 150)))
    return NaiveBatchingConfig(num_requests=draw(st.integers(*int_range("naive_batching", "num_requests", cap=30))),
                      num_gpu_blocks=pool,
                      max_num_seqs=draw(st.integers(*int_range("naive_batching", "max_num_seqs"))),
                      seed=draw(st.integers(*int_range("naive_batching", "seed"))),
                      prompt_blocks_min=p[0], prompt_blocks_max=p[1],
                      answer_blocks_min=a[0], answer_blocks_max=a[1],
                      scheduler=draw(st.sampled_from(f["scheduler"]["options"])))


def linear_p90(values):
    """numpy's linear 90th percentile, worked in exact fractions (to 3 decimals, as the view)."""
    ordered = sorted(values)
    rank = Fraction(9 * (len(ordered) - 1), 10)
    lo = int(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return round(float(ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)), 3)


@FEW
@given(race_configs())
def test_race_tokens_metrics_and_selection(config):
    view = race_run(config, [])
    c = view["config"]
    # The workload honours the configured ranges.
    for i, w in enumerate(view["workload"]):
        assert w["id"] == i
        assert c["prompt_blocks_min"] <= w["prompt_blocks"] <= c["prompt_blocks_max"]
        assert c["answer_blocks_min"] <= w["answer_blocks"] <= c["answer_blocks_max"]
    answers = [w["answer_blocks"] for w in view["workload"]]
    prompts = [w["prompt_blocks"] for w in view["workload"]]
    for name, r in view["schedulers"].items():
        steps = r["steps_to_finish"]
        # Per request, tokens are conserved: each step it writes, its generated count
        # goes up by exactly one, a preemption keeps it, and it ends at its answer length.
        written = [0] * len(answers)
        pre_entries = 0
        for frame in r["frames"]:
            for e in frame:
                if e is None:
                    continue
                rid, prompt, generated, spare, state = e
                assert prompt == prompts[rid]
                if state in ("new", "run"):
                    written[rid] += 1
                assert generated == written[rid], f"{name}: request {rid} lost or gained tokens"
                pre_entries += state == "pre"
                assert state != "pre" or name == "continuous_paged"
                assert state != "done" or name == "static"
                assert spare >= 0
            holding = [e for e in frame if e is not None and e[4] != "pre"]
            assert len(holding) <= r["max_concurrent"]
        assert written == answers
        assert pre_entries == r["preemptions"]
        # The summary metrics are exactly what the per-request and per-step data say.
        waits = [q["wait"] for q in r["per_request"]]
        assert r["mean_wait_steps"] == round(sum(waits) / len(waits), 3)
        assert r["p90_wait_steps"] == linear_p90(waits)
        assert r["mean_running"] == round(sum(answers) / steps, 3)
        for k, key in enumerate(("prompt", "answer", "reserved_unused")):
            assert r["mean_kv"][key] == round(sum(kv[k] for kv in r["kv"]) / steps, 3)
    # Running one scheduler alone gives exactly its part of the full race.
    if config.scheduler == "all":
        for name in SCHEDULERS:
            alone = race_run(NaiveBatchingConfig(**{**c, "scheduler": name}), [])
            assert alone["schedulers"] == {name: view["schedulers"][name]}
    # Deterministic.
    assert digest(race_run(config, [])) == digest(view)


# ===================================================================== kvcache

from pysim.sims import paged_kv_cache
from pysim.sims.paged_kv_cache import PagedKVCacheConfig

NAME_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
VOCAB = ["you", "are", "a", "helpful", "bot", ".", "x"]  # small, so prefixes are shared


@st.composite
def kv_cases(draw):
    lo_bs, hi_bs = int_range("paged_kv_cache", "block_size")
    bs = draw(st.one_of(st.integers(lo_bs, min(hi_bs, 6)), st.integers(lo_bs, hi_bs)))
    names = draw(st.lists(st.text(NAME_ALPHABET, min_size=1, max_size=12), min_size=1,
                          max_size=6, unique=True))
    common = draw(st.lists(st.sampled_from(VOCAB), max_size=12))
    reqs = []
    for name in names:
        own = draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=10))
        reqs.append({"name": name, "prompt": (common + own)[:paged_kv_cache.MAX_PROMPT_WORDS],
                     "max_tokens": draw(st.integers(1, 12))})
    # The longest KV a request holds is prompt + answer - 1 tokens; + 1 for the null block.
    need = 1 + max(cdiv(len(r["prompt"]) + r["max_tokens"] - 1, bs) for r in reqs)
    lo, hi = int_range("paged_kv_cache", "num_gpu_blocks")
    pool = draw(st.integers(max(lo, need), min(hi, need + 12)))
    words = ["admit", "gen", "run"] + [f"admit:{n}" for n in names]
    actions = draw(st.lists(st.sampled_from(words), max_size=40))
    raw = {"num_gpu_blocks": pool, "block_size": bs, "enable_prefix_caching": draw(st.booleans()),
           "requests": reqs}
    return raw, actions


def check_kv_view(v: dict, config) -> None:
    """What the KV-cache widget draws must add up."""
    pool, bs = v["pool"], config.block_size
    blocks = v["blocks"]
    assert [b["id"] for b in blocks] == list(range(config.num_gpu_blocks))
    states = [b["state"] for b in blocks]
    # Block 0 is vLLM's null block: never held, never free, never hashed.
    assert states[0] == "null" and states.count("null") == 1 and pool["null_block"] == 0
    assert blocks[0]["ref_count"] == 0 and blocks[0]["hash"] is None and not blocks[0]["owners"]
    # Blocks are conserved: each other one is used, free-but-cached or free.
    assert (pool["used"], pool["cached"], pool["free"]) == \
        (states.count("used"), states.count("cached"), states.count("free"))
    assert pool["used"] + pool["cached"] + pool["free"] == pool["usable"] == config.num_gpu_blocks - 1
    assert pool["num_gpu_blocks"] == config.num_gpu_blocks
    assert pool["num_free_blocks"] == pool["cached"] + pool["free"] == len(v["free_queue"])
    assert sorted(v["free_queue"]) == [b["id"] for b in blocks if b["state"] in ("cached", "free")]
    for i, b in enumerate(v["free_queue"]):
        assert blocks[b]["free_queue_position"] == i
    for b in blocks:
        # A block is held once by each running request that lists it.
        assert b["ref_count"] == len(b["owners"]) == len(set(b["owners"]))
        assert (b["state"] == "used") == (b["ref_count"] > 0)
        assert (b["free_queue_position"] is None) == (b["state"] in ("used", "null"))
        assert not b["pending"] or b["state"] == "used"
        if b["hash"] is not None:  # only full blocks are hashed
            assert config.enable_prefix_caching and len(b["tokens"]) == bs
        else:
            assert b["state"] != "cached"
    # Every request is in exactly one place: waiting (new or preempted), running, finished.
    by_name = {r["name"]: r for r in v["requests"]}
    assert len(by_name) == len(config.requests)
    assert len(set(v["waiting"])) == len(v["waiting"]) and len(set(v["running"])) == len(v["running"])
    assert not set(v["waiting"]) & set(v["running"])
    for r in v["requests"]:
        in_waiting, in_running = r["name"] in v["waiting"], r["name"] in v["running"]
        assert in_waiting == (r["status"] in ("waiting", "preempted"))
        assert in_running == (r["status"] == "running")
        assert r["queue_position"] == (v["waiting"].index(r["name"]) if in_waiting else None)
        # Tokens: the sequence is prompt + generated; a running request's table covers
        # exactly its tokens; nobody generates past its answer length.
        assert r["num_tokens"] == len(r["prompt"]) + len(r["generated"])
        assert len(r["generated"]) <= r["max_tokens"]
        assert (r["status"] == "finished") == (len(r["generated"]) == r["max_tokens"])
        if in_running:
            # vLLM's timing: the KV of every token is written except, once it has
            # sampled, the newest token's, which is pending until the next gen.
            kv = r["num_computed_tokens"]
            assert kv == r["num_tokens"] - (r["pending_token"] is not None)
            assert r["pending_token"] is None or r["pending_token"] == r["generated"][-1]
            assert len(r["block_table"]) == cdiv(kv, bs)
            if r["pending_token"] is not None:
                slot = kv // bs  # the block its pending token's slot falls in
                assert r["pending_needs_block"] == (slot == len(r["block_table"]))
                if not r["pending_needs_block"]:
                    assert r["name"] in blocks[r["block_table"][slot]]["pending"]
            words = r["prompt"] + r["generated"]
            parent = "root"
            for i, b in enumerate(r["block_table"]):
                block = blocks[b]
                assert r["name"] in block["owners"]
                assert block["tokens"] == words[i * bs:min((i + 1) * bs, kv)]
                if block["hash"] is not None:  # hashes chain from the first block on
                    assert block["parent_hash"] == parent
                    parent = block["hash"]
                else:
                    parent = None
        else:
            assert r["block_table"] == [] and r["num_computed_tokens"] == 0
            assert r["pending_token"] is None and not r["pending_needs_block"]
        assert r["skipped_by_cache"] % bs == 0
    # The counters are the sums of what each request shows.
    c = v["counters"]
    assert c["tokens_generated"] == sum(len(r["generated"]) for r in v["requests"])
    assert c["prefill_tokens"] == sum(r["prefilled"] for r in v["requests"])
    assert c["prefill_tokens_skipped"] == sum(r["skipped_by_cache"] for r in v["requests"])
    assert c["preemptions"] == sum(r["preemptions"] for r in v["requests"])
    assert c["blocks_saved_by_caching"] * bs == c["prefill_tokens_skipped"]
    assert c["evictions"] <= c["allocations"]
    if not config.enable_prefix_caching:
        assert c["prefill_tokens_skipped"] == 0 and pool["cached"] == 0
    assert 0 <= v["last_action_log_start"] <= len(v["log"])


@PROPS
@given(kv_cases())
def test_kvcache_view_conserves_blocks_and_tokens_and_run_finishes(case):
    raw, actions = case
    config = from_mapping(PagedKVCacheConfig, raw)
    sim = paged_kv_cache.simulate(config, [])
    for a in actions:
        sim.apply(a)
        check_kv_view(paged_kv_cache.view(sim), config)
    # Everything fits the pool alone (the config check), so "run" finishes everyone
    # and gives every block back.
    end = paged_kv_cache.run(config, actions + ["run"])
    check_kv_view(end, config)
    assert end["next_actions"]["done"] and not end["waiting"] and not end["running"]
    assert all(r["status"] == "finished" for r in end["requests"])
    assert end["pool"]["used"] == 0 and end["pool"]["num_free_blocks"] == config.num_gpu_blocks - 1
    # Deterministic, and the bridge answers the same view.
    assert digest(paged_kv_cache.run(config, actions)) == digest(paged_kv_cache.run(config, actions))
    answer = call("paged_kv_cache", {"config": raw, "actions": actions + ["run"]})
    assert answer["ok"] and digest(answer["result"]) == digest(end)


# ===================================================================== budget

from pysim.sims.chunked_prefill import ChunkedPrefillConfig
from pysim.sims.chunked_prefill import run as budget_run


@st.composite
def budget_configs(draw):
    f = fields("chunked_prefill")
    raw = {}
    for name, meta in f.items():
        if meta["kind"] == "float":
            raw[name] = draw(st.floats(meta["lo"], meta["hi"], allow_nan=False))
        elif meta["kind"] in ("bool", "choice"):
            raw[name] = draw(scaled_value(meta))
    raw["max_num_batched_tokens"] = draw(st.one_of(st.integers(*int_range("chunked_prefill", "max_num_batched_tokens", cap=4096)),
                                   st.integers(*int_range("chunked_prefill", "max_num_batched_tokens"))))
    raw["max_num_seqs"] = draw(st.integers(*int_range("chunked_prefill", "max_num_seqs")))
    raw["num_gpu_blocks"] = draw(st.one_of(st.integers(1000, 1500),
                                        st.integers(*int_range("chunked_prefill", "num_gpu_blocks"))))
    try:
        return from_mapping(ChunkedPrefillConfig, raw)
    except ConfigError as exc:
        # A cross-field rule: its message states the range that would be allowed, or
        # that the model chosen does not fit the GPU chosen.
        assert exc.field in f and ("expected a whole number from" in exc.message
                                   or "do not fit" in exc.message)
        assume(False)


@FEW
@given(budget_configs())
def test_budget_time_tokens_and_arrivals(config):
    view = budget_run(config, [])
    steps, reqs = view["steps"], view["requests"]
    by_id = {r["id"]: r for r in reqs}
    served = {r["id"]: 0 for r in reqs}
    arrived_at = {}
    previous_end = 0.0
    for k, s in enumerate(steps):
        assert s["index"] == k
        # Time only moves forward and steps never overlap.
        assert s["start_ms"] >= previous_end - 1e-9
        previous_end = s["start_ms"] + s["duration_ms"]
        # The step lasts what the clock says for the work it did (whole microseconds):
        # its overheads plus the larger of its reading and computing times (each shown
        # rounded to 1 us).
        parts = s["overhead_ms"] + max(s["memory_ms"], s["compute_ms"])
        assert abs(s["duration_ms"] - parts) <= 0.0021
        ids = [p[0] for p in s["parts"]]
        assert len(ids) == len(set(ids)), "a request twice in one batch"
        assert s["decode_tokens"] == sum(p[2] for p in s["parts"] if p[1] == DECODE) \
            == sum(1 for p in s["parts"] if p[1] == DECODE)
        assert s["prefill_tokens"] == sum(p[2] for p in s["parts"] if p[1] == PREFILL)
        assert 0 < s["decode_tokens"] + s["prefill_tokens"] <= config.max_num_batched_tokens
        for rid in s["arrived"]:
            # It arrives at the first step starting at or after its arrival time.
            assert rid not in arrived_at
            arrived_at[rid] = k
            arrival = by_id[rid]["arrival_ms"]
            assert s["start_ms"] >= arrival and (k == 0 or steps[k - 1]["start_ms"] < arrival)
        for rid, _, n in s["parts"]:
            assert by_id[rid]["streaming_at_start"] or rid in arrived_at, "scheduled before arriving"
            served[rid] += n
        assert set(s["admitted"]) <= set(ids)
        assert not set(s["preempted"]) & set(s["finished"])
        assert s["num_requests_running"] <= config.max_num_seqs
    for r in reqs:
        # Tokens are conserved: a request is served its prompt and answer but the last
        # sampled token (a stream at t = 0 had its prompt done already), less what the
        # prefix cache saved; a preemption can only add recomputation.
        need = r["max_tokens"] - 1 + (0 if r["streaming_at_start"] else
                                         r["num_prompt_tokens"] - r["cached_tokens"])
        if r["preemptions"] == 0:
            assert served[r["id"]] == need
        else:
            assert served[r["id"]] > need
        t = r["token_ms"]
        assert all(a < b for a, b in zip(t, t[1:]))
        assert r["finish_ms"] == t[-1]
        assert len(r["gaps_ms"]) == len(t) - 1
        if r["streaming_at_start"]:
            assert r["ttft_ms"] is None
        else:
            assert r["ttft_ms"] == view["summary"]["ttft_ms"][r["id"]] > 0
            assert abs(r["ttft_ms"] - (t[0] - r["arrival_ms"])) < 1e-6
    summary = view["summary"]
    assert summary["steps"] == len(steps)
    assert summary["preemptions"] == sum(r["preemptions"] for r in reqs)
    assert summary["itl_gaps"] == sum(len(r["gaps_ms"]) for r in reqs)
    assert abs(summary["total_ms"] - previous_end) < 1e-6
    assert digest(budget_run(config, [])) == digest(view)


# ===================================================================== engine, by hand

@st.composite
def engine_cases(draw):
    config = EngineConfig(
        max_num_batched_tokens=draw(st.integers(1, 200)),
        max_num_seqs=draw(st.integers(1, 6)),
        num_gpu_blocks=draw(st.integers(5, 41)),
        block_size=draw(st.sampled_from([1, 2, 4, 16])),
        enable_prefix_caching=draw(st.booleans()),
        enable_chunked_prefill=draw(st.booleans()),
        policy=draw(st.sampled_from(["fcfs", "priority"])))
    reqs = draw(st.lists(st.tuples(
        st.integers(1, 60), st.integers(1, 20), st.integers(0, 80), st.integers(0, 2),
        st.booleans(), st.integers(0, 2)), min_size=1, max_size=8))
    gaps = draw(st.lists(st.integers(0, 15), min_size=1, max_size=10))
    return config, reqs, gaps


def drive(config, reqs, gaps):
    """Add the requests (some already streaming), then step at random times."""
    e = Engine(config)
    kept = []
    for i, (prompt, answer, arrival, prio, streaming, pattern) in enumerate(reqs):
        ids = [(pattern + k) % 3 for k in range(prompt)]
        try:
            e.add_request(i, prompt, answer, arrival=arrival, priority=prio, token_ids=ids,
                          prefilled=streaming)
        except ValueError:
            continue  # refused up front (does not fit the pool, the budget or the seats)
        kept.append(i)
    # `add_request` refuses nothing half-way: a refused request left no trace.
    assert sorted(e.requests) == kept
    e.check_invariants()
    trace, now, arrived = [], 0, set()
    streaming = {i for i in kept if e.requests[i].prefilled}
    for k in range(5000):
        if not e.has_unfinished():
            break
        if e.is_idle() and e.next_arrival() > now:
            now = e.next_arrival()
        r = e.step(now)
        e.check_invariants()  # includes: nobody both waiting and running, blocks add up
        ids = [p[0] for p in r.parts]
        for rid in r.arrived:
            assert rid not in arrived and e.requests[rid].arrival <= now
            arrived.add(rid)
        assert set(ids) <= arrived | streaming, "scheduled before arriving"
        assert len(ids) == len(set(ids)) and r.num_tokens <= config.max_num_batched_tokens
        assert r.decode_tokens == sum(1 for p in r.parts if p[1] == DECODE)
        assert set(r.admitted) <= set(ids) and set(r.sampled) <= set(ids)
        assert len(r.sampled) == len(set(r.sampled))
        snap = e.snapshot()
        assert not set(snap["running"]) & set(snap["waiting"])
        assert set(r.preempted) <= set(snap["waiting"]) | set(snap["running"])
        for rid in r.finished:
            assert e.requests[rid].status == FINISHED and not e.kv.block_table(rid)
        assert r.num_free_blocks == e.pool.num_free_blocks
        assert r.num_requests_running == len(snap["running"]) <= config.max_num_seqs
        trace.append((now, r.parts, r.preempted, r.finished, snap))
        now += gaps[k % len(gaps)]
    return e, trace, kept


@PROPS
@given(engine_cases())
def test_engine_stepped_at_random_times(case):
    config, reqs, gaps = case
    e, trace, kept = drive(config, reqs, gaps)
    # Everything that was accepted fits, so everything finishes and frees its blocks.
    assert not e.has_unfinished()
    assert e.pool.num_free_blocks == config.num_gpu_blocks - 1  # all but the null block
    for i in kept:
        r = e.requests[i]
        assert r.status == FINISHED and r.num_output == r.max_tokens
        # Tokens are conserved (a stream's prompt and first token came before step 0).
        before = r.num_prompt_tokens if r.prefilled else 0
        assert r.served_tokens == r.num_prompt_tokens + r.max_tokens - 1 - before \
            + r.recomputed_tokens - r.cached_tokens
    assert drive(config, reqs, gaps)[1] == trace  # deterministic


# ===================================================================== block pool

pool_ops = st.lists(st.tuples(st.sampled_from("alg f"), st.integers(0, 4),
                              st.lists(st.integers(0, 2), min_size=1, max_size=12)),
                    max_size=50)


def pool_state(pool: BlockPool):
    hashes = [pool.block_hash(b) for b in range(pool.num_gpu_blocks)]
    return (pool.free_queue(), [pool.ref_count(b) for b in range(pool.num_gpu_blocks)], hashes,
            [pool.get_cached_block(h) for h in hashes if h is not None],
            pool.num_evictions, pool.num_allocations)


@PROPS
@given(ops=pool_ops, caching=st.booleans(), num_gpu_blocks=st.integers(2, 13),
       block_size=st.integers(1, 4))
def test_pool_lookup_is_pure_and_a_refused_allocation_changes_nothing(ops, caching, num_gpu_blocks,
                                                                      block_size):
    pool = BlockPool(num_gpu_blocks, block_size, caching)
    kv = KVCacheManager(pool)
    seqs: dict[int, list[int]] = {}
    for op, req, tokens in ops:
        before = pool_state(pool)
        if op == "l":  # lookup alone never changes the pool
            hits, hit_tokens = kv.lookup(tokens)
            assert pool_state(pool) == before
            # The hits are the longest cached run of the prompt's own leading blocks.
            full = list(hash_full_blocks(tokens, block_size))
            assert [pool.block_hash(b) for b in hits] == full[:len(hits)]
            cap = (len(tokens) - 1) // block_size
            if caching and len(hits) < cap:
                assert pool.get_cached_block(full[len(hits)]) is None
            assert hit_tokens == len(hits) * block_size
        elif op == "a" and req not in seqs:
            hits, _ = kv.lookup(tokens)
            if kv.allocate_slots(req, tokens, len(tokens), hits):
                seqs[req] = list(tokens)
            else:
                assert pool_state(pool) == before and kv.block_table(req) == []
        elif op == "g" and req in seqs:
            grown = seqs[req] + tokens
            if kv.allocate_slots(req, grown, len(grown)):
                seqs[req] = grown
            else:
                assert pool_state(pool) == before
                assert len(kv.block_table(req)) == cdiv(len(seqs[req]), block_size)
        elif op == "f" and req in seqs:
            kv.free(req)
            del seqs[req]
        # Blocks are conserved: held by someone or in the free queue, never both.
        held = {b for t in kv.tables().values() for b in t}
        assert len(held) + pool.num_free_blocks == num_gpu_blocks - 1  # block 0: the null block
        assert not held & set(pool.free_queue())
        assert pool.num_evictions <= pool.num_allocations
    for req in list(seqs):
        kv.free(req)
    assert pool.num_free_blocks == num_gpu_blocks - 1
    assert sorted(pool.free_queue()) == list(range(1, num_gpu_blocks))
    assert all(pool.ref_count(b) == 0 for b in range(num_gpu_blocks))
    pool.check_invariants([])


# ===================================================================== batch size

from pysim.sims.batch_size import CURVE_CAP


@FEW
@given(st.data())
def test_batch_size_full_ranges_answer_and_stay_small(data):
    f = fields("batch_size")
    raw = {name: data.draw(scaled_value(meta) if meta["kind"] != "int" else
                           st.integers(meta["lo"], meta["hi"]), label=name)
           for name, meta in f.items()}
    answer = call("batch_size", {"config": raw})
    if not answer["ok"]:
        assert answer["error"]["field"] == "context_tokens"  # past the model's own maximum
        return
    v = answer["result"]
    # The curve is capped, so even the fastest, largest setting draws a small chart.
    assert v["curve_max_batch"] <= CURVE_CAP and len(v["curve"]) <= 40
    rec = v["recommended_max_num_seqs"]
    assert rec is None or 1 <= rec <= min(v["max_batch_memory"], v["max_batch_speed"])
    assert call("batch_size", {"config": raw}) == answer


# ===================================================================== toy and its chunked twin

from pysim.toy import chunked as toy_chunked, scheduler as toy_scheduler, view as toy_scheduler_view


@st.composite
def toy_cases(draw):
    f = fields("toy_scheduler")
    bs = draw(st.sampled_from([1, 4, 16, f["block_size"]["hi"]]))
    need = toy_scheduler.blocks_for(toy_scheduler.LONGEST, bs)
    lo, hi = int_range("toy_scheduler", "num_gpu_blocks")
    config = toy_scheduler.ToyConfig(
        policy=draw(st.sampled_from(f["policy"]["options"])), block_size=bs,
        num_gpu_blocks=draw(st.integers(max(lo, need + 1), min(hi, need + 1 + 3 * need))),  # + the null block
        max_num_batched_tokens=draw(st.integers(*int_range("toy_scheduler", "max_num_batched_tokens", cap=2048))),
        max_num_seqs=draw(st.integers(*int_range("toy_scheduler", "max_num_seqs", cap=40))),
        num_requests=draw(st.integers(*int_range("toy_scheduler", "num_requests", cap=30))),
        seed=draw(st.integers(*int_range("toy_scheduler", "seed"))))
    return config, draw(st.sampled_from(["toy_scheduler", "chunked"]))


@FEW
@given(toy_cases())
def test_toy_and_chunked_toy_conserve_blocks_and_tokens(case):
    config, which = case
    module = toy_scheduler if which == "toy_scheduler" else toy_chunked
    specs = toy_scheduler.workload(config.num_requests, config.seed)
    requests, reports = module.simulate(specs, config)
    by_id = {r.id: r for r in requests}
    sampled = {r.id: 0 for r in requests}
    for rep in reports:
        ids = [rid for rid, _, _ in rep["batch"]]
        assert len(ids) == len(set(ids)) and not set(rep["preempted"]) & set(ids)
        assert 0 < sum(n for _, _, n in rep["batch"]) <= config.max_num_batched_tokens
        for rid, kind, n in rep["batch"]:
            assert kind in ("decode", "prefill") and n >= 1
            assert specs[rid]["arrival"] <= rep["iteration"], "scheduled before arriving"
    # Everyone finishes, with exactly its answer, and all the memory comes back.
    assert all(r.state == toy_scheduler.FINISHED and r.generated == r.max_tokens for r in requests)
    if which == "toy_scheduler":  # whole prompts: every appearance in a batch samples one token
        for rep in reports:
            for rid, _, _ in rep["batch"]:
                sampled[rid] += 1
        assert all(sampled[i] == by_id[i].max_tokens for i in sampled)
    else:
        # Chunks: a request is served its prompt and answer but the last token, plus
        # what each preemption threw away (it recomputes everything it had).
        served = {r.id: 0 for r in requests}
        for rep in reports:
            for rid, _, n in rep["batch"]:
                served[rid] += n
        for r in requests:
            if r.preemptions == 0:
                assert served[r.id] == r.num_prompt_tokens + r.max_tokens - 1
            else:
                assert served[r.id] > r.num_prompt_tokens + r.max_tokens - 1
    summary = toy_scheduler.summarize(requests, reports)
    assert summary["finished"] == config.num_requests
    assert summary["preemptions"] == sum(r.preemptions for r in requests)
    assert module.simulate(specs, config)[1] == reports  # deterministic


def test_toy_view_agrees_with_itself():
    view = call("toy_scheduler", {"config": {"num_requests": 40, "seed": 5}})["result"]
    # The view carries the chosen policy only; the other two are compare_policies'.
    assert view["results"] == toy_scheduler_view.compare_policies(toy_scheduler.ToyConfig(num_requests=40, seed=5))["fcfs"]
    assert view["results"]["finished"] == 40
    series = view["series"]
    assert len(series["start"]) == len(series["batch"]) == len(series["tokens"]) \
        <= toy_scheduler_view.SERIES_POINTS
    assert series["start"] == list(range(0, series["bucket"] * len(series["start"]),
                                         series["bucket"]))


# ===================================================================== digests

# A few fixed view models, pinned in tests/unit/pinned_views.json: each as the sha256 of
# its canonical JSON (sorted keys, no spaces), so the Pyodide run of this file proves
# Pyodide computes byte-identical answers, and as a sketch of what is in it: every key
# down to two levels, a number or a string as itself, anything larger as a short digest.
# A failing pin says which keys moved and, for figures, from what to what. After a
# deliberate change, `python tests/unit/test_properties.py --pin` writes the file anew.
PINNED = Path(__file__).resolve().parent / "pinned_views.json"
PINNED_CALLS = [
    ("naive_batching", '{"config": {}}'),
    ("naive_batching", '{"config": {"num_requests": 25, "num_gpu_blocks": 40, "max_num_seqs": 7, "seed": 3}}'),
    ("paged_kv_cache", '{"config": {}, "actions": ["admit", "gen", "admit", "gen", "run"]}'),
    ("paged_kv_cache", '{"config": {"enable_prefix_caching": false, "num_gpu_blocks": 12}, "actions": ["run"]}'),
    ("chunked_prefill", '{"config": {}}'),
    ("chunked_prefill", '{"config": {"scenario": "mixed", "max_num_batched_tokens": 512, '
                        '"enable_prefix_caching": true, "policy": "priority", "num_gpu_blocks": 1200}}'),
    ("batch_size", '{"config": {}}'),
    ("toy_scheduler", '{"config": {"num_requests": 60, "seed": 7, "num_gpu_blocks": 120}}'),
    ("batch_size", '{"config": {"gpu": "L40S", "model": "qwen3-8b", "context_tokens": 32768, '
                   '"kv_fp8": true, "target_tok_s": 12.5}}'),
    # A cluster's view is sums and sorts of many engines' floats: the pin says CPython and
    # Pyodide route and time every request alike.
    ("cluster", '{"config": {"window_minutes": 1, "replicas": 2}}'),
    ("cluster", '{"config": {"window_minutes": 1, "layout": "disaggregated", "prefill_replicas": 1, '
                '"decode_replicas": 1, "router": "least_loaded"}}'),
    ("cluster_sweep", '{"config": {"window_minutes": 1, "gpus": 2}}'),
    ("lab", '{"config": {"trace": "mooncake_conv", "window_minutes": 1}}'),
    ("lab", '{"config": {"window_minutes": 1, "async_scheduling": false}}'),
]


def sketch(view) -> dict:
    """Every path down to two levels ("summary.ttft_p50"): a scalar as itself, else the
    first 12 hex digits of its digest."""
    out = {}

    def put(path, value):
        out[path] = value if value is None or isinstance(value, (bool, int, float, str)) \
            else digest(value)[:12]

    for key, value in (view.items() if isinstance(view, dict) else enumerate(view)):
        put(str(key), value)
        if isinstance(value, dict):
            for sub, inner in value.items():
                put(f"{key}.{sub}", inner)
    return out


def moved(pinned: dict, now: dict) -> list[str]:
    """What differs between two sketches, deepest paths only, as readable lines."""
    lines = []
    for path in sorted(set(pinned) | set(now)):
        if any(p != path and p.startswith(path + ".") for p in set(pinned) | set(now)):
            continue  # its parts say more
        old, new = pinned.get(path, "(absent)"), now.get(path, "(absent)")
        if old != new:
            lines.append(f"{path}: {old!r} -> {new!r}")
    return lines


def pin_entry(name: str, payload: str) -> dict:
    answer = json.loads(bridge.call(name, payload))
    assert answer["ok"], answer
    return {"name": name, "payload": payload, "sha256": digest(answer["result"]),
            "sketch": sketch(answer["result"])}


@pytest.mark.parametrize("name, payload", PINNED_CALLS)
def test_view_is_pinned(name, payload):
    pins = {(p["name"], p["payload"]): p for p in json.loads(PINNED.read_text(encoding="utf-8"))}
    pinned = pins[(name, payload)]
    now = pin_entry(name, payload)
    if now["sha256"] != pinned["sha256"]:
        lines = moved(pinned["sketch"], now["sketch"]) or ["(deeper than two levels)"]
        pytest.fail(f"{name} {payload} changed:\n  " + "\n  ".join(lines[:25])
                    + "\nIf that is meant: python tests/unit/test_properties.py --pin")


def test_a_moved_pin_names_the_figure_and_its_values():
    before = sketch({"summary": {"ttft_p50": 1.0, "n": 3}, "series": [1, 2]})
    after = sketch({"summary": {"ttft_p50": 1.5, "n": 3}, "series": [1, 3]})
    assert moved(before, after) == ["series: " + repr(before["series"]) + " -> " + repr(after["series"]),
                                    "summary.ttft_p50: 1.0 -> 1.5"]


# The engine's step trace for one fixed workload with streams, arrivals and preemption,
# one step a line: [time, [[request, phase, tokens], ...], preempted, finished].
ENGINE_TRACE = Path(__file__).resolve().parent / "pinned_engine_trace.json"


def engine_trace() -> list:
    # 19 usable blocks + the null block: the same trace as before the null block.
    config = EngineConfig(max_num_batched_tokens=48, max_num_seqs=4, num_gpu_blocks=20,
                          block_size=4, enable_prefix_caching=True, policy="priority")
    reqs = [(20 + 7 * i, 6 + i, 3 * i, i % 3, i % 4 == 0, i % 3) for i in range(9)]
    e, trace, kept = drive(config, reqs, [0, 1, 5])
    assert e.num_preemptions > 0  # the pinned trace covers preemption
    return [[now, [list(p) for p in parts], pre, fin] for now, parts, pre, fin, _ in trace]


def first_difference(pinned: list, now: list) -> str:
    """The first step where two traces part, both sides: what a failing pin prints."""
    for i, (a, b) in enumerate(zip(pinned, now)):
        if a != b:
            return f"step {i}: pinned {a}, now {b}"
    return f"the same first {min(len(pinned), len(now))} steps, then {len(pinned)} steps pinned, {len(now)} now"


def test_engine_trace_is_pinned():
    pinned = json.loads(ENGINE_TRACE.read_text(encoding="utf-8"))
    now = engine_trace()
    assert now == pinned, (first_difference(pinned, now)
                           + "\nIf that is meant: python tests/unit/test_properties.py --pin")


def test_a_moved_trace_names_its_first_step():
    steps = [[0, [[0, "decode", 1]], [], []], [1, [[1, "prefill", 3]], [], [1]]]
    moved_step = [steps[0], [1, [[1, "prefill", 4]], [], [1]]]
    assert first_difference(steps, moved_step) == (
        "step 1: pinned [1, [[1, 'prefill', 3]], [], [1]], now [1, [[1, 'prefill', 4]], [], [1]]")
    assert first_difference(steps, steps[:1]) == "the same first 1 steps, then 2 steps pinned, 1 now"



if __name__ == "__main__" and "--pin" in sys.argv:  # pragma: no cover
    PINNED.write_text(json.dumps([pin_entry(n, p) for n, p in PINNED_CALLS], indent=1, sort_keys=True)
                      + "\n", encoding="utf-8")
    print(f"wrote {PINNED}")
    ENGINE_TRACE.write_text("[\n" + ",\n".join(json.dumps(step) for step in engine_trace()) + "\n]\n",
                            encoding="utf-8")
    print(f"wrote {ENGINE_TRACE}")
