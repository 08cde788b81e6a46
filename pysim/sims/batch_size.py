"""Choosing the batch size: the --max-num-seqs trade-off (page docs/batch-size.md).

A decode step of B running requests, each holding `context_tokens` tokens of context,
is a step of the chapter's one step-time model (pysim.timing.steptime): B tokens from B
requests, B x context KV entries read and as many query-key pairs. Page 6 takes that
model's ceilings alone (`steptime.IDEAL`: no overheads, 100% of the datasheet):

    bytes(B)  = weight_bytes + B x context x kv_bytes_per_token
    FLOPs(B)  = B x (2 x params + context x attention_flops_per_pair)
    t_step(B) = max(bytes(B) / bandwidth, FLOPs(B) / peak_flops)
    per-user speed   = 1 / t_step(B)      (tokens/s each user sees)
    total throughput = B / t_step(B)      (tokens/s the GPU produces)

A bigger batch shares the weight read among more users (total rises), but every extra
request adds its KV read (or its FLOPs) to the step, so each user's stream slows down.
Memory caps the batch too: the KV pool is the one every page sizes
(`steptime.kv_pool_bytes`: what vLLM may use of the memory the driver reports, minus
the weights and what the runtime holds), and a request of `context_tokens` tokens needs
`context_tokens x kv_bytes_per_token` of it. The answer is the largest B that both fits
and meets the per-user speed target, or none with the reason.

Everything here is an *ideal ceiling*: a real engine adds kernel launches, sampling,
prefill and scheduling gaps, and reaches less (the lab's fitted coefficients, page 7,
put those costs back). FLOPs count at the dense 16-bit peak even with FP8 weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pysim import fields
from pysim.config import ConfigError, bounded, flag, to_mapping
from pysim.registry import Simulation
from pysim.timing.catalog import GB, GPU, GPUS, MODELS, Model
from pysim.timing.steptime import (IDEAL, RUNTIME_BYTES, StepTimeModel, gpu_memory_utilization, kv_pool_bytes,
                                   step_time_model, usable_bytes)

# The curve stops here however large the limits are (the speed limit can reach ~90,000
# at 1 token/s); points are log-spaced, so this is about 35 points at most.
CURVE_CAP = 65_536

NOTE = ("Ideal ceilings from a roofline model (illustrative): each decode step reads "
        "all weights once plus every request's KV cache; real servers reach less.")

# Presets are data the widget applies to context_tokens and target_tok_s (see the
# report: they are not a config field, so the URL holds only the real settings).
PRESETS: dict[str, dict] = {
    "chatbot": {
        "label": "Chatbot",
        "context_tokens": 2_048,
        "target_tok_s": 30.0,
        "why": ("a short conversation: system prompt, a few turns and the reply fit in "
                "2,048 tokens; 30 tokens/s streams faster than anyone reads"),
    },
    "coding_agent": {
        "label": "Coding agent",
        "context_tokens": 32_768,
        "target_tok_s": 30.0,
        "why": ("an agent keeps files, tool output and its plan in context: 32,768 tokens "
                "(32K, a window every catalog model supports); the same 30 tokens/s, so "
                "only the context changes"),
    },
}


@dataclass(frozen=True)
class BatchSizeConfig:
    gpu: str = fields.gpu("H100")
    model: str = fields.model("llama-3.1-8b")
    context_tokens: int = bounded(2_048, 128, 131_072,
                                  "tokens of context each running request holds "
                                  "(at most the model's own maximum)",
                                  label="Context per request (tokens)", unit="tokens", scale="log")
    target_tok_s: float = bounded(30.0, 1, 1_000, "the speed each user must see, tokens/s",
                                  integer=False, label="Target speed per user (tokens/s)",
                                  unit="tokens/s", scale="log")
    kv_fp8: bool = flag(False, "store the KV cache in FP8 (1 byte a number instead of 2)",
                        label="FP8 KV cache")
    weights_fp8: bool = flag(False, "store the weights in FP8 (1 byte a parameter instead of 2)",
                             label="FP8 weights")

    def check(self) -> None:
        model = MODELS[self.model]
        if self.context_tokens > model.max_context_tokens:
            raise ConfigError(
                "context_tokens",
                f"got {self.context_tokens:,}, but {model.name} reads at most "
                f"{model.max_context_tokens:,} tokens; expected a whole number from 128 to "
                f"{model.max_context_tokens:,}")


def ceilings(gpu: GPU, model: Model, config: BatchSizeConfig) -> StepTimeModel:
    """The chapter's step-time model for this GPU, model and precision, ceilings only."""
    return step_time_model(gpu, model, IDEAL, weights_fp8=config.weights_fp8, kv_fp8=config.kv_fp8)


# -- A decode batch on that model ---------------------------------------------------
# Each function takes the model `m` (from `ceilings`), the context each request holds
# and the batch b. The step's bytes and FLOPs are exact integers (StepTimeModel.work),
# so which ceiling binds is an exact integer comparison. With no overheads and 100%
# efficiencies the step lasts max(bytes / bw, FLOPs / F), and each speed is one
# correctly rounded division of integers, 1 / max(x, y) = min(1/x, 1/y): the curves are
# monotone to the last bit (a compute-bound total is exactly F / FLOPs(1) at every B).

def decode_work(m: StepTimeModel, context: int, b: int) -> tuple[int, int]:
    """(bytes, FLOPs) of one decode step of b requests: b tokens, each query meeting its
    request's whole context, which the step reads."""
    return m.work(b, b * context, b * context, b)


def step_seconds(m: StepTimeModel, context: int, b: int) -> float:
    return m.seconds(b, b, b * context, b * context)


def per_user_tok_s(m: StepTimeModel, context: int, b: int) -> float:
    read, flops = decode_work(m, context, b)
    return min(m.bandwidth / read, m.peak_flops / flops)


def total_tok_s(m: StepTimeModel, context: int, b: int) -> float:
    read, _ = decode_work(m, context, b)
    return min(b * m.bandwidth / read, m.peak_flops / decode_work(m, context, 1)[1])


def compute_bound(m: StepTimeModel, context: int, b: int) -> bool:
    """True when the FLOPs take longer than the reads (exact integer comparison)."""
    read, flops = decode_work(m, context, b)
    return flops * m.bandwidth > read * m.peak_flops


def crossover(m: StepTimeModel, context: int) -> int | None:
    """Smallest B at which compute binds, or None if reads always take longer.

    With W the weights, R one request's KV read and X one request's FLOPs, compute >
    memory  <=>  B x (X x bw - R x F) > W x F: it happens only when one more request
    adds more compute time than read time.
    """
    w = decode_work(m, context, 0)[0]
    read_1, x = decode_work(m, context, 1)
    slope = x * m.bandwidth - (read_1 - w) * m.peak_flops
    if slope <= 0:
        return None
    b = w * m.peak_flops // slope + 1
    assert compute_bound(m, context, b) and (b == 1 or not compute_bound(m, context, b - 1))
    return b


def meets(m: StepTimeModel, context: int, b: int, target: float) -> bool:
    return per_user_tok_s(m, context, b) >= target


def speed_limit(m: StepTimeModel, context: int, target: float) -> int:
    """Largest B whose per-user speed still meets `target` (0 if even B = 1 misses).

    Solved from each ceiling, then nudged by the exact test so the rounding of the
    division can never disagree with `meets`.
    """
    if not meets(m, context, 1, target):
        return 0
    w = decode_work(m, context, 0)[0]
    read_1, x = decode_work(m, context, 1)
    by_reads = (m.bandwidth / target - w) / (read_1 - w)
    by_flops = m.peak_flops / (x * target)
    b = max(1, math.floor(min(by_reads, by_flops)))
    while b > 1 and not meets(m, context, b, target):
        b -= 1
    while meets(m, context, b + 1, target):
        b += 1
    return b


def run(config: BatchSizeConfig, actions: list) -> dict:
    assert not actions
    gpu, model = GPUS[config.gpu], MODELS[config.model]
    m = ceilings(gpu, model, config)
    ctx, target = config.context_tokens, config.target_tok_s
    assert m.coefficients == IDEAL  # the speeds below are the ceilings' (see above)
    request_kv_bytes = ctx * m.kv_bytes_per_token

    # Memory: what is left for the KV cache, and how many requests of this context fit.
    pool = kv_pool_bytes(gpu, model, weights_fp8=config.weights_fp8)
    kv_pool = max(pool, 0)
    max_batch_memory = kv_pool // request_kv_bytes

    # Speed: how many requests can share a step before each user drops below the target.
    max_batch_speed = speed_limit(m, ctx, target)

    reason = _reason(pool, max_batch_memory, max_batch_speed)
    recommended = None if reason else min(max_batch_memory, max_batch_speed)
    if recommended is not None:
        assert recommended >= 1 and meets(m, ctx, recommended, target)

    view = {
        "config": to_mapping(config),
        "note": NOTE,
        "gpu": gpu.record(),
        "model": model.record(),
        "precision": {"weights": _precision(config.weights_fp8),
                      "kv_cache": _precision(config.kv_fp8)},
        "kv_bytes_per_token": m.kv_bytes_per_token,
        "request_kv_bytes": request_kv_bytes,
        "weight_bytes": m.weight_bytes,
        "usable_bytes": usable_bytes(gpu),
        "runtime_bytes": RUNTIME_BYTES,
        "kv_pool_bytes": kv_pool,
        "kv_pool_tokens": kv_pool // m.kv_bytes_per_token,
        "max_batch_memory": max_batch_memory,
        "max_batch_speed": max_batch_speed,
        "recommended_max_num_seqs": recommended,
        "limited_by": None if recommended is None else (
            "memory" if max_batch_memory <= max_batch_speed else "speed"),
        "reason": reason,
        "reason_text": None,
        "per_user_tok_s": None if recommended is None else per_user_tok_s(m, ctx, recommended),
        "total_tok_s": None if recommended is None else total_tok_s(m, ctx, recommended),
        "t_step_ms": None if recommended is None else 1000 * step_seconds(m, ctx, recommended),
        "single_user_tok_s": per_user_tok_s(m, ctx, 1),
        "crossover_batch": crossover(m, ctx),
        "answer": "",
        "curve": [],
        "curve_max_batch": 0,
        "presets": PRESETS,
        "active_preset": _active_preset(config),
        "catalog": {
            "gpus": [{"id": g.id, "label": g.label} for g in GPUS.values()],
            "models": [{"id": mm.id, "label": mm.name, "max_context_tokens": mm.max_context_tokens}
                       for mm in MODELS.values()],
        },
    }
    view["reason_text"] = _reason_text(view, gpu, model)
    view["answer"] = _answer(view, gpu, model)
    top = _curve_top(max_batch_memory, max_batch_speed)
    marks = (max_batch_memory, max_batch_speed, recommended, view["crossover_batch"])
    view["curve"] = [_point(m, ctx, b, max_batch_memory, target) for b in _curve_batches(top, marks)]
    view["curve_max_batch"] = top
    return view


def _reason(pool: int, max_batch_memory: int, max_batch_speed: int) -> str | None:
    # Memory problems come first: they stop the server from starting at all.
    if pool < 0:
        return "weights_do_not_fit"
    if max_batch_memory == 0:
        return "no_room_for_kv"
    if max_batch_speed == 0:
        return "too_slow"
    return None


def _precision(fp8: bool) -> str:
    return "FP8" if fp8 else "16-bit"


def _active_preset(config: BatchSizeConfig) -> str | None:
    for key, preset in PRESETS.items():
        if (config.context_tokens == preset["context_tokens"]
                and config.target_tok_s == preset["target_tok_s"]):
            return key
    return None


# -- Curve --------------------------------------------------------------------------

def _point(m: StepTimeModel, ctx: int, b: int, max_batch_memory: int, target: float) -> dict:
    return {"batch": b,
            "t_step_ms": 1000 * step_seconds(m, ctx, b),
            "per_user_tok_s": per_user_tok_s(m, ctx, b),
            "total_tok_s": total_tok_s(m, ctx, b),
            "bound": "compute" if compute_bound(m, ctx, b) else "memory",
            "fits": b <= max_batch_memory,
            "meets_target": meets(m, ctx, b, target)}


def _curve_top(max_batch_memory: int, max_batch_speed: int) -> int:
    """The curve runs to the power of two at or above twice the larger limit (16..CURVE_CAP)."""
    want = 2 * max(max_batch_memory, max_batch_speed, 1)
    top = 16
    while top < want and top < CURVE_CAP:
        top *= 2
    return top


def _curve_batches(top: int, marks) -> list[int]:
    """Log-spaced batches 1, 2, 3, 4, 6, 8, 12, ... (powers of two and 1.5x them), plus
    the exact limits, recommendation and crossover that fall within the chart."""
    batches = {1}
    p = 2
    while p <= top:
        batches.add(p)
        if p + p // 2 <= top:
            batches.add(p + p // 2)
        p *= 2
    batches.update(m for m in marks if m is not None and 1 <= m <= top)
    return sorted(batches)


# -- Words --------------------------------------------------------------------------

def _an(name: str) -> str:
    """'an H100', 'a 4090': GPU names are spelled out letter by letter, and the letters
    A E F H I L M N O R S X are read with a leading vowel sound."""
    return ("an " if name[:1].upper() in "AEFHILMNORSX" else "a ") + name


def _gb(n: int) -> str:
    """Decimal gigabytes, up to two decimals: 16.06 GB, 141.2 GB, 2 GB."""
    return f"{n / GB:,.2f}".rstrip("0").rstrip(".") + " GB"


def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.3g}"


def _rate(x: float) -> str:
    """'1 token/s' but '30 tokens/s'."""
    return f"{x:g} token/s" if x == 1 else f"{x:g} tokens/s"


def _setting(view: dict, gpu: GPU, model: Model) -> str:
    cfg, prec = view["config"], view["precision"]
    if prec["weights"] == prec["kv_cache"]:
        precision = f"{prec['weights']} weights and KV cache"
    else:
        precision = f"{prec['weights']} weights, {prec['kv_cache']} KV cache"
    return (f"On {_an(gpu.name)} with {model.name} ({precision}) at "
            f"{cfg['context_tokens']:,} tokens of context and {_rate(cfg['target_tok_s'])} per user")


def _reason_text(view: dict, gpu: GPU, model: Model) -> str | None:
    reason, cfg = view["reason"], view["config"]
    if reason == "weights_do_not_fit":
        return (f"the weights alone take {_gb(view['weight_bytes'])}; with the "
                f"{_gb(RUNTIME_BYTES)} the runtime keeps that is more than the "
                f"{_gb(view['usable_bytes'])} the server may use ({gpu_memory_utilization(gpu):.0%} of "
                f"the {gpu.reported_mib:,} MiB the driver reports)")
    if reason == "no_room_for_kv":
        return (f"after the weights and the runtime's {_gb(RUNTIME_BYTES)} the KV pool holds "
                f"{view['kv_pool_tokens']:,} tokens, fewer than one request's "
                f"{cfg['context_tokens']:,}")
    if reason == "too_slow":
        return (f"even a single user gets only {_num(view['single_user_tok_s'])} tokens/s, "
                f"below the {_rate(cfg['target_tok_s'])} target")
    return None


def _answer(view: dict, gpu: GPU, model: Model) -> str:
    setting = _setting(view, gpu, model)
    if view["reason"] is not None:
        return f"{setting}, no --max-num-seqs works: {view['reason_text']}. (Ideal ceiling.)"
    return (f"{setting}, set --max-num-seqs to {view['recommended_max_num_seqs']:,}: memory "
            f"allows {view['max_batch_memory']:,}, the speed target allows "
            f"{view['max_batch_speed']:,}. (Ideal ceilings; a real server reaches less.)")


def text(view: dict) -> str:
    cfg = view["config"]
    rec = view["recommended_max_num_seqs"]
    lines = [
        f"Batch size (--max-num-seqs), ideal ceiling: {view['gpu']['label']}, "
        f"{view['model']['label']}",
        f"  KV cache {view['kv_bytes_per_token']:,} B/token ({view['precision']['kv_cache']}); "
        f"weights {_gb(view['weight_bytes'])} ({view['precision']['weights']})",
        f"  KV pool {_gb(view['kv_pool_bytes'])} = {view['kv_pool_tokens']:,} tokens "
        f"(usable {_gb(view['usable_bytes'])} - weights - {_gb(view['runtime_bytes'])} for the runtime)",
        f"  memory allows {view['max_batch_memory']:,} requests of {cfg['context_tokens']:,} "
        f"tokens; {cfg['target_tok_s']:g} tokens/s per user allows {view['max_batch_speed']:,}",
    ]
    if rec is not None:
        lines.append(f"  at {rec:,}: {_num(view['per_user_tok_s'])} tokens/s per user, "
                     f"{_num(view['total_tok_s'])} tokens/s total, step "
                     f"{view['t_step_ms']:.2f} ms (limited by {view['limited_by']})")
    cross = view["crossover_batch"]
    lines.append("  compute binds from batch " + (f"{cross:,}" if cross else "- (never: "
                 "each request's KV read takes longer than its FLOPs)"))
    lines += ["", view["answer"], "",
              f"{'batch':>7} {'step ms':>9} {'tok/s/user':>11} {'tok/s total':>12} "
              f"{'bound':>8} {'fits':>5} {'meets':>6}"]
    for p in view["curve"]:
        flagmark = " <" if p["batch"] == rec else ""
        lines.append(f"{p['batch']:>7,} {p['t_step_ms']:>9.2f} {p['per_user_tok_s']:>11.1f} "
                     f"{p['total_tok_s']:>12,.0f} {p['bound']:>8} "
                     f"{'yes' if p['fits'] else 'no':>5} "
                     f"{'yes' if p['meets_target'] else 'no':>6}{flagmark}")
    return "\n".join(lines)


def figures() -> dict:
    """The numbers page 6 quotes ({{ batch_size.KEY }}): the calculator's defaults, its
    FP8 KV cache and the coding-agent preset."""
    base = run(BatchSizeConfig(), [])
    fp8 = run(BatchSizeConfig(kv_fp8=True), [])
    coding = run(BatchSizeConfig(context_tokens=base["presets"]["coding_agent"]["context_tokens"]), [])
    return {
        "gpu": base["gpu"]["label"], "model": base["model"]["label"],
        "context": base["config"]["context_tokens"], "target": base["config"]["target_tok_s"],
        "kv_bytes_per_token": base["kv_bytes_per_token"],
        "kv_kib_per_token": base["kv_bytes_per_token"] / 1024,
        "layers": base["model"]["layers"], "kv_heads": base["model"]["kv_heads"],
        "head_dim": base["model"]["head_dim"],
        "weights_gb": base["weight_bytes"] / 1e9,
        "reported_mib": GPUS[base["gpu"]["id"]].reported_mib,
        "reported_gb": GPUS[base["gpu"]["id"]].reported_bytes / 1e9,
        "utilization_pct": gpu_memory_utilization(GPUS[base["gpu"]["id"]]) * 100,
        "usable_gb": base["usable_bytes"] / 1e9,
        "runtime_gb": base["runtime_bytes"] / 1e9,
        "pool_gb": base["kv_pool_bytes"] / 1e9,
        "pool_tokens": base["kv_pool_tokens"],
        "max_batch_memory": base["max_batch_memory"],
        "max_batch_speed": base["max_batch_speed"],
        "recommended": base["recommended_max_num_seqs"],
        "per_user_at_rec": base["per_user_tok_s"],
        "total_at_rec": base["total_tok_s"],
        "single_user": base["single_user_tok_s"],
        "fp8_pool_tokens": fp8["kv_pool_tokens"],
        "fp8_max_batch_memory": fp8["max_batch_memory"],
        "coding_context": coding["config"]["context_tokens"],
        "coding_max_batch_memory": coding["max_batch_memory"],
        "coding_recommended": coding["recommended_max_num_seqs"],
    }


SIMULATION = Simulation(name="batch_size", config_cls=BatchSizeConfig, run=run, text=text,
                        figures=figures)
