"""The scheduling-policy lab's speed: each built-in on the page's default traffic, a
reader's policy under its budget, and the grading of each puzzle.

Run: `python bench/bench_policies.py` from the project root. Prints a table of medians
of several runs, in CPython (the page's Pyodide is about 2x slower). Targets: a built-in
on five minutes of the two-tenant Azure traffic (the `policies` default) <= 150 ms in
CPython (<= 300 ms in Pyodide); grading one puzzle, all its held-out windows, <= 1.5 s.
Nothing here is asserted: a unit test never times anything (CONTRIBUTING.md).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pysim import policies, puzzles  # noqa: E402
from pysim.builtin_policies import BUILTINS, NAMES, source  # noqa: E402

REPEAT = 5


def median_ms(fn, repeat: int = REPEAT) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()  # as the bridge runs a simulation
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        gc.enable()
    return statistics.median(times) * 1000


def main() -> None:
    config = policies.PoliciesConfig()
    traffic = policies.traffic_of(config)
    rows = [("traffic only (the window's requests, tiers)", median_ms(lambda: policies.traffic_of(config)), "")]
    for name in NAMES:
        rows.append((f"policies, {name} (5 min, {len(traffic):,} requests)",
                     median_ms(lambda: policies.run_builtin(traffic, name, config)), "<= 150"))
    rows.append(("policies, the whole call (fcfs beside priority)",
                 median_ms(lambda: policies.run(policies.PoliciesConfig(policy="priority", compare="fcfs"), [])),
                 "<= 300"))
    for name in ("fcfs", "vtc"):
        code = source(name)
        rows.append((f"your policy: {name}'s code, traced under the budget",
                     median_ms(lambda: policies.run_code(traffic, code, config)), ""))
    for name, puzzle in puzzles.PUZZLES.items():
        rows.append((f"puzzle {name}: {len(puzzle.held_out)} held-out windows, {puzzle.good_policy}",
                     median_ms(lambda: puzzles.grade(puzzle, lambda: BUILTINS[puzzle.good_policy]), 3),
                     "<= 1500"))
    width = max(len(r[0]) for r in rows)
    print(f"{'call (CPython ' + sys.version.split()[0] + ')':<{width}}  {'median ms':>10}  target ms")
    for label, ms, target in rows:
        print(f"{label:<{width}}  {ms:>10.0f}  {target}")


if __name__ == "__main__":
    main()
