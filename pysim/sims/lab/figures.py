"""The numbers docs/lab.md quotes ({{ lab.KEY }}), computed at build time.

The default replay, its synchronous twin, the H100 and L40S sweeps, the error band, the
coefficients GPU by GPU, and the fidelity table of "How far to trust the lab"
(pysim.timing.fidelity over data/realbench/records.jsonl).
"""

from __future__ import annotations

from dataclasses import replace

from pysim.engine import vllm_defaults
from pysim.sims.lab.band import percentile_band
from pysim.sims.lab.calibrate import calibrate
from pysim.sims.lab.config import LabConfig
from pysim.sims.lab.sweep import SWEEP_RATES, SweepConfig, sweep_view
from pysim.sims.lab.view import run
from pysim.timing import errorband, fit
from pysim.timing.catalog import GPUS
from pysim.timing.steptime import DEFAULTS
from pysim.traffic import traces


def async_against_sync(base: LabConfig, view: dict) -> dict:
    """What vLLM's default AsyncScheduler changes against the synchronous Scheduler on the
    lab's default traffic, and on it at 4x: TTFT and TPOT percentiles, preemptions."""
    out = {}
    for load, scale in (("", 1.0), ("x4_", 4.0)):
        for mode in ("async", "sync"):
            c = replace(base, rate_scale=scale, async_scheduling=mode == "async")
            v = view if (mode == "async" and scale == base.rate_scale and base.async_scheduling) \
                else run(c, [])
            for key in ("p50", "p90", "p99"):
                out[f"{load}{mode}_ttft_{key}_ms"] = v["ttft_ms"][key]
            out[f"{load}{mode}_tpot_p50_ms"] = v["tpot_ms"]["p50"]
            out[f"{load}{mode}_preemptions"] = v["summary"]["num_preemptions"]
        out[f"{load}async_ttft_p50_extra_ms"] = out[f"{load}async_ttft_p50_ms"] - out[f"{load}sync_ttft_p50_ms"]
    return out


def figures() -> dict:
    """Every number docs/lab.md states, computed at build time (pysim.figures, group "lab")."""
    base = LabConfig()
    view = run(base, [])
    conv, code = traces.load("conv"), traces.load("code")
    out = {
        "conv_requests": len(conv), "code_requests": len(code),
        "conv_minutes": conv.span_minutes, "code_minutes": code.span_minutes,
        "conv_rate": len(conv) / (conv.offsets_ms[-1] / 1000),
        "code_rate": len(code) / (code.offsets_ms[-1] / 1000),
        "window_minutes": base.window_minutes, "window_start_min": base.window_start_min,
        "window_requests": view["traffic"]["num_requests"],
        "window_rate": view["traffic"]["real_rate_req_s"],
        "num_gpu_blocks": view["hardware"]["num_gpu_blocks"],
        "block_size": view["hardware"]["block_size"],
        "gpu_memory_utilization": view["hardware"]["gpu_memory_utilization"],
        "vllm_version": vllm_defaults.LATEST,
        "kv_pool_tokens": view["hardware"]["kv_pool_tokens"],
        "decode_step_ms": view["hardware"]["decode_step_ms_1k_context"],
        "slo_ttft_ms": base.slo_ttft_ms, "slo_tpot_ms": base.slo_tpot_ms,
        "max_num_seqs": base.max_num_seqs, "max_num_batched_tokens": base.max_num_batched_tokens,
        "ttft_p50_ms": view["ttft_ms"]["p50"], "ttft_p99_ms": view["ttft_ms"]["p99"],
        "tpot_p50_ms": view["tpot_ms"]["p50"], "tpot_p99_ms": view["tpot_ms"]["p99"],
        "attainment_pct": view["summary"]["slo_attainment"] * 100,
        "goodput": view["summary"]["request_goodput"],
        # The same traffic on the synchronous Scheduler (--no-async-scheduling), and both
        # at four times the rate, where the queue is long and preemptions happen.
        **async_against_sync(base, view),
        "max_prompts": fit.MAX_PROMPTS,
        "sweep_rates": len(SWEEP_RATES),
        "sweep_lo": SWEEP_RATES[0], "sweep_hi": SWEEP_RATES[-1],
    }
    for key, gpu in (("h100", "H100"), ("l40s", "L40S")):
        sweep = sweep_view(SweepConfig(gpu=gpu), [])
        cap = sweep["capacity"]
        assert cap["rate_scale"] is not None, f"{gpu}: the page expects a crossing"
        out[f"{key}_scale"] = cap["rate_scale"]
        for end in ("fast", "slow"):  # the error band (pysim.timing.errorband)
            out[f"{key}_scale_{end}"] = cap["band"][end]["rate_scale"]
            out[f"{key}_replicas_{end}"] = cap["band"][end]["replicas"] or 0
            out[f"{key}_factor_{end}"] = cap["band"]["factors"][end]
        out[f"{key}_req_s"] = cap["sustained_req_s"]
        out[f"{key}_replicas"] = cap["replicas"]
        out[f"{key}_label"] = GPUS[gpu].label
        for i, p in enumerate(sweep["points"]):  # the page's table of the sweep
            out[f"{key}_att_{i}"] = p["slo_attainment"] * 100
            out[f"{key}_goodput_{i}"] = p["request_goodput"]
            out[f"{key}_ttft_p90_{i}"] = p["ttft_p90_ms"]
            out[f"{key}_tpot_p90_{i}"] = p["tpot_p90_ms"]
    for i, rate in enumerate(SWEEP_RATES):
        out[f"rate_{i}"] = rate
    small = sweep_view(SweepConfig(max_num_batched_tokens=2048, max_num_seqs=256), [])
    out["h100_2048_scale"] = small["capacity"]["rate_scale"]
    out["h100_2048_replicas"] = small["capacity"]["replicas"]
    band = percentile_band(base, calibrate(base)[0])  # the default replay at both ends of the band
    for end in ("fast", "slow"):
        out[f"ttft_p90_ms_{end}"] = band[end]["ttft_ms"]["p90"]
        out[f"tpot_p90_ms_{end}"] = band[end]["tpot_ms"]["p90"]
        out[f"attainment_pct_{end}"] = band[end]["slo_attainment"] * 100
    out["ttft_p90_ms"] = view["ttft_ms"]["p90"]
    out["tpot_p90_ms"] = view["tpot_ms"]["p90"]
    for gpu, c in DEFAULTS.items():  # the model's coefficients, GPU by GPU
        key = gpu.lower().replace("-", "_")
        out[f"{key}_step_overhead_ms"] = c.step_overhead_ms
        out[f"{key}_request_overhead_us"] = c.request_overhead_us
        out[f"{key}_memory_efficiency"] = c.memory_efficiency
        out[f"{key}_compute_efficiency"] = c.compute_efficiency
    return out | fidelity_figures()


def fidelity_figures() -> dict:
    """The error table of "How far to trust the lab": the shipped records replayed
    (pysim.timing.fidelity, as bench/bench_time_fidelity.py does), at build time, every mode
    and figure: err_{mode}_{figure}_{median,largest,records}, the same for the records
    with and without a peer (err_{with_peers,no_peer}_{mode}_...) and for those whose
    lengths the replay draws or guesses (err_lengths_{drawn,guessed}_{mode}_...), the
    rule for a GPU with no runs on the records where both its halves can be checked
    (err_{same_die,typical_gpu}_{figure}_...), and
    the error band's factors, checked against pysim.timing.errorband.FACTORS."""
    from pysim.timing import fidelity, realbench  # the records are read at build time only

    records = realbench.load(realbench.REPO_FILE)
    rows = fidelity.evaluate(records)
    out = {"records": len(records), "records_replayed": len(rows),
           "records_gpus": len({r["gpu"] for r in rows}),
           "records_models": len({r["model"] for r in rows}),
           "records_sources": len({r["source"] for r in rows}),
           "records_no_peer": sum(1 for r in rows if not r["peers"]),
           "records_lengths_drawn": sum(1 for r in rows if r["lengths"] == "drawn"),
           "records_lengths_guessed": sum(1 for r in rows if r["lengths"] == "guessed")}

    def put(prefix, stats):
        for mode, by_figure in stats.items():
            for figure, s in by_figure.items():
                out[f"{prefix}{mode}_{figure}_records"] = s["records"]
                for stat in ("median", "largest"):
                    out[f"{prefix}{mode}_{figure}_{stat}"] = None if s[stat] is None else s[stat] * 100

    put("err_", fidelity.summary(rows))
    for group, stats in (fidelity.split_by_peers(rows) | fidelity.split_by_lengths(rows)).items():
        put(f"err_{group}_", stats)
    die = fidelity.same_die(rows)  # the rule for a GPU with no runs, both halves
    put("err_", {"same_die": die["die"], "typical_gpu": die["typical"]})
    out["same_die_gpus"] = " and ".join(die["gpus"])
    factors = fidelity.band_factors(rows)
    for gpu, f in factors.items():
        shipped = errorband.FACTORS[gpu]
        if (abs(shipped.fast - f["fast"]) > 2e-3 or abs(shipped.slow - f["slow"]) > 2e-3
                or shipped.errors != f["errors"]):
            raise AssertionError(f"pysim.timing.errorband.FACTORS[{gpu!r}] is stale: the records give "
                                 f"{f}; run python -m pysim.timing.fidelity and paste its lines")
        key = gpu.lower().replace("-", "_")
        out[f"band_{key}_fast"], out[f"band_{key}_slow"] = f["fast"], f["slow"]
    return out
