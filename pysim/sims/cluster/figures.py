"""The numbers docs/cluster.md quotes ({{ cluster.KEY }}), computed at build time.

How much the traces share, what one replica's cache could hit at best, the routers and
layouts on the default window, and the error band (pysim.timing.errorband) on them.
"""

from __future__ import annotations

from dataclasses import replace

from pysim.sims.cluster.config import ROUTERS, ClusterConfig, block_size, window
from pysim.sims.cluster.simulate import metrics, simulate
from pysim.sims.cluster.sweep import first_token_floors, seen_before, ttft_ceiling
from pysim.timing import errorband
from pysim.timing.steptime import DEFAULTS
from pysim.traffic import slo, traces


def ceiling_band(config: ClusterConfig, reqs: list) -> dict:
    """The TTFT ceiling with every step time at either end of the GPU's error band
    (pysim.timing.errorband; a floor is a sum of step times, so it scales exactly), and with
    the compute efficiency alone at the ends of the band (the prefills that set the
    floors are compute-bound: the ceiling hinges on that one coefficient)."""
    band = errorband.FACTORS[config.gpu]
    limit = config.slo_ttft_ms / 1000
    floors = first_token_floors(config, reqs)
    out = {"band_fast": band.fast, "band_slow": band.slow,
           "compute_efficiency": DEFAULTS[config.gpu].compute_efficiency}
    for end in ("fast", "slow"):
        s = getattr(band, end)
        out[f"ttft_ceiling_{end}_pct"] = 100 * sum(1 for t in floors if t * s <= limit) / len(reqs)
    return out


def attainment_band(config: ClusterConfig, key: str) -> dict:
    """`config`'s attainment with every step time at either end of the error band: the
    window played at rate x s against targets / s is the real server, s times slower."""
    band = errorband.FACTORS[config.gpu]
    out = {}
    for end in ("fast", "slow"):
        s = getattr(band, end)
        c = replace(config, rate_scale=config.rate_scale * s, slo_ttft_ms=config.slo_ttft_ms / s,
                    slo_tpot_ms=config.slo_tpot_ms / s)
        out[f"{key}_attainment_{end}_pct"] = 100 * metrics(c, simulate(c, window(c)))["slo_attainment"]
    return out


def trace_sharing(name: str) -> dict:
    """How much of the trace's prompts repeat blocks seen before (the whole trace, in order)."""
    t = traces.load(name)
    seen: set = set()
    total = repeated = 0
    for ids in t.hash_ids:
        total += len(ids)
        repeated += sum(1 for k in ids if k in seen)
        seen.update(ids)
    return {"requests": len(t), "minutes": t.span_minutes, "blocks": total,
            "blocks_seen_before_pct": 100 * repeated / total, "distinct_blocks": len(seen)}


def bound_hit_rate(reqs: list, block_size: int) -> float:
    """The hit rate of one cache that never forgets, over the requests in order: each
    prompt hits the blocks of its longest prefix seen before, in whole `block_size`
    blocks, and always computes its last token, as vLLM's lookup does. No cluster of
    finite pools can beat it on these requests."""
    queried = hit = 0
    for r, tokens in seen_before(reqs, block_size):
        hit += tokens
        queried += r.num_prompt_tokens
    return hit / queried if queried else 0.0


def figures() -> dict:
    """The numbers the cluster page quotes, computed at build time."""
    base = ClusterConfig()
    reqs = window(base)
    out = {f"trace_{k}": v for k, v in trace_sharing(base.trace).items()}
    out |= {"window_requests": len(reqs), "window_minutes": base.window_minutes,
            "window_start_min": base.window_start_min,
            "window_rate": len(reqs) / (base.window_minutes * 60),
            "window_bound_hit_pct": 100 * bound_hit_rate(reqs, block_size(base)),
            "slo_ttft_ms": base.slo_ttft_ms, "slo_tpot_ms": base.slo_tpot_ms,
            "replicas": base.replicas, "cache_threshold": base.cache_threshold,
            "balance_abs_threshold": base.balance_abs_threshold,
            "balance_rel_threshold": base.balance_rel_threshold}
    for router in ROUTERS:
        c = replace(base, router=router)
        m = metrics(c, simulate(c, reqs))
        out[f"{router}_hit_pct"] = 100 * m["prefix_cache"]["hit_rate"]
        out[f"{router}_attainment_pct"] = 100 * m["slo_attainment"]
        out[f"{router}_goodput_per_gpu"] = m["goodput_per_gpu"]
        out[f"{router}_ttft_p90_ms"] = m["ttft_ms"]["p90"]
    out["ttft_ceiling_pct"] = 100 * ttft_ceiling(base, reqs)
    out |= ceiling_band(base, reqs)
    for g in (12, 16):  # the sweep's last counts, colocated: how close they come
        c = replace(base, replicas=g)
        out[f"colocated_{g}_attainment_pct"] = 100 * metrics(c, simulate(c, reqs))["slo_attainment"]
        out |= attainment_band(c, f"colocated_{g}")
    one = replace(base, replicas=1)
    out["one_replica_hit_pct"] = 100 * metrics(one, simulate(one, reqs))["prefix_cache"]["hit_rate"]
    for link in ("infiniband", "pcie"):
        c = replace(base, layout="disaggregated", kv_link=link)
        r = simulate(c, reqs)
        m = metrics(c, r)
        out[f"disagg_{link}_attainment_pct"] = 100 * m["slo_attainment"]
        out[f"disagg_{link}_goodput_per_gpu"] = m["goodput_per_gpu"]
        out[f"disagg_{link}_hit_pct"] = 100 * m["prefix_cache"]["hit_rate"]
        out[f"disagg_{link}_transfer_p50_ms"] = slo.distribution_ms(sorted(r.transfer_s))["p50"]
    return out
