"""Calibration: the step-time coefficients fitted to runs a reader pastes.

A pasted `vllm bench serve` output (pysim.traffic.benchsummary) is replayed as it was sent
on the lab's GPU, model and scheduler, and the four coefficients fitted to it
(pysim.timing.fit); a --save-detailed result is also compared request by request.
"""

from __future__ import annotations

import math

from pysim.engine import vllm_defaults
from pysim.sims.lab.commands import model_from_hf
from pysim.sims.lab.config import LabConfig, defaults, server
from pysim.timing import fit
from pysim.timing.catalog import MODELS
from pysim.timing.steptime import DEFAULTS, Coefficients
from pysim.traffic import bench_serve, benchsummary, slo
from pysim.utils import percentile


def calibrate(config: LabConfig) -> tuple[Coefficients, dict | None]:
    """The coefficients to run with: the GPU's defaults, or those fitted to the pasted
    runs, each replayed as it was sent on this GPU, model and scheduler."""
    pasted = benchsummary.parse(config.bench_text)
    default = DEFAULTS[config.gpu]
    if not pasted:
        return default, None
    runs = [fit.Run(p.bench, server(config), p.measured, p.source, p.notes) for p in pasted]
    for r in runs:
        fit.check(r)
    fitted = fit.fit(runs, default, source=f"fitted to {len(runs)} pasted "
                                           f"run{'s' * (len(runs) > 1)}")
    rows = []
    for p, r in zip(pasted, runs):
        replayed, compared = replay_pasted(p, r, fitted)
        shown = [k for k in CALIBRATION_FIGURES if r.measured.get(k)]
        rows.append({**p.record(),
                     "measured": {k: r.measured[k] for k in shown},
                     "replayed": {k: replayed[k] for k in shown},
                     "error": {k: (replayed[k] - r.measured[k]) / r.measured[k] for k in shown},
                     "server": p.server, "server_notes": server_notes(config, p),
                     "per_request": compared})
    fitted_errors = {k: [abs(row["error"][k]) for row in rows if k in row["error"]]
                     for k in fit.FIGURES}
    out = {"coefficients_before": default.record(), "coefficients": fitted.record(), "runs": rows,
           "mean_abs_error": {k: math.fsum(v) / len(v) for k, v in fitted_errors.items() if v}}
    out["sentence"] = _fit_sentence(out)
    return fitted, out


def _fit_sentence(cal: dict) -> str:
    """What the fit found, in the words the page and the command line print."""
    def coefficients(c: dict) -> str:
        three = lambda x: f"{float(f'{x:.3g}'):,g}"  # noqa: E731  3 significant digits
        return (f"step overhead {three(c['step_overhead_ms'])} ms, {three(c['request_overhead_us'])} us "
                f"per request, memory efficiency {c['memory_efficiency']:.2f}, compute efficiency "
                f"{c['compute_efficiency']:.2f}")

    e = cal["mean_abs_error"]
    pct = lambda k: "–" if e.get(k) is None else f"{e[k]:.1%}"  # noqa: E731
    n = len(cal["runs"])
    return (f"Fitted to your {'run' if n == 1 else f'{n} runs'}: {coefficients(cal['coefficients'])} "
            f"(the GPU's defaults: {coefficients(cal['coefficients_before'])}). Mean error after the "
            f"fit: TTFT {pct('mean_ttft_ms')}, TPOT {pct('mean_tpot_ms')}, output throughput "
            f"{pct('output_throughput')}. Every number of the lab now uses these coefficients.")


LARGEST_MISSES = 8  # requests listed where the replay is furthest from the measurement


def replay_pasted(p: benchsummary.Pasted, run: fit.Run, coefficients: Coefficients):
    """Replay a pasted run with the fitted coefficients: the figures vLLM would print, and
    for a --save-detailed result (its own requests, sent when they were) the comparison
    request by request (`per_request`), else None."""
    result, reqs, _ = fit.replay_run(run, coefficients)
    figures_ = bench_serve.metrics(result, reqs.prompt_tokens)
    return figures_, (per_request(p, result) if p.requests is not None else None)


def per_request(p: benchsummary.Pasted, result) -> dict:
    """Measured against replayed for every request of a detailed result: both TTFT and
    TPOT distributions (pysim.traffic.slo.distribution_ms, a CDF each), the median miss, and the
    requests the replay misses most (TTFT, then TPOT, by absolute difference)."""
    rec = p.bench.recorded
    rows = []
    for k, ((ttft, tpot, index), (prompt, answer, sent)) in enumerate(zip(p.requests, rec)):
        rep_ttft = result.first_token[k] - result.sent[k]
        rep_tpot = slo.request_tpot(result.finished[k] - result.sent[k], rep_ttft, answer)
        rows.append({"index": index, "num_prompt_tokens": prompt, "max_tokens": answer,
                     "sent_s": sent, "ttft_ms": ttft * 1000, "replayed_ttft_ms": rep_ttft * 1000,
                     "tpot_ms": None if tpot is None else tpot * 1000,
                     "replayed_tpot_ms": None if rep_tpot is None else rep_tpot * 1000})

    def pair(key: str) -> dict:
        got = [(r[key], r["replayed_" + key]) for r in rows if r[key] is not None]
        measured, replayed = sorted(a for a, _ in got), sorted(b for _, b in got)
        misses = sorted(abs(b - a) / a for a, b in got if a > 0)
        return {"measured": slo.distribution_ms([x / 1000 for x in measured]),
                "replayed": slo.distribution_ms([x / 1000 for x in replayed]),
                "median_abs_error": percentile(misses, 50) if misses else None, "count": len(got)}

    def worst(key: str) -> list:
        ranked = sorted((r for r in rows if r[key] is not None),
                        key=lambda r: (-abs(r["replayed_" + key] - r[key]), r["index"]))
        return ranked[:LARGEST_MISSES]

    out = {"source": p.source, "num_requests": len(rows), "ttft_ms": pair("ttft_ms"),
           "tpot_ms": pair("tpot_ms"), "largest_ttft_misses": worst("ttft_ms"),
           "largest_tpot_misses": worst("tpot_ms")}
    e = lambda k: "–" if out[k]["median_abs_error"] is None else f"{out[k]['median_abs_error']:.0%}"  # noqa: E731
    out["sentence"] = (f"{p.source}: its {len(rows):,} requests replayed one by one, with their own lengths and "
                       f"send times. Per request, the replay's TTFT is off by {e('ttft_ms')} and its TPOT "
                       f"by {e('tpot_ms')} at the median.")
    return out


def server_notes(config: LabConfig, p: benchsummary.Pasted) -> list[str]:
    """Where the pasted `vllm serve` line differs from the lab's settings (the fit replays
    the lab's own: set them to match the run)."""
    notes = []
    for key in ("max_num_seqs", "max_num_batched_tokens", "async_scheduling"):
        if key in p.server and p.server[key] != getattr(config, key):
            notes.append(f"the paste's vllm serve has {key} {p.server[key]}, the lab {getattr(config, key)}: "
                         f"the replay uses the lab's; set it to match the run")
    bs = defaults(config).block_size
    if "block_size" in p.server and p.server["block_size"] != bs:
        notes.append(f"the paste's vllm serve has --block-size {p.server['block_size']}; the lab replays "
                     f"vLLM {vllm_defaults.LATEST}'s {bs} on this GPU")
    named = model_from_hf(p.server.get("model", ""))
    if p.server.get("model") and named != config.model:
        notes.append(f"the paste served {p.server['model']}; the lab runs {MODELS[config.model].name}")
    return notes


# What the calibration table compares, where the paste has it (vLLM's JSON names).
CALIBRATION_FIGURES = ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms",
                       "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "output_throughput")
