"""Simulation 2, the KV-cache block manager: focused rules, the walk-through, properties."""

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from pysim import bridge
from pysim.sims import paged_kv_cache
from pysim.__main__ import main
from pysim.config import ConfigError, from_mapping
from pysim.sims.paged_kv_cache import PagedKVCacheConfig, simulate

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
# Block 0 is vLLM's null block, so the 24-block pool hands out blocks 1..23. A token
# sampled by a gen has no KV slot until the next gen writes it (vLLM's timing).

def test_walkthrough_caching_on_b_shares_two_blocks():
    v, r = state(cfg(), ["admit", "admit"])
    # A: 11 tokens -> blocks 1,2,3 (1 and 2 hold the system prompt, 3 is A's own).
    # B: 10 tokens; hit capped at 9 tokens -> 2 whole blocks (1, 2); rest in new block 4.
    assert r["A"]["block_table"] == [1, 2, 3]
    assert r["B"]["block_table"] == [1, 2, 4]
    assert [v["blocks"][b]["ref_count"] for b in (1, 2, 3, 4)] == [2, 2, 1, 1]
    assert v["blocks"][1]["owners"] == ["A", "B"]
    assert r["B"]["skipped_by_cache"] == 8 and r["B"]["prefilled"] == 2
    assert "B admitted (prompt, 10 tokens): 2 blocks from cache, prefill skips 8 tokens" in v["log"][1]
    assert v["counters"]["blocks_saved_by_caching"] == 2
    assert v["counters"]["prefill_tokens_skipped"] == 8
    assert v["blocks"][1]["tokens"] == ["you", "are", "a", "helpful"]
    assert v["blocks"][2]["parent_hash"] == v["blocks"][1]["hash"]
    assert v["blocks"][1]["parent_hash"] == "root"
    assert v["blocks"][3]["hash"] is None  # A's third block holds 3 tokens: not full
    null = v["blocks"][0]
    assert null["state"] == "null" and null["ref_count"] == 0 and null["tokens"] == []
    assert v["pool"]["usable"] == 23 and "null block" in v["pool"]["null_block_why"]


def test_walkthrough_caching_off_b_gets_its_own_copies():
    v, r = state(cfg(enable_prefix_caching=False), ["admit", "admit"])
    assert r["B"]["block_table"] == [4, 5, 6]
    assert all(b["ref_count"] <= 1 and b["hash"] is None for b in v["blocks"])
    assert r["B"]["skipped_by_cache"] == 0 and r["B"]["prefilled"] == 10
    assert v["counters"]["blocks_saved_by_caching"] == 0


def test_a_sampled_token_is_pending_until_the_next_gen_writes_it():
    # admit A (11 tokens, kv 11), gen 1: A samples a1 but nothing is written: its
    # prefill sampled, so this gen allocates nothing. gen 2 writes a1 at position 11
    # (block 3 becomes full and, with caching on, hashed) and samples a2, whose slot,
    # position 12, is the first of a block A does not hold yet.
    v, r = state(cfg(), ["admit", "gen"])
    a = r["A"]
    assert a["generated"] == ["a1"] and a["pending_token"] == "a1"
    assert a["num_computed_tokens"] == 11 and a["num_tokens"] == 12
    assert a["block_table"] == [1, 2, 3] and not a["pending_needs_block"]
    assert v["blocks"][3]["pending"] == ["A"] and v["blocks"][3]["hash"] is None
    assert v["blocks"][3]["tokens"] == ["explain", "kv", "caching"]
    v, r = state(cfg(), ["admit", "gen", "gen"])
    a = r["A"]
    assert a["pending_token"] == "a2" and a["num_computed_tokens"] == 12
    assert a["block_table"] == [1, 2, 3] and a["pending_needs_block"]
    assert v["blocks"][3]["tokens"] == ["explain", "kv", "caching", "a1"]
    assert v["blocks"][3]["hash"] is not None and v["blocks"][3]["pending"] == []
    # gen 3 writes a2 into a new block, the head of the free queue.
    v, r = state(cfg(), ["admit", "gen", "gen", "gen"])
    assert r["A"]["block_table"] == [1, 2, 3, 4] and v["blocks"][4]["tokens"] == ["a2"]
    assert "A writes its last token into new block 4" in v["log"][-1]


def test_walkthrough_caching_off_runs_out_and_e_preempts_itself():
    # By hand, caching off, 23 usable blocks of 4. kv = tokens written; a gen first
    # writes each request's pending token (a new block when its position is a
    # multiple of 4), then samples one; a request admitted since the last gen only samples.
    #   admit A (11: blocks 1-3)  gen1 A samples
    #   admit B (10: 4-6)         gen2 A12, B samples
    #   admit C (12: 7-9)         gen3 A13 -> 10, B11, C samples
    #   admit D (13: 11-14)       gen4 A14, B12, C13 -> 15, D samples
    #   admit E (14: 16-19)       gen5 A15, B13 -> 20, C14, D14, E samples      (21 used)
    #   gen6 A16, B14, C15, D15, E15
    #   gen7 A17 -> 21, B15, C16, D16, E16                                    (22 used)
    #   gen8 A18, B16, C17 -> 22, D17 -> 23, then E17 needs a block, the pool is empty:
    #        the latest admitted of the running is E itself, so E preempts itself (frees its
    #        4 blocks) and keeps e1-e3. A (8 answers) and C (6) finish at the end of gen8.
    v7, r7 = state(cfg(enable_prefix_caching=False), ALT + ["gen", "gen"])
    assert v7["free_queue"] == [22, 23] and v7["counters"]["preemptions"] == 0
    v, r = state(cfg(enable_prefix_caching=False), ALT + ["gen", "gen", "gen"])
    assert v["counters"]["preemptions"] == 1 and v["step"] == 8
    assert r["E"]["status"] == "preempted" and r["E"]["preemptions"] == 1
    assert r["E"]["generated"] == ["e1", "e2", "e3"] and r["E"]["block_table"] == []
    assert r["D"]["block_table"] == [11, 12, 13, 14, 23]
    assert r["B"]["block_table"] == [4, 5, 6, 20]
    assert r["A"]["status"] == r["C"]["status"] == "finished"
    assert v["waiting"] == ["E"] and r["E"]["queue_position"] == 0
    assert any(line.startswith("out of blocks: E needs a block, preempt itself") for line in v["log"])
    # Same actions with caching on: A, B, C and E share the system prompt (6 blocks
    # saved), so the pool never runs out.
    von, ron = state(cfg(), ALT + ["gen", "gen", "gen"])
    assert von["counters"]["preemptions"] == 0
    assert von["counters"]["blocks_saved_by_caching"] == 6
    assert von["counters"]["prefill_tokens_skipped"] == 24


def test_counting_blocks_saved_on_a_full_run():
    # run admits all five at once (3+3+3+4+4 = 17 blocks even without sharing), then
    # generates; nobody is preempted. A request's last token never gets a slot, so
    # without caching each allocates ceil((prompt + answer - 1) / 4) blocks:
    # A 18 -> 5, B 19 -> 5, C 17 -> 5, D 24 -> 6, E 22 -> 6, total 27. With caching B, C
    # and E each reuse A's 2 system-prompt blocks: 6 saved, 27 - 6 = 21 allocations,
    # 3 x 8 = 24 prefill tokens skipped.
    off, _ = state(cfg(enable_prefix_caching=False), ["run"])
    on, r = state(cfg(), ["run"])
    assert off["next_actions"]["done"] and on["next_actions"]["done"]
    assert all(x["status"] == "finished" for x in r.values())
    assert off["counters"]["preemptions"] == on["counters"]["preemptions"] == 0
    assert off["counters"]["allocations"] == 27 and on["counters"]["allocations"] == 21
    assert on["counters"]["blocks_saved_by_caching"] == 6
    assert on["counters"]["prefill_tokens_skipped"] == 24
    assert on["step"] == off["step"] == 12  # D, admitted first time, needs 12 gens
    # Cached = full blocks of written KV: A 18 -> 4, B 19 -> 4, C 17 -> 4, D 24 -> 6,
    # E 22 -> 5, 23 in all, less the 6 shared copies B, C and E never made: 17.
    assert on["pool"]["cached"] == 17


# --- focused rules ---------------------------------------------------------------------

def test_finished_request_hashed_blocks_to_tail_last_first_partial_to_head():
    # A alone: 11 prompt tokens; gen 1 samples a1, gens 2-8 write a1..a7 and sample up to
    # a8, which never gets a slot. 18 tokens in blocks 1..5: 1-4 full (hashed), block 5
    # holds a6, a7. Freed reversed [5,4,3,2,1]: 5 to the head; 4,3,2,1 to the tail.
    v, r = state(cfg(), ["admit"] + ["gen"] * 8)
    assert r["A"]["status"] == "finished"
    assert v["free_queue"] == [5] + list(range(6, 24)) + [4, 3, 2, 1]
    assert [v["blocks"][b]["state"] for b in range(6)] == ["null"] + ["cached"] * 4 + ["free"]
    assert v["blocks"][1]["free_queue_position"] == 22
    assert v["blocks"][4]["tokens"] == ["a2", "a3", "a4", "a5"]  # cached content stays visible
    assert v["blocks"][5]["tokens"] == []


def test_cache_hit_takes_a_free_block_out_of_the_queue_and_handing_out_evicts():
    # 4 usable blocks of 2. P "x y z" answers 2: [x y] in block 1 (hashed), z in 2.
    # gen 1 samples p1; gen 2 writes p1 (block 2 = [z p1] full, hashed), samples p2 and
    # P finishes: reversed [2, 1], both hashed, to the tail: queue [3, 4, 2, 1].
    config = cfg(num_gpu_blocks=5, block_size=2, requests=[req("P", "x y z", 2), req("Q", "x y w", 1),
                                                         req("R", "k l m n o p", 1)])
    v, r = state(config, ["admit", "gen", "gen"])
    assert v["free_queue"] == [3, 4, 2, 1]
    # Q hits block 1 (cap 2 tokens), which leaves the queue; w goes to the head, 3.
    v, r = state(config, ["admit", "gen", "gen", "admit"])
    assert r["Q"]["block_table"] == [1, 3] and v["free_queue"] == [4, 2]
    assert v["blocks"][1]["ref_count"] == 1 and v["blocks"][1]["free_queue_position"] is None
    # gen: Q samples q1 and finishes (its last token gets no slot): block 3 holds only
    # w, unhashed, to the head; block 1 to the tail: [3, 4, 2, 1]. R (6 tokens, no hit)
    # takes 3, 4 and 2 from the head, evicting block 2's hash.
    v, r = state(config, ["admit", "gen", "gen", "admit", "gen"])
    assert v["free_queue"] == [3, 4, 2, 1]
    v, r = state(config, ["admit", "gen", "gen", "admit", "gen", "admit"])
    assert r["R"]["block_table"] == [3, 4, 2]
    assert v["counters"]["evictions"] == 1
    assert v["blocks"][2]["tokens"] == ["o", "p"] and v["blocks"][1]["state"] == "cached"
    assert "evicting 1 cached block" in v["log"][-1]


def test_fully_cached_two_block_prompt_computes_its_second_block_again():
    config = cfg(requests=[req("X", "a b c d e f g h", 3), req("Y", "a b c d e f g h", 3)])
    v, r = state(config, ["admit", "admit"])
    # Both of X's blocks (1, 2) are cached, but Y's hit is capped at 7 tokens -> 1 block.
    assert r["Y"]["block_table"] == [1, 3] and r["Y"]["skipped_by_cache"] == 4
    assert v["blocks"][3]["hash"] == v["blocks"][2]["hash"]  # duplicate entry, no de-dup
    assert v["blocks"][1]["ref_count"] == 2 and v["blocks"][2]["ref_count"] == 1
    assert "1 block from cache, prefill skips 4 tokens and computes 4 into 1 new block" in v["log"][-1]


def test_preemption_picks_the_newest_running_request():
    # Caching off, 4 usable blocks of 2. P, Q, R (2-token prompts) take blocks 1, 2, 3.
    # gen 1: all three only sample. gen 2: P writes p1 at position 2 -> block 4; Q needs
    # a block for q1, none free -> preempt R (the newest, not Q itself, not P); Q takes
    # R's block 3; R produces nothing but keeps r1.
    config = cfg(num_gpu_blocks=5, block_size=2, enable_prefix_caching=False,
                 requests=[req("P", "a b", 3), req("Q", "c d", 3), req("R", "e f", 3),
                           req("S", "g h", 3)])
    v, r = state(config, ["admit", "admit", "admit", "gen", "gen"])
    assert r["R"]["status"] == "preempted" and r["R"]["generated"] == ["r1"]
    assert r["P"]["block_table"] == [1, 4] and r["Q"]["block_table"] == [2, 3]
    assert v["waiting"] == ["R", "S"]  # back at the front of the queue
    assert v["running"] == ["P", "Q"]


def test_a_request_can_preempt_itself():
    # 3 usable blocks of 2, caching off. P "a" (1 token) in block 1, Q (4 tokens) in 2, 3.
    # gen 1: both sample. gen 2: P writes p1 at position 1, still block 1. Q needs a
    # 3rd block for q1, none is free, and Q is the newest running request: it preempts
    # itself and produces nothing; its blocks go to the head, last first: [3, 2].
    config = cfg(num_gpu_blocks=4, block_size=2, enable_prefix_caching=False,
                 requests=[req("P", "a", 3), req("Q", "c d e f", 2)])
    v, r = state(config, ["admit", "admit", "gen", "gen"])
    assert r["Q"]["status"] == "preempted" and r["Q"]["generated"] == ["q1"]
    assert r["P"]["generated"] == ["p1", "p2"] and v["free_queue"] == [3, 2]
    assert v["log"][-1].startswith("out of blocks: Q needs a block, preempt itself")
    # The other way round, P needing a block preempts Q and takes Q's last block.
    config = cfg(num_gpu_blocks=4, block_size=2, enable_prefix_caching=False,
                 requests=[req("P", "a b", 3), req("Q", "c d e f", 2)])
    v, r = state(config, ["admit", "admit", "gen", "gen"])
    assert r["Q"]["status"] == "preempted" and r["P"]["block_table"] == [1, 3]


def test_preempted_request_readmitted_with_caching_reuses_what_survived():
    # Caching on, 5 usable blocks of 2. P "a b c" -> 1,2; Q "d e f" -> 3,4; free [5].
    # gen1: both sample. gen2: P writes p1 (block 2 full, hashed), Q writes q1 (block 4
    #       full, hashed). gen3: P takes 5 for p2; Q needs a block for q2, none free ->
    #       preempts itself: frees [4, 3] (both hashed) to the tail: queue [4, 3].
    # gen4: P writes p3 (block 5 full, hashed), samples p4 and finishes: [5, 2, 1] to
    #       the tail: queue [4, 3, 5, 2, 1].
    # admit Q: tokens d e f q1 q2; hit cap 4 tokens -> 2 blocks, 3 ([d e]) and 4
    #       ([f q1]), both survived. Needs 1 new + 2 free hits = 3 <= 5 free; the new
    #       block is 5 (the head once 4 and 3 leave), whose stale hash is evicted.
    config = cfg(num_gpu_blocks=6, block_size=2,
                 requests=[req("P", "a b c", 4), req("Q", "d e f", 4)])
    v, r = state(config, ["admit", "admit", "gen", "gen", "gen"])
    assert r["Q"]["status"] == "preempted" and v["free_queue"] == [4, 3]
    v, r = state(config, ["admit", "admit", "gen", "gen", "gen", "gen", "admit"])
    assert r["Q"]["status"] == "running" and r["Q"]["block_table"] == [3, 4, 5]
    assert r["Q"]["skipped_by_cache"] == 4 and r["Q"]["prefilled"] == 3 + 1
    assert v["counters"]["evictions"] == 1
    assert "Q re-admitted (prompt + 2 generated, 5 tokens): 2 blocks from cache" in v["log"][-1]


def test_admission_that_does_not_fit_stays_waiting_with_the_reason():
    # 5 usable blocks: A (9 tokens) takes 3, B (9 tokens) needs 3 of the 2 left.
    config = cfg(num_gpu_blocks=6, enable_prefix_caching=False,
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
    off, _ = state(cfg(num_gpu_blocks=6, enable_prefix_caching=False, requests=reqs), ["admit", "admit"])
    on, _ = state(cfg(num_gpu_blocks=6, requests=reqs), ["admit", "admit"])
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
    config = cfg(num_gpu_blocks=6, enable_prefix_caching=False,
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
    # 5 + 4 - 1 = 8 tokens of KV at most = 2 blocks; 2 blocks leave 1 usable.
    ({"num_gpu_blocks": 2, "requests": [req("A", "a b c d e", 4)]}, "needs 2 blocks"),
    ({"num_gpu_blocks": 1}, "from 2 to 4,096"),
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
    # At most prompt + answer - 1 tokens of KV each; + 1 block for the null block.
    need = max(-(-(len(r["prompt"]) + r["max_tokens"] - 1) // bs) for r in reqs)
    pool = 1 + need + draw(st.integers(0, 6))
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
                # Slots for the written KV only: the pending token has none yet.
                assert r.num_computed in (len(r.words), len(r.words) - 1)
                assert len(table) == -(-r.num_computed // bs)
            else:
                assert table == [] and r.num_computed == 0
            assert (r in sim.waiting) == (r.status in ("waiting", "preempted"))
            assert len(r.generated) <= r.max_tokens
            assert (r.status == "finished") == (len(r.generated) == r.max_tokens)
    v = paged_kv_cache.view(sim)
    json.dumps(v, allow_nan=False)
    assert v["pool"]["used"] + v["pool"]["num_free_blocks"] == config.num_gpu_blocks - 1
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
