"""Scheduling across replicas (pysim.sims.cluster) and the Mooncake traces it replays (pysim.traffic.traces)."""

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from pysim import bridge
from pysim.sims.cluster import (config as cluster_config, figures as cluster_figures,
                                simulate as cluster_simulate, sweep as cluster_sweep, view as cluster_view,
                                watch as cluster_watch)

from pysim.sims.lab import config as lab_config, view as lab_view, workload as lab_workload
from pysim.traffic import traces
from pysim.timing.catalog import GPUS, MODELS
from pysim.sims.cluster.config import ClusterConfig
from pysim.sims.cluster.router import Router
from pysim.sims.cluster.sweep import SweepConfig
from pysim.config import ConfigError
from pysim.engine.scheduler import SchedulerConfig
from pysim.engine.replay import engine_config, replay
from pysim.timing.steptime import DEFAULTS, num_gpu_blocks, step_time_model

H100, LLAMA = GPUS["H100"], MODELS["llama-3.1-8b"]


# ------------------------------------------------------------------ the traces

def test_mooncake_traces_match_their_readme():
    # ../shared/data/mooncake-fast25/README.md: 12,031 and 3,993 requests, median prompt /
    # output 6,909 / 350 and 11,587 / 69, blocks seen before 36.6% and 64.0%.
    for name, n, prompt, output, seen in (("mooncake_conv", 12_031, 6_909, 350, 36.6),
                                          ("mooncake_synth", 3_993, 11_587, 69, 64.0)):
        t = traces.load(name)
        s = traces.stats(t)
        assert (len(t), s["num_prompt_tokens_median"], s["max_tokens_median"]) == (n, prompt, output)
        assert round(cluster_figures.trace_sharing(name)["blocks_seen_before_pct"], 1) == seen
        # One id per started 512-token block, and ids name a prefix: an id always
        # follows the same id.
        parent = {}
        for ids, p in zip(t.hash_ids, t.prompt_tokens):
            assert len(ids) == -(-p // 512)
            for i, k in enumerate(ids):
                assert parent.setdefault(k, ids[i - 1] if i else None) == (ids[i - 1] if i else None)


# ../shared beside the project holds the published JSON lines (not inside Pyodide).
_ROOT = Path(__file__).resolve().parents
SHARED = _ROOT[3] / "shared" / "data" / "mooncake-fast25" if len(_ROOT) > 3 else None


@pytest.mark.skipif(SHARED is None or not SHARED.is_dir(), reason="the published JSON lines are not at hand (../shared)")
def test_the_compact_files_equal_the_published_traces():
    for name, file in (("mooncake_conv", "conversation_trace.jsonl"), ("mooncake_synth", "synthetic_trace.jsonl")):
        t = traces.load(name)
        rows = [json.loads(line) for line in (SHARED / file).read_text().splitlines() if line]
        t0 = rows[0]["timestamp"]
        assert [(r["timestamp"] - t0, r["input_length"], r["output_length"], tuple(r["hash_ids"])) for r in rows] \
            == list(zip(t.offsets_ms, t.prompt_tokens, t.output_tokens, t.hash_ids))


def test_the_compact_form_rebuilds_every_id():
    # Three requests by hand: fresh ids count on, a shared chain is named by its last id.
    text = "# header\n0 1000 5 -1 2\n10 1500 5 1 1\n20 600 5 0 1\n"
    t = traces.parse(text)
    assert t.hash_ids == ((0, 1), (0, 1, 2), (0, 3))


def test_prompt_tokens_are_derived_from_block_ids():
    a = traces.PromptTokens((0, 1), 700)
    b = traces.PromptTokens((0, 2), 600)
    assert len(a) == 700 and a[0:512] == b[0:512]  # the shared block: the same 512 tokens
    assert a[512:600] != b[512:600]  # then different blocks, different tokens
    assert a[5] == 0 * 512 + 5 + 1 and b[599] == 2 * 512 + (599 - 512) + 1
    c = a.copy()
    c.append(-7)
    assert len(c) == 701 and c[700] == -7 and len(a) == 700  # a copy samples on its own
    # Block names: equal exactly where the prompts share full 16-token blocks.
    ha, hb = a.block_hashes(16), b.block_hashes(16)
    assert len(ha) == 700 // 16 and len(hb) == 600 // 16
    assert ha[:32] == hb[:32] and not set(ha[32:]) & set(hb[32:])


# ------------------------------------------------------------------ prefix caching in the engine

def _setup(blocks=None, budget=8192, seqs=1024):
    stm = step_time_model(H100, LLAMA, DEFAULTS["H100"])
    blocks = blocks or num_gpu_blocks(H100, LLAMA, 16)
    knobs = SchedulerConfig(max_num_seqs=seqs, max_num_batched_tokens=budget)
    return engine_config(blocks, 16, knobs, enable_prefix_caching=True), stm, blocks


def _lists(reqs):
    return ([r.arrival_s for r in reqs], [r.num_prompt_tokens for r in reqs], [r.max_tokens for r in reqs])


def test_named_blocks_hit_as_spelled_out_tokens_do():
    # The same window with the ids spelled out as lists (hashed block by block) and
    # with PromptTokens (blocks named by id): the same steps, hits and times. A small
    # pool makes the cache evict, so eviction order is compared too.
    reqs = traces.requests(traces.load("mooncake_conv"), 20, 0.5, 1.0)[:60]
    cfg, stm, _ = _setup(blocks=6000, budget=2048, seqs=64)
    arr, p, o = _lists(reqs)
    named = replay(arr, p, o, cfg, stm, cfg.num_gpu_blocks,
                   token_ids=lambda i: traces.PromptTokens(reqs[i].hash_ids, p[i]))
    spelled = replay(arr, p, o, cfg, stm, cfg.num_gpu_blocks,
                     token_ids=lambda i: traces.PromptTokens(reqs[i].hash_ids, p[i])[0:p[i]])
    assert named.prefix_cache_hits == spelled.prefix_cache_hits > 0
    assert named.num_steps == spelled.num_steps and named.num_preemptions == spelled.num_preemptions
    assert named.finished == spelled.finished and named.first_token == spelled.first_token


def test_decode_runs_with_prefix_caching_equal_step_by_step():
    reqs = traces.requests(traces.load("mooncake_conv"), 30, 1, 1.0)[:120]
    cfg, stm, _ = _setup(blocks=9000, budget=2048, seqs=32)
    arr, p, o = _lists(reqs)
    ids = lambda i: traces.PromptTokens(reqs[i].hash_ids, p[i])  # noqa: E731
    fast = replay(arr, p, o, cfg, stm, cfg.num_gpu_blocks, token_ids=ids)
    slow = replay(arr, p, o, cfg, stm, cfg.num_gpu_blocks, token_ids=ids, fast=False)
    assert len(fast.seg_end) < slow.num_steps  # the shortcut did shorten it
    assert (fast.num_steps, fast.num_preemptions) == (slow.num_steps, slow.num_preemptions)
    assert (fast.prefix_cache_queries, fast.prefix_cache_hits) == (slow.prefix_cache_queries, slow.prefix_cache_hits)
    for a, b in ((fast.finished, slow.finished), (fast.first_token, slow.first_token)):
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-9


def test_prefix_hits_equal_a_count_by_hand():
    # Requests far apart on a roomy replica: each finds cached every full 64-token
    # block (vLLM 0.34.0's default on an H100) of its longest prefix already seen, minus
    # its last token (vLLM always computes that one). Counted here from the ids alone.
    reqs = [replace(r, arrival_s=100.0 * i)
            for i, r in enumerate(traces.requests(traces.load("mooncake_conv"), 0, 2, 1.0)[:40])]
    # And a repeat of the first two blocks of an earlier prompt, 530 tokens long: its 529
    # cacheable tokens hold 8 full 64-token blocks (512 tokens), where 16-token blocks
    # would hold 528: the count tells the block sizes apart.
    first = next(r for r in reqs if len(r.hash_ids) >= 2)
    reqs.append(replace(first, arrival_s=100.0 * len(reqs), num_prompt_tokens=530,
                        hash_ids=first.hash_ids[:2]))
    seen, expected = set(), 0
    for r in reqs:
        m = 0
        while m < len(r.hash_ids) and r.hash_ids[m] in seen:
            m += 1
        expected += min(m * 512, r.num_prompt_tokens - 1) // 64 * 64
        seen.update(r.hash_ids)
    assert expected > 0
    c = ClusterConfig(replicas=1, router="round_robin")
    assert cluster_config.block_size(c) == 64
    result = cluster_simulate.simulate(c, reqs)
    engine = result.servers[0].engine
    assert engine.prefix_cache_hits == expected
    assert engine.prefix_cache_queries == sum(r.num_prompt_tokens for r in reqs)
    assert cluster_figures.bound_hit_rate(reqs, 64) == expected / engine.prefix_cache_queries


# ------------------------------------------------------------------ routers, by hand

class Fake:
    def __init__(self, load, usage=0.0):
        self.load, self.usage = load, usage

    def outstanding(self):
        return self.load

    def kv_usage(self):
        return self.usage


def test_round_robin_takes_turns():
    r = Router("round_robin", 3)
    servers = [Fake(9), Fake(0), Fake(5)]
    assert [r.choose(servers, (i,), 100) for i in range(5)] == [0, 1, 2, 0, 1]


def test_least_loaded_counts_requests_then_kv_usage_then_index():
    r = Router("least_loaded", 3)
    assert r.choose([Fake(3), Fake(1), Fake(2)], (), 10) == 1
    assert r.choose([Fake(2, 0.5), Fake(2, 0.25), Fake(4)], (), 10) == 1
    assert r.choose([Fake(2, 0.5), Fake(2, 0.5), Fake(2, 0.5)], (), 10) == 0


def test_cache_aware_follows_sglang_rules():
    r = Router("cache_aware", 3, cache_threshold=0.5, balance_abs=4, balance_rel=1.5)
    even = [Fake(2), Fake(1), Fake(3)]
    # Nothing recorded yet: a low match goes to the least loaded (sglang-router 0.3.2).
    assert r.choose(even, (10, 11, 12, 13), 2048) == 1
    # The same conversation again, longer: it matched 4 of 5 blocks on replica 1.
    assert r.choose([Fake(2), Fake(3), Fake(1)], (10, 11, 12, 13, 14), 2560) == 1
    # A match of 1 block of 4 (25%) is under the threshold: least loaded instead.
    assert r.choose([Fake(0), Fake(3), Fake(2)], (10, 20, 21, 22), 2048) == 0
    # Imbalanced (busiest 9 - idlest 2 > 4 and 9 > 1.5 x 2): the idlest, whatever matches.
    assert r.choose([Fake(9), Fake(9), Fake(2)], (10, 11, 12, 13, 14), 2560) == 2
    # Only the absolute gap is large, not the ratio (40 > 1.5 x 30 fails): still by cache.
    assert r.choose([Fake(30), Fake(40), Fake(35)], (10, 11, 12, 13), 2048) in (1, 2)
    assert r.reasons == {"balance": 1, "prefix": 2, "low_match": 2}


# ------------------------------------------------------------------ the cluster against the lab

def test_one_replica_round_robin_equals_the_lab():
    base = dict(window_start_min=20, window_minutes=1, max_num_batched_tokens=2048, max_num_seqs=256)
    c = ClusterConfig(replicas=1, router="round_robin", **base)
    got = cluster_simulate.simulate(c)
    cfg = lab_config.LabConfig(trace="mooncake_conv", **base)
    _t, want, m, _stm, _blocks = lab_workload.run_once(cfg, 1.0, DEFAULTS["H100"])
    assert got.first_token == want.first_token and got.finished == want.finished
    assert got.servers[0].engine.num_steps == want.num_steps
    assert got.servers[0].engine.prefix_cache_hits == want.prefix_cache_hits > 0
    assert cluster_simulate.metrics(c, got)["slo_attainment"] == m["slo_attainment"]


def test_disaggregated_ttft_is_prefill_alone_with_an_infinite_link_and_room():
    # Requests far apart: every replica idle when one comes. Its TTFT is the time one
    # idle replica takes to prefill it; with no link time its decode starts at once,
    # so its whole latency is that of the same request alone on one replica.
    # Prompts that share nothing, so no prefix-cache hit shortens a prefill.
    fresh, seen = [], set()
    for r in traces.requests(traces.load("mooncake_conv"), 5, 2, 1.0):
        if not seen & set(r.hash_ids) and len(fresh) < 12:
            fresh.append(r)
        seen.update(r.hash_ids)
    reqs = [replace(r, arrival_s=300.0 * i) for i, r in enumerate(fresh)]
    c = ClusterConfig(layout="disaggregated", prefill_replicas=2, decode_replicas=2, router="round_robin")
    got = cluster_simulate.simulate(c, reqs, link_bytes_per_s=math.inf)
    cfg, stm, blocks = _setup()
    for i, r in enumerate(reqs):
        alone = replay([0.0], [r.num_prompt_tokens], [1], cfg, stm, blocks)
        assert got.first_token[i] - r.arrival_s == pytest.approx(alone.first_token[0], rel=1e-12)
        assert got.transfer_s[i] == 0.0
        assert got.decode_of[i] >= 0
    # And with a real link the first token is the same; only the rest moves later.
    slow = cluster_simulate.simulate(replace(c, kv_link="pcie"), reqs)
    assert slow.first_token == got.first_token
    assert all(s >= g for s, g in zip(slow.finished, got.finished))
    assert all(t > 0 for t in slow.transfer_s)


def test_more_replicas_spread_the_load_and_cache_aware_reuses_more():
    c = ClusterConfig(window_start_min=12, window_minutes=2)
    views = {r: cluster_view.cluster_view(replace(c, router=r), []) for r in cluster_config.ROUTERS}
    rr = views["round_robin"]
    n = rr["summary"]["completed"]
    assert [x["requests"] for x in rr["replicas"]] == [-(-(n - i) // 4) for i in range(4)]  # in turn
    assert views["cache_aware"]["prefix_cache"]["hit_rate"] > rr["prefix_cache"]["hit_rate"]
    for v in views.values():
        assert v["summary"]["goodput_per_gpu"] == pytest.approx(v["summary"]["request_goodput"] / 4)
        assert len(v["series"]["replicas"]) == 4 and len(v["series"]["t_s"]) == cluster_view.NUM_BINS


def test_config_bounds_are_named():
    with pytest.raises(ConfigError) as err:
        ClusterConfig(layout="disaggregated", prefill_replicas=10, decode_replicas=8).check()
    assert err.value.field == "decode_replicas" and "from 1 to 6" in err.value.message
    with pytest.raises(ConfigError) as err:
        ClusterConfig(trace="mooncake_synth", window_start_min=15, window_minutes=5).check()
    assert err.value.field == "window_start_min" and "17 whole minutes" in err.value.message


def test_sweep_point_runs_both_layouts():
    v = cluster_sweep.sweep_view(SweepConfig(window_minutes=1, gpus=3, sweep_exact=True), [])
    assert v["gpus"] == 3
    d = v["disaggregated"]
    assert d["prefill_replicas"] + d["decode_replicas"] == 3 and d["prefill_replicas"] >= 1
    for k in ("colocated", "disaggregated"):
        assert v[k]["meets"] == (v[k]["slo_attainment"] >= cluster_sweep.ATTAINMENT_TARGET)
        assert v[k]["stopped"] is None
    # The page's words for the sweep's rule carry the target, from here.
    assert "90% of requests meet both targets" in cluster_sweep.SWEEP_SENTENCE
    assert "from 2 to 16" in cluster_sweep.SWEEP_SENTENCE and "at least 90%" in cluster_sweep.SWEEP_CAPTION
    with pytest.raises(ConfigError) as err:
        SweepConfig(gpus=1).check()
    assert err.value.field == "gpus"


def full_sweep(config: ClusterConfig) -> dict:
    """The sweep as the page ran it before: both layouts at every count in order, every
    run to its end, until both layouts have met the target."""
    reqs, first = cluster_config.window(config), {}
    for g in cluster_sweep.SWEEP_GPUS:
        p = cluster_sweep.sweep_point(config, reqs, g, exact=True)
        for k in cluster_sweep.LAYOUTS:
            assert p[k]["stopped"] is None
            if p[k]["meets"]:
                first.setdefault(k, g)
        if len(first) == 2:
            break
    return {k: first.get(k) for k in cluster_sweep.LAYOUTS}


# The page's defaults (no count meets the target), and traffic at a quarter of the rate with
# a looser TTFT target (the layouts meet at different counts, one before the other).
@pytest.mark.parametrize("settings", [{}, {"rate_scale": 0.25, "slo_ttft_ms": 4000.0}])
def test_fast_sweep_equals_the_full_sweep(settings):
    config = ClusterConfig(**settings)
    fast = cluster_sweep.fewest_gpus(config)
    answer = fast["answer"]
    assert {k: answer[k] for k in cluster_sweep.LAYOUTS} == full_sweep(config)
    assert answer["complete"] and answer["next"] is None
    if not settings:
        assert answer["colocated"] is None and answer["disaggregated"] is None
        last = fast["points"][-1]
        assert last["gpus"] == cluster_sweep.SWEEP_GPUS[-1]
        for k in cluster_sweep.LAYOUTS:  # the largest count ran to the end: what would pass there
            assert last[k]["stopped"] is None and last[k]["pass_ttft_ms"] > config.slo_ttft_ms
            assert f"a TTFT target of {last[k]['pass_ttft_ms']:,.0f} ms" in answer["sentence"]
    else:
        assert answer["colocated"] is not None and answer["disaggregated"] is not None


def test_a_stopped_run_was_surely_short_and_a_run_let_through_is_unchanged():
    config = ClusterConfig(window_minutes=1)
    reqs = cluster_config.window(config)
    late = cluster_sweep.surely_late(config, reqs)
    c = replace(config, replicas=4)
    full = cluster_simulate.metrics(c, cluster_simulate.simulate(c, reqs))
    assert full["slo_attainment"] < cluster_sweep.ATTAINMENT_TARGET
    with pytest.raises(cluster_watch.Doomed) as stop:
        cluster_simulate.simulate(c, reqs, watch=cluster_watch.Watch(reqs, c.slo_ttft_ms, c.slo_tpot_ms, 0.9, late))
    assert full["completed"] - full["good"] >= stop.value.missed  # it counted only real misses
    # Every request surely late misses in the full run too.
    ttfts = [f - s for f, s in zip(*(lambda r: (r.first_token, r.sent))(cluster_simulate.simulate(replace(config, replicas=16), reqs)))]
    assert all(ttfts[i] > config.slo_ttft_ms / 1000 for i in late)
    # A watch with a target of 0 never stops: the run is the same as without it.
    r = cluster_simulate.simulate(c, reqs, watch=cluster_watch.Watch(reqs, c.slo_ttft_ms, c.slo_tpot_ms, 0.0, late))
    assert cluster_simulate.metrics(c, r)["ttft_ms"] == full["ttft_ms"]


def test_pass_ttft_is_the_lowest_target_that_meets():
    config = ClusterConfig(window_minutes=1, replicas=16)
    r = cluster_simulate.simulate(config, cluster_config.window(config))
    t = cluster_sweep.pass_ttft_ms(config, r)
    at = lambda ms: cluster_simulate.metrics(replace(config, slo_ttft_ms=ms), r)["slo_attainment"]  # noqa: E731
    assert at(t) >= cluster_sweep.ATTAINMENT_TARGET > at(t - 1)


def test_the_page_sweep_one_call_per_count_gives_the_whole_sweep():
    # As the page asks, through the bridge's JSON: one call per count, the count in the
    # config and the points so far as the call's actions.
    config = {"window_minutes": 1, "rate_scale": 0.25, "slo_ttft_ms": 4000.0}
    whole = cluster_sweep.sweep_view(SweepConfig(**config), [])
    points, nxt = [], {"gpus": 2, "sweep_layouts": "both", "sweep_exact": False}
    while nxt:
        asked = {**config, "gpus": nxt["gpus"], "sweep_layouts": nxt["sweep_layouts"], "sweep_exact": nxt["sweep_exact"]}
        answer = json.loads(bridge.call("cluster_sweep", json.dumps({"config": asked, "actions": points})))
        assert answer["ok"], answer
        v = answer["result"]
        answer = v.pop("answer")
        points.append(v)
        nxt = answer["next"]
    assert answer == whole["answer"] and points == whole["points"]


@pytest.mark.parametrize("config, actions, words", [
    ({"gpus": 3}, [{"gpus": 3}], "point 1: expected an object for 2 GPUs"),
    ({"gpus": 3}, [None], "point 1: expected an object for 2 GPUs"),
    ({"gpus": 3}, [{"gpus": 2, "colocated": {"meets": "yes"}}], "point 1: 'colocated' should hold 'meets'"),
    ({"gpus": 3}, [{"gpus": 2, "colocated": {"meets": True, "slo_attainment": 2}}], "'slo_attainment' from 0 to 1"),
    # A count that meets ran to its end: it has its attainment (a crafted null broke the sentence).
    ({"gpus": 3}, [{"gpus": 2, "colocated": {"meets": True, "slo_attainment": None, "attainment_at_most": 0.95}}],
     "if it meets, 'slo_attainment' from 0 to 1"),
    ({"gpus": 3}, [{"gpus": 2, "disaggregated": {"meets": False, "attainment_at_most": 0.5}}],
     "'prefill_replicas' and 'decode_replicas' from 1 to 16"),
    ({"gpus": 3}, [{"gpus": g} for g in cluster_sweep.SWEEP_GPUS], "fewer than 9 sweep points"),
    ({}, [{"gpus": 2}], "the whole sweep (gpus 0) takes no points"),
])
def test_the_sweeps_points_are_its_actions_and_checked_there(config, actions, words):
    payload = {"config": {"window_minutes": 1, **config}, "actions": actions}
    answer = json.loads(bridge.call("cluster_sweep", json.dumps(payload)))
    assert not answer["ok"] and answer["error"]["field"] == "actions" and words in answer["error"]["message"], answer
    # Not a setting any more: a config that names it is refused as it would be anywhere.
    answer = json.loads(bridge.call("cluster_sweep", json.dumps({"config": {"swept": []}})))
    assert answer["error"]["field"] == "swept" and "unknown setting" in answer["error"]["message"]


def test_first_token_floor_is_a_lone_replay():
    # A request with no prefix seen before: its floor is its first token on an idle
    # replica, as the engine and the step model give it.
    c = ClusterConfig(max_num_batched_tokens=2048, max_num_seqs=256)
    reqs = traces.requests(traces.load("mooncake_conv"), 0, 1, 1.0)[:1]
    cfg, stm, blocks = _setup(budget=2048, seqs=256)
    alone = replay([0.0], [reqs[0].num_prompt_tokens], [2], cfg, stm, blocks)
    assert cluster_sweep.first_token_floors(c, reqs) == [pytest.approx(alone.first_token[0], rel=1e-12)]
    # A looser target can only let more requests through.
    many = cluster_config.window(ClusterConfig(window_minutes=1))
    tight, loose = (cluster_sweep.ttft_ceiling(ClusterConfig(slo_ttft_ms=t), many) for t in (500.0, 5000.0))
    assert 0 < tight < loose <= 1


def test_the_lab_replays_mooncake_with_prefix_caching():
    on = lab_view.run(lab_config.LabConfig(trace="mooncake_conv", window_minutes=1, window_start_min=30), [])
    pc = on["prefix_cache"]
    assert pc["metric_names"] == {"queries": "vllm:prefix_cache_queries", "hits": "vllm:prefix_cache_hits"}
    assert 0 < pc["hits"] < pc["queries"] and pc["hit_rate"] == pc["hits"] / pc["queries"]
    assert "Prefix caching on" in on["hardware"]["sentence"]
    off = lab_view.run(lab_config.LabConfig(trace="conv", window_minutes=1), [])
    assert off["prefix_cache"] is None and "Prefix caching off" in off["hardware"]["sentence"]


def test_cli_cluster_sweep_whole_and_one_count(capsys):
    from pysim.__main__ import main

    assert main(["cluster-sweep", "--set", "window_minutes=1"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("2 GPUs: ") and out[-1].startswith("The fewest GPUs that meet the target: ")
    assert out[-2].startswith("16 GPUs: colocated ")  # nothing meets on this window: every count swept
    assert main(["cluster-sweep", "--set", "window_minutes=1", "--set", "gpus=3", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["gpus"] == 3 and "points" not in view and set(cluster_sweep.LAYOUTS) <= set(view)
    assert view["answer"] is None  # 3 GPUs follow the sweep's first count, not given here
    # The count after the first, with the first as the call's action (a JSON list): the answer so far.
    assert main(["cluster-sweep", "--set", "window_minutes=1", "--set", "gpus=2", "--json"]) == 0
    first = {k: v for k, v in json.loads(capsys.readouterr().out).items() if k != "answer"}
    assert main(["cluster-sweep", "--set", "window_minutes=1", "--set", "gpus=3", "--json",
                 "--actions", json.dumps([first])]) == 0
    assert json.loads(capsys.readouterr().out)["answer"]["done"] == 2


def test_a_count_ruled_out_by_the_bound_alone_replays_nothing():
    # The last window of the trace holds so many prompts no GPU prefills in time that
    # they alone keep every count under 90%: each point says so without a replay.
    config = ClusterConfig(window_minutes=1, window_start_min=55)
    late = cluster_sweep.surely_late(config, cluster_config.window(config))
    p = cluster_sweep.sweep_point(config, cluster_config.window(config), 4)
    for k in cluster_sweep.LAYOUTS:
        assert p[k]["stopped"]["replayed"] is False and p[k]["stopped"]["missed"] <= len(late)
        assert p[k]["attainment_at_most"] < cluster_sweep.ATTAINMENT_TARGET
    whole = cluster_sweep.sweep_view(SweepConfig(window_minutes=1, window_start_min=55), [])
    assert whole["answer"]["complete"] and whole["answer"]["colocated"] is None
