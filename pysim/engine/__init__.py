"""The engine: vLLM V1's scheduler, its KV-cache memory, and the clock that replays it.

What a replica of `vllm serve` does with the requests it is sent, step by step (vLLM
0.34.0, `vllm/v1/core/`):

- scheduler.py: one step of vLLM's `Scheduler` or `AsyncScheduler`
  (`vllm/v1/core/sched/scheduler.py`, `async_scheduler.py`), and `SchedulerConfig`,
  the scheduler's knobs every simulation's config inherits;
- request_queue.py: its waiting queue, FCFS or PRIORITY (`vllm/v1/core/sched/request_queue.py`);
- blockpool.py: the paged KV pool and the KV-cache manager, prefix caching included
  (`vllm/v1/core/block_pool.py`, `kv_cache_manager.py`);
- vllm_defaults.py: what `vllm serve MODEL` sets when given no flag, release by release;
- replay.py: timed requests through the engine with a step-time model (pysim.timing),
  as a server's clock would run them; decode_run.py, beside it, many plain decode steps
  applied at once (the lab's and the cluster's shortcut, which vLLM does not have).

Nothing here knows a page: the simulations (pysim.sims) drive it.
"""
