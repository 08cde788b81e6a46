"""The serving lab's speed: one replay, the capacity sweep, and the engine inside it.

Run: `python bench/bench_lab.py` from the project root, after a site build (the
Pyodide column runs the site's wheel under Node, with the traces where the page's
worker puts them). Prints two tables, medians of several runs:

1. The lab's calls (the page's default: 5 minutes of the conversation trace from
   minute 10, H100 + Llama 3.1 8B, vLLM's H100 defaults), in CPython and Pyodide:
   - replay x1 (about 1,600 requests): target <= 300 ms in the page's Pyodide;
   - a benchmark replay, `vllm bench serve`'s defaults (1,000 requests of 1,024 + 128
     tokens sent at once): target <= 300 ms as well;
   - a pasted real run (vLLM issue #24684) fitted and the window replayed with it;
   - the 8 sweep points one by one (the page's sweep): target <= 5 s in all;
   - baseline: the same replay without the lab's two shortcuts (plain decode runs
     applied at once, blocks counted instead of listed), measured in the same run, so the
     ratio says what the shortcuts buy.
2. The engine's cost per request-step inside the x1 replay, as the lab runs it (target
   <= 1 us in CPython) and stepped one by one (the baseline above). The replay x1 row
   times the whole lab call (trace window, replay, percentiles, series), so its
   per-request-step figure is an upper bound on the engine's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import statistics
import sys
import time

from common import PY_TIMER, median_seconds, run_in_pyodide, table  # noqa: F401

SNIPPET = r'''
from pysim import config
from pysim.sims.lab import (config as lab_config, sweep as lab_sweep, view as lab_view,
                            workload as lab_workload)
from pysim.timing.catalog import GPUS, MODELS
from pysim.engine.replay import replay, engine_config
from pysim.timing.steptime import num_gpu_blocks, step_time_model

def default(**kw):
    return config.from_mapping(lab_config.LabConfig, kw)

def replay_x1():
    lab_view.run(default(), [])

def sweep():
    for i in range(len(lab_sweep.SWEEP_RATES)):
        lab_sweep.sweep_point_view(config.from_mapping(lab_sweep.SweepConfig, {}), [{"sweep_index": i}])

def benchmark_1000():
    # `vllm bench serve`'s defaults: 1,000 prompts of 1,024 + 128 tokens, all sent at once.
    lab_view.run(default(traffic="benchmark"), [])

def calibrate():
    # One published run pasted (vLLM issue #24684: 640 requests at concurrency 64), fitted.
    lab_view.run(default(bench_text=PASTE, window_minutes=1), [])

def baseline_parts():
    c = default()
    stm = step_time_model(GPUS[c.gpu], MODELS[c.model])
    bs = lab_config.defaults(c).block_size
    blocks = num_gpu_blocks(GPUS[c.gpu], MODELS[c.model], bs)
    t = lab_workload.workload(c, 1.0)
    cfg = engine_config(blocks, bs, c)
    return (t.arrivals, t.prompt_tokens, t.output_tokens, cfg, stm, blocks)

PARTS = baseline_parts()

def baseline():
    replay(*PARTS, fast=False, count_blocks=False)

def request_steps():
    # Request-steps of the x1 replay: every request's tokens scheduled, step by step.
    r = replay(*PARTS, fast=False, count_blocks=False)
    n = sum(r.num_requests_running)  # running after each step, a close lower bound
    return r.num_steps, n

def samples(fn, repeats, clock):
    # `repeats` timings of fn by `clock`, after one warm-up call, sorted.
    fn()
    out = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return sorted(out)

def cpu_seconds(fn, repeats):
    # CPU time of this process (time.process_time), median: on a machine shared with
    # other jobs it moves less than wall time. Pyodide's clock may count wall time.
    return statistics.median(samples(fn, repeats, time.process_time))

def p95_seconds(fn, repeats):
    # The issue's measure for the replay: p95 of wall time (nearest rank), at rest.
    s = samples(fn, repeats, time.perf_counter)
    return s[-(-95 * len(s) // 100) - 1]

steps, req_steps = request_steps()
out = {
    "replay_x1_p95": p95_seconds(replay_x1, 20),
    "benchmark_1000": median_seconds(benchmark_1000, repeats=REPEATS),
    "benchmark_1000_p95": p95_seconds(benchmark_1000, 20),
    "calibrate": median_seconds(calibrate, repeats=max(3, REPEATS // 2)),
    "replay_x1_cpu": cpu_seconds(replay_x1, REPEATS),
    "sweep_cpu": cpu_seconds(sweep, 3),
    "replay_x1": median_seconds(replay_x1, repeats=REPEATS),
    "sweep": median_seconds(sweep, repeats=max(3, REPEATS // 2)),
    "baseline": median_seconds(baseline, repeats=REPEATS),
    "steps": steps, "request_steps": req_steps,
}
print(json.dumps(out))
'''


PASTE = next(json.loads(line)["summary_text"]
             for line in (Path(__file__).resolve().parents[1] / "data/realbench/records.jsonl").open()
             if '"vllm-issue24684-llama31-8b-h100-c64"' in line)


def measure_cpython(repeats: int) -> dict:
    scope = {"REPEATS": repeats, "PASTE": PASTE, "json": json, "median_seconds": median_seconds, "time": time,
             "statistics": statistics}
    buf = []
    scope["print"] = buf.append
    exec(SNIPPET, scope)
    return json.loads(buf[-1])


def measure_pyodide(repeats: int) -> dict:
    return run_in_pyodide(f"REPEATS = {repeats}\nPASTE = {PASTE!r}\n" + SNIPPET)


def main() -> None:
    repeats = 7
    cp = measure_cpython(repeats)
    py = measure_pyodide(repeats)
    ms = lambda s: f"{s * 1000:,.0f} ms"
    rows = []
    for key, label, target in (("replay_x1", "replay x1 (5 min of conv)", "<= 300 ms in Pyodide"),
                               ("replay_x1_p95", "replay x1, p95 of 20 runs", "<= 300 ms in Pyodide"),
                               ("benchmark_1000", "benchmark replay, 1,000 requests", "<= 300 ms in Pyodide"),
                               ("benchmark_1000_p95", "benchmark replay, p95 of 20 runs", "<= 300 ms in Pyodide"),
                               ("calibrate", "paste one real run: fit + rerun", "-"),
                               ("sweep", "sweep, 8 points one by one", "<= 5 s in Pyodide"),
                               ("baseline", "baseline: replay x1 stepped one by one", "-")):
        rows.append([label, ms(cp[key]), ms(py[key]), f"{py[key] / cp[key]:.2f}x",
                     f"{cp['baseline'] / cp[key]:.2f}x", target])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Serving lab, CPython {sys.version.split()[0]} and Pyodide (Node), medians of {repeats} "
          f"runs, wall time (load average {load:.1f} on {os.cpu_count()} CPUs)")
    print(table(["call", "CPython", "Pyodide", "Pyodide/CPython", "baseline/this (CPython)", "target"], rows))
    print()
    print("The same two calls in CPU time of the process (time.process_time), medians")
    print(table(["call", "CPython CPU", "Pyodide CPU"],
                [["replay x1", ms(cp["replay_x1_cpu"]), ms(py["replay_x1_cpu"])],
                 ["sweep, 8 points", ms(cp["sweep_cpu"]), ms(py["sweep_cpu"])]]))
    print()
    us = lambda d, key: d[key] / d["request_steps"] * 1e6
    print("Engine inside the x1 replay, per request-step (all of the replay's time counted)")
    print(table(["replay", "steps", "request-steps", "CPython us/request-step", "Pyodide us/request-step", "target"],
                [["as the lab runs it (decode runs, counted blocks)", f"{cp['steps']:,}", f"{cp['request_steps']:,}",
                  f"{us(cp, 'replay_x1'):.3f}", f"{us(py, 'replay_x1'):.3f}", "<= 1 us in CPython"],
                 ["stepped one by one, vLLM's block pool", f"{cp['steps']:,}", f"{cp['request_steps']:,}",
                  f"{us(cp, 'baseline'):.3f}", f"{us(py, 'baseline'):.3f}", "-"]]))


if __name__ == "__main__":
    main()
