"""The serving lab's capacity from sweep points already computed, replaying nothing.

The page sends the points `lab_sweep_point` returned (all of them, or those before the
reader cancelled) and gets the highest rate that keeps 90% of requests within the SLOs,
and the replicas that means. The logic is pysim.lab's (`capacity`).
"""

from __future__ import annotations

from . import traces
from .lab import CapacityConfig, capacity_view, text
from .registry import Simulation

SIMULATION = Simulation("lab_capacity", CapacityConfig, capacity_view, text=text, data_files=traces.site_files)
