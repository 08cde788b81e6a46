"""What `make test` costs in CPU, suite by suite, and the shortest run two cores allow.

`make test` keeps every core of these 2-core machines busy from set-up to the end (the
suites overlap: Makefile, `test` and `site-then-suites`), so its length follows the CPU
the suites spend, not the order they run in. This runs each suite alone, as the Makefile
runs it, and measures its wall time and the machine's busy time (/proc/stat: every
process, Chromium and Node included, so run it on an otherwise idle machine). The sum
over the suites, divided by the cores, is the shortest `make test` could be if nothing
waited; the real run is longer (set-up downloads, and suites slow each other down when
they share the cores).

The site build is timed with the caches a rebuild has (.cache/: compressed copies,
figures, the compiled standard library); a fresh clone fills them first, which the row's
note says. Needs what `make test` sets up (`make setup .cache/pyodide-wheels/.installed
chromium`) and a built site (`make site`); takes about as long as the suites themselves.

Run: `python bench/bench_test_cpu.py [SUITE ...]` from the project root (suites: site,
unit, build, pyodide, browser; default all). Last line: one JSON object,
{"cores": N, "suites": {SUITE: {"wall_s": W, "cpu_s": C}}, "floor_s": F}.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

from common import ROOT, table

VENV = ROOT / ".venv" / "bin"
PYTEST = [str(VENV / "pytest"), "-p", "no:cacheprovider", "-q"]


def suites() -> dict[str, list[list[str]]]:
    """Each suite's commands, as the Makefile's target of the same job runs them."""
    wheel = glob.glob(str(ROOT / "site/assets/pyodide/*/pysim-*.whl"))
    if not wheel:
        sys.exit("no pysim wheel in site/: run `make site` first")
    cut = [["node", "tests/pyodide/cut_stdlib.mjs", z, wheel[0]]
           for z in sorted(glob.glob(str(ROOT / "site/assets/pyodide/*/python_stdlib.*.zip")))]
    return {
        "site": [[str(VENV / "python"), "-m", "sitebuild"]],
        "unit": [PYTEST + ["tests/unit"]],
        "build": [PYTEST + ["tests/build"]],
        "pyodide": [["node", "tests/pyodide/run_pytest.mjs", ".cache/pyodide-wheels", wheel[0], "-q"], *cut],
        "browser": [PYTEST + ["-n", "2", "--dist", "worksteal", "--reruns", "1", "tests/browser"]],
    }


def busy() -> float:
    """Seconds of CPU the whole machine has spent busy since boot."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # idle, iowait


def measure(commands: list[list[str]]) -> tuple[float, float]:
    """(wall s, machine busy CPU-s) of one run of `commands`, one after another; each must pass."""
    b0, t0 = busy(), time.monotonic()
    for command in commands:
        done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode:
            sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}")
    return time.monotonic() - t0, busy() - b0


def main() -> None:
    commands = suites()
    chosen = sys.argv[1:] or list(commands)
    unknown = [s for s in chosen if s not in commands]
    if unknown:
        sys.exit(f"unknown suite {unknown}: choose from {', '.join(commands)}")
    cores = os.cpu_count() or 1
    results = {}
    for name in chosen:
        results[name] = measure(commands[name])
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
