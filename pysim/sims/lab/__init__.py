"""The serving lab: real production traffic through the V1 engine, with SLOs and goodput.

The question it answers is a reader's own: for this traffic, on this GPU and model,
with these `--max-num-seqs` and `--max-num-batched-tokens`, do requests meet their
latency targets, and how many replicas does the traffic need?

The parts it uses, each in its own module:
- traffic (pysim.traffic.traces): a window of the Azure LLM inference trace 2023 (or of the
  Mooncake traces, below), at a rate
  scale, or Poisson arrivals of the same requests;
- or, instead of the trace, a benchmark as `vllm bench serve --dataset-name random`
  sends it (pysim.traffic.bench_serve), with the figures it prints;
- the step time and the KV pool (pysim.timing.steptime): the roofline of the batch-size
  catalog with four coefficients fitted to real benchmark runs, the GPU's defaults or
  the reader's own fit;
- the scheduler (pysim.engine via pysim.engine.replay): vLLM 0.33's V1 rules, chunked
  prefill on, preemption by recompute, FCFS;
- the metrics (pysim.traffic.slo): TTFT, TPOT and goodput as `vllm bench serve --goodput`
  computes them;
- calibration (pysim.traffic.benchsummary, pysim.timing.fit): pasted benchmark output, each run
  replayed as it was sent, and the coefficients fitted to them.

What is left out, and why:
- traffic can also be a window of the Mooncake FAST'25 traces (Kimi's conversation
  service, and a synthetic one), which name each prompt's 512-token blocks: they run
  with prefix caching on, and the view gives vLLM's two prefix-cache counters;
- prefix caching is off for the Azure trace: it has token counts but no prompt text,
  so there is nothing to find shared prefixes in (a benchmark's --random-prefix-len
  is shared, and cached, as on a real server);
- the waiting-queue policy is FCFS: the trace carries no request priorities, so
  `--scheduling-policy priority` would have nothing to sort by;
- the KV pool, its block size and the scheduler's defaults are vLLM 0.34.0's
  (pysim.engine.vllm_defaults): 64-token blocks on CUDA (16 on ROCm, the MI300X), the pool cut
  from all the memory the driver reports (--gpu-memory-utilization 1.0), and
  `max_num_seqs` 1,024 and `max_num_batched_tokens` 8,192, `vllm serve`'s on an H100.

Four questions, five simulations in the registry, the lab's settings and one engine:
- `lab` (view.run): one replay, the full view (distributions, gauges over time, goodput);
- `lab_sweep` (sweep.sweep_view): the capacity sweep in one call, every rate in
  SWEEP_RATES (the CLI);
- `lab_sweep_point` (sweep.sweep_point_view): one rate of the sweep, SWEEP_RATES[i]
  for its one action `{"sweep_index": i}` (the page asks for these one by one, so it
  can show progress and stop between calls);
- `lab_capacity` (sweep.capacity_view): the sweep's conclusion from points already
  computed (its actions, each point as lab_sweep_point returned it), without running
  anything again;
- `lab_band` (band.band_view): the replay at both ends of the error band.

Pin and compare: a pinned configuration is the view model the page already has; the
widget keeps it and draws it beside the new one. Nothing is recomputed for it.

The lab's own modules, one job each:
- config.py: the settings (LabConfig) and what they name (vLLM's defaults, the server,
  the benchmark);
- workload.py: the traffic the settings describe, and one replay of it, scored;
- commands.py: the settings as `vllm serve` and `vllm bench serve` command lines;
- calibrate.py: the coefficients fitted to pasted runs, each replayed as it was sent;
- view.py: the `lab` view; sweep.py: the capacity sweep's configs and views;
  band.py: `lab_band`;
- text.py: what the command line prints; figures.py: the numbers docs/lab.md quotes;
- simulations.py: the five Simulation objects, where pysim.registry finds them.
"""
