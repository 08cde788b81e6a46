"""pysim: the simulations behind the chapter "Continuous Batching & Request Scheduling".

Every number the chapter's pages show is computed here. Each simulation is a pure
function from a validated config (and, for step-by-step widgets, a list of the
reader's actions) to a *view model* made of dicts, lists, numbers and strings.
The browser reaches them only through `pysim.bridge.call`.
"""

__version__ = "0.1.0"
