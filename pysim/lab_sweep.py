"""The serving lab's capacity sweep in one call: every rate of SWEEP_RATES, then the capacity.

Its own simulation, not a setting of `lab`: it answers another question (up to which
rate does one replica keep 90% of requests within the SLOs?) with another view. The
command line and the build run it whole; the page asks `lab_sweep_point` for one rate at
a time instead, so it can show progress and stop. The logic is pysim.lab's.
"""

from __future__ import annotations

from . import traces
from .lab import SweepConfig, sweep_view, text
from .registry import Simulation

SIMULATION = Simulation("lab_sweep", SweepConfig, sweep_view, text=text, data_files=traces.site_files)
