"""Every simulation, by name: the one list to extend when a simulation is added.

A simulation is a `Simulation(...)` that a module of pysim defines: as `SIMULATION`, or,
when one module answers several questions from the same logic (the lab, its sweep, a
point of it and its conclusion), all of them in `SIMULATIONS`. The bridge,
the command line, the build (pre-rendering and the `{{ name.key }}` figures) and the
tests all find simulations here, so nothing else keeps a list of them.

Modules are imported on first use, one at a time: a page needs one or two simulations,
and Pyodide compiles every module from source when it is first imported (the first six
together took ~80 ms there, time a reader would wait before the first answer). A module
that fails to import breaks only its own calls, never the others'.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from pysim.config import ConfigError

# Simulation name -> the pysim module that defines its SIMULATION. The name is also the
# widget's file (widgets/NAME.js), its bridge name and, with hyphens, its CLI name and page.
MODULES = {
    "naive_batching": "sims.naive_batching",
    "paged_kv_cache": "sims.paged_kv_cache",
    "chunked_prefill": "sims.chunked_prefill",
    "batch_size": "sims.batch_size",
    # pysim/toy/scheduler.py is the teaching code the page prints; its widget's view is here:
    "toy_scheduler": "toy.view",
    "exercises": "sims.exercises",
    "lab": "sims.lab.simulations",
    # The lab's sweep, whole (the CLI), a rate at a time and its conclusion (the page's calls):
    "lab_sweep": "sims.lab.simulations",
    "lab_sweep_point": "sims.lab.simulations",
    "lab_capacity": "sims.lab.simulations",
    "lab_band": "sims.lab.simulations",  # the lab's percentiles at both ends of the error band (pysim.timing.errorband)
    "cluster": "sims.cluster.simulations",
    "cluster_sweep": "sims.cluster.simulations",  # one GPU count of the cluster page's sweep (no widget of its own)
    "policies": "sims.policies",  # the scheduling-policy lab (page 9)
    "puzzle": "sims.puzzles",  # its graded puzzles (the page's calls; no widget of its own)
}


@dataclass(frozen=True)
class Simulation:
    """A simulation as the bridge, the command line and the build see it."""

    name: str
    config_cls: type
    run: Callable[[Any, list], dict]  # (config, actions) -> view model
    text: Callable[[dict], str] | None = None  # a readable summary for the CLI
    takes_actions: bool = False
    # Actions a call on the default settings needs, for a simulation that answers none
    # without them (one rate of the lab's sweep): what the tests and checks send.
    example_actions: tuple = ()
    runs_reader_code: bool = False  # the exercise: arbitrary code, so the collector stays on
    # The numbers the chapter's prose quotes from this simulation ({{ NAME.key }}),
    # computed on demand: () -> {key: value}.
    figures: Callable[[], dict] | None = None
    # Data files its calls read that the site ships apart from the wheel and the page
    # fetches on first use (the lab's traces): () -> {path in Pyodide's file system: the
    # repository's file}. The build hashes them (sitebuild/assets.py).
    data_files: Callable[[], dict] | None = None
    # The command line's exit status for a view (default 0): 2 when the reader's code
    # failed, as for a bad setting; 1 for a failed puzzle.
    exit_status: Callable[[dict], int] | None = None
    # A setting the command line also takes as a plain argument after the name
    # (`python -m pysim puzzle NAME`); `--list` prints its options, one a line.
    cli_argument: str | None = None

    def __post_init__(self):
        assert self.name in MODULES, f"{self.name} is not in pysim.registry.MODULES"


def names() -> tuple[str, ...]:
    return tuple(MODULES)


def simulation(name: str) -> Simulation:
    """The simulation called `name`, importing its module on first use and no other."""
    if name not in MODULES:
        raise ConfigError("name", f"unknown simulation {name[:40]!r}; known: {', '.join(sorted(MODULES))}")
    module = importlib.import_module(f"pysim.{MODULES[name]}")
    sims = getattr(module, "SIMULATIONS", None) or (module.SIMULATION,)
    sim = next((s for s in sims if s.name == name), sims[0])
    assert sim.name == name, f"pysim.{MODULES[name]} defines {sim.name!r}, not {name!r}"
    return sim


def simulations() -> dict[str, Simulation]:
    """Every simulation by name (imports them all: for the CLI, `describe` and tests)."""
    return {name: simulation(name) for name in MODULES}
