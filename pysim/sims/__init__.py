"""The chapter's simulations: one module (or package) per page, each defining what
pysim.registry's MODULES names (`SIMULATION`, or `SIMULATIONS` for several).

- naive_batching.py (page 1), paged_kv_cache.py (page 2), chunked_prefill.py (page 3),
  batch_size.py (page 6): the widgets' simulations;
- exercises.py: exercise 5's runner, which runs a reader's toy scheduler (pysim.toy);
- lab.py: the serving lab (page 7), real traffic through the engine, scored as
  `vllm bench serve` scores it, with its capacity sweep;
- cluster.py: scheduling across replicas (page 8), routers and disaggregation;
- policies.py: the scheduling-policy lab (page 9), and puzzles.py, its graded puzzles.

A simulation is a pure function from a validated config to a view model; it uses the
engine (pysim.engine), the traffic (pysim.traffic) and the clock (pysim.timing), and
never imports the bridge.
"""
