"""Scheduling across replicas: a router in front of vLLM replicas, or prefill and decode split.

A request is scheduled twice in a cluster. First a router picks the replica; then that
replica's own scheduler (pysim.engine, vLLM 0.33's rules) fits it into a step. This
package is the first half; every replica is the serving lab's engine and clock
(pysim.engine.replay.Replica), with the lab's step-time model (pysim.timing.steptime) and KV pool.

The traffic is a window of the Mooncake FAST'25 traces (pysim.traffic.traces), which name each
prompt's 512-token blocks, so prefix caching finds exactly the sharing Kimi's service
saw. Each replica has its own pool and its own cache: where a request lands decides
what it can reuse.

Routers (`router`), as the projects that ship them describe them:
- round_robin: replica i, i+1, ... in turn, blind to load and cache;
- least_loaded: the fewest outstanding requests (sent and not finished, what a router
  can count itself), ties to the lower KV usage, then the lower index;
- cache_aware: SGLang's router policy (sglang-router 0.3.2, `src/policies/cache_aware.rs`).
  If the loads are imbalanced (the busiest has more than `balance_abs_threshold`
  requests more than the idlest AND more than `balance_rel_threshold` times as many),
  the idlest replica. Otherwise the replica whose prefix record matches the longest
  prefix of the request, if that match covers more than `cache_threshold` of the
  prompt; else, again, the idlest (older sgl-router versions picked the replica with
  the smallest record instead). Load is what the router counts itself: requests it
  sent and has not seen finish. The record is the router's own, every prompt it sent
  to each replica, not what the replica still holds, so it can believe in blocks the
  replica has evicted (SGLang keeps an approximate radix tree of request text, trimmed
  to 2^26 nodes every minute or two; a window here never reaches that size).

Layouts (`layout`):
- colocated: `replicas` replicas, each prefilling and decoding its own requests;
- disaggregated: `prefill_replicas` replicas run each prompt and sample its first
  token (the reader sees it from there), then its KV moves over `kv_link` to one of
  `decode_replicas` (the least loaded when it lands), which writes the KV into new
  blocks as it admits it, computes the first token's KV and decodes the rest. A
  decode replica admits it only when its pool has room, as any request. This is the
  shape of DistServe (OSDI 2024), Splitwise (ISCA 2024) and Mooncake (FAST 2025), and
  of vLLM's KV-connector disaggregation.
  What the model leaves out: transfers are serialized per prefill replica and never
  overlap the prefill that produced them (real connectors send layer by layer as it
  runs); the connector's own costs (registration, metadata, the proxy); a prefill
  replica keeps no blocks for a transfer in flight (vLLM's delay their free until
  the decode side has read them); and all KV is sent, even blocks the decode replica
  has cached.

Metrics: the lab's (pysim.traffic.slo, as `vllm bench serve` computes them) over the whole
cluster, and per GPU: goodput per GPU is good requests per second divided by the GPUs
used, the figure DistServe compares layouts by. The prefix-cache hit rate is vLLM's
two counters summed over replicas (vllm:prefix_cache_hits / vllm:prefix_cache_queries).

`cluster_sweep` (registered beside `cluster`) runs one GPU count, colocated and
disaggregated, so the page can look for the fewest GPUs that meet the SLOs one count
at a time, with progress and a way to stop; each call sends the points so far as its
actions and gets back the answer so far (or, with `gpus` 0, the whole sweep at once).

The cluster's own modules, one job each:
- config.py: the settings (ClusterConfig), the routers' and links' constants, the window;
- router.py: the router; watch.py: stopping a run that is surely short of the target;
- simulate.py: one run, routed and replayed on its replicas, and its metrics;
- view.py: the `cluster` view; sweep.py: `cluster_sweep`, the fewest GPUs that meet
  the SLOs;
- text.py: what the command line prints; figures.py: the numbers docs/cluster.md quotes;
- simulations.py: the two Simulation objects, where pysim.registry finds them.
"""
