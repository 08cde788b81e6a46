"""The cluster page's speed: one replay of the Mooncake trace on many replicas, and the sweep.

Run: `python bench/bench_cluster.py` from the project root, after a site build (the
Pyodide column runs the site's wheel under Node, with the traces where the page's
worker puts them). Medians of several runs, and the p95 the targets are set on:

- a change on the page's defaults (4 replicas, cache-aware, 5 minutes of the Mooncake
  conversation trace from minute 10: about 1,000 requests of 12,500 prompt tokens on
  average, H100 + Llama 3.1 8B, vLLM's H100 defaults): target p95 <= 1 s in Pyodide;
- 8 replicas, and 2 prefill + 2 decode replicas;
- the GPU sweep as the page runs it (`pysim.sims.cluster.sweep.fewest_gpus`: runs stop once surely short,
  a layout drops out once it meets) against the baseline in the same run, the walk the
  page did before (`full_walk`: both layouts at every count, every run to its end, until
  both meet), on the page's defaults (no count meets) and on a setting whose answer is a
  count; and the slowest setting found for the fast sweep (a 10-minute window at 4x the
  rate with loose targets: every count below the answer nearly passes), fast only.
  Target: <= 10 s in Pyodide in the worst case;
- baseline for one replay, measured in the same run: the 8-replica replay stepped one
  step at a time (no decode runs), and the prefix-cache share of the time: the same 8
  replicas with block names spelled out as token lists (hashed block by block), CPython only.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from common import median_seconds, run_in_pyodide, table  # noqa: F401

SNIPPET = r'''
from dataclasses import replace
from pysim.sims.cluster import (config as cluster_config, simulate as cluster_simulate,
                                sweep as cluster_sweep, view as cluster_view)
from pysim.traffic import traces
from pysim.sims.cluster.config import ClusterConfig

BASE = ClusterConfig()
REQS = cluster_config.window(BASE)
EIGHT = replace(BASE, replicas=8)
COUNT = replace(BASE, rate_scale=0.25, slo_ttft_ms=4000.0)  # the answer is a count (5 and 6)
HEAVY = replace(BASE, window_minutes=10, rate_scale=4.0, slo_ttft_ms=60000.0, slo_tpot_ms=5000.0)

def eight():
    cluster_view.cluster_view(EIGHT, [])

def default_view():
    cluster_view.cluster_view(BASE, [])

def disaggregated():
    cluster_view.cluster_view(replace(BASE, layout="disaggregated"), [])

def full_walk(config):
    # The page's sweep before: both layouts at every count, every run to its end.
    reqs, met = cluster_config.window(config), set()
    for g in cluster_sweep.SWEEP_GPUS:
        p = cluster_sweep.sweep_point(config, reqs, g, exact=True)
        met |= {k for k in cluster_sweep.LAYOUTS if p[k]["meets"]}
        if len(met) == 2:
            break

def baseline():
    cluster_simulate.simulate(EIGHT, REQS, fast=False)

def spelled():
    # Token lists instead of named blocks: every full block hashed with sha256.
    reqs = [traces.TraceRequest(r.arrival_s, r.num_prompt_tokens, r.max_tokens, r.hash_ids) for r in REQS]
    orig = traces.PromptTokens.block_hashes
    traces.PromptTokens.block_hashes = lambda self, bs: []
    try:
        cluster_simulate.simulate(EIGHT, reqs)
    finally:
        traces.PromptTokens.block_hashes = orig

def samples(fn, repeats):
    fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return sorted(out)

def p95(fn, repeats):
    s = samples(fn, repeats)
    return s[-(-95 * len(s) // 100) - 1]

def once(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0

out = {
    "requests": len(REQS),
    "default": median_seconds(default_view, repeats=REPEATS),
    "default_p95": p95(default_view, 20),
    "eight": median_seconds(eight, repeats=REPEATS),
    "disaggregated": median_seconds(disaggregated, repeats=REPEATS),
    "sweep_default": median_seconds(lambda: cluster_sweep.fewest_gpus(BASE), repeats=3),
    "walk_default": once(lambda: full_walk(BASE)),
    "sweep_count": median_seconds(lambda: cluster_sweep.fewest_gpus(COUNT), repeats=3),
    "walk_count": once(lambda: full_walk(COUNT)),
    "sweep_heavy": once(lambda: cluster_sweep.fewest_gpus(HEAVY)),
    "baseline": median_seconds(baseline, repeats=3),
    "spelled": median_seconds(spelled, repeats=3) if SPELLED else None,
}
print(json.dumps(out))
'''


def measure_cpython(repeats: int) -> dict:
    scope = {"REPEATS": repeats, "SPELLED": True, "json": json, "median_seconds": median_seconds,
             "time": time, "statistics": statistics}
    buf = []
    scope["print"] = buf.append
    exec(SNIPPET, scope)
    return json.loads(buf[-1])


def main() -> None:
    repeats = 5
    cp = measure_cpython(repeats)
    py = run_in_pyodide(f"REPEATS = {repeats}\nSPELLED = False\n" + SNIPPET)
    ms = lambda s: "-" if s is None else f"{s * 1000:,.0f} ms"
    rows = []
    for key, label, base, target in (
            ("default", "page default: 4 replicas, cache-aware (5 min, Mooncake conv)", None, "-"),
            ("default_p95", "the same, p95 of 20 runs", None, "<= 1 s in Pyodide"),
            ("eight", "8 replicas", "baseline", "-"),
            ("disaggregated", "2 prefill + 2 decode, InfiniBand", None, "-"),
            ("baseline", "baseline: 8 replicas stepped one by one", "baseline", "-"),
            ("walk_default", "GPU sweep, page defaults: baseline, the full walk (1 run)", "walk_default", "-"),
            ("sweep_default", "GPU sweep, page defaults: as the page runs it now", "walk_default", "<= 10 s in Pyodide"),
            ("walk_count", "GPU sweep, rate x0.25, TTFT 4 s: the full walk (1 run)", "walk_count", "-"),
            ("sweep_count", "GPU sweep, rate x0.25, TTFT 4 s: now", "walk_count", "<= 10 s in Pyodide"),
            ("sweep_heavy", "GPU sweep, 10 min at x4, TTFT 60 s, TPOT 5 s: now (1 run)", None, "<= 10 s in Pyodide")):
        rows.append([label, ms(cp[key]), ms(py[key]), f"{py[key] / cp[key]:.2f}x",
                     f"{cp[base] / cp[key]:.2f}x" if base else "-",
                     f"{py[base] / py[key]:.2f}x" if base else "-", target])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Cluster, {cp['requests']:,} requests, CPython {sys.version.split()[0]} and Pyodide (Node), "
          f"medians of {repeats} runs unless said, wall time (load average {load:.1f} on {os.cpu_count()} CPUs)")
    print(table(["call", "CPython", "Pyodide", "Pyodide/CPython", "baseline/this (CPython)",
                 "baseline/this (Pyodide)", "target"], rows))
    print()
    print(f"Named blocks against token lists hashed block by block (8 replicas, CPython): "
          f"{ms(cp['eight'])} against {ms(cp['spelled'])} ({cp['spelled'] / cp['eight']:.1f}x)")


if __name__ == "__main__":
    main()
