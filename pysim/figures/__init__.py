"""The numbers the chapter's prose states, computed here so the text cannot drift.

A page writes `{{ group.key }}` or `{{ group.key:format }}` (a Python format spec, e.g.
`{{ little.w_s:.1f }}`) and the build hook replaces it with `figure(name)` formatted.
An unknown name stops the build. tests/unit/test_figures.py checks every figure against
a hand computation.

A simulation's own numbers live with it: `{{ naive_batching.static_steps }}` is
`pysim.sims.naive_batching.figures()["static_steps"]`, found through the registry (a
Simulation's `figures`). This package holds the rest, the chapter's simple formula
models, a module per page or model (throughput.py, waste.py, multiplier.py, exercises.py,
paged.py, priority.py, real_systems.py):
- decode step time t(B) = t0 + beta * B, so throughput B / t(B) approaches 1 / beta;
- Little's law L = lambda * W;
- paged KV blocks of a fixed size, cdiv(tokens, block_size) blocks per sequence;
and the worked examples built from them (the exercises, page 7's priority arithmetic,
page 8's pool sizes).
"""

from __future__ import annotations

from pysim import registry
from pysim.toy.scheduler import OUTPUTS as OUTPUT_MIX
from pysim.toy.scheduler import PROMPTS as PROMPT_MIX
from pysim.figures.exercises import exercise2, exercise3, exercise4
from pysim.figures.multiplier import (continuous_trace, output_lengths, static_batches, static_trace,
                                      static_vs_continuous)
from pysim.figures.paged import admission_run, hit_cap, paged_vs_contiguous, prefix_sharing, thrashing
from pysim.figures.priority import priority_examples
from pysim.figures.real_systems import cpu_overlap, llamacpp_slots, load_test, vllm_pool
from pysim.figures.throughput import (batch_for_fraction, littles_law, roofline_tok_s, step_ms,
                                      throughput_tok_s)
from pysim.figures.waste import context_for_beta, decode_step, head_of_line, padding

__all__ = [
    "OUTPUT_MIX", "PROMPT_MIX",
    "adopt", "admission_run", "batch_for_fraction", "context_for_beta", "continuous_trace", "cpu_overlap",
    "computed", "decode_step", "exercise2", "exercise3", "exercise4", "figure", "head_of_line", "hit_cap",
    "littles_law", "llamacpp_slots", "load_test", "names", "output_lengths", "padding",
    "paged_vs_contiguous", "prefix_sharing", "priority_examples", "roofline_tok_s", "static_batches",
    "static_trace", "static_vs_continuous", "step_ms", "thrashing", "throughput_tok_s", "vllm_pool",
]


# ------------------------------------------------------------------ lookup


def _formula_groups() -> dict:
    """The chapter's own figure groups (the simulations' come from the registry)."""
    return {
        "little": littles_law(),
        "multiplier": static_vs_continuous(),
        "ex2": exercise2(),
        "ex3": exercise3(),
        "ex4": exercise4(),
        "decode": decode_step(),
        "padding": padding(),
        "hol": head_of_line(),
        "paged": paged_vs_contiguous(),
        "prefix": prefix_sharing(),
        "hitcap": hit_cap(),
        "thrash": thrashing(),
        "tiers": priority_examples(),
        "vpool": vllm_pool(),
        "overlap": cpu_overlap(),
        "llamacpp": llamacpp_slots(),
        "bench": load_test(),
    }


_CACHE: dict | None = None  # group -> {key: value}, filled as groups are asked for


def _group(group: str) -> dict:
    """One figure group, computed on first use. The formula groups are cheap and come
    together; a simulation's group (its Simulation.figures) is computed only when a page
    names one of its figures: the serving lab's runs two capacity sweeps, seconds of work
    that a build of any other page, or a test, should not pay for."""
    global _CACHE
    if _CACHE is None:
        _CACHE = _formula_groups()
    if group not in _CACHE and group in registry.MODULES:
        sim = registry.simulation(group)
        if sim.figures is not None:
            _CACHE[group] = sim.figures()
    if group not in _CACHE:
        raise KeyError(f"unknown figure group {group!r}")
    return _CACHE[group]


def computed() -> dict:
    """The groups computed so far, group -> values (sitebuild.figure_cache keeps them)."""
    return dict(_CACHE or {})


def adopt(groups: dict) -> None:
    """Take groups computed earlier by this same code (sitebuild.figure_cache)."""
    global _CACHE
    _CACHE = {**(_CACHE if _CACHE is not None else _formula_groups()), **groups}


def figure(name: str):
    """The value of a dotted figure name such as 'little.w_s'."""
    group, _, key = name.partition(".")
    values = _group(group)
    if key not in values:
        raise KeyError(f"unknown figure {name!r}")
    return values[key]


def names(skip: tuple = ()) -> list[str]:
    """Every figure name but those of the groups in `skip` (computing every other group:
    skip "lab" to spare its sweeps)."""
    groups = list(_formula_groups()) + [n for n, sim in registry.simulations().items() if sim.figures]
    return [f"{g}.{k}" for g in groups if g not in skip for k in _group(g)]
