"""What `make test` costs in CPU, suite by suite, and the shortest run two cores allow.

`make test` keeps every core of these 2-core machines busy from set-up to the end (the
suites overlap: Makefile, `test` and `site-then-suites`), so its length follows the CPU
the suites spend, not the order they run in. This runs each suite alone, by its own
Makefile target, and measures its wall time and the machine's busy time (/proc/stat: every
process, Chromium and Node included, so run it on an otherwise idle machine). The sum
over the suites, divided by the cores, is the shortest `make test` could be if nothing
waited; the real run is longer (set-up downloads, and suites slow each other down when
they share the cores).

The site build is timed with the caches a rebuild has (.cache/: compressed copies,
figures, the compiled standard library); a fresh clone fills them first, which the row's
note says. Run the site first (the default order does): the Pyodide row's cut check reads
it. Needs what `make test` sets up (`make setup .cache/pyodide-wheels/.installed
chromium`); takes about as long as the suites themselves.

Run: `python bench/bench_test_cpu.py [SUITE ...]` from the project root (suites: site,
unit, build, pyodide, browser; default all). Last line: one JSON object,
{"cores": N, "suites": {SUITE: {"wall_s": W, "cpu_s": C}}, "floor_s": F}.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from common import ROOT, busy, table

# Each suite is the Makefile's own target, so the bench times what `make test` runs.
SUITES = {"site": ["site"], "unit": ["test-unit"], "build": ["test-build"],
          "pyodide": ["test-pyodide", "test-pyodide-cut"], "browser": ["test-browser"]}


def measure(targets: list[str]) -> tuple[float, float]:
    """(wall s, machine busy CPU-s) of `make TARGETS`, one after another; it must pass."""
    b0, t0 = busy(), time.monotonic()
    done = subprocess.run(["make", "--no-print-directory", *targets], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode:
        sys.exit(f"make {' '.join(targets)} failed:\n{done.stdout[-3000:]}")
    return time.monotonic() - t0, busy() - b0


def main() -> None:
    chosen = sys.argv[1:] or list(SUITES)
    unknown = [s for s in chosen if s not in SUITES]
    if unknown:
        sys.exit(f"unknown suite {unknown}: choose from {', '.join(SUITES)}")
    cores = os.cpu_count() or 1
    results = {}
    for name in chosen:
        results[name] = measure(SUITES[name])
        print(f"{name}: {results[name][0]:.0f} s wall, {results[name][1]:.0f} CPU-s", flush=True)
    notes = {"site": "caches warm (a fresh clone also compresses and prerenders)"}
    rows = [[name, f"{wall:.0f}", f"{cpu:.0f}", f"{cpu / wall:.2f}", notes.get(name, "")]
            for name, (wall, cpu) in results.items()]
    total = sum(cpu for _, cpu in results.values())
    rows.append(["all, summed", f"{sum(w for w, _ in results.values()):.0f}", f"{total:.0f}", "", ""])
    print(f"\nEach suite alone on this machine ({cores} cores); CPU-s: the machine's busy time")
    print(table(["suite", "wall s", "CPU-s", "cores busy", "note"], rows))
    floor = total / cores
    print(f"\nShortest `make test` these suites allow on {cores} cores (CPU-s / cores): {floor:.0f} s "
          f"({floor / 60:.1f} min), before set-up")
    print(json.dumps({"cores": cores, "floor_s": round(floor, 1),
                      "suites": {n: {"wall_s": round(w, 1), "cpu_s": round(c, 1)}
                                 for n, (w, c) in results.items()}}))


if __name__ == "__main__":
    main()
