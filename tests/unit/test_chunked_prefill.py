"""Simulation 3, the token budget (pysim.sims.chunked_prefill): step times, TTFT, the trade, the CLI.

Step time with the default model: t = 5 + 0.02 x decodes + 0.035 x prompt tokens (ms).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from pysim import bridge
from pysim.__main__ import main
from pysim.sims.chunked_prefill import (BUDGET_PRESETS, SCENARIOS, ChunkedPrefillConfig, Spec, clock, run,
                                        scenario_requests, simulate)
from pysim.timing.steptime import DEFAULTS, Coefficients, StepTimeModel
from pysim.config import ConfigError, from_mapping


def view_of(**settings_) -> dict:
    return run(from_mapping(ChunkedPrefillConfig, settings_), [])


# For working by hand: the chapter's step-time model on a made-up GPU with nothing to
# read and 35 us of arithmetic a token, plus 5 ms a step: t = 5 + 0.035 x tokens (ms).
HAND = StepTimeModel(weight_bytes=0, kv_bytes_per_token=0, bandwidth=1, flops_per_token=35,
                     attention_flops_per_pair=0, peak_flops=1_000_000,
                     coefficients=Coefficients(5.0, 0.0, 1.0, 1.0))


@pytest.mark.parametrize("budget, durations, ttft", [
    # one chunk:   5 + 0.035 x 4000 = 145
    (4000, [145.0], 145.0),
    # two chunks:  5 + 0.035 x 2000 = 75, twice: first token at 150
    (2000, [75.0, 75.0], 150.0),
    # three:       5 + 0.035 x 1500 = 57.5, twice, then 5 + 0.035 x 1000 = 40: 155
    (1500, [57.5, 57.5, 40.0], 155.0),
])
def test_long_prompt_step_times_and_ttft(budget, durations, ttft):
    # A 4,000-token prompt answering 3 tokens: after the chunks, two decode steps of
    # 5 + 0.035 x 1 = 5.035 ms each bring tokens 2 and 3.
    view = simulate([Spec("a", "a", 0, 4000, 3)], max_num_batched_tokens=budget, step_time=HAND)
    steps = view["steps"]
    assert [s["duration_ms"] for s in steps] == durations + [5.035, 5.035]
    assert [s["prefill_tokens"] for s in steps[:len(durations)]] == [budget] * (len(durations) - 1) \
        + [4000 - budget * (len(durations) - 1)]
    a = view["requests"][0]
    assert a["ttft_ms"] == view["summary"]["ttft_ms"]["a"] == ttft
    assert a["gaps_ms"] == [5.035, 5.035]
    assert a["finish_ms"] == view["summary"]["total_ms"] == (round(ttft * 1000) + 10070) / 1000
    # Each step starts where the previous one ended.
    for before, after in zip(steps, steps[1:]):
        assert round(after["start_ms"] * 1000) == round(before["start_ms"] * 1000) + round(before["duration_ms"] * 1000)


def test_arrival_during_a_step_waits_and_ttft_counts_from_arrival():
    # Step 0 [0, 145): A's 4,000-token prompt. B (100 tokens) arrives at 3 ms, during
    # step 0, so it starts in step 1 at 145: A's decode + B's 100 = 5 + 0.035 x 101 =
    # 8.535 ms, B's first token at 153.535, TTFT 150.535. Step 2: both decode and
    # finish, 5 + 0.07 = 5.07 ms: total 158.605.
    view = simulate([Spec("A", "A", 0, 4000, 3), Spec("B", "B", 3, 100, 2)], max_num_batched_tokens=4000,
                    step_time=HAND)
    assert [s["parts"] for s in view["steps"]] == [
        [["A", "prefill", 4000]], [["A", "decode", 1], ["B", "prefill", 100]],
        [["A", "decode", 1], ["B", "decode", 1]]]
    assert view["steps"][1]["arrived"] == ["B"] and view["steps"][1]["start_ms"] == 145.0
    assert view["summary"]["ttft_ms"] == {"A": 145.0, "B": 150.535}
    assert view["summary"]["total_ms"] == 158.605


def test_long_document_by_hand():
    # Six streams decode alone while the document has not arrived: steps of
    # 5 + 6 x 0.035 = 5.21 ms start at 0, 5.21, 10.42, 15.63; the document (arrival 20)
    # joins the step starting at 20.84.
    # Budget 16,384: 6 decodes + 16,000 prompt tokens in one step, 5 + 0.035 x 16,006 =
    # 565.21 ms: first token at 586.05, TTFT 566.05; the streams wait 565.21 ms.
    doc = scenario_requests("long_document")
    big = simulate(doc, max_num_batched_tokens=16384, step_time=HAND)
    assert [s["start_ms"] for s in big["steps"][:5]] == [0.0, 5.21, 10.42, 15.63, 20.84]
    assert big["steps"][4]["parts"][-1] == ["doc", "prefill", 16000]
    assert big["summary"]["ttft_ms"] == {"doc": 566.05}
    assert big["summary"]["itl_max_ms"] == 565.21
    # Budget 2,048: chunks of 2,048 - 6 = 2,042. Seven steps of 2,048 tokens take
    # 5 + 71.68 = 76.68 ms, the eighth (1,706 + 6) 5 + 59.92 = 64.92 ms:
    # first token at 20.84 + 7 x 76.68 + 64.92 = 622.52, TTFT 602.52; worst gap 76.68.
    small = simulate(doc, max_num_batched_tokens=2048, step_time=HAND)
    doc_chunks = [p[2] for s in small["steps"] for p in s["parts"] if p[0] == "doc" and p[1] == "prefill"]
    assert doc_chunks == [2042] * 7 + [1706]
    assert small["summary"]["ttft_ms"] == {"doc": 602.52}
    assert small["summary"]["itl_max_ms"] == 76.68


def test_steps_are_timed_by_the_serving_labs_clock():
    # The page's clock is the lab's (pysim.timing.steptime) for the GPU and model chosen: each
    # step pays its overheads plus the larger of its reading and computing times.
    view = view_of()
    stm = clock("H100", "llama-3.1-8b")
    assert view["model"]["coefficients"] == stm.coefficients.record()
    first = view["steps"][0]  # the six streams decode; their prompts are in the cache
    c = stm.coefficients
    # Each stream's context after the step: its prompt plus the token it decodes.
    context = sum(r["num_prompt_tokens"] + 1 for r in view["requests"] if r["streaming_at_start"])
    memory = (stm.weight_bytes + context * stm.kv_bytes_per_token) / stm.bandwidth / c.memory_efficiency
    assert first["duration_ms"] == pytest.approx(
        c.step_overhead_ms + 6 * c.request_overhead_us / 1e3 + memory * 1e3, abs=0.001)
    assert first["memory_ms"] > first["compute_ms"]  # decodes read more than they compute
    other = view_of(gpu="L40S", model="qwen3-8b")
    assert other["model"]["label"] == "Qwen3 8B on one L40S 48 GB"
    assert other["steps"][0]["duration_ms"] > first["duration_ms"]  # a quarter of the bandwidth


def test_long_document_trade_across_the_presets():
    # A larger budget: the document's first token comes sooner (or as soon), and the
    # users already streaming wait longer (or as long) for their worst token.
    rows = [view_of(max_num_batched_tokens=b)["summary"] for b in BUDGET_PRESETS]
    ttfts = [r["ttft_ms"]["doc"] for r in rows]
    itl_max = [r["itl_max_ms"] for r in rows]
    assert ttfts == sorted(ttfts, reverse=True)
    assert itl_max == sorted(itl_max)
    assert ttfts[0] > ttfts[-1] and itl_max[0] < itl_max[-1]  # and it is a real trade
    # The streams' own worst gap is what grows (not only the document's answer).
    stream_max = [max(g for r in view_of(max_num_batched_tokens=b)["requests"] if r["streaming_at_start"]
                      for g in r["gaps_ms"]) for b in BUDGET_PRESETS]
    assert stream_max == itl_max


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("budget", BUDGET_PRESETS)
def test_every_scenario_and_preset(scenario, budget):
    view = view_of(scenario=scenario, max_num_batched_tokens=budget)
    json.dumps(view, allow_nan=False)
    served = {r["id"]: 0 for r in view["requests"]}
    for s in view["steps"]:
        kinds = [p[1] for p in s["parts"]]
        assert kinds == sorted(kinds, key=lambda k: k != "decode")  # decodes first
        assert s["decode_tokens"] + s["prefill_tokens"] == sum(p[2] for p in s["parts"]) <= budget
        assert s["decode_tokens"] == kinds.count("decode")
        assert s["num_requests_running"] <= 128
        for rid, _, n in s["parts"]:
            served[rid] += n
    for r in view["requests"]:
        # Tokens conserved (no preemption in the presets): prompt + output - 1, and a
        # stream's prompt and first token came before step 0.
        assert r["preemptions"] == 0
        if r["streaming_at_start"]:
            assert served[r["id"]] == r["max_tokens"] - 1 == len(r["token_ms"])
            assert r["ttft_ms"] is None and r["id"] not in view["summary"]["ttft_ms"]
        else:
            assert served[r["id"]] == r["num_prompt_tokens"] + r["max_tokens"] - 1
            assert len(r["token_ms"]) == r["max_tokens"]
            assert r["ttft_ms"] == view["summary"]["ttft_ms"][r["id"]] > 0
        assert r["finish_ms"] == r["token_ms"][-1] <= view["summary"]["total_ms"]
        assert len(r["gaps_ms"]) == len(r["token_ms"]) - 1


def test_view_model_labels_and_presets():
    view = view_of()
    assert view["model"]["label"] == "Llama 3.1 8B on one H100 SXM 80 GB"
    h100 = DEFAULTS["H100"]  # the lab's clock, written as the page prints it (3 digits)
    assert view["model"]["formula"].startswith(
        f"t_step = {h100.step_overhead_ms:.3g} ms + {h100.request_overhead_us:.3g} µs × requests + max(")
    assert view["max_num_batched_tokens_presets"] == [512, 2048, 8192, 16384]
    assert [s["id"] for s in view["scenarios"]] == ["long_document", "burst_of_chats", "mixed"]
    assert view["scenario"]["id"] == "long_document"
    streams = [r for r in view["requests"] if r["streaming_at_start"]]
    assert len(streams) == 6 and all(r["arrival_ms"] == 0 for r in streams)
    doc = view["requests"][-1]
    assert (doc["id"], doc["arrival_ms"], doc["num_prompt_tokens"]) == ("doc", 20, 16000)
    # Deterministic.
    assert view_of() == view


def test_burst_of_chats_and_mixed_shapes():
    burst = scenario_requests("burst_of_chats")
    assert len(burst) == 24 and all(s.arrival_ms == 0 and 100 <= s.num_prompt_tokens <= 400
                                    for s in burst)
    mixed = scenario_requests("mixed")
    assert sum(s.streaming_at_start for s in mixed) == 4
    arrivals = [s.arrival_ms for s in mixed]
    assert arrivals == sorted(arrivals) and arrivals[-1] > 0


def test_prefix_caching_saves_the_shared_system_prompt():
    # The 24 chats share a 64-token system prompt = 4 blocks of 16. The first chat
    # computes it; every later chat hits those 4 blocks: 23 x 64 tokens saved.
    off = view_of(scenario="burst_of_chats")
    on = view_of(scenario="burst_of_chats", enable_prefix_caching=True)
    assert sum(r["cached_tokens"] for r in off["requests"]) == 0
    assert sum(r["cached_tokens"] for r in on["requests"]) == 23 * 64
    prefill = lambda v: sum(s["prefill_tokens"] for s in v["steps"])  # noqa: E731
    assert prefill(off) - prefill(on) == 23 * 64


def test_priority_policy_serves_chats_before_documents_in_mixed():
    fcfs = view_of(scenario="mixed", max_num_batched_tokens=512, policy="fcfs")
    prio = view_of(scenario="mixed", max_num_batched_tokens=512, policy="priority")
    chats = [r["id"] for r in fcfs["requests"] if r["id"].startswith("c")]
    worst = lambda v: max(v["summary"]["ttft_ms"][c] for c in chats)  # noqa: E731
    assert worst(prio) < worst(fcfs)  # 106.91 vs 225.75 ms: c11 and c12 jump the queue


# --- configuration and the command line --------------------------------------------------

@pytest.mark.parametrize("settings_, field, words", [
    # The document: 16,031 tokens = 1,002 blocks of 16, + 1 for vLLM's null block.
    ({"num_gpu_blocks": 500}, "num_gpu_blocks", "at least 1,003"),
    # vLLM's SchedulerConfig refuses a budget below max_num_seqs (128 by default).
    ({"max_num_batched_tokens": 64}, "max_num_batched_tokens", "max_num_batched_tokens >= max_num_seqs (128)"),
    ({"max_num_batched_tokens": 100, "max_num_seqs": 101}, "max_num_batched_tokens", "from 101 to 65,536"),
    ({"enable_chunked_prefill": False}, "max_num_batched_tokens", "at least 16,031"),
    ({"max_num_seqs": 5}, "max_num_seqs", "6 users streaming"),
    ({"max_num_batched_tokens": 63}, "max_num_batched_tokens", "from 64 to 65,536"),
    ({"scenario": "storm"}, "scenario", "long_document"),
])
def test_bad_settings_name_the_field(settings_, field, words):
    with pytest.raises(ConfigError) as err:
        from_mapping(ChunkedPrefillConfig, settings_)
    assert err.value.field == field and words in err.value.message
    answer = json.loads(bridge.call("chunked_prefill", json.dumps({"config": settings_})))
    assert answer["ok"] is False and answer["error"]["field"] == field


def test_chunked_prefill_off_with_a_budget_that_holds_the_document():
    # Budget 16,384, no chunking: at step 4 the 6 decodes leave 16,378 >= 16,000, so the
    # document goes in whole, as with chunking.
    view = view_of(enable_chunked_prefill=False, max_num_batched_tokens=16384)
    assert view["summary"]["ttft_ms"] == view_of(max_num_batched_tokens=16384)["summary"]["ttft_ms"]
    assert [p[2] for s in view["steps"] for p in s["parts"] if p[0] == "doc" and p[1] == "prefill"] == [16000]


def test_takes_no_actions():
    with pytest.raises(ConfigError):
        bridge.run("chunked_prefill", {"config": {}, "actions": ["step"]})


def test_cli_json_and_text(capsys):
    assert main(["chunked_prefill", "--json", "--set", "max_num_batched_tokens=2048", "--set", "scenario=long_document"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert set(view) >= {"requests", "steps", "summary", "model", "max_num_batched_tokens_presets", "scenarios"}
    assert view["summary"]["ttft_ms"] == view_of(max_num_batched_tokens=2048)["summary"]["ttft_ms"]
    assert {"arrival_ms", "num_prompt_tokens", "max_tokens", "streaming_at_start"} <= set(view["requests"][0])
    assert main(["chunked_prefill", "--set", "max_num_batched_tokens=16384"]) == 0
    out = capsys.readouterr().out
    ttft = view_of(max_num_batched_tokens=16384)["summary"]["ttft_ms"]["doc"]
    assert f"{ttft:.2f}" in out and "the serving lab's clock" in out
    assert main(["chunked_prefill", "--set", "num_gpu_blocks=10"]) == 2
    assert "num_gpu_blocks" in capsys.readouterr().err


@settings(max_examples=30, deadline=None)
@given(scenario=st.sampled_from(list(SCENARIOS)), budget=st.integers(64, 20_000),
       seqs=st.integers(6, 64), pool=st.integers(1003, 3000), caching=st.booleans(),
       policy=st.sampled_from(["fcfs", "priority"]))
def test_any_setting_finishes_within_budget(scenario, budget, seqs, pool, caching, policy):
    view = view_of(scenario=scenario, max_num_batched_tokens=budget, max_num_seqs=seqs, num_gpu_blocks=pool,
                   enable_prefix_caching=caching, policy=policy)
    for s in view["steps"]:
        assert 0 < s["decode_tokens"] + s["prefill_tokens"] <= budget
        assert s["num_requests_running"] <= seqs
    for r in view["requests"]:
        assert len(r["token_ms"]) == r["max_tokens"] - r["streaming_at_start"]
