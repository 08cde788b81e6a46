"""The lab's views as the command line prints them (`python -m pysim lab`, `lab-sweep`, ...).
"""

from __future__ import annotations

from pysim.timing import fit


def text(view: dict) -> str:
    cfg = view["config"]
    if "capacity" in view and "points" not in view:
        return _capacity_text(view["capacity"])
    if "point" in view:
        p = view["point"]
        return (f"rate x{p['rate_scale']:g}: attainment {p['slo_attainment']:.1%}, goodput "
                f"{p['request_goodput']:.2f} req/s")
    if "points" in view:
        c = view["coefficients"]
        traffic = (f"{cfg['trace']} trace, {cfg['window_minutes']} min from minute "
                   f"{cfg['window_start_min']}" if cfg["traffic"] == "trace" else
                   f"benchmark at {cfg['request_rate']:g} req/s")
        lines = [f"Capacity sweep: {traffic}, {cfg['gpu']} + {cfg['model']}, max_num_seqs "
                 f"{cfg['max_num_seqs']}, max_num_batched_tokens {cfg['max_num_batched_tokens']} "
                 f"(coefficients {c['source']}); SLO TTFT <= {cfg['slo_ttft_ms']:g} ms, "
                 f"TPOT <= {cfg['slo_tpot_ms']:g} ms",
                 f"{'rate':>6} {'attain':>8} {'goodput':>9} {'thruput':>9} {'TTFT p90':>10} "
                 f"{'TPOT p90':>9} {'preempt':>8}"]
        for p in view["points"]:
            lines.append(f"{'x' + format(p['rate_scale'], 'g'):>6} {p['slo_attainment']:>8.1%} "
                         f"{p['request_goodput']:>9.2f} {p['request_throughput']:>9.2f} "
                         f"{p['ttft_p90_ms']:>10.1f} {p['tpot_p90_ms']:>9.1f} {p['num_preemptions']:>8}")
        lines.append(_capacity_text(view["capacity"]))
        return "\n".join(lines)
    s, h, tr = view["summary"], view["hardware"], view["traffic"]
    lines = [
        f"Serving lab ({view['note']})",
        f"  traffic: {tr['sentence']}",
        f"  hardware: {h['sentence']}",
        f"  scheduler: max_num_seqs {cfg['max_num_seqs']}, max_num_batched_tokens "
        f"{cfg['max_num_batched_tokens']}, chunked prefill on",
        f"  duration {s['duration_s']:.1f} s, {s['request_throughput']:.2f} req/s, "
        f"{s['output_throughput']:.0f} output tok/s, {s['num_preemptions']} preemptions",
        f"  TTFT ms: mean {view['ttft_ms']['mean']:.1f}  p50 {view['ttft_ms']['p50']:.1f}  "
        f"p90 {view['ttft_ms']['p90']:.1f}  p99 {view['ttft_ms']['p99']:.1f}",
        f"  TPOT ms: mean {view['tpot_ms']['mean']:.1f}  p50 {view['tpot_ms']['p50']:.1f}  "
        f"p90 {view['tpot_ms']['p90']:.1f}  p99 {view['tpot_ms']['p99']:.1f}",
        f"  SLO TTFT <= {cfg['slo_ttft_ms']:g} ms and TPOT <= {cfg['slo_tpot_ms']:g} ms: "
        f"{s['good']:,} of {s['completed']:,} good ({s['slo_attainment']:.1%}), goodput "
        f"{s['request_goodput']:.2f} req/s",
    ]
    if view.get("commands"):  # the settings on a real server
        cmd = view["commands"]
        lines += [f"  as vLLM {cmd['vllm_version']} commands:", f"    {cmd['serve']}"]
        lines += [f"    {cmd['prepare']}"] if cmd["prepare"] else []
        lines += [f"    ({cmd['prepare_note']})"] if cmd["prepare_note"] else []
        lines += [f"    {cmd['bench']}"] + [f"    (cannot: {x})" for x in cmd["cannot"]]
    if view.get("bench_summary"):
        lines.append(view["bench_summary"]["text"])
    cal = view.get("calibration")
    if cal:
        lines.append("  " + cal["sentence"])
        for run in cal["runs"]:
            lines.append("    " + run["source"] + ": " + ", ".join(
                f"{k} {run['measured'][k]:.4g} measured, {run['replayed'][k]:.4g} replayed "
                f"({run['error'][k]:+.0%})" for k in fit.FIGURES if k in run["measured"]))
    return "\n".join(lines)


def _capacity_text(c: dict) -> str:
    return "Capacity: " + c["sentence"]
