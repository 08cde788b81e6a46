"""The cluster's views as the command line prints them (`python -m pysim cluster`, `cluster-sweep`).
"""

from __future__ import annotations

from pysim.sims.cluster.sweep import LAYOUTS, below


def _point_text(p: dict) -> str:
    parts = []
    for k in LAYOUTS:
        q = p[k]
        name = k if k == "colocated" else f"disaggregated {q['prefill_replicas']}P+{q['decode_replicas']}D" if q else k
        if q is None:
            parts.append(f"{k} not run (met at fewer GPUs)")
        elif q["stopped"]:
            st = q["stopped"]
            when = (f"after {st['at_s']:.0f} s of the {st['window_s']:.0f} s window" if st["replayed"]
                    else "before any replay")
            parts.append(f"{name} misses: {st['missed']} requests surely late {when}, "
                         f"at most {below(q['attainment_at_most'])} meet both targets")
        else:
            parts.append(f"{name} {q['slo_attainment']:.1%} meet the SLOs, "
                         f"{q['goodput_per_gpu']:.3f} good req/s per GPU")
    return f"{p['gpus']} GPUs: " + "; ".join(parts)


def text(view: dict) -> str:
    if "points" in view:  # the whole sweep
        lines = [_point_text(p) for p in view["points"]]
        return "\n".join(lines + [view["answer"]["sentence"]])
    if "colocated" in view:  # a sweep point
        return _point_text(view)
    lines = [view["sentence"], ""]
    s = view["summary"]
    lines.append(f"goodput {s['request_goodput']:.3f} req/s ({s['goodput_per_gpu']:.3f} per GPU), "
                 f"throughput {s['request_throughput']:.3f} req/s, SLO attainment {s['slo_attainment']:.1%}")
    lines.append(f"TTFT p50 {view['ttft_ms']['p50']:.0f} ms, p90 {view['ttft_ms']['p90']:.0f} ms; "
                 f"TPOT p50 {view['tpot_ms']['p50']:.1f} ms, p90 {view['tpot_ms']['p90']:.1f} ms")
    lines.append("")
    lines.append(f"{'replica':>7} {'role':>8} {'requests':>8} {'hit rate':>8} {'preempt':>7} {'peak KV':>7}")
    for r in view["replicas"]:
        lines.append(f"{r['replica']:>7} {r['role']:>8} {r['requests']:>8} {r['hit_rate']:>8.1%} "
                     f"{r['num_preemptions']:>7} {r['peak_kv_cache_usage_perc']:>7.0%}")
    return "\n".join(lines)
