"""The fit's speed: what a replay's linear form (pysim.timing.fit.LinearForm) buys.

Run: `python bench/bench_fit.py` from the project root (CPython only: the page's
calibration runs the same fit in Pyodide, and bench/bench_lab.py times it there).

A fit replays each run once per round, then evaluates the replay's figures as
`const + theta . phi` for dozens of trial coefficients. LinearForm computes, once per
replay, what does not move with the coefficients (each segment's weight in each figure,
each step's memory and compute seconds, sorted), so an evaluation is a bisection and a
pass over the runs of plain decodes. The baseline is the same fit building the form
again at every evaluation: nothing kept between trials. (It also sorts the steps, which
evaluating did not need before the form was kept, so its ratio is an upper bound on the
gain over that code.)

Prints one table, medians of REPEATS runs measured in this same process:
- the shipped defaults' fit (fit_defaults on data/realbench/records.jsonl, as
  tests/unit/test_fit.py and `python -m pysim.timing.fit` run it);
- one GPU's fit on its records (H100), as a reader's pasted runs are fitted;
- and, once each (about 15 s), the out-of-sample evaluation the site build runs for
  page 7's table (pysim.timing.fidelity.evaluate).
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager

from common import ROOT, median_seconds, table  # noqa: E402 (common puts the root on sys.path)

from pysim.timing import fidelity, fit, realbench

REPEATS = 5


@contextmanager
def forms_rebuilt_at_every_evaluation():
    """The baseline: each evaluation of a replay's figures builds its LinearForm anew."""
    plain_init, plain_at = fit.LinearForm.__init__, fit.LinearForm.at

    def init(self, result, model):
        self._args = (result, model)
        plain_init(self, result, model)

    def at(self, c):
        fresh = object.__new__(fit.LinearForm)
        plain_init(fresh, *self._args)
        return plain_at(fresh, c)

    fit.LinearForm.__init__, fit.LinearForm.at = init, at
    try:
        yield
    finally:
        fit.LinearForm.__init__, fit.LinearForm.at = plain_init, plain_at


def once(call) -> float:
    """Seconds of one call (the evaluation is too long to repeat; the fits before it
    have imported and warmed everything it uses)."""
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def main() -> None:
    records = realbench.load(ROOT / "data/realbench/records.jsonl")
    runs = [r.run for r in realbench.usable(records)]
    h100 = [r for r in runs if r.server.gpu == "H100"]
    median = lambda call: median_seconds(call, repeats=REPEATS)  # noqa: E731
    calls = {
        "fit_defaults (every GPU, shipped records)": (lambda: fit.fit_defaults(runs), median),
        f"fit of the H100's {len(h100)} runs": (lambda: fit.fit(h100, fit.GENERIC, fit.GENERIC_WEIGHT), median),
        "fidelity.evaluate (page 7's table), once": (lambda: fidelity.evaluate(records), once),
    }
    rows, out = [], {}
    for name, (call, timer) in calls.items():
        this = timer(call)
        with forms_rebuilt_at_every_evaluation():
            base = timer(call)
        rows.append([name, f"{this:.2f} s", f"{base:.2f} s", f"{base / this:.2f}"])
        out[name.split(" ")[0]] = {"seconds": round(this, 3), "baseline_seconds": round(base, 3)}
    print(f"The fit, CPython {sys.version.split()[0]}, medians of {REPEATS} runs after a warm-up "
          "(the evaluation: one run)")
    print(table(["call", "this", "baseline: form rebuilt per evaluation", "baseline/this"], rows))
    print(json.dumps(out))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.1f} s)")
