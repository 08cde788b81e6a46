"""Shared helpers for the benchmarks: timing, the Pyodide runner, table printing."""

from __future__ import annotations

import glob
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def site_wheel() -> str:
    site = Path(os.environ.get("PYSIM_SITE_DIR", ROOT / "site"))  # as tests/browser/conftest.py
    wheels = glob.glob(str(site / "assets/pyodide/*/pysim-*.whl"))
    if not wheels:
        sys.exit("no pysim wheel in site/: run `make site` first")
    return wheels[0]


def busy() -> float:
    """Seconds of CPU the whole machine has spent busy since boot (/proc/stat: every
    process, so a measurement needs an otherwise idle machine)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # idle and iowait are not busy


def median_seconds(fn, repeats: int = 7, inner: int = 1) -> float:
    """Median wall time of `inner` calls of fn, divided by inner, over `repeats` runs."""
    fn()  # warm-up: imports, caches
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples)


# The same timing rule, as source for the Pyodide side: one definition, two Pythons.
PY_TIMER = "import json, statistics, time\n" + inspect.getsource(median_seconds) + "\n"


def run_in_pyodide(snippet: str) -> dict:
    """Run `snippet` (which must print one JSON line last) inside Pyodide under Node."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PY_TIMER + snippet)
    out = subprocess.run(["node", str(ROOT / "bench/pyodide_run.mjs"), site_wheel(), f.name],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    line = lambda row: "| " + " | ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), sep, *map(line, cells[1:])])
