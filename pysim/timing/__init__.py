"""How long a step takes, and how far to trust it.

- catalog.py: the GPUs and models (memory, bandwidth, FLOPs; layers, heads, sizes);
- steptime.py: one engine step's time on a GPU, a roofline with four fitted
  coefficients, and the KV pool a GPU leaves;
- fit.py: those coefficients fitted to real `vllm bench serve` runs
  (`python -m pysim.timing.fit`);
- realbench.py: the published runs (data/realbench/records.jsonl) read as fit runs;
- fidelity.py: the model against those runs, record by record, out of sample
  (`python -m pysim.timing.fidelity`);
- errorband.py: how far the lab's and the cluster's answers move across the model's
  measured errors.
"""
