"""The cluster's two simulations, as pysim.registry's MODULES finds them:
`cluster` (one run) and `cluster_sweep` (its GPU sweep).
"""

from __future__ import annotations

from pysim.registry import Simulation
from pysim.sims.cluster.config import ClusterConfig
from pysim.sims.cluster.figures import figures
from pysim.sims.cluster.sweep import SweepConfig, sweep_view
from pysim.sims.cluster.text import text
from pysim.sims.cluster.view import cluster_view
from pysim.traffic import traces

SIMULATION = Simulation("cluster", ClusterConfig, cluster_view, text=text, figures=figures,
                        data_files=traces.site_files)


# One GPU count of the page's sweep (do colocated replicas and a prefill/decode split meet
# the targets at `gpus` GPUs?): another question, another view, so a simulation of its
# own, which the page calls once per count to show progress and stop between them, sending
# the points so far as the call's actions.
SIMULATIONS = (
    SIMULATION,
    Simulation("cluster_sweep", SweepConfig, sweep_view, text=text, takes_actions=True,
               data_files=traces.site_files),
)
