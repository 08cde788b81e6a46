"""Engine throughput: microseconds per request-step (one request served in one step).

Run: `python bench/bench_engine.py` (from the project root). Prints a table for
1,000 and 10,000 requests under two arrival patterns. `measure(n, arrivals)` is
importable and uses only pysim and the standard library, so the same workload can be
timed inside Pyodide (the lead adds that column).

Workload (fixed, from SplitMix64(2024)): prompts of 20..600 tokens, answers of 8..256
tokens. Engine: budget 8,192 tokens, max_num_seqs 256, FCFS, no prefix caching, a pool
of 4,096 blocks of 16 tokens (4,095 usable: block 0 is the null block): small enough that memory binds and preemption happens
now and then (the count is printed).
- burst:   all requests arrive at time 0; the engine is stepped directly.
- poisson: exponential gaps at 200 requests/s, driven by `run_timed` with the budget
           simulation's step-time model (5 ms + 0.02 ms/decode + 0.035 ms/prompt token),
           so arrivals, the time jumps and the driver are timed too.
Targets: at most 1 us per request-step in CPython (issue 13; issue 4 set 2 us), and the
same cost at 10,000 requests as at 1,000.

"CPython best" is the fastest of the runs. On a shared 2-core VM the same run swings
by up to 1.7x from one second to the next (the code does identical work: callgrind
counts the same instructions every time), so the median says what a reader's machine
may see and the best what the code costs on a quiet one.
"""

from __future__ import annotations

import math
import os
import sys
import time

if "__file__" in globals():  # run from a checkout: import pysim from beside bench/
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pysim.engine.scheduler import Engine, EngineConfig, run_timed  # noqa: E402
from pysim.prng import SplitMix64  # noqa: E402

CONFIG = EngineConfig(max_num_batched_tokens=8192, max_num_seqs=256, num_gpu_blocks=4096,
                      block_size=16, policy="fcfs")
RATE_PER_US = 200 / 1e6  # poisson arrivals: 200 requests per second, time in microseconds


def workload(n: int, arrivals: str = "burst", seed: int = 2024) -> list[tuple[int, int, int]]:
    """(arrival us, prompt tokens, answer tokens) of n requests."""
    rng = SplitMix64(seed)
    out, t = [], 0
    for _ in range(n):
        prompt, answer = rng.randint(20, 600), rng.randint(8, 256)
        if arrivals == "poisson":
            t += round(-math.log(1.0 - rng.random()) / RATE_PER_US)
        out.append((t, prompt, answer))
    return out


def run_once(n: int, arrivals: str = "burst", config: EngineConfig = CONFIG) -> dict:
    """Add n requests and run the engine until all finish; time all of it."""
    reqs = workload(n, arrivals)
    t0 = time.perf_counter()
    engine = Engine(config)
    for i, (arrival, prompt, answer) in enumerate(reqs):
        engine.add_request(i, prompt, answer, arrival=arrival)
    request_steps = steps = 0
    if arrivals == "burst":
        step = engine.step
        while engine.num_unfinished:
            request_steps += len(step().parts)
            steps += 1
    else:
        for result, _, _ in run_timed(engine, step_ms):
            request_steps += len(result.parts)
            steps += 1
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "steps": steps, "request_steps": request_steps,
            "preemptions": engine.num_preemptions}


def step_ms(result) -> float:
    """The step-time model this bench has always timed against: 5 ms + 0.02 ms per decode
    + 0.035 ms per prompt token (fixed, so the timing is of the engine, not of a model)."""
    return 5.0 + 0.02 * result.decode_tokens + 0.035 * result.prefill_tokens


def measure(n: int, arrivals: str = "burst", repeats: int = 5) -> dict:
    """Median of `repeats` runs: total seconds, request-steps, us per request-step."""
    run_once(min(n, 200), arrivals)  # warm up
    runs = sorted((run_once(n, arrivals) for _ in range(repeats)), key=lambda r: r["seconds"])
    mid, best = runs[len(runs) // 2], runs[0]
    return {"requests": n, "arrivals": arrivals, "seconds": mid["seconds"],
            "steps": mid["steps"], "request_steps": mid["request_steps"],
            "preemptions": mid["preemptions"],
            "us_per_request_step": mid["seconds"] / mid["request_steps"] * 1e6,
            "best_us_per_request_step": best["seconds"] / best["request_steps"] * 1e6}


CASES = [(a, n) for a in ("burst", "poisson") for n in (1_000, 10_000)]


def table(rows: list[dict]) -> str:
    head = (f"{'arrivals':>8} {'requests':>9} {'steps':>7} {'request-steps':>14} "
            f"{'preempt':>8} {'total s':>9} {'CPython us/req-step':>20} {'CPython best':>13} "
            f"{'Pyodide us/req-step':>20} {'Pyodide/CPython':>16}")
    lines = [head, "-" * len(head)]
    for r in rows:
        py = r.get("pyodide_us_per_request_step")
        lines.append(f"{r['arrivals']:>8} {r['requests']:>9,} {r['steps']:>7,} "
                     f"{r['request_steps']:>14,} {r['preemptions']:>8,} {r['seconds']:>9.3f} "
                     f"{r['us_per_request_step']:>20.3f} {r['best_us_per_request_step']:>13.3f} "
                     + (f"{py:>20.3f} {py / r['us_per_request_step']:>15.2f}x" if py else f"{'-':>20} {'-':>16}"))
    return "\n".join(lines)


def pyodide_us_per_request_step(repeats: int) -> list[float]:
    """The same workload and timing, run inside Pyodide under Node (this file's own
    source is sent over, so the two columns cannot measure different things)."""
    from common import run_in_pyodide

    source = open(__file__).read().rsplit('\nif __name__ == "__main__":', 1)[0]
    source = source.replace("from __future__ import annotations", "")
    snippet = source + (f"\nprint(json.dumps([measure(n, a, repeats={repeats})['us_per_request_step']"
                        f" for a, n in CASES]))\n")
    return run_in_pyodide(snippet)


def main() -> None:
    repeats = 5
    rows = [measure(n, a, repeats) for a, n in CASES]
    for row, us in zip(rows, pyodide_us_per_request_step(repeats)):
        row["pyodide_us_per_request_step"] = us
    print(f"pysim engine, CPython {sys.version.split()[0]} and Pyodide (Node), median of {repeats} runs each "
          f"(best: the fastest of them)")
    print(table(rows))


if __name__ == "__main__":
    main()
