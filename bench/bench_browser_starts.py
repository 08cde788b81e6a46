"""Where the browser suite's time goes: the tests that start Python, family by family.

The browser suite is CPU-bound on these 2-core machines (bench/bench_test_cpu.py), and
one start of Python in a fresh context (Pyodide's own start, then the page's widgets
going live) costs more CPU than anything else a test does (bench/bench_browser_cpu.py).
This runs the suite as `make test-browser` does, with the test servers logging every
request after the test that made it (tests/browser/conftest.py, PYSIM_REQUEST_LOG) and
pytest listing every test's time (BROWSER_DURATIONS=0), and prints for each family of tests (a test
function, all its parameters): how many tests, how many Python starts (requests for
Pyodide's wasm: every start asks the server for it once, as the test servers let
nothing be used without asking, Cache-Control: no-cache; a page read from disk, file://,
passes no server and is not counted), and the seconds its
tests took. A family that starts Python once per page in a context of
its own is where a shared page would save the most.

Needs the built site and what `make test` sets up; takes as long as the browser suite
(about 8 minutes here). Run: `python bench/bench_browser_starts.py` from the project root.
Last line: one JSON object, {"tests": N, "starts": S, "test_s": T, "families":
{FAMILY: {"tests": n, "starts": s, "test_s": t}}}.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import tempfile

from common import ROOT, table

DURATION = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(tests/browser/\S+)")
WASM = re.compile(r"/pyodide\.asm\.wasm(\?|$)")


def family(test_id: str) -> str:
    """tests/browser/test_x.py::test_y[param] -> test_x.py::test_y"""
    return test_id.split("/")[-1].split("[")[0]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "requests.log")
        env = {**os.environ, "PYSIM_REQUEST_LOG": log}
        run = subprocess.run(["make", "--no-print-directory", "test-browser", "BROWSER_DURATIONS=0"],
                             cwd=ROOT, env=env,
                             capture_output=True, text=True)
        if run.returncode:
            sys.exit(run.stdout[-3000:] + run.stderr[-3000:] + "\nthe browser suite failed: no table")
        lines = open(log, encoding="utf-8").read().splitlines() if os.path.exists(log) else []
    seconds: dict[str, float] = collections.defaultdict(float)
    for line in run.stdout.splitlines():
        m = DURATION.match(line)
        if m:
            seconds[m.group(3)] += float(m.group(1))
    starts = collections.Counter(family(test) for test, _, path in (l.partition("\t") for l in lines)
                                 if WASM.search(path))
    tests, time_of = collections.Counter(), collections.defaultdict(float)
    for t, s in seconds.items():
        tests[family(t)] += 1
        time_of[family(t)] += s
    total_s, total_starts = sum(time_of.values()), sum(starts.values())
    rows = sorted(time_of, key=lambda f: (-starts[f], -time_of[f]))
    print(f"The browser suite by family of tests ({len(seconds)} tests timed, {total_starts} Python "
          f"starts through the test servers (not from file://), {total_s:.0f} test-seconds over "
          f"both workers)")
    print(table(["family", "tests", "Python starts", "test s", "share of test s"],
                [[f, tests[f], starts[f], f"{time_of[f]:.1f}", f"{time_of[f] / total_s:.1%}"] for f in rows]))
    with_starts = sum(time_of[f] for f in rows if starts[f])
    print(f"\nFamilies that start Python: {sum(1 for f in rows if starts[f])}, "
          f"{with_starts / total_s:.0%} of the test-seconds")
    print(json.dumps({"tests": len(seconds), "starts": total_starts, "test_s": round(total_s, 1),
                      "families": {f: {"tests": tests[f], "starts": starts[f], "test_s": round(time_of[f], 1)}
                                   for f in rows}}))


if __name__ == "__main__":
    main()
