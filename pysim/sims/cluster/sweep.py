"""`cluster_sweep`: the fewest GPUs that meet the SLOs, colocated and disaggregated.

One GPU count per call (the page's, with progress and a way to stop: the points so far
are the call's actions) or the whole sweep (the command line): each count runs the
window on that many replicas, split into prefill and decode in proportion to each side's
work, and stops a run as soon as it is surely short of the target
(pysim.sims.cluster.watch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from pysim.config import ConfigError, bounded, choice, flag, to_mapping
from pysim.sims.cluster.config import MAX_GPUS, ClusterConfig, block_size, window
from pysim.sims.cluster.simulate import ClusterResult, metrics, simulate
from pysim.sims.cluster.watch import Doomed, Watch
from pysim.timing.catalog import GPUS, MODELS
from pysim.timing.steptime import DEFAULTS, step_time_model
from pysim.traffic import slo, traces

ATTAINMENT_TARGET = 0.9  # as the lab's capacity: 90% of requests meet both targets


SWEEP_GPUS = (2, 3, 4, 5, 6, 8, 10, 12, 16)  # the counts the page's sweep tries, in order (2: one of each side)


# The page runs the sweep one `cluster_sweep` call per count and stops as this says;
# which count meets the target is each point's `meets`.
SWEEP_SENTENCE = (
    f"For each GPU count from {SWEEP_GPUS[0]} to {SWEEP_GPUS[-1]}, pysim runs the window on that "
    "many colocated replicas, and split into prefill and decode replicas in proportion to each "
    "side's work, with the router, GPU, model and targets above, until each layout has a count "
    f"where {ATTAINMENT_TARGET:.0%} of requests meet both targets. A run stops as soon as more than "
    f"{1 - ATTAINMENT_TARGET:.0%} of requests have surely missed a target: that count fails whatever "
    "the rest would do. The largest count runs to the end.")


SWEEP_CAPTION = (f"The sweep, GPU count by GPU count (meets: at least {ATTAINMENT_TARGET:.0%} of "
                 "requests meet both targets)")


def first_token_floors(config: ClusterConfig, reqs: list) -> list[float]:
    """Each request's time to first token alone on an idle replica, with every prefix
    seen earlier in the window still cached (as `bound_hit_rate` counts it): its prompt
    computed in chunks of the token budget, each a step of the step-time model. No
    cluster of these GPUs can give it a first token sooner."""
    stm = step_time_model(GPUS[config.gpu], MODELS[config.model], DEFAULTS[config.gpu])
    budget = config.max_num_batched_tokens
    out = []
    for r, done in seen_before(reqs, block_size(config)):
        t = 0.0
        while done < r.num_prompt_tokens:
            n = min(budget, r.num_prompt_tokens - done)
            c = done + n  # KV it holds after the chunk; the chunk's pairs as the engine counts them
            t += stm.seconds(n, 1, c, n * c - n * (n - 1) // 2)
            done = c
        out.append(t)
    return out


def surely_late(config: ClusterConfig, reqs: list) -> list[int]:
    """The requests no cluster of these GPUs can give a first token within the TTFT
    target, by a bound that holds for every schedule, so the sweep counts them as missed
    before it runs anything (Watch). A request must compute at least the prompt tokens
    no earlier request had (`seen_before`: N tokens), in at least ceil(N / budget) steps;
    each step costs at least the step overhead, one request's overhead and a read of the
    weights (the step-time model's memory side, with no KV), and all of them together at
    least the FLOPs of those N tokens and their attention pairs (the compute side). The
    step-time model's max(memory, compute) per step is at least either sum's share, so
    the first token comes no sooner than
        steps x (step overhead + request overhead) + max(steps x weights read, FLOPs).
    Looser than `first_token_floors` (which times one schedule), but a true bound."""
    stm = step_time_model(GPUS[config.gpu], MODELS[config.model], DEFAULTS[config.gpu])
    c = stm.coefficients
    budget = config.max_num_batched_tokens
    per_step = c.step_overhead_ms / 1e3 + c.request_overhead_us / 1e6
    weights = stm.roofline(0, 0, 0, 0)[0] / c.memory_efficiency
    limit = config.slo_ttft_ms / 1000 * (1 + 1e-9) + 1e-9  # a margin for rounding: "surely"
    out = []
    for i, (r, cached) in enumerate(seen_before(reqs, block_size(config))):
        n, p = r.num_prompt_tokens - cached, r.num_prompt_tokens
        steps = -(-n // budget)
        flops = stm.roofline(n, 0, n * p - n * (n - 1) // 2, 1)[1] / c.compute_efficiency
        if steps * per_step + max(steps * weights, flops) > limit:
            out.append(i)
    return out


def ttft_ceiling(config: ClusterConfig, reqs: list) -> float:
    """The share of requests that could meet the TTFT target at all (`first_token_floors`)."""
    limit = config.slo_ttft_ms / 1000
    return sum(1 for t in first_token_floors(config, reqs) if t <= limit) / len(reqs)


def ceiling_sentence(config: ClusterConfig, ceiling: float) -> str | None:
    if ceiling >= ATTAINMENT_TARGET:
        return None
    return (f"No number of GPUs can meet the target: even alone on an idle {GPUS[config.gpu].label}, with every "
            f"earlier prefix of the window cached, only {ceiling:.1%} of these requests get their first "
            f"token within {config.slo_ttft_ms:,.0f} ms, short of the {ATTAINMENT_TARGET:.0%} the sweep asks "
            f"for: their prompts are too long for one GPU (a replica here has no tensor parallelism).")


DECODE_BATCH = 32  # the batch the split's rule of thumb prices a decode step at


def split(config: ClusterConfig, gpus: int, reqs: list) -> tuple[int, int]:
    """Prefill and decode replicas for `gpus` GPUs, in proportion to the GPU time each
    side needs for the window: every prompt prefilled alone in one step, and every
    answer token decoded in a batch of DECODE_BATCH requests at the window's mean
    context, both timed by the step model. A rule of thumb, not a search: DistServe
    searches placements by simulation instead."""
    gpu, model = GPUS[config.gpu], MODELS[config.model]
    stm = step_time_model(gpu, model, DEFAULTS[config.gpu])
    prefill = math.fsum(stm.seconds(r.num_prompt_tokens, 1, r.num_prompt_tokens,
                                    r.num_prompt_tokens * (r.num_prompt_tokens + 1) // 2) for r in reqs)
    context = sum(r.num_prompt_tokens + r.max_tokens // 2 for r in reqs) // len(reqs)
    b = DECODE_BATCH
    decode = stm.seconds(b, b, b * context, b * context) / b * sum(r.max_tokens - 1 for r in reqs)
    p = min(max(round(gpus * prefill / (prefill + decode)), 1), gpus - 1)
    return p, gpus - p


LAYOUTS = ("colocated", "disaggregated")


def sweep_points(actions: list) -> list[dict]:
    """`cluster_sweep`'s actions: the sweep's points so far, in its order, each as
    cluster_sweep returned it (only what the answer reads is kept)."""
    if len(actions) >= len(SWEEP_GPUS):
        raise ConfigError("actions", f"expected fewer than {len(SWEEP_GPUS)} sweep points, got {len(actions):,}")
    out = []
    for k, p in enumerate(actions):
        if not isinstance(p, dict) or p.get("gpus") != SWEEP_GPUS[k]:
            raise ConfigError("actions", f"point {k + 1}: expected an object for {SWEEP_GPUS[k]} GPUs, "
                                         "the sweep's counts in order")
        point = {"gpus": p["gpus"]}
        for layout in LAYOUTS:
            q = p.get(layout)
            if q is None:
                point[layout] = None
                continue
            # What sweep_answer reads: a count that meets ran to its end, so it has its
            # attainment; a split names its replicas.
            ok = (isinstance(q, dict) and isinstance(q.get("meets"), bool) and _share(q.get("attainment_at_most"))
                  and (_share(q.get("slo_attainment")) or (q.get("slo_attainment") is None and not q["meets"])))
            split = layout == "disaggregated"
            if split:
                ok = ok and all(_whole(q.get(key), 1, MAX_GPUS) for key in ("prefill_replicas", "decode_replicas"))
            if not ok:
                raise ConfigError("actions", f"point {k + 1}: '{layout}' should hold 'meets', "
                                             "'attainment_at_most' from 0 to 1 and, if it meets, "
                                             "'slo_attainment' from 0 to 1"
                                             + (f"; and 'prefill_replicas' and 'decode_replicas' from 1 to "
                                                f"{MAX_GPUS}" if split else ""))
            pass_ms = q.get("pass_ttft_ms")
            point[layout] = {"meets": q["meets"], "slo_attainment": q.get("slo_attainment"),
                             "attainment_at_most": q["attainment_at_most"],
                             "pass_ttft_ms": pass_ms if _number(pass_ms) and pass_ms >= 0 else None,
                             "prefill_replicas": q.get("prefill_replicas"), "decode_replicas": q.get("decode_replicas")}
        out.append(point)
    return out


def _number(x) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float))


def _share(x) -> bool:
    return _number(x) and 0 <= x <= 1


def _whole(x, lo: int, hi: int) -> bool:
    return not isinstance(x, bool) and isinstance(x, int) and lo <= x <= hi


@dataclass(frozen=True)
class SweepConfig(ClusterConfig):
    """The cluster's settings and which count of the sweep to run: a GPU count (or the
    whole sweep), the layouts still without an answer, and whether to run to the end.
    (The points so far are the call's actions: what one call asks, not a setting.)"""

    gpus: int = bounded(0, 0, MAX_GPUS, "GPUs in the cluster for one count of the sweep; 0 runs "
                        "the whole sweep", label="GPUs", unit="GPUs")
    sweep_layouts: str = choice("both", ("both",) + LAYOUTS, "the layouts this count runs (the sweep "
                                "drops a layout once a count meets the target)", label="Sweep layouts")
    sweep_exact: bool = flag(False, "run every request to its end, even once the target is surely "
                             "missed (the sweep's largest count)", label="Exact")

    def check(self) -> None:
        if self.gpus == 1:
            raise ConfigError("gpus", "got 1; expected 0 (the whole sweep) or a count from 2 to "
                                      f"{MAX_GPUS} (one prefill and one decode replica at least)")
        ClusterConfig.check(self)


SweepConfig.UNGROUPED = ("gpus", "sweep_layouts", "sweep_exact")  # the page's sweep sets them on each call


def pass_ttft_ms(config: ClusterConfig, result: ClusterResult) -> float | None:
    """The lowest TTFT target, in whole ms, at which this run would have met the sweep's
    target (the same run: targets do not change a schedule), or None if the TPOT target
    alone keeps too many requests out."""
    n = len(result.sent)
    need = next(k for k in range(n + 1) if k / n >= ATTAINMENT_TARGET)
    tpot_limit = config.slo_tpot_ms / 1000
    ttfts = sorted(f - s for f, s, d, o in zip(result.first_token, result.sent, result.finished,
                                                result.output_tokens)
                   if tpot_limit >= (slo.request_tpot(d - s, f - s, o) or 0.0))
    if len(ttfts) < need:
        return None
    if need == 0:
        return 0.0
    ms = math.ceil(ttfts[need - 1] * 1000)
    while ms / 1000 < ttfts[need - 1]:  # as slo.summarize compares: limit >= ttft
        ms += 1
    return float(ms)


def sweep_point(config: ClusterConfig, reqs: list, gpus: int, layouts=LAYOUTS, exact: bool = False,
                late: list | None = None) -> dict:
    """One GPU count of the sweep: each layout in `layouts` at `gpus` GPUs. Unless `exact`,
    a run stops once it is sure to miss the target (Watch), and says when and how sure."""
    ceiling = ttft_ceiling(config, reqs)
    late = surely_late(config, reqs) if late is None else late
    out = {"gpus": gpus, "target": ATTAINMENT_TARGET, "ttft_ceiling": ceiling,
           "ceiling_sentence": ceiling_sentence(config, ceiling), "surely_late": len(late)}
    p, d = split(config, gpus, reqs)
    runs = {"colocated": replace(config, layout="colocated", replicas=gpus),
            "disaggregated": replace(config, layout="disaggregated", prefill_replicas=p, decode_replicas=d)}
    for key in LAYOUTS:
        if key not in layouts:
            out[key] = None
            continue
        c = runs[key]
        try:  # the requests surely late alone may doom the count: then nothing is replayed
            watch = None if exact else Watch(reqs, config.slo_ttft_ms, config.slo_tpot_ms, ATTAINMENT_TARGET, late)
            r = simulate(c, reqs, watch=watch)
        except Doomed as stop:
            out[key] = {"slo_attainment": None, "goodput_per_gpu": None, "request_goodput": None,
                        "hit_rate": None, "ttft_p90_ms": None, "tpot_p90_ms": None, "meets": False,
                        "attainment_at_most": (stop.n - stop.missed) / stop.n, "pass_ttft_ms": None,
                        "stopped": {"at_s": stop.at_s - reqs[0].arrival_s, "missed": stop.missed,
                                    "window_s": reqs[-1].arrival_s - reqs[0].arrival_s,
                                    "replayed": stop.missed > len(late)}}
            continue
        m = metrics(c, r)
        out[key] = {"slo_attainment": m["slo_attainment"], "goodput_per_gpu": m["goodput_per_gpu"],
                    "request_goodput": m["request_goodput"], "hit_rate": m["prefix_cache"]["hit_rate"],
                    "ttft_p90_ms": m["ttft_ms"]["p90"], "tpot_p90_ms": m["tpot_ms"]["p90"],
                    "meets": m["slo_attainment"] >= ATTAINMENT_TARGET,
                    "attainment_at_most": m["slo_attainment"], "pass_ttft_ms": pass_ttft_ms(config, r),
                    "stopped": None}
    if out["disaggregated"] is not None:
        out["disaggregated"] |= {"prefill_replicas": p, "decode_replicas": d}
    return out


def below(x: float) -> str:
    """A share that is an upper bound, rounded down to 0.1% (so 89.98% is not "90.0%")."""
    return f"{math.floor(x * 1000 + 1e-9) / 10:.1f}%"


def sweep_answer(config: ClusterConfig, points: list[dict]) -> dict:
    """What the points of the sweep so far (SWEEP_GPUS in order) say: for each layout the
    first count that meets the target, whether the sweep is done, what it runs next,
    and the sentence the page and the command line print."""
    first = {k: next((p for p in points if p[k] is not None and p[k]["meets"]), None) for k in LAYOUTS}
    pending = tuple(k for k in LAYOUTS if first[k] is None)
    done = len(points)
    complete = not pending or done == len(SWEEP_GPUS)
    nxt = None
    if not complete:
        nxt = {"gpus": SWEEP_GPUS[done], "sweep_layouts": pending[0] if len(pending) == 1 else "both",
               "sweep_exact": done == len(SWEEP_GPUS) - 1, "index": done}
    words = []
    for k in LAYOUTS:
        p = first[k]
        if p is not None:
            q = p[k]
            split_ = (f" ({q['prefill_replicas']} prefill + {q['decode_replicas']} decode)"
                      if k == "disaggregated" else "")
            words.append(f"{p['gpus']} {k}{split_}, {q['slo_attainment']:.1%} meeting both targets")
        elif not complete:
            words.append(f"{k}: none of the {done} count{'s' * (done != 1)} so far")
        else:
            last = points[-1][k]
            what = f"none of {SWEEP_GPUS[0]} to {SWEEP_GPUS[-1]} GPUs {k}"
            if last is not None and last["slo_attainment"] is not None:
                what += (f" (at {SWEEP_GPUS[-1]}, the most swept, {last['slo_attainment']:.1%} meet both "
                         "targets; ")
                what += (f"a TTFT target of {last['pass_ttft_ms']:,.0f} ms would let "
                         f"{ATTAINMENT_TARGET:.0%} pass there)" if last["pass_ttft_ms"] is not None else
                         f"the TPOT target alone keeps more than {1 - ATTAINMENT_TARGET:.0%} out)")
            elif last is not None:
                what += f" (at {SWEEP_GPUS[-1]}, at most {below(last['attainment_at_most'])} could meet both targets)"
            words.append(what)
    sentence = (f"The fewest GPUs that meet the target{'' if complete else ' (so far)'}: "
                + "; ".join(words) + ".")
    return {"complete": complete, "next": nxt, "done": done, "of": len(SWEEP_GPUS),
            "colocated": first["colocated"]["gpus"] if first["colocated"] else None,
            "disaggregated": first["disaggregated"]["gpus"] if first["disaggregated"] else None,
            "sentence": sentence}


def fewest_gpus(config: ClusterConfig, on_point=None) -> dict:
    """The page's sweep in one call: SWEEP_GPUS in order, each layout until a count meets
    the target, runs stopped once surely short (the largest count run exactly), as the
    page runs it one call per count. `on_point(point, answer)` sees each as it comes."""
    reqs = window(config)
    late = surely_late(config, reqs)
    points: list = []
    nxt = {"gpus": SWEEP_GPUS[0], "sweep_layouts": "both", "sweep_exact": len(SWEEP_GPUS) == 1}
    while nxt is not None:
        layouts = LAYOUTS if nxt["sweep_layouts"] == "both" else (nxt["sweep_layouts"],)
        points.append(sweep_point(config, reqs, nxt["gpus"], layouts, nxt["sweep_exact"], late))
        answer = sweep_answer(config, points)
        if on_point:
            on_point(points[-1], answer)
        nxt = answer["next"]
    return {"points": points, "answer": answer}


def sweep_view(config: SweepConfig, actions: list) -> dict:
    """One GPU count of the sweep (`gpus`), its layouts (`sweep_layouts`), and the answer
    so far with the points before it (the actions); or, with gpus 0, the whole sweep
    (`fewest_gpus`), which takes no points."""
    if config.gpus == 0 and actions:
        raise ConfigError("actions", "the whole sweep (gpus 0) takes no points; expected gpus from 2 "
                                     f"to {MAX_GPUS} for one count after the points so far")
    points = sweep_points(actions)  # checked before anything is replayed
    base = ClusterConfig(**{k: getattr(config, k) for k in ClusterConfig.__dataclass_fields__})
    if config.gpus == 0:
        return {"config": to_mapping(config)} | fewest_gpus(base)
    layouts = LAYOUTS if config.sweep_layouts == "both" else (config.sweep_layouts,)
    point = sweep_point(base, window(base), config.gpus, layouts, config.sweep_exact)
    known = points if config.gpus == SWEEP_GPUS[len(points)] else None
    answer = sweep_answer(base, known + [point]) if known is not None else None
    return point | {"answer": answer}


def seen_before(reqs: list, block_size: int):
    """(request, tokens of its prompt an earlier request already had), in order: its
    longest run of leading block ids seen before, in whole `block_size` blocks, and never
    its last token (vLLM always computes that one)."""
    seen: set = set()
    for r in reqs:
        m = 0
        for k in r.hash_ids:  # ids name a prefix: the shared run ends at the first unseen one
            if k not in seen:
                break
            m += 1
        seen.update(r.hash_ids)
        yield r, min(m * traces.TRACE_BLOCK, r.num_prompt_tokens - 1) // block_size * block_size
