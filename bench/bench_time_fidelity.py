"""How far the lab's clock is from real servers: replay published `vllm bench serve` runs.

Run: `python bench/bench_time_fidelity.py [RECORDS.jsonl]` from the project root.
Default: the shared records (../shared/realbench/records.jsonl), or the project's copy
(data/realbench/records.jsonl) where the shared folder is not beside the project. Any
file in that format can be measured without a change.

For every record pysim can replay (a GPU and model of its catalog, one GPU, known
lengths; each on its own vLLM release's defaults, pysim.vllm_defaults, or v0.11.0's when
it names none), it prints measured against predicted mean TTFT, mean TPOT and output
throughput, in two modes:
- uncalibrated: the step-time model's default coefficients for the GPU
  (pysim.steptime.DEFAULTS, fitted on data/realbench/records.jsonl);
- calibrated, leave-one-out: the coefficients fitted (pysim.fit.fit, pulled towards the
  GPU's defaults) on the *other* records of the same GPU and model, never on the record
  itself, as a reader calibrates the lab with their own runs; a record without such
  peers keeps the defaults (a reader with no runs to paste has only those).
Then the median and the largest absolute relative error per figure in both modes, the
records skipped and why, and last one JSON line:
{"records": N, "uncalibrated": {"mean_ttft": E, ...}, "calibrated": {...}}, with E the
median absolute relative error (0.12 = 12%).
"""

from __future__ import annotations

import json
import sys
import time

from common import table

from pysim import fidelity, realbench
from pysim.steptime import DEFAULTS

FIGURES = (("mean_ttft_ms", "TTFT ms"), ("mean_tpot_ms", "TPOT ms"),
           ("output_throughput", "out tok/s"))


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else None
    started = time.perf_counter()
    records = realbench.load(path)
    rows = fidelity.evaluate(records)
    print(f"{len(records)} records read from {path or 'the shared records'}; "
          f"{len(rows)} replayed, {len(records) - len(rows)} skipped\n")
    table_rows = []
    for r in rows:
        row = [r["id"][:44], f"{r['gpu']} {r['model']}", r["peers"]]
        for key, _ in FIGURES:
            row += [_num(r["measured"].get(key)),
                    _num(r["predicted"]["uncalibrated"][key]), _pct(r["errors"]["uncalibrated"].get(key)),
                    _num(r["predicted"]["calibrated"][key]), _pct(r["errors"]["calibrated"].get(key))]
        table_rows.append(row)
    headers = ["record", "GPU model", "peers"]
    for _, name in FIGURES:
        headers += [f"{name} meas", "default", "err", "calib", "err"]
    print("Measured against predicted, per record (err = predicted / measured - 1; "
          "calib = fitted on its peers, leave-one-out)")
    print(table(headers, table_rows))

    stats = fidelity.summary(rows)
    out = {"records": len(rows)}
    lines = []
    for mode in fidelity.MODES:
        out[mode] = {}
        for key, name in FIGURES:
            s = stats[mode][fidelity.SHORT[key]]
            out[mode][fidelity.SHORT[key]] = None if s["median"] is None else round(s["median"], 4)
            lines.append([mode, name, s["records"], _pct(s["median"]), _pct(s["largest"])])
    print("\nAbsolute relative error over the records")
    print(table(["mode", "figure", "records", "median", "largest"], lines))
    skipped = [r for r in records if r.run is None]
    if skipped:
        print("\nSkipped")
        print(table(["record", "line", "why"], [[r.id[:44], r.line, r.skipped] for r in skipped]))
    print("\nDefault coefficients (pysim.steptime.DEFAULTS)")
    print(table(["GPU", "step overhead ms", "request overhead us", "memory eff.", "compute eff.",
                 "fitted on"],
                [[g, f"{c.step_overhead_ms:.3g}", f"{c.request_overhead_us:.3g}",
                  f"{c.memory_efficiency:.3g}", f"{c.compute_efficiency:.3g}", c.source]
                 for g, c in DEFAULTS.items()]))
    print(f"\n({time.perf_counter() - started:.1f} s)")
    print(json.dumps(out))


def _num(x) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _pct(x) -> str:
    return "-" if x is None else f"{x * 100:+.0f}%" if x < 0 else f"{x * 100:.0f}%"


if __name__ == "__main__":
    main()
