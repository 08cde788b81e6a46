"""The `cluster` simulation's view: one run, as the page draws it.

The cluster's metrics, a row per replica, per-replica gauges over time, and what the
page's sweep will do (pysim.sims.cluster.sweep).
"""

from __future__ import annotations

from pysim.sims.cluster.config import LINKS, ClusterConfig, window
from pysim.sims.cluster.simulate import ClusterResult, metrics, simulate
from pysim.sims.cluster.sweep import SWEEP_CAPTION, SWEEP_GPUS, SWEEP_SENTENCE, ttft_ceiling
from pysim.timing.catalog import GPUS, MODELS
from pysim.traffic import slo, traces

NUM_BINS = 60  # points in each per-replica time series


def replica_rows(result: ClusterResult) -> list[dict]:
    """One row per replica: its role, requests, prefix hits, preemptions, busiest moments."""
    rows = []
    for k, s in enumerate(result.servers):
        e = s.engine
        role = result.roles[k]
        if role == "decode":
            served = sum(1 for d in result.decode_of if d == k - result.roles.index("decode"))
        else:
            served = sum(1 for r in result.replica_of if r == k)
        rows.append({"replica": k, "role": role, "requests": served,
                     "prefix_cache_queries": e.prefix_cache_queries, "prefix_cache_hits": e.prefix_cache_hits,
                     "hit_rate": e.prefix_cache_hits / e.prefix_cache_queries if e.prefix_cache_queries else 0.0,
                     "num_preemptions": e.num_preemptions, "num_steps": e.num_steps,
                     "peak_running": max(s.running, default=0), "peak_waiting": max(s.waiting, default=0),
                     "peak_kv_cache_usage_perc": round(max(s.usage, default=0.0), 4)})
    return rows


def imbalance(rows: list[dict], role: str) -> float:
    """Requests of the busiest replica of a role over the mean: 1 is perfectly even."""
    counts = [r["requests"] for r in rows if r["role"] == role]
    mean = sum(counts) / len(counts)
    return max(counts) / mean if mean else 1.0


def series(result: ClusterResult, t0: float, span: float) -> dict:
    """Per replica, in NUM_BINS bins: requests running, waiting, KV usage (the last value
    in each bin, as a scrape sees it), and its prefix-cache hit rate so far (hits over
    queries since the start, as the two counters read at the bin's end)."""
    width = max(span, 1e-9) / NUM_BINS
    out = []
    for s in result.servers:
        running, waiting, usage = [0] * NUM_BINS, [0] * NUM_BINS, [0.0] * NUM_BINS
        queries, hits = [0] * NUM_BINS, [0] * NUM_BINS
        seen = [False] * NUM_BINS
        for k, end in enumerate(s.seg_end):
            b = min(NUM_BINS - 1, max(0, int((end - t0) / width)))
            running[b], waiting[b], usage[b] = s.running[k], s.waiting[k], s.usage[k]
            queries[b], hits[b] = s.cache_queries[k], s.cache_hits[k]
            seen[b] = True
        for b in range(1, NUM_BINS):  # a bin with no step ending in it keeps the last value
            if not seen[b]:
                running[b], waiting[b], usage[b] = running[b - 1], waiting[b - 1], usage[b - 1]
                queries[b], hits[b] = queries[b - 1], hits[b - 1]
        out.append({"num_requests_running": running, "num_requests_waiting": waiting,
                    "kv_cache_usage_perc": [round(u, 4) for u in usage],
                    "hit_rate": [round(h / q, 4) if q else 0.0 for h, q in zip(hits, queries)]})
    return {"t_s": [round((b + 1) * width, 3) for b in range(NUM_BINS)], "replicas": out}


def cluster_view(config: ClusterConfig, actions: list) -> dict:
    assert not actions
    reqs = window(config)
    result = simulate(config, reqs)
    m = metrics(config, result)
    rows = replica_rows(result)
    t0 = min(result.sent)
    roles = sorted(set(result.roles))
    pc = m["prefix_cache"]
    layout = (f"{config.replicas} replica{'s' * (config.replicas > 1)}" if config.layout == "colocated" else
              f"{config.prefill_replicas} prefill + {config.decode_replicas} decode replicas, KV over "
              f"{LINKS[config.kv_link][0]}")
    sentence = (f"{len(reqs):,} requests of the {traces.TRACES[config.trace]} trace "
                f"({config.window_minutes} min from minute {config.window_start_min}, rate x{config.rate_scale:g}) "
                f"on {layout}, {GPUS[config.gpu].label}, {MODELS[config.model].name}, routed "
                f"{config.router.replace('_', ' ')}: {m['slo_attainment']:.1%} meet both targets, "
                f"{m['goodput_per_gpu']:.3f} good requests/s per GPU; prefix-cache hit rate {pc['hit_rate']:.1%}.")
    return {
        "config": dict(config.__dict__),
        "sentence": sentence,
        "note": NOTE,
        "gpus": m["gpus"],
        "summary": {k: m[k] for k in ("completed", "good", "duration_s", "request_throughput",
                                      "request_goodput", "slo_attainment", "output_throughput",
                                      "goodput_per_gpu")} | {"ttft_ceiling": ttft_ceiling(config, reqs)},
        "prefix_cache": pc | {"metric_names": {"queries": "vllm:prefix_cache_queries",
                                               "hits": "vllm:prefix_cache_hits"}},
        "ttft_ms": m["ttft_ms"],
        "tpot_ms": m["tpot_ms"],
        "replicas": rows,
        "imbalance": {role: imbalance(rows, role) for role in roles},
        "router_reasons": result.reasons if config.router == "cache_aware" else None,
        "transfer_ms": slo.distribution_ms(sorted(result.transfer_s)) if config.layout == "disaggregated" else None,
        "series": series(result, t0, max(result.finished) - t0),
        "slo": {"ttft_ms": config.slo_ttft_ms, "tpot_ms": config.slo_tpot_ms},
        "sweep_gpus": list(SWEEP_GPUS),
        "sweep_sentence": SWEEP_SENTENCE,  # what the page's sweep does, and when it stops
        "sweep_caption": SWEEP_CAPTION,
    }


NOTE = ("A model: every replica is the lab's engine (vLLM 0.33's scheduler, checked against "
        "recordings) on the lab's step-time model, whose error against real vLLM runs the lab "
        "page states; the router and the KV transfer are simplified as the page says.")
