"""One GPU count of the cluster's sweep: the fewest GPUs that meet the SLOs, a count at a time.

Its own simulation, not a setting of `cluster`: it answers a different question (at
`gpus` GPUs, do colocated replicas and a prefill/decode split meet the targets?) with
a different view. The page asks for one count after another, so it can show progress
and stop between them. The logic is pysim.cluster's (`sweep_view`).
"""

from __future__ import annotations

from . import traces
from .cluster import ClusterConfig, sweep_view, text
from .registry import Simulation

SIMULATION = Simulation("cluster_sweep", ClusterConfig, sweep_view, text=text, data_files=traces.site_files)
