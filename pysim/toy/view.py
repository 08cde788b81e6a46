"""The toy scheduler's widget (page 4): the driver's results and its batch-size series.

pysim/toy/scheduler.py is the teaching code the page prints and the exercise editor
starts from, so it holds the scheduler and nothing else; this module is what the bridge
runs for the widget (bridge name "toy_scheduler") and the numbers the page quotes.
"""

from __future__ import annotations

from operator import itemgetter

from pysim.config import to_mapping
from pysim.registry import Simulation
from pysim.toy.scheduler import (BLOCK_SIZE, LONGEST, POLICIES, ToyConfig, blocks_for, run_driver, simulate,
                                 summarize, workload)
from pysim.utils import cdiv

SERIES_POINTS = 200  # at most this many points in the per-iteration series


def _rounded(summary: dict) -> dict:
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in summary.items()}


def series(reports, points: int = SERIES_POINTS) -> dict:
    """Batch size and tokens per iteration, averaged over buckets of `bucket` iterations."""
    bucket = max(1, cdiv(len(reports), points))
    sizes = [len(rep["batch"]) for rep in reports]
    tokens = [sum(map(itemgetter(2), rep["batch"])) for rep in reports]  # the n of (id, kind, n)
    starts = range(0, len(reports), bucket)

    def mean(values, s):
        part = values[s:s + bucket]
        return round(sum(part) / len(part), 2)

    return {"bucket": bucket, "start": list(starts), "batch": [mean(sizes, s) for s in starts],
            "tokens": [mean(tokens, s) for s in starts]}


def run(config: ToyConfig, actions) -> dict:
    """The driver under `config`: its summary and the batch-size series, for the widget."""
    requests, reports = simulate(workload(config.num_requests, config.seed), config)
    return {"config": to_mapping(config), "results": _rounded(summarize(requests, reports)),
            "series": series(reports)}


def compare_policies(config: ToyConfig) -> dict:
    """The driver's summary under each policy, the other settings as in `config`."""
    return {policy: _rounded(run_driver(ToyConfig(**{**to_mapping(config), "policy": policy})))
            for policy in POLICIES}


def text(view: dict) -> str:
    """All three policies on the view's workload (the CLI's table; runs the other two)."""
    c = view["config"]
    head = (f"{c['num_requests']} requests (seed {c['seed']}), block size {c['block_size']}, "
            f"{c['num_gpu_blocks']} blocks, budget {c['max_num_batched_tokens']}, "
            f"max seqs {c['max_num_seqs']}")
    cols = ("policy", "finished", "iterations", "tokens/iter", "mean batch",
            "mean TTFT", "max TTFT", "urgent TTFT", "preemptions")
    rows = [cols]
    for name, s in compare_policies(ToyConfig(**c)).items():
        mark = " *" if name == c["policy"] else ""
        rows.append((name + mark, s["finished"], s["iterations"], f"{s['tokens_per_iteration']:.1f}",
                     f"{s['mean_batch']:.1f}", f"{s['mean_ttft']:.1f}", s["max_ttft"],
                     f"{s['mean_ttft_urgent']:.1f}", s["preemptions"]))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(cols))]
    lines = [head, "TTFT in iterations (urgent: the priority-0 requests); * = the chosen policy"]
    for row in rows:
        lines.append("  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w)
                               for i, (v, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


def figures() -> dict:
    """The numbers page 4 states (e.g. toy_scheduler.fcfs_mean_ttft): the driver's results
    per policy at the default constants. tests/unit/test_toy_scheduler.py recomputes the
    FCFS row with the engine."""
    out = {f"{policy}_{key}": value for policy, s in compare_policies(ToyConfig()).items()
           for key, value in s.items()}
    out["seed"] = ToyConfig().seed
    out["longest"] = LONGEST
    out["longest_blocks"] = blocks_for(LONGEST, BLOCK_SIZE)
    # "Try this" 3: a pool barely larger than the longest request (FCFS).
    small = run_driver(ToyConfig(num_gpu_blocks=SMALL_POOL))
    out["small_pool_blocks"] = SMALL_POOL
    out.update({f"small_pool_{key}": small[key] for key in ("iterations", "mean_batch", "preemptions")})
    return out


SMALL_POOL = 61  # blocks, the null block included: the longest request needs 54


SIMULATION = Simulation(name="toy_scheduler", config_cls=ToyConfig, run=run, text=text,
                        figures=figures)
