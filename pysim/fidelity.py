"""How far the step-time model is from real servers, record by record.

Both `bench/bench_time_fidelity.py` and the serving lab's page ("How far to trust the
lab", figures computed at build time) call `evaluate`, so the page states what the
benchmark measures. For each record pysim can replay (pysim.realbench):
- uncalibrated: predicted with the GPU's default coefficients (pysim.steptime.DEFAULTS);
- calibrated, leave-one-out: predicted with coefficients fitted (pysim.fit.fit, pulled
  towards the defaults) on the *other* records of the same GPU and model, never the
  record itself; a record without such peers keeps the defaults, as a reader with
  nothing to paste does.
"""

from __future__ import annotations

import statistics

from . import fit, realbench
from .steptime import DEFAULTS

FIGURES = ("mean_ttft_ms", "mean_tpot_ms", "output_throughput")
SHORT = {"mean_ttft_ms": "mean_ttft", "mean_tpot_ms": "mean_tpot",
         "output_throughput": "output_throughput"}
MODES = ("uncalibrated", "calibrated")


def evaluate(records: list[realbench.Record]) -> list[dict]:
    """One row per replayable record: measured, predicted in both modes, errors, peers."""
    usable = realbench.usable(records)
    rows = []
    for rec in usable:
        run = rec.run
        gpu, model = run.server.gpu, run.server.model
        peers = [r.run for r in usable if r is not rec and r.run.server.gpu == gpu
                 and r.run.server.model == model]
        coefficients = fit.fit(peers, DEFAULTS[gpu]) if peers else DEFAULTS[gpu]
        predicted = {"uncalibrated": fit.predict(run, DEFAULTS[gpu]),
                     "calibrated": fit.predict(run, coefficients)}
        rows.append({"id": rec.id, "gpu": gpu, "model": model, "peers": len(peers),
                     "measured": run.measured, "predicted": predicted,
                     "errors": {m: fit.errors(run, predicted[m]) for m in MODES},
                     "notes": run.notes})
    return rows


def summary(rows: list[dict]) -> dict:
    """Per mode and figure: how many records, the median and the largest absolute
    relative error (0.12 = 12%)."""
    out = {}
    for mode in MODES:
        out[mode] = {}
        for key in FIGURES:
            values = [abs(r["errors"][mode][key]) for r in rows if key in r["errors"][mode]]
            out[mode][SHORT[key]] = {
                "records": len(values),
                "median": statistics.median(values) if values else None,
                "largest": max(values) if values else None}
    return out
