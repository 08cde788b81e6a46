"""How far the step-time model is from real servers, record by record, out of sample.

Both `bench/bench_time_fidelity.py` and the serving lab's page ("How far to trust the
lab", figures computed at build time) call `evaluate`, so the page states what the
benchmark measures. For each record pysim can replay (pysim.timing.realbench), five predictions:

- `uncalibrated`: the GPU's shipped defaults (pysim.timing.steptime.DEFAULTS). In sample: the
  record was one of the runs they were fitted on, so this flatters the model;
- `held_out` (leave one out): the defaults fitted again, by the same rule
  (pysim.timing.fit.fit_defaults), on every record but this one. What a reader who pastes
  nothing gets, measured on a run the fit never saw;
- `calibrated`: coefficients fitted (pysim.timing.fit.fit) on the *other* records of the same
  GPU and model, pulled towards the held-out defaults, so neither the fit nor its prior
  ever saw the record; a record without such peers (`peers` 0) keeps the held-out
  defaults, as a reader with nothing to paste does;
- `source_out` (leave one source out): the defaults fitted without any record of the
  record's publisher (`source_of`: the id's first word, gpustack, lambda, ...), so a
  lab, a harness or a way of reporting shared by one publisher's runs cannot help;
- `gpu_out` (leave one GPU out): the defaults a GPU with no runs of its own gets
  (pysim.timing.fit.no_runs_default; no two GPUs of the records share a die, so here the
  typical GPU's), fitted without any record of the record's GPU: how far the lab is on a
  card known only from its datasheet (the L4, the A10G, ...). `same_die` measures the
  rule's other half, a card timed with the fit of its die.

Every figure the record reports is compared: the means (TTFT, TPOT, output throughput)
and the tails (median and P99 TTFT and TPOT). Fits are cached by the set of runs they
see, so a group held out costs one fit, whichever records share it.

A tail tests the model only as far as the replay's requests are the run's: a random-
dataset run's lengths are drawn as `vllm bench serve` drew them (`lengths` "drawn"), a
ShareGPT run's are guessed from its token totals (every prompt the mean: "guessed"), and
the spread of lengths is what makes a P99. `split_by_lengths` shows the two apart.

`band_factors` turns the held-out errors into the timing factors of the lab's error
bands (pysim.timing.errorband holds them; `python -m pysim.timing.fidelity` prints them).
"""

from __future__ import annotations

import statistics

from pysim.timing import fit, realbench
from pysim.timing.catalog import GPUS
from pysim.timing.steptime import DEFAULTS, Coefficients
from pysim.utils import percentile

MEANS = ("mean_ttft_ms", "mean_tpot_ms", "output_throughput")
TAILS = ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms")
FIGURES = MEANS + TAILS
SHORT = {"mean_ttft_ms": "mean_ttft", "mean_tpot_ms": "mean_tpot",
         "output_throughput": "output_throughput", "median_ttft_ms": "median_ttft",
         "p99_ttft_ms": "p99_ttft", "median_tpot_ms": "median_tpot", "p99_tpot_ms": "p99_tpot"}
MODES = ("uncalibrated", "held_out", "calibrated", "source_out", "gpu_out")
# The band's figures: the two times a step's length moves (throughput follows them).
BAND_FIGURES = ("mean_tpot_ms",)  # step times: TPOT is what measures them (see band_factors)
BAND_QUANTILES = (10, 90)  # the central 80% of the held-out errors
BAND_MIN_RECORDS = 3  # a GPU with fewer records takes the leave-one-GPU-out errors


def source_of(record_id: str) -> str:
    """The publisher of a record: its id's first word (gpustack-..., lambda-...)."""
    return record_id.split("-", 1)[0]


class _Fits:
    """The defaults fitted by pysim.timing.fit.fit_defaults's rule on a subset of the runs,
    cached by the runs they see."""

    def __init__(self, runs: dict[str, fit.Run]):
        self.runs = runs
        self.cache: dict[tuple, Coefficients] = {}
        self.forms: dict = {}  # fit.fit's memo: each run's LinearForm at the prior every fit starts from

    def _fit(self, ids: tuple, label: str) -> Coefficients:
        if ids not in self.cache:
            self.cache[ids] = fit.fit([self.runs[i] for i in ids], fit.GENERIC,
                                      fit.GENERIC_WEIGHT, label, self.forms)
        return self.cache[ids]

    def _own(self, gpu: str, kept: list[str]) -> Coefficients | None:
        mine = tuple(i for i in kept if self.runs[i].server.gpu == gpu)
        return self._fit(mine, f"fitted: {len(mine)} runs on {gpu}") if mine else None

    def defaults(self, gpu: str, without: set[str]) -> Coefficients:
        """The GPU's defaults fitted without the runs `without`: on its own runs left,
        else (no run of it left) what a GPU with no runs gets from the runs left
        (fit.no_runs_default: a card on its die, else the typical GPU)."""
        kept = sorted(i for i in self.runs if i not in without)
        own = self._own(gpu, kept)
        if own is not None:
            return own
        if not kept:  # nothing left to fit: pysim.timing.fit's generic starting point
            return fit.GENERIC
        others = sorted({self.runs[i].server.gpu for i in kept})
        return fit.no_runs_default(gpu, {g: self._own(g, kept) for g in others})


def evaluate(records: list[realbench.Record]) -> list[dict]:
    """One row per replayable record: measured, predicted in every mode, errors, peers."""
    usable = realbench.usable(records)
    fits = _Fits({r.id: r.run for r in usable})
    peer_fits: dict[tuple, Coefficients] = {}
    rows = []
    for rec in usable:
        run = rec.run
        gpu, model = run.server.gpu, run.server.model
        peers = [r for r in usable if r is not rec and r.run.server.gpu == gpu
                 and r.run.server.model == model]
        held_out = fits.defaults(gpu, {rec.id})
        if peers:
            key = (rec.id, tuple(r.id for r in peers))
            if key not in peer_fits:
                peer_fits[key] = fit.fit([r.run for r in peers], held_out)
            calibrated = peer_fits[key]
        else:
            calibrated = held_out
        source = source_of(rec.id)
        coefficients = {
            "uncalibrated": DEFAULTS[gpu], "held_out": held_out, "calibrated": calibrated,
            "source_out": fits.defaults(gpu, {r.id for r in usable if source_of(r.id) == source}),
            "gpu_out": fits.defaults(gpu, {r.id for r in usable if r.run.server.gpu == gpu})}
        predicted = {m: fit.predict(run, c) for m, c in coefficients.items()}
        measured = _measured(rec, run)
        rows.append({"id": rec.id, "source": source, "gpu": gpu, "model": model,
                     "peers": len(peers),
                     "lengths": "drawn" if run.bench.dataset_name == "random" else "guessed",
                     "measured": measured, "predicted": predicted,
                     "errors": {m: _errors(measured, predicted[m]) for m in MODES},
                     "notes": run.notes})
    return rows


def _measured(rec: realbench.Record, run: fit.Run) -> dict:
    """The run's means as realbench read them, and the tails the record reports."""
    out = {k: v for k, v in run.measured.items() if v}
    metrics = rec.raw.get("metrics") or {}
    for key in TAILS:
        value = realbench._number(metrics.get(key))
        if value is not None and 0 < value < float("inf"):
            out[key] = value
    return out


def _errors(measured: dict, predicted: dict) -> dict:
    """Relative error of each reported figure: (predicted - measured) / measured."""
    return {k: (predicted[k] - measured[k]) / measured[k] for k in FIGURES if measured.get(k)}


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


def split_by_peers(rows: list[dict]) -> dict:
    """`summary` of the records with a peer of the same GPU and model, and of those
    without (for them `calibrated` is `held_out`: nothing to calibrate with)."""
    return {"with_peers": summary([r for r in rows if r["peers"]]),
            "no_peer": summary([r for r in rows if not r["peers"]])}


def split_by_lengths(rows: list[dict]) -> dict:
    """`summary` of the records whose replay draws each request's lengths as their
    benchmark did (random datasets), and of those whose lengths it guesses (ShareGPT:
    the run's means; pysim.timing.realbench)."""
    return {f"lengths_{kind}": summary([r for r in rows if r["lengths"] == kind])
            for kind in ("drawn", "guessed")}


def same_die(rows: list[dict]) -> dict:
    """The two halves of the rule for a GPU with no runs (fit.no_runs_default), on the
    records where both can be measured: those of a GPU with runs from two publishers or
    more. `die` is `source_out` there (the GPU's fit on the other publishers' runs
    only: what a card gets from another card on its die, short of the card itself), and
    `typical` is `gpu_out` on the same records (the typical GPU's). Each is `summary`'s
    entry for that mode, with the GPUs counted."""
    publishers: dict[str, set] = {}
    for r in rows:
        publishers.setdefault(r["gpu"], set()).add(r["source"])
    kept = [r for r in rows if len(publishers[r["gpu"]]) > 1]
    s = summary(kept)
    return {"die": s["source_out"], "typical": s["gpu_out"],
            "gpus": sorted({r["gpu"] for r in kept})}


def band_factors(rows: list[dict]) -> dict[str, dict]:
    """For every GPU of the catalog, the timing factors of the lab's error bands.

    The signed held-out errors e = predicted / measured - 1 of mean TTFT and mean TPOT
    say the real server's times are the model's divided by (1 + e); the 10th and 90th
    percentiles of 1 / (1 + e) are the band's `fast` and `slow` factors. A GPU with
    BAND_MIN_RECORDS records or more uses its own records' leave-one-out errors;
    another (no runs, or too few) uses every record's leave-one-GPU-out errors, the
    error of timing a card from its datasheet and the defaults for one without runs. A
    card that takes the fit of another on its die (fit.no_runs_default) keeps that wider
    band: the rule was measured on other runs of the same card, never on a sibling card.
    """
    def factors(values: list[float], basis: str) -> dict:
        ratios = sorted(1 / (1 + e) for e in values)
        return {"fast": round(percentile(ratios, BAND_QUANTILES[0]), 3),
                "slow": round(percentile(ratios, BAND_QUANTILES[1]), 3),
                "errors": len(ratios), "basis": basis}

    def signed(subset, mode):
        return [r["errors"][mode][k] for r in subset for k in BAND_FIGURES if k in r["errors"][mode]]

    out = {}
    no_runs = factors(signed(rows, "gpu_out"), f"every GPU held out in turn ({len(rows)} records)")
    for gpu in GPUS:
        mine = [r for r in rows if r["gpu"] == gpu]
        out[gpu] = (factors(signed(mine, "held_out"), f"{len(mine)} {gpu} records, each held out")
                    if len(mine) >= BAND_MIN_RECORDS else no_runs)
    return out


def main() -> None:
    """`python -m pysim.timing.fidelity [RECORDS.jsonl]`: print pysim.timing.errorband.FACTORS as it
    is written, from the records' held-out errors."""
    import sys

    rows = evaluate(realbench.load(sys.argv[1] if len(sys.argv) > 1 else realbench.REPO_FILE))
    for gpu, f in band_factors(rows).items():
        print(f'    "{gpu}": Band({f["fast"]}, {f["slow"]}, {f["errors"]}, "{f["basis"]}"),')


if __name__ == "__main__":
    main()
