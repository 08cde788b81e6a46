"""How far the lab's clock is from real servers: replay published `vllm bench serve` runs.

Run: `python bench/bench_time_fidelity.py [RECORDS.jsonl]` from the project root.
Default: the shared records (../shared/realbench/records.jsonl), or the project's copy
(data/realbench/records.jsonl) where the shared folder is not beside the project. Any
file in that format can be measured without a change.

For every record pysim can replay (a GPU and model of its catalog, one GPU, known
lengths; each on its own vLLM release's defaults, pysim.engine.vllm_defaults, or v0.11.0's when
it names none), it prints measured against predicted mean TTFT, mean TPOT and output
throughput, and the median and P99 TTFT and TPOT where the record reports them, in the
modes of pysim.timing.fidelity:
- uncalibrated: the shipped defaults (pysim.timing.steptime.DEFAULTS), in sample;
- held_out: the defaults fitted again without the record (leave one out);
- calibrated: fitted on the other records of the same GPU and model, pulled towards
  the held-out defaults (a record without such peers keeps those);
- source_out: the defaults fitted without any record of the record's publisher;
- gpu_out: the defaults of a GPU with no runs (pysim.timing.fit.no_runs_default: here
  the typical GPU), fitted without any record of the record's GPU.
Then the median and the largest absolute relative error per figure and mode, the same
for records with and without a peer of the same GPU and model, the tails of the records
whose lengths the replay draws as their benchmark did and of those whose lengths it
guesses, the two rules for a GPU with no runs (the fit of a card on its die, the typical
GPU's) on the records where both can be checked, the records skipped and why, the error
band's factors (pysim.timing.errorband), and last one JSON line: {"records": N,
"uncalibrated": {"mean_ttft": E, ...}, "calibrated": {...}, "held_out": {...},
"source_out": {...}, "gpu_out": {...}, "with_peers": {MODE: {...}}, "no_peer": {MODE:
{...}}, "lengths_drawn": {MODE: {...}}, "lengths_guessed": {MODE: {...}}, "same_die":
{"die": {...}, "typical": {...}}, "sources": S, "band": {GPU: [fast, slow]}}, with E the
median absolute relative error (0.12 = 12%) of each figure (mean_ttft, mean_tpot,
output_throughput, median_ttft, p99_ttft, median_tpot, p99_tpot).
"""

from __future__ import annotations

import json
import sys
import time

from common import table

from pysim.timing import fidelity, realbench
from pysim.timing.steptime import DEFAULTS

FIGURES = (("mean_ttft_ms", "TTFT ms"), ("mean_tpot_ms", "TPOT ms"),
           ("output_throughput", "out tok/s"))
NAMES = {"mean_ttft_ms": "mean TTFT", "mean_tpot_ms": "mean TPOT", "output_throughput": "out tok/s",
         "median_ttft_ms": "median TTFT", "p99_ttft_ms": "P99 TTFT", "median_tpot_ms": "median TPOT",
         "p99_tpot_ms": "P99 TPOT"}


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else None
    started = time.perf_counter()
    records = realbench.load(path)
    rows = fidelity.evaluate(records)
    print(f"{len(records)} records read from {path or 'the shared records'}; "
          f"{len(rows)} replayed, {len(records) - len(rows)} skipped\n")
    table_rows = []
    for r in rows:
        row = [r["id"][:44], f"{r['gpu']} {r['model']}", r["source"], r["peers"]]
        for key, _ in FIGURES:
            row.append(_num(r["measured"].get(key)))
            row += [_pct(r["errors"][m].get(key)) for m in fidelity.MODES]
        table_rows.append(row)
    headers = ["record", "GPU model", "source", "peers"]
    for _, name in FIGURES:
        headers += [f"{name} meas"] + [m[:6] for m in fidelity.MODES]
    print("Measured, and the error of each mode's prediction, per record (err = predicted / "
          "measured - 1; modes: " + ", ".join(fidelity.MODES) + ")")
    print(table(headers, table_rows))

    out = {"records": len(rows)}
    lines = []
    for mode, by_figure in fidelity.summary(rows).items():
        out[mode] = {}
        for key in fidelity.FIGURES:
            s = by_figure[fidelity.SHORT[key]]
            out[mode][fidelity.SHORT[key]] = None if s["median"] is None else round(s["median"], 4)
            lines.append([mode, NAMES[key], s["records"], _pct(s["median"]), _pct(s["largest"])])
    print("\nAbsolute relative error over the records")
    print(table(["mode", "figure", "records", "median", "largest"], lines))
    print("\nRecords with a peer of the same GPU and model, and without one (the means)")
    print(_groups(out, fidelity.split_by_peers(rows), ("held_out", "calibrated"), fidelity.MEANS))
    print("\nRecords whose lengths the replay draws as their benchmark did (random datasets), "
          "and those whose lengths it guesses (ShareGPT: the means); the tails")
    print(_groups(out, fidelity.split_by_lengths(rows), ("held_out", "source_out", "gpu_out"),
                  fidelity.TAILS))
    die = fidelity.same_die(rows)
    print(f"\nA GPU with no runs (pysim.timing.fit.no_runs_default), on the records of the GPUs with "
          f"runs from two publishers or more ({', '.join(die['gpus'])}): timed with the fit of its die "
          f"from the other publishers' runs (source_out), and with the typical GPU's (gpu_out)")
    print(_groups(out, {"same_die": die}, ("die", "typical"), fidelity.MEANS))
    out["sources"] = len({r["source"] for r in rows})
    skipped = [r for r in records if r.run is None]
    if skipped:
        print("\nSkipped")
        print(table(["record", "line", "why"], [[r.id[:44], r.line, r.skipped] for r in skipped]))
    print("\nDefault coefficients (pysim.timing.steptime.DEFAULTS)")
    print(table(["GPU", "step overhead ms", "request overhead us", "memory eff.", "compute eff.",
                 "fitted on"],
                [[g, f"{c.step_overhead_ms:.3g}", f"{c.request_overhead_us:.3g}",
                  f"{c.memory_efficiency:.3g}", f"{c.compute_efficiency:.3g}", c.source]
                 for g, c in DEFAULTS.items()]))
    band = fidelity.band_factors(rows)
    out["band"] = {g: [f["fast"], f["slow"]] for g, f in band.items()}
    print("\nError band: every step time x fast to x slow (pysim.timing.errorband)")
    print(table(["GPU", "fast", "slow", "errors", "from"],
                [[g, f["fast"], f["slow"], f["errors"], f["basis"]] for g, f in band.items()]))
    print(f"\n({time.perf_counter() - started:.1f} s)")
    print(json.dumps(out))


def _groups(out: dict, split: dict, modes: tuple, shown: tuple) -> str:
    """Put each group's medians for `modes` into `out` (every figure), and return the
    table of the figures `shown`."""
    lines = []
    for group, stats in split.items():
        out[group] = {}
        for mode in modes:
            out[group][mode] = {}
            for key in fidelity.FIGURES:
                s = stats[mode][fidelity.SHORT[key]]
                out[group][mode][fidelity.SHORT[key]] = None if s["median"] is None else round(s["median"], 4)
                if key in shown:
                    lines.append([group, mode, NAMES[key], s["records"], _pct(s["median"]), _pct(s["largest"])])
    return table(["records", "mode", "figure", "records", "median", "largest"], lines)


def _num(x) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _pct(x) -> str:
    return "-" if x is None else f"{x * 100:+.0f}%" if x < 0 else f"{x * 100:.0f}%"


if __name__ == "__main__":
    main()
