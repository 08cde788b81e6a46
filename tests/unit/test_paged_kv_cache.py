"""Simulation 2, the KV-cache block manager: focused rules, the walk-through, properties."""

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from pysim import bridge, paged_kv_cache
from pysim.__main__ import main
from pysim.config import ConfigError, from_mapping
from pysim.paged_kv_cache import PagedKVCacheConfig, simulate

ALT = ["admit", "gen"] * 5  # the walk-through: alternate admit and gen for A..E


def cfg(**kw) -> PagedKVCacheConfig:
    return from_mapping(PagedKVCacheConfig, kw)


def req(name, prompt, answer):
    return {"name": name, "prompt": prompt.split(), "max_tokens": answer}


def state(config, actions):
    v = paged_kv_cache.run(config, actions)
    return v, {r["name"]: r for r in v["requests"]}


# --- defaults ----------------------------------------------------------------------

def test_default_requests_follow_the_spec():
    reqs = cfg().requests
    assert [r["name"] for r in reqs] == list("ABCDE")
    system = reqs[0]["prompt"][:8]
    for r in reqs:
        assert 10 <= len(r["prompt"]) <= 14 and 6 <= r["max_tokens"] <= 12
        assert (r["prompt"][:8] == system) == (r["name"] != "D")
    assert reqs[3]["prompt"][:4] != system[:4]  # D shares no block, not even the first
    c = cfg()
    assert (c.num_gpu_blocks, c.block_size, c.enable_prefix_caching) == (24, 4, True)


# --- the walk-through ------------------------------------------------------------------

def test_walkthrough_caching_on_b_shares_two_blocks():
    v, r = state(cfg(), ["admit", "admit"])
    # A: 11 tokens -> blocks 0,1,2 (0 and 1 hold the system prompt, 2 is A's own).
    # B: 10 tokens; hit capped at 9 tokens -> 2 whole blocks (0, 1); rest in new block 3.
    assert r["A"]["block_table"] == [0, 1, 2]
    assert r["B"]["block_table"] == [0, 1, 3]
    assert [v["blocks"][b]["ref_count"] for b in (0, 1, 2, 3)] == [2, 2, 1, 1]
    assert v["blocks"][0]["owners"] == ["A", "B"]
    assert r["B"]["skipped_by_cache"] == 8 and r["B"]["prefilled"] == 2
    assert "B admitted (prompt, 10 tokens): 2 blocks from cache, prefill skips 8 tokens" in v["log"][1]
    assert v["counters"]["blocks_saved_by_caching"] == 2
    assert v["counters"]["prefill_tokens_skipped"] == 8
    assert v["blocks"][0]["tokens"] == ["you", "are", "a", "helpful"]
    assert v["blocks"][1]["parent_hash"] == v["blocks"][0]["hash"]
    assert v["blocks"][0]["parent_hash"] == "root"
    assert v["blocks"][2]["hash"] is None  # A's third block holds 3 tokens: not full


def test_walkthrough_caching_off_b_gets_its_own_copies():
    v, r = state(cfg(enable_prefix_caching=False), ["admit", "admit"])
    assert r["B"]["block_table"] == [3, 4, 5]
    assert all(b["ref_count"] <= 1 and b["hash"] is None for b in v["blocks"])
    assert r["B"]["skipped_by_cache"] == 0 and r["B"]["prefilled"] == 10
    assert v["counters"]["blocks_saved_by_caching"] == 0


def test_walkthrough_caching_off_runs_out_and_preempts_e():
    # By hand, caching off, 24 blocks of 4 (tokens after each action; blocks = ceil/4):
    #   admit A (11: blocks 0-2)  gen1 A12
    #   admit B (10: 3-5)         gen2 A13 -> 6, B11
    #   admit C (12: 7-9)         gen3 A14, B12, C13 -> 10
    #   admit D (13: 11-14)       gen4 A15, B13 -> 15, C14, D14
    #   admit E (14: 16-19)       gen5 A16, B14, C15, D15, E15            (20 used)
    #   gen6 A17 -> 20, B15, C16, D16, E16                                  (21 used)
    #   gen7 A18, B16, C17 -> 21, D17 -> 22, E17 -> 23                      (24 used)
    #   gen8 A19; B17 needs a block, none free: preempt the newest, E (frees 5 blocks,
    #        last block 23 first at the head); B takes 23; C18, D18; E produces nothing.
    #        A (8 answers) and C (6) finish at the end of gen8.
    v7, r7 = state(cfg(enable_prefix_caching=False), ALT + ["gen", "gen"])
    assert v7["pool"]["num_free_blocks"] == 0 and v7["counters"]["preemptions"] == 0
    v, r = state(cfg(enable_prefix_caching=False), ALT + ["gen", "gen", "gen"])
    assert v["counters"]["preemptions"] == 1 and v["step"] == 8
    assert r["E"]["status"] == "preempted" and r["E"]["preemptions"] == 1
    assert r["E"]["generated"] == ["e1", "e2", "e3"] and r["E"]["block_table"] == []
    assert r["B"]["block_table"] == [3, 4, 5, 15, 23]
    assert r["A"]["status"] == r["C"]["status"] == "finished"
    assert v["waiting"] == ["E"] and r["E"]["queue_position"] == 0
    assert any(line.startswith("out of blocks: B needs a block, preempt E") for line in v["log"])
    # Same actions with caching on: A, B, C and E share the system prompt (6 blocks
    # saved), so the pool never runs out.
    von, ron = state(cfg(), ALT + ["gen", "gen", "gen"])
    assert von["counters"]["preemptions"] == 0
    assert von["counters"]["blocks_saved_by_caching"] == 6
    assert von["counters"]["prefill_tokens_skipped"] == 24


def test_counting_blocks_saved_on_a_full_run():
    # run admits all five at once (3+3+3+4+4 = 17 blocks even without sharing), then
    # generates; nobody is preempted. Without caching every request allocates
    # ceil((prompt + answer) / 4) blocks: A 19 -> 5, B 20 -> 5, C 18 -> 5, D 25 -> 7,
    # E 23 -> 6, total 28. With caching B, C and E each reuse A's 2 system-prompt
    # blocks: 6 blocks saved, 28 - 6 = 22 allocations, 3 x 8 = 24 prefill tokens skipped.
    off, _ = state(cfg(enable_prefix_caching=False), ["run"])
    on, r = state(cfg(), ["run"])
    assert off["next_actions"]["done"] and on["next_actions"]["done"]
    assert all(x["status"] == "finished" for x in r.values())
    assert off["counters"]["preemptions"] == on["counters"]["preemptions"] == 0
    assert off["counters"]["allocations"] == 28 and on["counters"]["allocations"] == 22
    assert on["counters"]["blocks_saved_by_caching"] == 6
    assert on["counters"]["prefill_tokens_skipped"] == 24
    assert on["step"] == off["step"] == 12  # D, admitted first time, needs 12 gens
    assert on["pool"]["cached"] == 18  # 28 - 6 - (partial last blocks of A..E: 4) = 18


# --- focused rules ---------------------------------------------------------------------

def test_finished_request_hashed_blocks_to_tail_last_first_partial_to_head():
    # A alone: 11 prompt + 8 answers = 19 tokens in blocks 0..4; 0-3 full (hashed),
    # block 4 holds 3 tokens. Freed reversed [4,3,2,1,0]: 4 to the head; 3,2,1,0 to the tail.
    v, r = state(cfg(), ["admit"] + ["gen"] * 8)
    assert r["A"]["status"] == "finished"
    assert v["free_queue"] == [4] + list(range(5, 24)) + [3, 2, 1, 0]
    assert [v["blocks"][b]["state"] for b in range(5)] == ["cached"] * 4 + ["free"]
    assert v["blocks"][0]["free_queue_position"] == 23
    assert v["blocks"][3]["tokens"] == ["a2", "a3", "a4", "a5"]  # cached content stays visible
    assert v["blocks"][4]["tokens"] == []


def test_cache_hit_takes_a_free_block_out_of_the_queue_and_handing_out_evicts():
    config = cfg(num_gpu_blocks=4, block_size=2, requests=[req("P", "x y z", 1), req("Q", "x y w", 1),
                                                         req("R", "k l m n o p", 1)])
    v, r = state(config, ["admit", "gen"])  # P: 4 tokens in 0,1 (both full), then finished
    assert v["free_queue"] == [2, 3, 1, 0]
    v, r = state(config, ["admit", "gen", "admit"])  # Q hits block 0 (cap 2 tokens)
    assert r["Q"]["block_table"] == [0, 2] and v["free_queue"] == [3, 1]
    assert v["blocks"][0]["ref_count"] == 1 and v["blocks"][0]["free_queue_position"] is None
    # Q's 4 tokens [x y w q1] fill block 2, so it is hashed too. Q finishes and frees
    # reversed [2, 0], both hashed, to the tail: queue [3, 1, 2, 0]. R (6 tokens, no
    # hit) takes 3, 1 and 2 from the head, evicting the hashes of 1 and 2.
    v, r = state(config, ["admit", "gen", "admit", "gen"])
    assert v["free_queue"] == [3, 1, 2, 0]
    v, r = state(config, ["admit", "gen", "admit", "gen", "admit"])
    assert r["R"]["block_table"] == [3, 1, 2]
    assert v["counters"]["evictions"] == 2
    assert v["blocks"][1]["tokens"] == ["m", "n"] and v["blocks"][0]["state"] == "cached"
    assert "evicting 2 cached blocks" in v["log"][-1]


def test_fully_cached_two_block_prompt_computes_its_second_block_again():
    config = cfg(requests=[req("X", "a b c d e f g h", 3), req("Y", "a b c d e f g h", 3)])
    v, r = state(config, ["admit", "admit"])
    # Both of X's blocks are cached, but Y's hit is capped at 7 tokens -> 1 block.
    assert r["Y"]["block_table"] == [0, 2] and r["Y"]["skipped_by_cache"] == 4
    assert v["blocks"][2]["hash"] == v["blocks"][1]["hash"]  # duplicate entry, no de-dup
    assert v["blocks"][0]["ref_count"] == 2 and v["blocks"][1]["ref_count"] == 1
    assert "1 block from cache, prefill skips 4 tokens and computes 4 into 1 new block" in v["log"][-1]


def test_preemption_picks_the_newest_running_request():
    # Caching off, 4 blocks of 2. P, Q, R (2-token prompts) take blocks 0, 1, 2.
    # gen: P grows to 3 tokens -> block 3; Q needs a block, none free -> preempt R
    # (the newest, not Q itself, not P); Q takes R's block 2; R produces nothing.
    config = cfg(num_gpu_blocks=4, block_size=2, enable_prefix_caching=False,
                 requests=[req("P", "a b", 3), req("Q", "c d", 3), req("R", "e f", 3),
                           req("S", "g h", 3)])
    v, r = state(config, ["admit", "admit", "admit", "gen"])
    assert r["R"]["status"] == "preempted" and r["R"]["generated"] == []
    assert r["P"]["block_table"] == [0, 3] and r["Q"]["block_table"] == [1, 2]
    assert v["waiting"] == ["R", "S"]  # back at the front of the queue
    assert v["running"] == ["P", "Q"]


def test_a_request_can_preempt_itself():
    # 3 blocks of 2, caching off. P "a" (1 token) in block 0, Q (4 tokens) in 1, 2.
    # gen: P grows to 2 tokens, still block 0. Q needs a 3rd block, none is free, and Q
    # is the newest running request: it preempts itself and produces nothing.
    config = cfg(num_gpu_blocks=3, block_size=2, enable_prefix_caching=False,
                 requests=[req("P", "a", 3), req("Q", "c d e f", 1)])
    v, r = state(config, ["admit", "admit", "gen"])
    assert r["Q"]["status"] == "preempted" and r["Q"]["generated"] == []
    assert r["P"]["generated"] == ["p1"] and v["free_queue"] == [2, 1]
    assert v["log"][-1].startswith("out of blocks: Q needs a block, preempt itself")
    # The other way round, P needing a block preempts Q and takes Q's last block.
    config = cfg(num_gpu_blocks=3, block_size=2, enable_prefix_caching=False,
                 requests=[req("P", "a b", 2), req("Q", "c d e f", 2)])
    v, r = state(config, ["admit", "admit", "gen"])
    assert r["Q"]["status"] == "preempted" and r["P"]["block_table"] == [0, 2]


def test_preempted_request_readmitted_with_caching_reuses_what_survived():
    # Caching on, 5 blocks of 2. P "a b c" -> 0,1; Q "d e f" -> 2,3; free [4].
    # gen1: P4 tokens (block 1 full, hashed), Q4 (block 3 hashed).
    # gen2: P takes 4; Q needs a block, none free -> preempts itself: frees [3, 2]
    #       (both hashed) to the tail: queue [3, 2]. Q keeps "q1".
    # admit Q: tokens d e f q1; hit cap 3 tokens -> 1 block: block 2 ([d e]) survived.
    #       Needs 1 new + 1 evictable hit = 2 <= 2 free; the new block is 3 (head),
    #       whose stale hash is evicted.
    config = cfg(num_gpu_blocks=5, block_size=2,
                 requests=[req("P", "a b c", 4), req("Q", "d e f", 4)])
    v, r = state(config, ["admit", "admit", "gen", "gen"])
    assert r["Q"]["status"] == "preempted" and v["free_queue"] == [3, 2]
    v, r = state(config, ["admit", "admit", "gen", "gen", "admit"])
    assert r["Q"]["status"] == "running" and r["Q"]["block_table"] == [2, 3]
    assert r["Q"]["skipped_by_cache"] == 2 and r["Q"]["prefilled"] == 3 + 2
    assert v["counters"]["evictions"] == 1
    assert "Q re-admitted (prompt + 1 generated, 4 tokens): 1 block from cache" in v["log"][-1]


def test_admission_that_does_not_fit_stays_waiting_with_the_reason():
    config = cfg(num_gpu_blocks=5, enable_prefix_caching=False,
                 requests=[req("A", "s s s s t t t t a", 3), req("B", "s s s s t t t t b", 3)])
    v, r = state(config, ["admit", "admit"])
    assert r["B"]["status"] == "waiting" and r["B"]["block_table"] == []
    assert v["log"][-1] == "B does not fit: needs 3 blocks, 2 free"
    assert v["counters"]["did_not_fit"] == 1 and v["next_actions"]["head_fits"] is False


def test_caching_can_need_more_allocations_when_it_lets_more_requests_in():
    # Why the "caching never allocates more" property needs a precondition: with caching
    # off B does not fit (3 blocks, 2 free) and allocates nothing; with caching on B
    # shares 2 blocks, fits, and allocates 1 block: 4 allocations against 3.
    reqs = [req("A", "s s s s t t t t a", 3), req("B", "s s s s t t t t b", 3)]
    off, _ = state(cfg(num_gpu_blocks=5, enable_prefix_caching=False, requests=reqs), ["admit", "admit"])
    on, _ = state(cfg(num_gpu_blocks=5, requests=reqs), ["admit", "admit"])
    assert (off["counters"]["allocations"], on["counters"]["allocations"]) == (3, 4)


def test_admit_by_name_and_no_op_actions_are_logged():
    v, r = state(cfg(), ["admit:C", "admit:C", "admit"])
    assert v["running"] == ["C", "A"]
    assert v["log"][1] == "admit C: it is running, not waiting"
    v, _ = state(cfg(requests=[req("A", "x", 1)]), ["run", "admit", "gen", "run"])
    assert v["log"][-3:] == ["admit: nothing is waiting", "gen: nothing is running",
                             "run: every request has finished"]
    assert v["next_actions"] == {"can_admit": False, "head": None, "head_needs_blocks": None,
                                 "head_fits": False, "admittable": [], "can_gen": False,
                                 "can_run": False, "done": True}


def test_run_waits_for_a_request_that_does_not_fit():
    config = cfg(num_gpu_blocks=5, enable_prefix_caching=False,
                 requests=[req("A", "s s s s t t t t a", 3), req("B", "s s s s t t t t b", 3)])
    v, r = state(config, ["run"])
    assert all(x["status"] == "finished" for x in r.values())
    assert "run: B waits, needs 3 blocks, 2 free" in v["log"]


# --- bad input -------------------------------------------------------------------------

@pytest.mark.parametrize("actions, needle", [
    (["jump"], "unknown action 'jump'"),
    (["admit:Z"], "NAME one of A, B, C, D, E"),
    ([3], "allowed actions"),
    (["gen"] * 2001, "at most 2,000"),
])
def test_bad_actions_raise_config_error(actions, needle):
    with pytest.raises(ConfigError) as e:
        paged_kv_cache.run(cfg(), actions)
    assert e.value.field == "actions" and needle in e.value.message


@pytest.mark.parametrize("raw, needle", [
    ({"requests": "not json"}, "JSON list"),
    ({"requests": []}, "1 to 64"),
    ({"requests": [{"name": "A", "prompt": "x"}]}, "exactly the keys"),
    ({"requests": [req("A:1", "x", 1)]}, "name must be"),
    ({"requests": [req("A", "x", 1), req("A", "y", 1)]}, "used twice"),
    ({"requests": [{"name": "A", "prompt": [], "max_tokens": 1}]}, "prompt must be"),
    ({"requests": [{"name": "A", "prompt": ["a b"], "max_tokens": 1}]}, "prompt must be"),
    ({"requests": [{"name": "A", "prompt": "x", "max_tokens": True}]}, "max_tokens"),
    ({"requests": [req("A", "x", 65)]}, "from 1 to 64"),
    ({"num_gpu_blocks": 2, "requests": [req("A", "a b c d e", 4)]}, "needs 3 blocks"),
    ({"num_gpu_blocks": 0}, "from 1 to 4,096"),
])
def test_bad_config_raises_config_error(raw, needle):
    with pytest.raises(ConfigError) as e:
        from_mapping(PagedKVCacheConfig, raw)
    assert needle in e.value.message


def test_requests_accept_json_text_and_prompt_strings():
    text = json.dumps([{"name": "X", "prompt": "hello there", "max_tokens": 2}])
    c = from_mapping(PagedKVCacheConfig, {"requests": text}, from_text=True)
    assert c.requests == [{"name": "X", "prompt": ["hello", "there"], "max_tokens": 2}]


# --- CLI and bridge --------------------------------------------------------------------

def test_cli_json_and_text(capsys):
    assert main(["paged_kv_cache", "--json", "--actions", "admit,admit,gen"]) == 0
    v = json.loads(capsys.readouterr().out)
    assert v["running"] == ["A", "B"] and v["step"] == 1 and v["actions_applied"] == 3
    assert main(["paged_kv_cache", "--set", "enable_prefix_caching=off", "--actions", "admit,admit"]) == 0
    out = capsys.readouterr().out
    assert "caching off" in out and "B does not fit" not in out and "free queue" in out
    req_json = json.dumps([{"name": "X", "prompt": "a b c", "max_tokens": 2}])
    assert main(["paged_kv_cache", "--set", f"requests={req_json}", "--actions", "run"]) == 0
    assert "X finished after 2 tokens" in capsys.readouterr().out
    assert main(["paged_kv_cache", "--actions", "fly"]) == 2
    assert "unknown action 'fly'" in capsys.readouterr().err


def test_bridge_round_trip_is_json():
    out = json.loads(bridge.call("paged_kv_cache", json.dumps({"actions": ["run"]})))
    assert out["ok"] and out["result"]["next_actions"]["done"]
    json.dumps(out["result"], allow_nan=False)
    bad = json.loads(bridge.call("paged_kv_cache", json.dumps({"config": {"block_size": 0}})))
    assert not bad["ok"] and bad["error"]["field"] == "block_size"


# --- properties --------------------------------------------------------------------------

WORDS = ["s", "t", "u"]  # a tiny vocabulary so prompts share prefixes often


@st.composite
def configs(draw):
    bs = draw(st.integers(1, 4))
    n = draw(st.integers(1, 4))
    reqs = [{"name": "ABCD"[i],
             "prompt": draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=9)),
             "max_tokens": draw(st.integers(1, 6))} for i in range(n)]
    need = max(-(-(len(r["prompt"]) + r["max_tokens"]) // bs) for r in reqs)
    pool = need + draw(st.integers(0, 6))
    return {"num_gpu_blocks": pool, "block_size": bs, "requests": reqs}


action_words = st.sampled_from(["admit", "admit", "gen", "gen", "gen", "run",
                                "admit:A", "admit:B", "admit:C", "admit:D"])


def _actions(raw_cfg, actions):
    names = {r["name"] for r in raw_cfg["requests"]}
    return [a for a in actions if not a.startswith("admit:") or a[6:] in names]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=configs(), caching=st.booleans(), actions=st.lists(action_words, max_size=30))
def test_pool_invariants_after_every_action(raw, caching, actions):
    config = from_mapping(PagedKVCacheConfig, {**raw, "enable_prefix_caching": caching})
    sim = simulate(config, [])
    bs = config.block_size
    for a in _actions(raw, actions):
        sim.apply(a)
        # Every block in exactly one place, ref == tables holding it, free queue ==
        # blocks with count 0, hash map agrees with block hashes, used + free = pool.
        sim.pool.check_invariants(sim.tables())
        assert set(sim.kv.tables()) == {r.name for r in sim.running}
        for r in sim.requests:
            table = sim.kv.block_table(r.name)
            if r.status == "running":
                assert len(table) == -(-len(r.words) // bs)
            else:
                assert table == []
            assert (r in sim.waiting) == (r.status in ("waiting", "preempted"))
            assert len(r.generated) <= r.max_tokens
            assert (r.status == "finished") == (len(r.generated) == r.max_tokens)
    v = paged_kv_cache.view(sim)
    json.dumps(v, allow_nan=False)
    assert v["pool"]["used"] + v["pool"]["num_free_blocks"] == config.num_gpu_blocks
    if "run" in actions:
        assert v["next_actions"]["done"]


@settings(max_examples=80, deadline=None)
@given(raw=configs(), actions=st.lists(action_words, max_size=30))
def test_caching_never_needs_more_allocations_for_the_same_work(raw, actions):
    actions = _actions(raw, actions)
    off = paged_kv_cache.run(from_mapping(PagedKVCacheConfig, {**raw, "enable_prefix_caching": False}), actions)
    on = paged_kv_cache.run(from_mapping(PagedKVCacheConfig, {**raw, "enable_prefix_caching": True}), actions)
    # Precondition (see test_caching_can_need_more_allocations_...): without caching,
    # every admission fitted and nothing was preempted, so both runs do the same work.
    assume(off["counters"]["did_not_fit"] == 0 and off["counters"]["preemptions"] == 0)
    assert on["counters"]["did_not_fit"] == 0 and on["counters"]["preemptions"] == 0
    assert [r["status"] for r in on["requests"]] == [r["status"] for r in off["requests"]]
    c_on, c_off = on["counters"], off["counters"]
    assert c_on["allocations"] <= c_off["allocations"]
    assert c_on["allocations"] + c_on["blocks_saved_by_caching"] == c_off["allocations"]


junk = st.one_of(st.none(), st.booleans(), st.integers(-5, 5000), st.text(max_size=8),
                 st.lists(st.integers(), max_size=2))


@settings(max_examples=100, deadline=None)
@given(raw=st.dictionaries(st.sampled_from(["num_gpu_blocks", "block_size", "enable_prefix_caching",
                                            "requests", "other"]), junk, max_size=4),
       actions=st.lists(st.one_of(action_words, junk), max_size=6))
def test_nothing_raises_but_config_errors(raw, actions):
    out = json.loads(bridge.call("paged_kv_cache", json.dumps({"config": raw, "actions": actions})))
    assert out["ok"] or not out["error"]["message"].startswith("internal error")
