"""One rate of the serving lab's capacity sweep (`sweep_index` into SWEEP_RATES).

The page's sweep is one call of this per rate, so the reader sees each point arrive and
can cancel between them; then `lab_capacity` concludes from the points it has. The logic
is pysim.lab's (`sweep_point_view`).
"""

from __future__ import annotations

from . import traces
from .lab import SweepPointConfig, sweep_point_view, text
from .registry import Simulation

SIMULATION = Simulation("lab_sweep_point", SweepPointConfig, sweep_point_view, text=text,
                        data_files=traces.site_files)
