"""The lab's five simulations, as pysim.registry's MODULES finds them.

One config and one engine answer four questions: `lab` (one replay), `lab_sweep`,
`lab_sweep_point` and `lab_capacity` (the capacity sweep, whole, a rate at a time, its
conclusion), and `lab_band` (the replay at both ends of the error band).
"""

from __future__ import annotations

from pysim.registry import Simulation
from pysim.sims.lab.band import band_view
from pysim.sims.lab.config import LabConfig
from pysim.sims.lab.figures import figures
from pysim.sims.lab.sweep import SweepConfig, capacity_view, sweep_point_view, sweep_view
from pysim.sims.lab.text import text
from pysim.sims.lab.view import run
from pysim.traffic import traces

# figures: computed only when a page names one (pysim.figures looks groups up lazily).
SIMULATION = Simulation(name="lab", config_cls=LabConfig, run=run, text=text, figures=figures,
                        data_files=traces.site_files)


# The capacity sweep answers another question (up to which rate does one replica keep
# 90% of requests within the SLOs?) with another view, so it is a simulation of its own:
# whole (`lab_sweep`: the command line and the build), one rate at a time
# (`lab_sweep_point`: the page, which shows each point arrive and can stop between two),
# and the conclusion from the points there are (`lab_capacity`: the page, last). What one
# call of the page's sweep asks (a rate's place, the points so far) is its actions.
SIMULATIONS = (
    SIMULATION,
    Simulation("lab_sweep", SweepConfig, sweep_view, text=text, data_files=traces.site_files),
    Simulation("lab_sweep_point", SweepConfig, sweep_point_view, text=text, takes_actions=True,
               example_actions=({"sweep_index": 0},), data_files=traces.site_files),
    Simulation("lab_capacity", LabConfig, capacity_view, text=text, takes_actions=True,
               data_files=traces.site_files),
    Simulation("lab_band", LabConfig, band_view, data_files=traces.site_files),
)
