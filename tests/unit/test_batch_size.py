"""Tests for pysim.sims.batch_size and pysim.timing.catalog (issue 5)."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysim.sims import batch_size
from pysim.__main__ import main
from pysim.sims.batch_size import (PRESETS, BatchSizeConfig, ceilings, compute_bound, per_user_tok_s, run,
                                   step_seconds, text, total_tok_s)
from pysim.bridge import call
from pysim.timing.catalog import GPUS, MODELS
from pysim.config import ConfigError, from_mapping


def view(**settings_):
    return run(from_mapping(BatchSizeConfig, settings_), [])


# -- Catalog ------------------------------------------------------------------------

# KV bytes per token = 2 (K and V) x layers x KV heads x head dim x bytes per number,
# with layers / KV heads / head dim as published in each model's config.json:
#   Llama 3.1 8B     32 x 8 x 128 -> 2 x 32 x 8 x 128 x 2 = 131,072 (128 KiB)
#   Llama 3.1 70B    80 x 8 x 128 -> 2 x 80 x 8 x 128 x 2 = 327,680
#   Qwen3 8B         36 x 8 x 128 -> 2 x 36 x 8 x 128 x 2 = 147,456
#   Qwen3 32B        64 x 8 x 128 -> 2 x 64 x 8 x 128 x 2 = 262,144
#   Mistral 7B v0.3  32 x 8 x 128 -> 2 x 32 x 8 x 128 x 2 = 131,072
PUBLISHED_KV_16BIT = {
    "llama-3.1-8b": 131_072,
    "llama-3.1-70b": 327_680,
    "qwen3-8b": 147_456,
    "qwen3-32b": 262_144,
    "mistral-7b-v0.3": 131_072,
}


@pytest.mark.parametrize("model_id", sorted(PUBLISHED_KV_16BIT))
def test_kv_bytes_per_token_match_published_configs(model_id):
    model = MODELS[model_id]
    assert model.kv_bytes_per_token(kv_fp8=False) == PUBLISHED_KV_16BIT[model_id]
    # FP8 stores each number in one byte instead of two: exactly half.
    assert model.kv_bytes_per_token(kv_fp8=True) == PUBLISHED_KV_16BIT[model_id] // 2
    # ... and the view model reports the same derived figure.
    v = view(model=model_id, context_tokens=2048)
    assert v["kv_bytes_per_token"] == PUBLISHED_KV_16BIT[model_id]


def test_catalog_matches_the_spec_and_datasheets():
    # widgets.md: H100 SXM 80 GB, 3.35 TB/s, 989 TFLOPS; H200 141 GB, 4.8 TB/s, the
    # H100's compute; L40S 48 GB, 864 GB/s, 362 TFLOPS (all dense 16-bit, decimal units).
    expected = {
        "H100": (80e9, 3.35e12, 989e12),
        "H200": (141e9, 4.8e12, 989e12),
        "L40S": (48e9, 864e9, 362e12),
        "A100": (80e9, 2.039e12, 312e12),
        "H100-PCIe": (80e9, 2.0e12, 756e12),
        "A100-40GB": (40e9, 1.555e12, 312e12),
        "L4": (24e9, 300e9, 121e12),
        "A10G": (24e9, 600e9, 70e12),
        "MI300X": (192e9, 5.3e12, 1307.4e12),
    }
    assert list(GPUS) == list(expected)
    for gpu_id, (mem, bw, flops) in expected.items():
        gpu = GPUS[gpu_id]
        assert (gpu.memory_bytes, gpu.bandwidth_bytes_per_s, gpu.peak_flops) == (mem, bw, flops)
        assert "datasheet" in gpu.source or "data sheet" in gpu.source
        assert "sparsity" in gpu.source  # says which figure was *not* used
    for model in MODELS.values():
        assert "config.json" in model.source
    assert MODELS["llama-3.1-8b"].params == 8_030_000_000
    assert MODELS["llama-3.1-70b"].params == 70_600_000_000


# -- Hand-computed answers --------------------------------------------------------

def test_memory_bound_default_h100_llama_8b():
    # H100 SXM, Llama 3.1 8B, 16-bit, 2,048 tokens, 30 tok/s.
    # weights     = 8.03e9 params x 2 B                  = 16,060,000,000 B
    # usable      = 81,559 MiB x 1.0 (vLLM 0.34.0's default) = 85,520,809,984 B
    # KV pool     = 85,520,809,984 - 16.06e9 - 2e9       = 67,460,809,984 B
    # pool tokens = 67,460,809,984 / 131,072 = 514,685.1 -> 514,685
    # one request = 2,048 x 131,072                      = 268,435,456 B
    # memory fits = 67,460,809,984 / 268,435,456 = 251.31 -> 251
    # speed: reads bound the step (see the crossover below), so
    #   (W + B x req) / bw <= 1/30  <=>  B <= (3.35e12/30 - 16.06e9) / 268,435,456
    #   = (111,666,666,666.7 - 16,060,000,000) / 268,435,456 = 356.16  -> 356
    # compute never binds: one request adds 268,435,456 / 3.35e12 = 80.1 us of reads but
    #   only (2 x 8.03e9 + 2,048 x 524,288) / 989e12 = 17.3 us of FLOPs (524,288 = 4 x 32
    #   layers x 32 heads x 128: attention's FLOPs for one query meeting one cached token).
    # recommendation = min(251, 356) = 251, set by memory.
    # at 251: bytes = 16.06e9 + 251 x 268,435,456 = 83,437,299,456
    #   t_step = 83,437,299,456 / 3.35e12 = 24.9067 ms; per user 1/t = 40.1499 tok/s;
    #   total = 251 / t = 10,077.63 tok/s.
    v = view()
    assert v["weight_bytes"] == 16_060_000_000
    assert v["usable_bytes"] == 85_520_809_984
    assert v["runtime_bytes"] == 2_000_000_000
    assert v["kv_pool_bytes"] == 67_460_809_984
    assert v["kv_pool_tokens"] == 514_685
    assert v["request_kv_bytes"] == 268_435_456
    assert v["max_batch_memory"] == 251
    assert v["max_batch_speed"] == 356
    assert v["recommended_max_num_seqs"] == 251
    assert v["limited_by"] == "memory"
    assert v["reason"] is None and v["reason_text"] is None
    assert v["crossover_batch"] is None
    assert v["t_step_ms"] == pytest.approx(83_437_299_456 / 3.35e12 * 1000, rel=1e-15)
    assert v["t_step_ms"] == pytest.approx(24.9067, abs=1e-4)
    assert v["per_user_tok_s"] == pytest.approx(40.1499, abs=1e-4)
    assert v["total_tok_s"] == pytest.approx(10077.63, abs=1e-2)
    assert all(p["bound"] == "memory" for p in v["curve"])
    assert v["answer"].startswith("On an H100 SXM with Llama 3.1 8B")
    assert "set --max-num-seqs to 251: memory allows 251, the speed target allows 356" in v["answer"]
    assert "ideal" in v["answer"].lower() and "ideal" in v["note"].lower()


def test_compute_bound_short_context():
    # H100 SXM, Llama 3.1 8B, 16-bit, 128 tokens, 30 tok/s.
    # one request = 128 x 131,072 = 16,777,216 B; memory fits 67,460,809,984 / 16,777,216
    #   = 4,020.98 -> 4,020
    # one decode's FLOPs X: the matmuls without the embedding and the LM head once (it
    #   samples): 2 x (8.03e9 - 128,256 x 4,096) = 15,009,326,848, + attention 128 x
    #   524,288 = 67,108,864, so X = 15,076,435,712
    # compute time > read time  <=>  B x (X x bw - req x F) > W x F
    #   X x bw   = 15,076,435,712 x 3.35e12  = 5.05061e22
    #   req x F  = 16,777,216 x 989e12       = 1.65927e22
    #   slope    = 3.39134e22;  W x F = 16.06e9 x 989e12 = 1.588334e25
    #   B > 1.588334e25 / 3.39134e22 = 468.35  -> compute binds from B = 469
    # speed: compute bound X x B / F <= 1/30 <=> B <= 989e12 / (15,076,435,712 x 30) = 2,186.6 -> 2,186
    #   (the read bound (3.35e12/30 - 16.06e9) / 16,777,216 = 5,698.6 is looser)
    # recommendation = min(4,020, 2,186) = 2,186, set by speed, a compute-bound point:
    #   per user = 989e12 / (15,076,435,712 x 2,186) = 30.0087 tok/s;
    #   total = 989e12 / 15,076,435,712 = 65,599.06
    x = 2 * (8_030_000_000 - 128_256 * 4_096) + 128 * 4 * 32 * 32 * 128
    v = view(context_tokens=128)
    assert v["max_batch_memory"] == 4_020
    assert v["crossover_batch"] == 469
    assert v["max_batch_speed"] == 2_186
    assert v["recommended_max_num_seqs"] == 2_186
    assert v["limited_by"] == "speed"
    assert v["per_user_tok_s"] == pytest.approx(30.0087, abs=1e-4)
    assert v["total_tok_s"] == 989e12 / x
    points = {p["batch"]: p for p in v["curve"]}
    assert points[469]["bound"] == "compute"  # the crossover is marked on the curve
    m = ceilings(GPUS["H100"], MODELS["llama-3.1-8b"], BatchSizeConfig(context_tokens=128))
    assert not compute_bound(m, 128, 468) and compute_bound(m, 128, 469)
    assert points[2_186]["bound"] == "compute" and points[2_186]["meets_target"]
    # Past the crossover total throughput is flat at the compute ceiling.
    assert points[1_024]["total_tok_s"] == points[2_048]["total_tok_s"] == 989e12 / x
    # B = 1024: FLOPs 15,076,435,712 x 1024 / 989e12 = 15.610 ms > reads (16.06e9 + 1024 x
    #   16,777,216) / 3.35e12 = 9.922 ms.
    assert points[1_024]["t_step_ms"] == pytest.approx(15.610, abs=1e-3)


def test_fp8_kv_doubles_the_pool_tokens():
    # L40S, Llama 3.1 8B, 2,048 tokens, 30 tok/s.
    # KV pool = 46,068 MiB x 1.0 - 16.06e9 - 2e9 = 48,305,799,168 - 18.06e9
    #         = 30,245,799,168 B (unchanged by FP8 KV)
    # 16-bit: / 131,072 = 230,757.1 -> 230,757 tokens; / 268,435,456 = 112.7 -> 112 requests
    # FP8:    /  65,536 = 461,514.3 -> 461,514 tokens (2 x 230,757); / 134,217,728 = 225.3
    #         -> 225 requests (2 x 112 + 1: floor(2x) gains one when x's fraction is over a half)
    # speed (reads bind): (864e9/30 - 16.06e9) / req = 12.74e9 / 268,435,456 = 47.46 -> 47
    #                                                  12.74e9 / 134,217,728 = 94.92 -> 94
    # so the recommendation goes 47 -> 94, both set by the speed target.
    plain, fp8 = view(gpu="L40S"), view(gpu="L40S", kv_fp8=True)
    assert plain["kv_pool_bytes"] == fp8["kv_pool_bytes"] == 30_245_799_168
    assert (plain["kv_pool_tokens"], fp8["kv_pool_tokens"]) == (230_757, 461_514)
    assert (plain["max_batch_memory"], fp8["max_batch_memory"]) == (112, 225)
    assert (plain["max_batch_speed"], fp8["max_batch_speed"]) == (47, 94)
    assert (plain["recommended_max_num_seqs"], fp8["recommended_max_num_seqs"]) == (47, 94)
    assert fp8["precision"] == {"weights": "16-bit", "kv_cache": "FP8"}


def test_fp8_weights_grow_the_pool_by_the_saved_bytes():
    # H100, Llama 3.1 8B with FP8 weights: weights 8.03e9 B, pool 85,520,809,984 - 8.03e9
    # - 2e9 = 75,490,809,984 B, i.e. 8.03e9 B more than in 16-bit;
    # / 268,435,456 = 281.2 -> 281.
    v = view(weights_fp8=True)
    assert v["weight_bytes"] == 8_030_000_000
    assert v["kv_pool_bytes"] == 75_490_809_984 == view()["kv_pool_bytes"] + 8_030_000_000
    assert v["max_batch_memory"] == 281


def test_model_that_does_not_fit():
    # L40S + Llama 3.1 70B in 16-bit: weights 70.6e9 x 2 = 141.2e9 B, while the server
    # may use 48,305,799,168 B (all it reports, vLLM 0.34.0's default) of which 2e9 is the
    # runtime's: pool < 0.
    # FP8 weights (70.6e9 B) still do not fit.
    for fp8 in (False, True):
        v = view(gpu="L40S", model="llama-3.1-70b", weights_fp8=fp8)
        assert v["reason"] == "weights_do_not_fit"
        assert v["recommended_max_num_seqs"] is None
        assert v["kv_pool_bytes"] == 0 and v["kv_pool_tokens"] == 0 and v["max_batch_memory"] == 0
        assert v["per_user_tok_s"] is None and v["total_tok_s"] is None and v["limited_by"] is None
        assert "no --max-num-seqs works" in v["answer"]
        assert not any(p["fits"] for p in v["curve"])
    reason = view(gpu="L40S", model="llama-3.1-70b")["reason_text"]
    assert "141.2 GB" in reason and "48.31 GB" in reason and "46,068 MiB" in reason
    assert "(100% of the 46,068 MiB" in reason
    # The same model fits an MI300X: 196,592 MiB x 1.0 = 206,141,652,992 B,
    # - 141.2e9 - 2e9 = 62,941,652,992 B of KV pool.
    assert view(gpu="MI300X", model="llama-3.1-70b")["kv_pool_bytes"] == 62_941_652_992


def test_no_room_for_kv():
    # H200 + Llama 3.1 70B, 16-bit: pool = 143,771 MiB = 150,754,820,096 B - 141.2e9 - 2e9
    # = 7,554,820,096 B = 23,055 tokens (/ 327,680 = 23,055.7), fewer than one
    # 32,768-token request needs (one of 16,384 would fit).
    v = view(gpu="H200", model="llama-3.1-70b", context_tokens=32_768)
    assert v["kv_pool_bytes"] == 7_554_820_096 and v["kv_pool_tokens"] == 23_055
    assert v["max_batch_memory"] == 0
    assert v["reason"] == "no_room_for_kv"
    assert "23,055 tokens" in v["reason_text"]
    assert view(gpu="H200", model="llama-3.1-70b", context_tokens=16_384)["max_batch_memory"] == 1
    assert v["recommended_max_num_seqs"] is None


def test_too_slow():
    # MI300X + Llama 3.1 70B, 2,048 tokens, target 100 tok/s: even one user's step reads
    # 141.2e9 + 2,048 x 327,680 = 141,871,088,640 B; at 5.3e12 B/s that is 26.77 ms,
    # i.e. 37.36 tok/s < 100. Memory would allow 62,941,652,992 / 671,088,640 = 93.8 -> 93.
    v = view(gpu="MI300X", model="llama-3.1-70b", target_tok_s=100)
    assert v["reason"] == "too_slow"
    assert v["max_batch_memory"] == 93 and v["max_batch_speed"] == 0
    assert v["single_user_tok_s"] == pytest.approx(5.3e12 / 141_871_088_640, rel=1e-15)
    assert "37.4 tokens/s" in v["reason_text"]
    assert v["recommended_max_num_seqs"] is None


def test_presets_chatbot_and_coding_agent():
    # Coding agent: one request = 32,768 x 131,072 = 4,294,967,296 B;
    #   memory 67,460,809,984 / 4,294,967,296 = 15.7 -> 15;
    #   speed (111,666,666,666.7 - 16.06e9) / 4,294,967,296 = 22.26 -> 22; answer 15.
    assert set(PRESETS) == {"chatbot", "coding_agent"}
    chat = view(context_tokens=PRESETS["chatbot"]["context_tokens"],
                target_tok_s=PRESETS["chatbot"]["target_tok_s"])
    agent = view(context_tokens=PRESETS["coding_agent"]["context_tokens"],
                 target_tok_s=PRESETS["coding_agent"]["target_tok_s"])
    assert chat["active_preset"] == "chatbot" and agent["active_preset"] == "coding_agent"
    assert chat["recommended_max_num_seqs"] == 251
    assert (agent["max_batch_memory"], agent["max_batch_speed"]) == (15, 22)
    assert agent["recommended_max_num_seqs"] == 15
    assert view(context_tokens=4096)["active_preset"] is None
    # Every preset context is allowed for every catalog model.
    for preset in PRESETS.values():
        assert all(preset["context_tokens"] <= m.max_context_tokens for m in MODELS.values())


# -- Properties ---------------------------------------------------------------------

@st.composite
def configs(draw):
    model = draw(st.sampled_from(sorted(MODELS)))
    context = draw(st.integers(128, MODELS[model].max_context_tokens))
    return BatchSizeConfig(
        gpu=draw(st.sampled_from(sorted(GPUS))), model=model, context_tokens=context,
        target_tok_s=draw(st.floats(1, 1000, allow_nan=False)),
        kv_fp8=draw(st.booleans()), weights_fp8=draw(st.booleans()))


@settings(max_examples=80, deadline=None)
@given(configs(), st.integers(1, 200_000), st.integers(1, 200_000))
def test_bigger_batch_is_slower_per_user_and_never_less_in_total(config, b1, b2):
    lo, hi = sorted((b1, b2))
    m, ctx = ceilings(GPUS[config.gpu], MODELS[config.model], config), config.context_tokens
    assert per_user_tok_s(m, ctx, hi) <= per_user_tok_s(m, ctx, lo)
    assert total_tok_s(m, ctx, hi) >= total_tok_s(m, ctx, lo)
    assert step_seconds(m, ctx, hi) >= step_seconds(m, ctx, lo)
    # Along the drawn curve as well, point by point.
    curve = run(config, [])["curve"]
    for a, b in zip(curve, curve[1:]):
        assert a["batch"] < b["batch"]
        assert b["per_user_tok_s"] <= a["per_user_tok_s"]
        assert b["total_tok_s"] >= a["total_tok_s"]
        assert a["fits"] or not b["fits"]
        assert a["meets_target"] or not b["meets_target"]
        assert a["bound"] == "memory" or b["bound"] == "compute"


@settings(max_examples=100, deadline=None)
@given(configs())
def test_recommendation_fits_meets_target_and_is_the_largest(config):
    v = run(config, [])
    json.dumps(v, allow_nan=False)
    m, ctx = ceilings(GPUS[config.gpu], MODELS[config.model], config), config.context_tokens
    speed = lambda b: per_user_tok_s(m, ctx, b)  # noqa: E731
    rec = v["recommended_max_num_seqs"]
    if rec is None:
        assert v["reason"] in ("weights_do_not_fit", "no_room_for_kv", "too_slow")
        assert v["reason_text"] and v["reason_text"] in v["answer"]
        assert v["max_batch_memory"] == 0 or v["max_batch_speed"] == 0
        return
    assert v["reason"] is None and rec >= 1
    # fits: the KV of `rec` requests is inside the pool
    assert rec * v["request_kv_bytes"] <= v["kv_pool_bytes"]
    # meets the target
    assert speed(rec) >= config.target_tok_s
    assert v["per_user_tok_s"] == speed(rec) >= config.target_tok_s
    # largest: one more either does not fit or is too slow
    assert ((rec + 1) * v["request_kv_bytes"] > v["kv_pool_bytes"]
            or speed(rec + 1) < config.target_tok_s)
    # the speed limit is exact, the memory limit too
    limit = v["max_batch_speed"]
    assert speed(limit) >= config.target_tok_s > speed(limit + 1)
    assert v["max_batch_memory"] == v["kv_pool_bytes"] // v["request_kv_bytes"]
    # the chart marks: recommendation and the limits within the chart are on the curve
    batches = [p["batch"] for p in v["curve"]]
    assert rec in batches and batches == sorted(set(batches))
    assert v["max_batch_memory"] in batches or v["max_batch_memory"] > v["curve_max_batch"]
    assert f"set --max-num-seqs to {rec:,}" in v["answer"]


@settings(max_examples=50, deadline=None)
@given(configs())
def test_fp8_kv_about_doubles_the_pool_tokens(config):
    # floor(2x) is 2 floor(x) or one more, so "doubles" holds to within one token.
    off = run(BatchSizeConfig(**{**config.__dict__, "kv_fp8": False}), [])
    on = run(BatchSizeConfig(**{**config.__dict__, "kv_fp8": True}), [])
    assert on["kv_pool_bytes"] == off["kv_pool_bytes"]
    assert on["kv_pool_tokens"] - 2 * off["kv_pool_tokens"] in (0, 1)
    assert on["max_batch_memory"] - 2 * off["max_batch_memory"] in (0, 1)


# -- numpy: an independent vectorised evaluation of the spec's formulas ------------

def test_numpy_evaluation_agrees_over_a_grid():
    np = pytest.importorskip("numpy")
    grid = [(g, m, ctx, target, kv8, w8)
            for g, m, ctx, target, kv8, w8 in itertools.product(
                GPUS, MODELS, (128, 1_000, 2_048, 8_192, 32_768, 131_072),
                (1.0, 7.5, 30.0, 100.0), (False, True), (False, True))
            if ctx <= MODELS[m].max_context_tokens]
    views = [view(gpu=g, model=m, context_tokens=c, target_tok_s=t, kv_fp8=k, weights_fp8=w)
             for g, m, c, t, k, w in grid]

    # Per-setting columns, straight from the catalog's raw fields (floats, as numpy has them).
    def column(f):
        return np.array([f(*s) for s in grid], dtype=np.float64)

    mem = column(lambda g, *_: GPUS[g].reported_mib * 2**20)  # what the driver reports
    bw = column(lambda g, *_: GPUS[g].bandwidth_bytes_per_s)
    flops = column(lambda g, *_: GPUS[g].peak_flops)
    params = column(lambda g, m, *_: MODELS[m].params)
    shape = column(lambda g, m, *_: MODELS[m].layers * MODELS[m].kv_heads * MODELS[m].head_dim)
    # attention: 2 x head dim multiply-adds per query head per layer for each cached token
    attn = column(lambda g, m, *_: 4 * MODELS[m].layers * MODELS[m].heads * MODELS[m].head_dim)
    ctx = column(lambda g, m, c, *_: c)
    target = column(lambda g, m, c, t, *_: t)
    kv_elem = column(lambda *s: 1 if s[4] else 2)
    w_elem = column(lambda *s: 1 if s[5] else 2)

    kv_per_token = 2 * shape * kv_elem
    weights = params * w_elem
    pool = mem * 1.0 - weights - 2e9  # vLLM 0.34.0: every catalog GPU at utilization 1.0
    # a decode: the matmuls without the embedding, and the LM head once (pysim.timing.steptime)
    vh = column(lambda g, m, *_: MODELS[m].vocab_size * MODELS[m].hidden_size)
    tied = column(lambda g, m, *_: 1 if MODELS[m].tie_word_embeddings else 0)
    per_request_flops = 2 * (params - vh * (2 - tied) + vh) + attn * ctx
    fits = np.where(pool > 0, np.floor(np.maximum(pool, 0) / (ctx * kv_per_token)), 0)
    one = np.maximum((weights + ctx * kv_per_token) / bw, per_request_flops / flops)  # t_step(1)
    speed = np.floor(np.minimum((bw / target - weights) / (ctx * kv_per_token),
                                flops / (per_request_flops * target)))
    speed = np.where(1 / one >= target, speed, 0)

    def got(key):
        return np.array([v[key] for v in views], dtype=np.float64)

    np.testing.assert_array_equal(got("kv_bytes_per_token"), kv_per_token)
    np.testing.assert_array_equal(got("weight_bytes"), weights)
    np.testing.assert_allclose(got("kv_pool_bytes"), np.maximum(pool, 0), rtol=1e-12)
    np.testing.assert_array_equal(got("kv_pool_tokens"), np.floor(np.maximum(pool, 0) / kv_per_token))
    np.testing.assert_array_equal(got("max_batch_memory"), fits)
    np.testing.assert_array_equal(got("max_batch_speed"), speed)
    rec = np.where((pool >= 0) & (fits > 0) & (speed > 0), np.minimum(fits, speed), -1)
    got_rec = np.array([-1 if v["recommended_max_num_seqs"] is None else v["recommended_max_num_seqs"]
                        for v in views], dtype=np.float64)
    np.testing.assert_array_equal(got_rec, rec)

    # Every curve point of every setting, as one long vector.
    row = np.array([i for i, v in enumerate(views) for _ in v["curve"]])
    b = np.array([p["batch"] for v in views for p in v["curve"]], dtype=np.float64)
    t_mem = (weights[row] + b * ctx[row] * kv_per_token[row]) / bw[row]
    t_cmp = per_request_flops[row] * b / flops[row]
    t_step = np.maximum(t_mem, t_cmp)

    def pts(key):
        return np.array([p[key] for v in views for p in v["curve"]], dtype=np.float64)

    assert len(b) > 10_000
    np.testing.assert_allclose(pts("t_step_ms"), 1000 * t_step, rtol=1e-12)
    np.testing.assert_allclose(pts("per_user_tok_s"), 1 / t_step, rtol=1e-12)
    np.testing.assert_allclose(pts("total_tok_s"), b / t_step, rtol=1e-12)
    np.testing.assert_array_equal(pts("per_user_tok_s") >= 0, True)
    assert [p["bound"] == "compute" for v in views for p in v["curve"]] == list(t_cmp > t_mem)
    assert [p["fits"] for v in views for p in v["curve"]] == list(b <= fits[row])
    assert [p["meets_target"] for v in views for p in v["curve"]] == list(1 / t_step >= target[row])


# -- CLI, bridge, bad input ------------------------------------------------------------

DOCUMENTED_KEYS = {"kv_bytes_per_token", "weight_bytes", "kv_pool_bytes", "kv_pool_tokens",
                   "max_batch_memory", "max_batch_speed", "recommended_max_num_seqs", "reason",
                   "reason_text", "per_user_tok_s", "total_tok_s", "answer", "curve",
                   "crossover_batch", "presets", "catalog", "gpu", "model", "config"}
POINT_KEYS = {"batch", "t_step_ms", "per_user_tok_s", "total_tok_s", "bound", "fits",
              "meets_target"}


def test_cli_json_prints_the_documented_keys(capsys):
    code = main(["batch-size", "--json", "--set", "gpu=H100", "--set", "model=llama-3.1-8b",
                 "--set", "context_tokens=2048", "--set", "target_tok_s=30",
                 "--set", "kv_fp8=true", "--set", "weights_fp8=false"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert DOCUMENTED_KEYS <= set(out)
    assert all(set(p) == POINT_KEYS for p in out["curve"])
    assert out["kv_bytes_per_token"] == 65_536
    # FP8 KV: memory allows 67,460,809,984 / 134,217,728 = 502.6 -> 502 = 2 x 251
    assert out["max_batch_memory"] == 502 == out["recommended_max_num_seqs"]
    assert [g["id"] for g in out["catalog"]["gpus"]] == ["H100", "H200", "L40S", "A100", "H100-PCIe",
                                                         "A100-40GB", "L4", "A10G", "MI300X"]
    assert out["catalog"]["models"][0] == {"id": "llama-3.1-8b", "label": "Llama 3.1 8B",
                                           "max_context_tokens": 131_072}


def test_cli_text_summary(capsys):
    assert main(["batch-size"]) == 0
    out = capsys.readouterr().out
    assert "set --max-num-seqs to 251" in out and "ideal ceiling" in out
    assert "tok/s/user" in out and "    251 " in out
    assert text(view(gpu="L40S", model="llama-3.1-70b")).count("no --max-num-seqs works") == 1


def test_bridge_call_answers_json():
    answer = json.loads(call("batch_size", json.dumps({"config": {"gpu": "H200"}})))
    assert answer["ok"] is True
    assert answer["result"]["gpu"]["label"] == "H200 141 GB"
    bad = json.loads(call("batch_size", json.dumps({"config": {"gpu": "B200"}})))
    assert bad["ok"] is False and bad["error"]["field"] == "gpu"


@pytest.mark.parametrize("setting, field", [
    ("gpu=H999", "gpu"),
    ("model=gpt-5", "model"),
    ("context_tokens=0", "context_tokens"),
    ("context_tokens=200000", "context_tokens"),
    ("context_tokens=2048.5", "context_tokens"),
    ("target_tok_s=fast", "target_tok_s"),
    ("target_tok_s=0", "target_tok_s"),
    ("kv_fp8=maybe", "kv_fp8"),
    ("preset=chatbot", "preset"),
])
def test_cli_bad_input_names_the_field(capsys, setting, field):
    assert main(["batch-size", "--set", setting]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {field}: ")


def test_context_beyond_the_model_maximum_is_refused():
    with pytest.raises(ConfigError) as info:
        from_mapping(BatchSizeConfig, {"model": "qwen3-8b", "context_tokens": 131_072})
    assert info.value.field == "context_tokens"
    assert "40,960" in info.value.message and "Qwen3 8B" in info.value.message
    # Exactly the maximum is fine.
    assert view(model="qwen3-8b", context_tokens=40_960)["config"]["context_tokens"] == 40_960


def test_error_messages_name_the_allowed_range():
    with pytest.raises(ConfigError) as info:
        from_mapping(BatchSizeConfig, {"gpu": "h100"}, from_text=True)
    assert "H100, H200, L40S, A100, H100-PCIe, A100-40GB, L4, A10G, MI300X" in info.value.message
    with pytest.raises(ConfigError) as info:
        from_mapping(BatchSizeConfig, {"target_tok_s": "fast"}, from_text=True)
    assert "from 1 to 1,000" in info.value.message


def test_curve_spacing_and_cap():
    v = view()  # limits 251 and 356 -> chart to the power of two >= 712, i.e. 1,024
    assert v["curve_max_batch"] == 1_024
    batches = [p["batch"] for p in v["curve"]]
    assert batches == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 251, 256, 356,
                       384, 512, 768, 1_024]
    # The largest limits (MI300X, Mistral 7B, FP8 everything, 128 tokens, 1 tok/s) stay capped.
    big = view(gpu="MI300X", model="mistral-7b-v0.3", context_tokens=128, target_tok_s=1,
               kv_fp8=True, weights_fp8=True)
    assert big["curve_max_batch"] == batch_size.CURVE_CAP
    assert len(big["curve"]) <= 40
    # FLOPs bind: 2 x (7.25e9 - 32,768 x 4,096) (the matmuls but the embedding, the LM head
    # once) + 128 x 524,288 (attention) = 14,298,673,408 a request
    assert big["max_batch_speed"] == math.floor(
        1307.4e12 / (2 * (7.25e9 - 32_768 * 4_096) + 128 * 524_288)) == 91_435
