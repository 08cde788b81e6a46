"""One run of the cluster: route every request of the window, replay it on its replicas.

Each replica is the lab's engine and clock (pysim.engine.replay.Replica); disaggregated,
a prompt's KV crosses the link to a decode replica (DistServe, OSDI 2024; Splitwise,
ISCA 2024; Mooncake, FAST 2025). `metrics` scores the run as `vllm bench serve` does
(pysim.traffic.slo), over the whole cluster and per GPU.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from pysim.config import ConfigError
from pysim.engine.replay import Replica, engine_config
from pysim.sims.cluster.config import LINKS, ClusterConfig, block_size, window
from pysim.sims.cluster.router import Router, least_loaded
from pysim.sims.cluster.watch import Watch
from pysim.timing.catalog import GPUS, MODELS
from pysim.timing.steptime import DEFAULTS, num_gpu_blocks, step_time_model
from pysim.traffic import slo, traces

FIRST_TOKEN_ID = -10**9  # made-up id of the first token a prefill replica sends along (minus the request's index)


@dataclass
class ClusterResult:
    sent: list[float]
    first_token: list[float]
    finished: list[float]
    output_tokens: list[int]
    prompt_tokens: list[int]
    replica_of: list[int]  # the replica each request was routed to (its prefill replica)
    decode_of: list[int]  # its decode replica (-1 when colocated, or a one-token answer)
    servers: list[Replica]
    roles: list[str]  # "replica", or "prefill" / "decode"
    transfer_s: list[float]  # time its KV spent on the link, waiting included (disaggregated)
    reasons: dict


def simulate(config: ClusterConfig, reqs: list | None = None, *, link_bytes_per_s: float | None = None,
             fast: bool = True, watch: Watch | None = None) -> ClusterResult:
    """Route and run every request of the window to its end. `reqs` (traces.TraceRequest)
    replace the window; `link_bytes_per_s` the named link (math.inf for none). With a
    `watch`, stop (raise Doomed) as soon as the run is sure to miss the sweep's target:
    the watch only reads the run, so a run it lets finish is the same as without it."""
    reqs = window(config) if reqs is None else reqs
    if not reqs:
        raise ConfigError("window_minutes", "the window holds no request; expected a window with traffic")
    gpu, model = GPUS[config.gpu], MODELS[config.model]
    stm = step_time_model(gpu, model, DEFAULTS[config.gpu])
    bs = block_size(config)
    blocks = num_gpu_blocks(gpu, model, bs)
    longest = max(r.num_prompt_tokens + r.max_tokens for r in reqs)
    if -(-longest // bs) > blocks - 1:
        raise ConfigError("model", f"the longest request ({longest:,} tokens) needs more KV blocks "
                                   f"than {model.name} leaves on one {gpu.name} ({blocks - 1:,} usable); "
                                   f"pick a smaller model or a larger GPU")
    ecfg = engine_config(blocks, bs, config, enable_prefix_caching=True)
    n = len(reqs)
    first, done = [math.nan] * n, [math.nan] * n
    replica_of, decode_of, transfer = [-1] * n, [-1] * n, [0.0] * n
    events: list = [(r.arrival_s, 0, i) for i, r in enumerate(reqs)]  # (time, kind, request); 0 arrives
    heapq.heapify(events)

    def tokens(i: int) -> traces.PromptTokens:
        return traces.PromptTokens(reqs[i].hash_ids, reqs[i].num_prompt_tokens)

    if config.layout == "colocated":
        def on_first(i, t):
            first[i] = t
            if watch:
                watch.first(i, t)

        def on_finish(i, t):
            done[i] = t
            if watch:
                watch.finish(i, t)

        servers = [Replica(ecfg, stm, fast=fast, on_first=on_first, on_finish=on_finish)
                   for _ in range(config.replicas)]
        roles = ["replica"] * config.replicas
        front, back = servers, []
    else:
        bw = LINKS[config.kv_link][1] if link_bytes_per_s is None else link_bytes_per_s
        link_free = [0.0] * config.prefill_replicas  # when each prefill replica's link is next idle
        kv_bytes = stm.kv_bytes_per_token

        def on_prefilled(i, t):  # the prefill replica sampled request i's first token at t
            first[i] = t
            if watch:
                watch.first(i, t)
            if reqs[i].max_tokens == 1:
                done[i] = t
                if watch:
                    watch.finish(i, t)
                return
            p = replica_of[i]
            start = max(t, link_free[p])
            arrive = start + reqs[i].num_prompt_tokens * kv_bytes / bw
            link_free[p] = arrive
            transfer[i] = arrive - t
            heapq.heappush(events, (arrive, 1, i))

        def on_decoded(i, t):
            done[i] = t
            if watch:
                watch.finish(i, t)

        front = [Replica(ecfg, stm, fast=fast, on_first=on_prefilled) for _ in range(config.prefill_replicas)]
        back = [Replica(ecfg, stm, fast=fast, on_finish=on_decoded) for _ in range(config.decode_replicas)]
        servers = front + back
        roles = ["prefill"] * len(front) + ["decode"] * len(back)

    router = Router(config.router, len(front), config.cache_threshold,
                    config.balance_abs_threshold, config.balance_rel_threshold)
    while True:
        t = events[0][0] if events else math.inf
        for s in front:
            s.advance(t)  # may put KV on the link, due before t
        if watch and t != math.inf:
            watch.by(t)  # every first token due by t has come: the rest are late if past their target
        if not events:
            break  # the prefill side is done and nothing is in flight
        if events[0][0] < t:
            continue
        for s in back:
            s.advance(t)
        if watch:
            watch.all_by(t)  # every replica is at t: an answer still running there ends after it
        _, kind, i = heapq.heappop(events)
        r = reqs[i]
        if kind == 0:  # a request arrives at the router
            k = replica_of[i] = router.choose(front, r.hash_ids, r.num_prompt_tokens)
            max_tokens = r.max_tokens if not back else 1
            front[k].add(i, r.num_prompt_tokens, max_tokens, t, tokens(i))
        else:  # its KV has reached the decode side: prompt + first token, the first already computed
            d = decode_of[i] = least_loaded(back)
            ids = tokens(i)
            ids.append(FIRST_TOKEN_ID - i)
            back[d].add(i, r.num_prompt_tokens + 1, r.max_tokens - 1, t, ids,
                        external_tokens=r.num_prompt_tokens)
    for s in servers:
        s.advance()
    assert not any(math.isnan(x) for x in done), "a request never finished"
    return ClusterResult([r.arrival_s for r in reqs], first, done, [r.max_tokens for r in reqs],
                         [r.num_prompt_tokens for r in reqs], replica_of, decode_of, servers, roles,
                         transfer, dict(router.reasons))


def metrics(config: ClusterConfig, result: ClusterResult) -> dict:
    ttfts = [f - s for f, s in zip(result.first_token, result.sent)]
    lats = [f - s for f, s in zip(result.finished, result.sent)]
    duration = max(result.finished) - min(result.sent)
    m = slo.summarize(ttfts, lats, result.output_tokens, duration, config.slo_ttft_ms, config.slo_tpot_ms)
    gpus = len(result.servers)
    q = sum(s.engine.prefix_cache_queries for s in result.servers if s is not None)
    h = sum(s.engine.prefix_cache_hits for s in result.servers if s is not None)
    # Only prompts count on a decode replica's side too, but its "hits" there are its
    # own copy of KV it was sent: the cluster's hit rate is the prefill side's.
    front = [s for s, role in zip(result.servers, result.roles) if role != "decode"]
    fq = sum(s.engine.prefix_cache_queries for s in front)
    fh = sum(s.engine.prefix_cache_hits for s in front)
    return m | {"gpus": gpus, "goodput_per_gpu": m["request_goodput"] / gpus,
                "prefix_cache": {"queries": fq, "hits": fh, "hit_rate": fh / fq if fq else 0.0,
                                 "all_queries": q, "all_hits": h}}
