"""The serving lab: traces, the step-time model, vLLM's metrics, the replay, capacity, CLI.

Every expectation is worked out by hand in the comment beside it, or compared with an
independent computation (the CSV itself, a hand-written replay loop, numpy).
"""

from __future__ import annotations

import csv
from dataclasses import replace
import json
from pathlib import Path

import pytest

from pysim import bridge
from pysim.sims.lab import (config as lab_config, sweep as lab_sweep, view as lab_view,
                            workload as lab_workload)
from pysim.traffic import slo, traces
from pysim.__main__ import main
from pysim.timing.catalog import GPUS, MODELS
from pysim.config import ConfigError, from_mapping
from pysim.engine.scheduler import SchedulerConfig
from pysim.engine.replay import engine_config, replay
from pysim.timing.steptime import DEFAULTS, Coefficients, StepTimeModel, num_gpu_blocks, step_time_model


def cfg(cls=lab_config.LabConfig, **kw) -> lab_config.LabConfig:
    return from_mapping(cls, kw)


# ===================================================================== traces

# Checked against the CSVs (AzureLLMInferenceTrace_{conv,code}.csv) and their README:
# rows, first and last rows (arrival offset in ms, context tokens, generated tokens),
# medians and maxima of the two token columns.
EXPECTED = {
    "conv": {"rows": 19_366, "first": (0, 374, 44), "second": (4_315, 396, 109),
             "last": (3_501_722, 197, 183), "median": (1_020, 129), "max": (14_050, 1_000)},
    "code": {"rows": 8_819, "first": (0, 4_808, 10), "second": (52, 3_180, 8),
             "last": (3_435_948, 549, 173), "median": (1_469, 13), "max": (7_437, 1_899)},
}


@pytest.mark.parametrize("name", ["conv", "code"])
def test_trace_file_has_the_csv_counts_rows_and_medians(name):
    t, e = traces.load(name), EXPECTED[name]
    assert len(t) == e["rows"]
    row = lambda i: (t.offsets_ms[i], t.prompt_tokens[i], t.output_tokens[i])
    assert row(0) == e["first"] and row(1) == e["second"] and row(-1) == e["last"]
    s = traces.stats(t)
    assert (s["num_prompt_tokens_median"], s["max_tokens_median"]) == e["median"]
    assert (s["num_prompt_tokens_max"], s["max_tokens_max"]) == e["max"]


def _csv_dir():
    # The CSVs live outside the repository (../shared next to the checkout); inside
    # Pyodide they are absent and this comparison is skipped (the test above still runs).
    here = Path(__file__).resolve()
    for parent in here.parents[:5]:
        d = parent / "shared" / "data" / "azure-llm-inference-2023"
        if d.is_dir():
            return d
    return None


@pytest.mark.parametrize("name", ["conv", "code"])
def test_trace_file_equals_the_csv_row_by_row(name):
    d = _csv_dir()
    if d is None:
        pytest.skip("the Azure CSVs are not beside this checkout")
    from datetime import datetime, timezone
    with open(d / f"AzureLLMInferenceTrace_{name}.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    def us(stamp):  # exact: whole seconds plus the 7 fraction digits
        whole, frac = stamp.split(".")
        dt = datetime.strptime(whole, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
        return int(dt.timestamp()) * 10_000_000 + int((frac + "0000000")[:7])
    t0 = us(rows[0]["TIMESTAMP"])
    t = traces.load(name)
    assert len(rows) == len(t)
    for i, r in enumerate(rows):
        # offsets rounded to the nearest ms from 100 ns units (round half up, twice:
        # to us then to ms, as derive.py does)
        offset_us = (us(r["TIMESTAMP"]) + 5) // 10 - (t0 + 5) // 10
        assert t.offsets_ms[i] == (offset_us + 500) // 1000
        assert t.prompt_tokens[i] == int(r["ContextTokens"])
        assert t.output_tokens[i] == int(r["GeneratedTokens"])


def test_window_and_rate_scale():
    t = traces.load("conv")
    idx = traces.window(t, 10, 5)
    # The window holds exactly the rows arriving in [600,000 ms, 900,000 ms).
    assert t.offsets_ms[idx.start] >= 600_000 > t.offsets_ms[idx.start - 1]
    assert t.offsets_ms[idx.stop - 1] < 900_000 <= t.offsets_ms[idx.stop]
    one = traces.requests(t, 10, 5, 1.0)
    two = traces.requests(t, 10, 5, 2.0)
    assert len(one) == len(two) == len(idx)
    assert one[0].arrival_s == 0.0
    # Doubling the rate halves every gap: the arrival times halve exactly.
    assert all(b.arrival_s == a.arrival_s / 2 for a, b in zip(one, two))
    assert [r.num_prompt_tokens for r in one] == [t.prompt_tokens[i] for i in idx]


def test_poisson_arrivals_keep_the_requests_and_the_mean_rate():
    t = traces.load("code")
    real = traces.requests(t, 0, 3, 1.0)
    fake = traces.requests(t, 0, 3, 1.0, arrivals="poisson", seed=7)
    assert [r.max_tokens for r in fake] == [r.max_tokens for r in real]
    n = len(fake)
    # Rescaled as vLLM does: the last of n arrivals lands at n / rate, and the rate is
    # the window's own mean, n / 180 s, so the last lands at 180 s.
    assert fake[-1].arrival_s == pytest.approx(n / (n / 180), rel=1e-12)
    assert all(a.arrival_s <= b.arrival_s for a, b in zip(fake, fake[1:]))
    again = traces.requests(t, 0, 3, 1.0, arrivals="poisson", seed=7)
    assert again == fake
    assert traces.requests(t, 0, 3, 1.0, arrivals="poisson", seed=8) != fake


# ===================================================================== step time, pool

COEF = Coefficients(2.0, 10.0, 0.8, 0.5)  # 2 ms a step, 10 us a request, 80% and 50%


def test_step_time_by_hand_for_two_settings():
    m = step_time_model(GPUS["H100"], MODELS["llama-3.1-8b"], COEF)
    # Llama 3.1 8B in 16 bits: 8.03e9 x 2 = 16.06e9 bytes of weights, KV 131,072 B/token,
    # attention 4 x 32 layers x 32 heads x 128 = 524,288 FLOPs per query-key pair.
    # H100 SXM: 3.35e12 B/s, 989e12 FLOP/s.
    # (1) one decode reading 1,000 tokens of KV (1,000 pairs):
    #     memory = (16.06e9 + 1,000 x 131,072) / 3.35e12 = 4.8331558e-3 s, / 0.8 = 6.0414448e-3
    #     compute = (2 x (8.03e9 - 525,336,576) + 524,288 x 1,000) / 989e12 = 1.5706e-5 s,
    #     / 0.5 = 3.141e-5 -> memory
    #     step = 2e-3 + 1 x 10e-6 + 6.0414448e-3 = 8.0514448e-3 s
    assert m.seconds(1, 1, 1_000, 1_000) == pytest.approx(8.0514448e-3, rel=1e-7)
    # (2) one 8,192-token prompt chunk from an empty cache: it reads 8,192 tokens of KV and
    #     computes 8,192 x 8,192 - 8,192 x 8,191 / 2 = 33,558,528 query-key pairs; its
    #     matmuls skip the embedding (a lookup) and run the LM head (128,256 x 4,096) at
    #     its one sampled position: 2 x (8.03e9 - 2 x 525,336,576) = 13,958,653,696 a token.
    #     memory = (16.06e9 + 8,192 x 131,072) / 3.35e12 = 5.1145498e-3 s, / 0.8 = 6.393e-3
    #     compute = (13,958,653,696 x 8,192 + 2 x 525,336,576 + 524,288 x 33,558,528) / 989e12
    #     = 0.13341221 s, / 0.5 = 0.26682442 -> compute binds; step = 2e-3 + 10e-6 +
    #     0.26682442 = 0.26883442 s
    assert m.seconds(8_192, 1, 8_192, 33_558_528) == pytest.approx(0.26883442, rel=1e-7)


def test_a_chunk_counts_its_attention_pairs():
    # A request of 10 prompt tokens in chunks of 4, 4 and 2 (budget 4): the chunks end at
    # contexts 4, 8, 10 and compute 4 x 4 - 6 = 10, 4 x 8 - 6 = 26 and 2 x 10 - 1 = 19
    # pairs (1 + 2 + ... + 10 = 55 in all); its first decode then meets 11 keys.
    from pysim.engine.scheduler import Engine, EngineConfig
    e = Engine(EngineConfig(max_num_batched_tokens=4, max_num_seqs=4, num_gpu_blocks=64))
    e.add_request("a", 10, 3)
    assert [e.step().attention_pairs for _ in range(4)] == [10, 26, 19, 11]


def test_decode_run_closed_form_equals_the_sum_of_its_steps():
    for gpu, model in (("L40S", "qwen3-8b"), ("H100", "llama-3.1-70b")):
        m = step_time_model(GPUS[gpu], MODELS[model], COEF)
        for batch, kv, steps in ((1, 10, 40), (64, 5_000, 300), (900, 0, 25), (300, 10**6, 1),
                                 (2_000, 0, 3_000)):
            one_by_one = sum(m.seconds(batch, batch, kv + i * batch, kv + i * batch)
                             for i in range(1, steps + 1))
            assert m.decode_run_seconds(batch, kv, steps) == pytest.approx(one_by_one, rel=1e-12)
            mem, comp = m.decode_run_terms(batch, kv, steps)
            c = m.coefficients
            rebuilt = (steps * (c.step_overhead_ms / 1e3 + c.request_overhead_us / 1e6 * batch)
                       + mem / c.memory_efficiency + comp / c.compute_efficiency)
            assert rebuilt == pytest.approx(one_by_one, rel=1e-12)


def test_decode_steps_within_inverts_the_closed_form():
    # The most steps that take less than `seconds`, against counting them one by one,
    # with compute-bound leading steps (large batch, short contexts) and without.
    from pysim.prng import SplitMix64
    rng = SplitMix64(3)
    for gpu, model in (("L40S", "qwen3-8b"), ("H100", "llama-3.1-8b"), ("A100", "llama-3.1-70b")):
        m = step_time_model(GPUS[gpu], MODELS[model], COEF)
        for _ in range(60):
            batch, kv = rng.randint(1, 2000), rng.randint(0, 400_000)
            seconds = rng.random() * 2
            steps = 0
            while m.decode_run_seconds(batch, kv, steps + 1) < seconds:
                steps += 1
            assert m.decode_steps_within(batch, kv, seconds, steps + 5) == steps, (gpu, batch, kv)
    assert m.decode_steps_within(10, 10, 0.0, 100) == 0


def test_num_gpu_blocks_by_hand():
    # H100 at vLLM 0.34.0's defaults: nvidia-smi's 81,559 MiB = 85,520,809,984 bytes, x 1.0;
    # minus 16.06e9 of weights and the 2e9 runtime reserve = 67,460,809,984 bytes; a block
    # is 64 x 131,072 = 8,388,608 bytes: 8,041 blocks, block 0 (the null block) among them.
    assert num_gpu_blocks(GPUS["H100"], MODELS["llama-3.1-8b"], 64) == 8_041
    # The older defaults a v0.11 record replays with: x 0.9 = 76,968,728,985 (rounded down),
    # - 18.06e9 = 58,908,728,985 bytes in blocks of 16 x 131,072 = 2,097,152: 28,089 blocks.
    assert num_gpu_blocks(GPUS["H100"], MODELS["llama-3.1-8b"], 16, 0.9) == 28_089


# ===================================================================== vLLM's metrics

def test_percentile_is_numpys_linear_rule():
    v = [0.1, 0.2, 0.3, 2.0]
    # rank h = (n - 1) p / 100: p50 -> 1.5 -> 0.2 + 0.5 x 0.1 = 0.25
    # p90 -> 2.7 -> 0.3 + 0.7 x 1.7 = 1.49; p99 -> 2.97 -> 0.3 + 0.97 x 1.7 = 1.949
    assert slo.percentile(v, 50) == pytest.approx(0.25)
    assert slo.percentile(v, 90) == pytest.approx(1.49)
    assert slo.percentile(v, 99) == pytest.approx(1.949)
    assert slo.percentile([], 99) == 0.0 and slo.percentile([5.0], 90) == 5.0


def test_percentile_against_numpy():
    np = pytest.importorskip("numpy")
    values = sorted((i * 7919) % 1000 / 7 for i in range(257))
    for p in (0, 1, 50, 90, 99, 99.9, 100):
        assert slo.percentile(values, p) == pytest.approx(float(np.percentile(values, p)), rel=1e-12)


def test_goodput_and_tpot_by_hand():
    # Four requests (seconds): TTFT, end-to-end latency, output tokens.
    #   a: 0.1, 0.1, 1 token   -> TPOT none (0 for goodput)        good
    #   b: 0.2, 0.7, 11 tokens -> TPOT (0.7 - 0.2) / 10 = 0.05     good
    #   c: 0.3, 2.3, 21 tokens -> TPOT (2.3 - 0.3) / 20 = 0.1      bad: TPOT > 60 ms
    #   d: 1.0, 1.5, 11 tokens -> TPOT 0.05, TTFT exactly 1,000 ms: good (slo >= value)
    # Good 3 of 4; the run lasts 4 s: goodput 3 / 4 = 0.75 req/s, attainment 75%.
    m = slo.summarize([0.1, 0.2, 0.3, 1.0], [0.1, 0.7, 2.3, 1.5], [1, 11, 21, 11],
                      duration=4.0, slo_ttft_ms=1000, slo_tpot_ms=60)
    assert m["good"] == 3 and m["completed"] == 4
    assert m["request_goodput"] == pytest.approx(0.75)
    assert m["slo_attainment"] == pytest.approx(0.75)
    assert m["request_throughput"] == pytest.approx(1.0)
    assert m["tpots"][0] is None
    # TPOT statistics use only multi-token requests: [0.05, 0.05, 0.1] -> mean 66.67 ms,
    # median 50 ms.
    assert m["tpot_ms"]["mean"] == pytest.approx(200 / 3)
    assert m["tpot_ms"]["p50"] == pytest.approx(50)
    # Output throughput: (1 + 11 + 21 + 11) / 4 = 11 tokens/s.
    assert m["output_throughput"] == pytest.approx(11)
    assert len(m["ttft_ms"]["cdf"]) == 101 and m["ttft_ms"]["cdf"][-1] == pytest.approx(1000)


# ===================================================================== the replay

TOY = StepTimeModel(weight_bytes=1_000, kv_bytes_per_token=1, bandwidth=1_000,
                    flops_per_token=1, attention_flops_per_pair=0, peak_flops=10**9,
                    coefficients=Coefficients(0.0, 0.0, 1.0, 1.0))
# A step lasts (1,000 + KV tokens read) / 1,000 s: 1 s plus 1 ms per token of context.
# The synchronous loop, which the hand-written replay below follows step by step.
HUGE = engine_config(num_gpu_blocks=100_001, block_size=16,
                     scheduler=SchedulerConfig(max_num_seqs=10_000, max_num_batched_tokens=1_000_000,
                                               async_scheduling=False))


def test_two_requests_by_hand():
    # A arrives at 0 (prompt 100, 3 tokens), B at 0.5 (prompt 200, 2 tokens).
    # step 1 @0:     A prefills 100; reads 100 -> 1.1 s; A's first token at 1.1
    # step 2 @1.1:   B has arrived; A decodes (101), B prefills 200: reads 301 -> 1.301 s;
    #                ends 2.401: A's 2nd token, B's first (TTFT 2.401 - 0.5 = 1.901)
    # step 3 @2.401: A (102) and B (201) decode: reads 303 -> 1.303 s; ends 3.704: both finish
    r = replay([0.0, 0.5], [100, 200], [3, 2], HUGE, TOY, 100_001)
    assert r.ttfts == pytest.approx([1.1, 1.901])
    assert r.latencies == pytest.approx([3.704, 3.204])
    assert r.num_steps == 3 and r.duration == pytest.approx(3.704)


def hand_replay(arrivals, prompts, outputs, model):
    """Continuous batching with no limits: every step admits everything that has
    arrived and prefills it whole, and decodes everyone else (what V1's rules do when
    the budget, the pool and max_num_seqs never bind)."""
    n, now, nxt = len(arrivals), arrivals[0], 0
    computed, produced = [0] * n, [0] * n
    first, done, running = [None] * n, [None] * n, []
    while nxt < n or running:
        if not running and arrivals[nxt] > now:
            now = arrivals[nxt]
        while nxt < n and arrivals[nxt] <= now:
            running.append(nxt)
            nxt += 1
        tokens = kv = pairs = 0
        for i in running:
            step = prompts[i] if computed[i] == 0 else 1
            computed[i] += step
            tokens += step
            kv += computed[i]
            pairs += step * computed[i] - step * (step - 1) // 2
        now += model.seconds(tokens, len(running), kv, pairs)
        for i in list(running):
            produced[i] += 1
            if first[i] is None:
                first[i] = now
            if produced[i] == outputs[i]:
                done[i] = now
                running.remove(i)
    return [f - a for f, a in zip(first, arrivals)], [d - a for d, a in zip(done, arrivals)]


@pytest.mark.parametrize("fast", [True, False])
def test_no_limits_replay_equals_a_hand_written_loop_on_real_traffic(fast):
    t = traces.load("conv")
    reqs = traces.requests(t, 20, 1, 1.0)[:150]
    m = step_time_model(GPUS["H100"], MODELS["llama-3.1-8b"], COEF)
    args = ([r.arrival_s for r in reqs], [r.num_prompt_tokens for r in reqs],
            [r.max_tokens for r in reqs])
    r = replay(*args, HUGE, m, 100_001, fast=fast, count_blocks=fast)
    assert r.num_preemptions == 0
    ttft, latency = hand_replay(*args, m)
    assert r.ttfts == pytest.approx(ttft, rel=1e-9, abs=1e-12)
    assert r.latencies == pytest.approx(latency, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
def test_the_shortcuts_change_nothing_even_with_preemptions(policy):
    # A small pool (Qwen3 8B's larger KV in an L40S's 48 GB) at 8x with an 8192-token
    # budget: the engine preempts (13 times). Stepping one by one with vLLM's linked-list pool and with
    # both shortcuts must agree on every step count, preemption and time. Under either
    # waiting queue (pysim/engine/request_queue.py): the fast path peeks at the head through it;
    # with equal priorities the priority queue sorts by arrival.
    c = cfg(gpu="L40S", model="qwen3-8b", window_minutes=1, window_start_min=30,
            rate_scale=8, max_num_seqs=512, max_num_batched_tokens=8192)
    stm = step_time_model(GPUS[c.gpu], MODELS[c.model])
    blocks = num_gpu_blocks(GPUS[c.gpu], MODELS[c.model], 16)
    t = lab_workload.workload(c, c.rate_scale)
    ec = engine_config(blocks, 16, replace(c, async_scheduling=False), policy=policy)
    args = (t.arrivals, t.prompt_tokens, t.output_tokens, ec, stm, blocks)
    slow = replay(*args, fast=False, count_blocks=False)
    quick = replay(*args)
    assert slow.num_preemptions > 0  # so the preemption path is compared too
    assert slow.num_steps == quick.num_steps and slow.num_preemptions == quick.num_preemptions
    assert quick.first_token == pytest.approx(slow.first_token, rel=1e-9)
    assert quick.finished == pytest.approx(slow.finished, rel=1e-9)
    assert sum(quick.seg_steps) == quick.num_steps and len(quick.seg_end) < len(slow.seg_end)


def test_max_concurrency_sends_the_next_request_when_one_finishes():
    # Three requests at time 0, at most one in flight: each waits for the last to
    # finish. Prompt 100, 2 tokens each, toy model:
    #   1st: step @0 prefill (reads 100) 1.1 s -> first token 1.1; decode (reads 101) 1.101 s -> done 2.201
    #   2nd is sent at 2.201 and takes the same 2.201 s: TTFT 1.1 from when it was sent.
    r = replay([0.0, 0.0, 0.0], [100] * 3, [2] * 3, HUGE, TOY, 100_001, max_concurrency=1)
    assert r.sent == pytest.approx([0.0, 2.201, 4.402])
    assert r.ttfts == pytest.approx([1.1] * 3)
    assert r.duration == pytest.approx(6.603)


# ===================================================================== the lab's views

def test_default_replay_view():
    view = lab_view.run(cfg(window_minutes=2), [])
    s, tr = view["summary"], view["traffic"]
    assert s["completed"] == tr["num_requests"] > 500
    assert 0 <= s["slo_attainment"] <= 1 and s["good"] <= s["completed"]
    # vLLM 0.34.0's defaults (test_num_gpu_blocks_by_hand): 8,041 blocks of 64 tokens.
    hw = view["hardware"]
    assert (hw["num_gpu_blocks"], hw["block_size"], hw["kv_pool_tokens"]) == (8_041, 64, 8_040 * 64)
    assert hw["gpu_memory_utilization"] == 1.0 and hw["vllm_defaults"] == "vLLM 0.34.0 defaults"
    assert "num_gpu_blocks 8,041 of 64 tokens" in hw["sentence"] and "vLLM 0.34.0 defaults" in hw["sentence"]
    assert view["hardware"]["coefficients"] == DEFAULTS["H100"].record()
    assert view["bench_summary"] is None and view["traffic"]["sentence"].startswith(f"{s['completed']:,} requests")
    for key in ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc",
                "output_tokens_per_s", "num_preemptions", "t_s"):
        assert len(view["series"][key]) == lab_view.NUM_BINS
    assert view["metric_names"]["kv_cache_usage_perc"] == "vllm:kv_cache_usage_perc"
    assert all(0 <= u <= 1 for u in view["series"]["kv_cache_usage_perc"])
    # Every output token is counted once over the bins: tokens/s x bin width sums to
    # the total the requests produced.
    total = sum(x * view["series"]["bin_s"] for x in view["series"]["output_tokens_per_s"])
    produced = s["output_throughput"] * s["duration_s"]
    assert total == pytest.approx(produced, rel=1e-3)
    json.dumps(view, allow_nan=False)


def test_capacity_by_hand():
    c = cfg()
    real = traces.mean_rate(traces.load("conv"), 10, 5)
    pts = lambda *pairs: [{"rate_scale": s, "slo_attainment": a, "request_goodput": 0.0,
                           "request_throughput": 0.0} for s, a in pairs]
    # Crossing between x2 (95%) and x3 (80%): 2 + (0.95 - 0.9) / (0.95 - 0.8) = 2.3333
    cap = lab_sweep.capacity(c, pts((1, 1.0), (2, 0.95), (3, 0.8), (4, 0.2)))
    assert cap["rate_scale"] == pytest.approx(2 + 1 / 3)
    assert cap["sustained_req_s"] == pytest.approx((2 + 1 / 3) * real)
    assert cap["replicas"] == 1
    # Crossing at 0.25 + (0.95 - 0.9) / (0.95 - 0.85) x 0.25 = 0.375: ceil(1 / 0.375) = 3
    assert lab_sweep.capacity(c, pts((0.25, 0.95), (0.5, 0.85)))["replicas"] == 3
    # Missed at the lowest rate: more than floor(1 / 0.25) = 4 replicas.
    below = lab_sweep.capacity(c, pts((0.25, 0.5), (0.5, 0.2)))
    assert below["bound"] == "below" and below["replicas_at_least"] == 5
    # Met everywhere: at least x8, one replica.
    top = lab_sweep.capacity(c, pts((0.25, 1.0), (8, 0.91)))
    assert top["bound"] == "at_least" and top["rate_scale"] == 8 and top["replicas"] == 1
    # The sentence the page and the CLI print: pysim's words, with how much was swept.
    three = lab_sweep.capacity(c, pts((0.25, 0.95), (0.5, 0.85)))
    scale = three["rate_scale"]  # 0.375, give or take a rounding (printed to 2 places)
    assert three["sentence"] == (f"One replica sustains x{scale:.2f} of the real rate ({scale * real:.2f} of "
                                 f"{real:.2f} req/s) with 90% of requests meeting both targets (from the "
                                 "2 of 8 rates swept); the real rate needs 3 replicas.")
    assert below["sentence"].startswith("Fewer than 90% of requests meet both targets even at the lowest rate")
    assert "more than 5 replicas" in below["sentence"] and "x0.25 of its rate" in below["sentence"]
    assert "at least x8.00" in top["sentence"] and "needs 1 replica." in top["sentence"]


def test_sweep_points_one_by_one_give_the_same_capacity_as_one_sweep():
    # As the page asks: one lab_sweep_point call per rate (its action names the rate's
    # place), then lab_capacity with the points as its actions, through the bridge's JSON.
    base = dict(trace="code", window_minutes=1, window_start_min=5)
    one = lab_sweep.sweep_view(cfg(lab_sweep.SweepConfig, **base), [])

    def call(name, actions):
        answer = json.loads(bridge.call(name, json.dumps({"config": base, "actions": actions})))
        assert answer["ok"], answer
        return answer["result"]
    points = [call("lab_sweep_point", [{"sweep_index": i}])["point"] for i in range(len(lab_sweep.SWEEP_RATES))]
    assert points == one["points"]
    assert call("lab_capacity", points)["capacity"] == one["capacity"]
    assert [p["rate_scale"] for p in points] == list(lab_sweep.SWEEP_RATES)
    # Fewer points, a conclusion so far: the first two only.
    assert call("lab_capacity", points[:2])["capacity"] == lab_sweep.capacity(cfg(**base), points[:2])


@pytest.mark.parametrize("name, actions, words", [
    ("lab_sweep_point", [], 'one action, {"sweep_index": i}'),
    ("lab_sweep_point", [{"sweep_index": 0}, {"sweep_index": 1}], "from 0 to 7"),
    ("lab_sweep_point", [{"sweep_index": 8}], "'sweep_index' should be a whole number from 0 to 7"),
    ("lab_sweep_point", [{"sweep_index": -1}], "from 0 to 7"),
    ("lab_sweep_point", [{"sweep_index": 2.5}], "whole number"),
    ("lab_sweep_point", [{"sweep_index": True}], "whole number"),
    ("lab_sweep_point", [{"sweep_index": 1, "gpu": "L40S"}], 'one action, {"sweep_index": i}'),
    ("lab_sweep_point", ["sweep_index"], 'one action, {"sweep_index": i}'),
    ("lab_capacity", [{"rate_scale": 1}], "point 1: 'slo_attainment' should be a number from 0 to 1"),
    ("lab_capacity", [None], "point 1: expected an object"),
    ("lab_capacity", [{"rate_scale": 1, "slo_attainment": 1, "request_goodput": 1, "request_throughput": 1,
                       "slo_attainment_fast": 2}], "'slo_attainment_fast' should be a number from 0 to 1"),
    ("lab_capacity", [{}] * 9, "at most 8 sweep points"),
])
def test_what_a_sweep_call_asks_is_its_actions_and_checked_there(name, actions, words):
    answer = json.loads(bridge.call(name, json.dumps({"config": {"window_minutes": 1}, "actions": actions})))
    assert not answer["ok"] and answer["error"]["field"] == "actions" and words in answer["error"]["message"], answer
    # Not settings any more: a config that names them is refused as it would be anywhere.
    for key in ("sweep_index", "sweep_points"):
        answer = json.loads(bridge.call(name, json.dumps({"config": {key: 1}})))
        assert answer["error"]["field"] == key and "unknown setting" in answer["error"]["message"]


@pytest.mark.parametrize("config, field, words", [
    ({"rate_scale": 9}, "rate_scale", "8"),
    ({"window_minutes": 11}, "window_minutes", "10"),
    ({"window_start_min": 55, "window_minutes": 5}, "window_start_min", "0 to 53"),
    ({"trace": "code", "window_start_min": 50, "window_minutes": 10}, "window_start_min", "0 to 47"),
    ({"max_num_seqs": 1024, "max_num_batched_tokens": 1000}, "max_num_batched_tokens", "max_num_seqs"),
    ({"model": "llama-3.1-70b"}, "model", "do not fit"),
    ({"bench_text": "x" * 20_001}, "bench_text", "20,000"),
    # (Far below 0.01, n / rate overflowed and the arrivals came out as NaN.)
    ({"traffic": "benchmark", "request_rate": 5e-324}, "request_rate", "0 (all at once) or a number from 0.01"),
    ({"traffic": "benchmark", "request_rate": 0.009}, "request_rate", "0.01 to 1,000"),
])
def test_bad_settings_name_the_field_and_the_bound(config, field, words):
    with pytest.raises(ConfigError) as err:
        cfg(**config)
    assert err.value.field == field and words in err.value.message


def test_the_sweeps_own_settings_are_checked_by_their_simulations():
    with pytest.raises(ConfigError) as err:
        cfg(lab_sweep.SweepConfig, traffic="benchmark", request_rate=0)
    assert err.value.field == "request_rate" and "0.01 to 1,000" in err.value.message
    cfg(traffic="benchmark", request_rate=0)  # one replay may send everything at once
    for name in ("lab_sweep", "lab_sweep_point", "lab_capacity"):
        assert bridge.call(name, json.dumps({"config": {"mode": "sweep"}})).count("unknown setting") == 1


def test_bridge_answers_and_is_deterministic():
    text = json.dumps({"config": {"window_minutes": 1, "trace": "code"}})
    first = bridge.call("lab", text)
    assert json.loads(first)["ok"] is True
    assert bridge.call("lab", text) == first


# ===================================================================== the CLI

def test_cli_summary_json_and_sweep(capsys):
    assert main(["lab", "--set", "trace=code", "--set", "window_minutes=1", "--set", "rate_scale=2"]) == 0
    out = capsys.readouterr().out
    assert "coding service" in out and "x2" in out and "goodput" in out
    assert main(["lab", "--json", "--set", "trace=code", "--set", "window_minutes=1"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["config"]["trace"] == "code" and "ttft_ms" in view
    assert main(["lab-sweep", "--set", "trace=code", "--set", "window_minutes=1"]) == 0
    out = capsys.readouterr().out
    assert "Capacity" in out and out.count("\n") >= len(lab_sweep.SWEEP_RATES) + 2
    # One rate of it, named by its action as a JSON list; then the capacity from that point.
    assert main(["lab-sweep-point", "--json", "--set", "trace=code", "--set", "window_minutes=1",
                 "--actions", '[{"sweep_index": 2}]']) == 0
    point = json.loads(capsys.readouterr().out)["point"]
    assert point["rate_scale"] == lab_sweep.SWEEP_RATES[2]
    assert main(["lab-capacity", "--set", "trace=code", "--set", "window_minutes=1",
                 "--actions", json.dumps([point])]) == 0
    assert "Capacity: " in capsys.readouterr().out
    assert main(["lab-sweep-point", "--actions", '[{"sweep_index": 8}']) == 2
    assert "actions: not a valid JSON list" in capsys.readouterr().err


def test_cli_bad_setting_exits_2_naming_the_field(capsys):
    assert main(["lab", "--set", "rate_scale=20"]) == 2
    err = capsys.readouterr().err
    assert "rate_scale" in err and "0.25 to 8" in err


def test_block_counts_agree_with_vllms_block_pool_and_kv_manager():
    # Random allocations, growth and frees on both: every answer and count is the same.
    from pysim.engine.blockpool import BlockPool, KVCacheManager
    from pysim.prng import SplitMix64
    from pysim.engine.replay import BlockCounts
    kv = KVCacheManager(BlockPool(60, 16, enable_prefix_caching=False))
    counts = BlockCounts(60, 16)
    rng, held = SplitMix64(7), {}
    for _ in range(2000):
        rid = rng.randint(0, 9)
        op = rng.randint(0, 2)
        if op == 0 or rid not in held:
            total = held.get(rid, 0) + rng.randint(1, 120)
            assert kv.blocks_needed(rid, total) == counts.blocks_needed(rid, total)
            ok = kv.allocate_slots(rid, None, total)
            assert counts.allocate_slots(rid, None, total) == ok
            if ok:
                held[rid] = total
        elif op == 1 and 0 < kv.blocks_needed(rid, held[rid] + 20) <= kv.pool.num_free_blocks:
            new = kv.blocks_needed(rid, held[rid] + 20)
            held[rid] += 20
            kv.grow_all([(rid, new)])
            counts.grow_all([(rid, new)])
        else:
            kv.free(rid)
            counts.free(rid)
            del held[rid]
        assert kv.pool.num_free_blocks == counts.num_free_blocks
        assert all(kv.num_blocks(r) == counts.num_blocks(r) for r in range(10))
        counts.check_invariants(counts.tables().values())
