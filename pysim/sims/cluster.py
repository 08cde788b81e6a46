"""Scheduling across replicas: a router in front of vLLM replicas, or prefill and decode split.

A request is scheduled twice in a cluster. First a router picks the replica; then that
replica's own scheduler (pysim.engine, vLLM 0.33's rules) fits it into a step. This
module is the first half; every replica is the serving lab's engine and clock
(pysim.engine.replay.Server), with the lab's step-time model (pysim.timing.steptime) and KV pool.

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
at a time, with progress and a way to stop.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace

from pysim import fields
from pysim.engine import vllm_defaults
from pysim.timing import errorband
from pysim.traffic import slo, traces
from pysim.timing.catalog import GPUS, MODELS
from pysim.config import ConfigError, bounded, choice, data, flag
from pysim.config import to_mapping
from pysim.registry import Simulation
from pysim.engine.scheduler import SchedulerConfig
from pysim.engine.replay import Server, engine_config
from pysim.timing.steptime import DEFAULTS, check_fits, num_gpu_blocks, step_time_model

# Every replica runs vLLM 0.34.0's defaults (pysim.engine.vllm_defaults); the scheduler's knobs
# start from `vllm serve`'s on the default GPU (an H100): pysim.engine.scheduler.SchedulerConfig.
MAX_GPUS = 16
ATTAINMENT_TARGET = 0.9  # as the lab's capacity: 90% of requests meet both targets
NUM_BINS = 60  # points in each per-replica time series
SWEEP_GPUS = (2, 3, 4, 5, 6, 8, 10, 12, 16)  # the counts the page's sweep tries, in order (2: one of each side)
# The page runs the sweep one `cluster_sweep` call per count and stops as this says;
# which count meets the target is each point's `meets`.
SWEEP_SENTENCE = (
    f"For each GPU count from {SWEEP_GPUS[0]} to {SWEEP_GPUS[-1]}, pysim runs the window on that "
    "many colocated replicas, and split into prefill and decode replicas in proportion to each "
    "side's work, with the router, GPU, model and targets above, until each layout has a count "
    f"where {ATTAINMENT_TARGET:.0%} of requests meet both targets. A run stops as soon as more than "
    f"{1 - ATTAINMENT_TARGET:.0%} of requests have surely missed a target: that count fails whatever "
    "the rest would do. The largest count runs to the end.")
SWEEP_CAPTION = (f"The sweep, GPU count by GPU count (meets: at least {ATTAINMENT_TARGET:.0%} of "
                 "requests meet both targets)")
FIRST_TOKEN_ID = -10**9  # made-up id of the first token a prefill replica sends along (minus the request's index)

ROUTERS = ("round_robin", "least_loaded", "cache_aware")
# SGLang router's cache-aware defaults (sgl-router, see the module docstring and docs/facts.toml).
CACHE_THRESHOLD = 0.3
BALANCE_ABS_THRESHOLD = 64
BALANCE_REL_THRESHOLD = 1.5

# KV links, bytes per second one way (sources in docs/facts.toml).
LINKS = {
    "nvlink": ("NVLink 4 (H100 SXM), 450 GB/s", 450e9),
    "pcie": ("PCIe 5.0 x16, 64 GB/s", 64e9),
    "infiniband": ("InfiniBand NDR, 400 Gb/s", 50e9),
}


@dataclass(frozen=True)
class ClusterConfig(SchedulerConfig):
    """The cluster's settings: every replica's scheduler knobs (inherited:
    pysim.engine.scheduler.SchedulerConfig), the traffic, the layout, the router and the targets."""

    trace: str = fields.trace("mooncake_conv", traces.PREFIX_TRACES)
    window_start_min: int = fields.window_start_min(10, 0, 55)
    window_minutes: int = fields.window_minutes(5, 1, 10)
    rate_scale: float = fields.rate_scale(1.0, 0.25, 4.0)
    layout: str = choice("colocated", ("colocated", "disaggregated"),
                         "every replica prefills and decodes, or prefill and decode on separate replicas",
                         label="Layout", option_labels={"colocated": "Colocated",
                                                        "disaggregated": "Disaggregated prefill/decode"})
    replicas: int = bounded(4, 1, MAX_GPUS, "replicas, one GPU each (colocated)",
                            label="Replicas", unit="GPUs")
    prefill_replicas: int = bounded(2, 1, MAX_GPUS - 1, "replicas that only prefill (disaggregated)",
                                    label="Prefill replicas", unit="GPUs")
    decode_replicas: int = bounded(2, 1, MAX_GPUS - 1, "replicas that only decode (disaggregated)",
                                   label="Decode replicas", unit="GPUs")
    router: str = choice("cache_aware", ROUTERS, "how the router picks a replica (the prefill "
                         "replica, when disaggregated)", label="Router",
                         option_labels={"round_robin": "Round robin", "least_loaded": "Least loaded",
                                        "cache_aware": "Cache-aware (SGLang)"})
    cache_threshold: float = bounded(CACHE_THRESHOLD, 0.0, 1.0, "cache_aware: the prefix match, as "
                                     "a share of the prompt, above which the matching replica wins",
                                     integer=False, label="cache_threshold", step=0.05)
    balance_abs_threshold: int = bounded(BALANCE_ABS_THRESHOLD, 0, 1024, "cache_aware: outstanding "
                                         "requests the busiest may have above the idlest before "
                                         "loads count as imbalanced", label="balance_abs_threshold",
                                         unit="requests", slider_max=256)
    balance_rel_threshold: float = bounded(BALANCE_REL_THRESHOLD, 1.0, 10.0, "cache_aware: and the "
                                           "ratio of busiest to idlest above which they do",
                                           integer=False, label="balance_rel_threshold", step=0.1)
    kv_link: str = choice("infiniband", tuple(LINKS), "the link a request's KV crosses from "
                          "prefill to decode replica", label="KV link",
                          option_labels={k: v[0] for k, v in LINKS.items()})
    gpu: str = fields.gpu("H100")  # every replica's (16-bit weights and KV)
    model: str = fields.model("llama-3.1-8b")
    slo_ttft_ms: float = fields.slo_ttft_ms(2000.0, 10, 60_000)
    slo_tpot_ms: float = fields.slo_tpot_ms(100.0, 1, 5_000)

    def check(self) -> None:
        if self.layout == "disaggregated" and self.prefill_replicas + self.decode_replicas > MAX_GPUS:
            raise ConfigError("decode_replicas", f"got {self.decode_replicas} with {self.prefill_replicas} "
                                                 f"prefill replicas; at most {MAX_GPUS} GPUs in all: "
                                                 f"expected a whole number from 1 to "
                                                 f"{MAX_GPUS - self.prefill_replicas}")
        SchedulerConfig.check(self)
        check_fits(self.gpu, self.model)
        traces.check_window(self.trace, self.window_start_min, self.window_minutes)


# The widget's fieldsets, in order (pysim.config.describe).
ClusterConfig.GROUPS = (
    ("Traffic", ("trace", "window_start_min", "window_minutes", "rate_scale")),
    ("Cluster", ("layout", "replicas", "prefill_replicas", "decode_replicas", "router", "kv_link")),
    ("Router thresholds (cache aware)", ("cache_threshold", "balance_abs_threshold", "balance_rel_threshold")),
    ("GPU and model", ("gpu", "model")),
    ("Scheduler (each replica)", SchedulerConfig.GROUP[1]),
    ("Targets (SLOs)", ("slo_ttft_ms", "slo_tpot_ms")),
)



# --- the router ------------------------------------------------------------------------
class Router:
    """Picks a replica for each request; it knows its policy, as vLLM's request queue does.

    `choose` sees the replicas as the router can: their outstanding requests and KV
    usage, and its own record of the prompts it sent each one.
    """

    def __init__(self, policy: str, n: int, cache_threshold=CACHE_THRESHOLD,
                 balance_abs=BALANCE_ABS_THRESHOLD, balance_rel=BALANCE_REL_THRESHOLD):
        assert policy in ROUTERS and n >= 1
        self.policy, self.n = policy, n
        self.cache_threshold, self.balance_abs, self.balance_rel = cache_threshold, balance_abs, balance_rel
        self.turn = 0
        self.sent = [set() for _ in range(n)]  # block ids of every prompt sent to each replica
        self.reasons = {"balance": 0, "prefix": 0, "low_match": 0}  # cache_aware's choices, counted

    def choose(self, servers: list[Server], hash_ids: tuple, num_prompt_tokens: int) -> int:
        if self.policy == "round_robin":
            i = self.turn
            self.turn = (self.turn + 1) % self.n
        elif self.policy == "least_loaded":
            i = least_loaded(servers)
        else:
            i = self._cache_aware(servers, hash_ids, num_prompt_tokens)
        self._remember(i, hash_ids, num_prompt_tokens)
        return i

    def _cache_aware(self, servers, hash_ids, num_prompt_tokens) -> int:
        loads = [s.outstanding() for s in servers]
        hi, lo = max(loads), min(loads)
        if hi - lo > self.balance_abs and hi > lo * self.balance_rel:
            self.reasons["balance"] += 1
            return loads.index(lo)  # SGLang: the shortest queue
        best, best_match = 0, -1
        for i, seen in enumerate(self.sent):
            m = 0
            for k in hash_ids:  # the ids name a prefix: the match stops at the first unseen one
                if k not in seen:
                    break
                m += 1
            if m > best_match:
                best, best_match = i, m
        matched = min(best_match * traces.TRACE_BLOCK, num_prompt_tokens)
        if matched > self.cache_threshold * num_prompt_tokens:
            self.reasons["prefix"] += 1
            return best
        self.reasons["low_match"] += 1
        return loads.index(lo)

    def _remember(self, i: int, hash_ids: tuple, num_prompt_tokens: int) -> None:
        self.sent[i].update(hash_ids)  # SGLang records the replica chosen, whatever the reason


def least_loaded(servers: list[Server]) -> int:
    """The fewest outstanding requests; ties to the lower KV usage, then the lower index."""
    return min(range(len(servers)), key=lambda i: (servers[i].outstanding(), servers[i].kv_usage(), i))


# --- giving up on a run that cannot meet the target ------------------------------------------
class Doomed(Exception):
    """A run stopped once too many requests had missed a target for it to meet the sweep's."""

    def __init__(self, at_s: float, missed: int, n: int):
        super().__init__(f"{missed} of {n} requests missed a target by t={at_s:.1f} s")
        self.at_s, self.missed, self.n = at_s, missed, n


class Watch:
    """Counts the requests of a run that have surely missed a target, as it runs, and
    raises Doomed once so many have that the share meeting both (pysim.traffic.slo.summarize's
    rule, in the same floating-point operations) must fall below `target`.

    A request has surely missed when its first token came later than the TTFT target,
    when the clock passed its TTFT target without a first token (every step that starts
    before the clock has run, so a first token still to come ends after it), when it
    finished with a TPOT over the target, or when it is still running at a time by which
    its TPOT would be over the target even if it finished then. It only reads the run: a run it lets finish is
    the same as one without it.
    """

    def __init__(self, reqs: list, slo_ttft_ms: float, slo_tpot_ms: float, target: float,
                 late: list[int] = ()):
        self.sent = [r.arrival_s for r in reqs]
        assert all(a <= b for a, b in zip(self.sent, self.sent[1:])), "requests in arrival order"
        self.out = [r.max_tokens for r in reqs]
        self.ttft_limit, self.tpot_limit = slo_ttft_ms / 1000, slo_tpot_ms / 1000
        self.n, self.target = len(reqs), target
        self.first_at = [math.nan] * self.n
        self.done = [False] * self.n
        self.tpot_due: list = []  # (when its TPOT target is used up, request), a heap
        self.missed = [False] * self.n
        self.count = 0
        self.next = 0  # requests before it have been checked against their TTFT deadline
        for i in late:  # surely late whatever the schedule (surely_late)
            self._miss(i, self.sent[i])

    def _miss(self, i: int, t: float) -> None:
        if not self.missed[i]:
            self.missed[i] = True
            self.count += 1
            if (self.n - self.count) / self.n < self.target:
                raise Doomed(t, self.count, self.n)

    def first(self, i: int, t: float) -> None:
        self.first_at[i] = t
        if not self.ttft_limit >= t - self.sent[i]:
            self._miss(i, t)
        elif self.out[i] > 1:  # its TPOT is over the target if it is still running past this
            heapq.heappush(self.tpot_due, (t + self.tpot_limit * (self.out[i] - 1), i))

    def finish(self, i: int, t: float) -> None:
        self.done[i] = True
        tp = slo.request_tpot(t - self.sent[i], self.first_at[i] - self.sent[i], self.out[i])
        if not self.tpot_limit >= (tp if tp is not None else 0.0):
            self._miss(i, t)

    def by(self, t: float) -> None:
        """Every step starting before t has run: a request still without a first token
        whose TTFT target lies before t has missed it."""
        sent, first_at, limit = self.sent, self.first_at, self.ttft_limit
        j = self.next
        while j < self.n and t - sent[j] > limit:
            if first_at[j] != first_at[j]:  # nan: no first token yet, and it ends after t
                self._miss(j, t)
            j += 1
        self.next = j

    def all_by(self, t: float) -> None:
        """Every step of every replica starting before t has run: a request still running
        whose TPOT would be over its target even if it finished at t has missed it (its
        TPOT is computed below as pysim.traffic.slo does, so rounding cannot make it pass)."""
        due, sent, first_at, out, limit = self.tpot_due, self.sent, self.first_at, self.out, self.tpot_limit
        while due and due[0][0] < t:
            _, i = heapq.heappop(due)
            if not self.done[i] and ((t - sent[i]) - (first_at[i] - sent[i])) / (out[i] - 1) > limit:
                self._miss(i, t)


# --- one run -----------------------------------------------------------------------------
@dataclass
class ClusterResult:
    sent: list[float]
    first_token: list[float]
    finished: list[float]
    output_tokens: list[int]
    prompt_tokens: list[int]
    replica_of: list[int]  # the replica each request was routed to (its prefill replica)
    decode_of: list[int]  # its decode replica (-1 when colocated, or a one-token answer)
    servers: list[Server]
    roles: list[str]  # "replica", or "prefill" / "decode"
    transfer_s: list[float]  # time its KV spent on the link, waiting included (disaggregated)
    reasons: dict


def block_size(config: ClusterConfig) -> int:
    """Every replica's KV block, vLLM's default on the GPU (at vllm_defaults.LATEST)."""
    return vllm_defaults.defaults(GPUS[config.gpu]).block_size


def window(config: ClusterConfig) -> list:
    trace = traces.load(config.trace)
    return traces.requests(trace, config.window_start_min, config.window_minutes, config.rate_scale)


def simulate(config: ClusterConfig, reqs: list | None = None, *, link_bytes_per_s: float | None = None,
             fast: bool = True, watch: "Watch | None" = None) -> ClusterResult:
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

        servers = [Server(ecfg, stm, fast=fast, on_first=on_first, on_finish=on_finish)
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

        front = [Server(ecfg, stm, fast=fast, on_first=on_prefilled) for _ in range(config.prefill_replicas)]
        back = [Server(ecfg, stm, fast=fast, on_finish=on_decoded) for _ in range(config.decode_replicas)]
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


# --- what the reader sees ----------------------------------------------------------------
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


def replica_rows(result: ClusterResult) -> list[dict]:
    """One row per replica: its role, requests, prefix hits, preemptions, busiest moments."""
    rows = []
    for k, s in enumerate(result.servers):
        e = s.engine
        role = result.roles[k]
        if role == "decode":
            served = sum(1 for d in result.decode_of if d == k - result.roles.index("decode"))
        else:
            served = sum(1 for r in result.replica_of if r == k)
        rows.append({"replica": k, "role": role, "requests": served,
                     "prefix_cache_queries": e.prefix_cache_queries, "prefix_cache_hits": e.prefix_cache_hits,
                     "hit_rate": e.prefix_cache_hits / e.prefix_cache_queries if e.prefix_cache_queries else 0.0,
                     "num_preemptions": e.num_preemptions, "num_steps": e.num_steps,
                     "peak_running": max(s.running, default=0), "peak_waiting": max(s.waiting, default=0),
                     "peak_kv_cache_usage_perc": round(max(s.usage, default=0.0), 4)})
    return rows


def imbalance(rows: list[dict], role: str) -> float:
    """Requests of the busiest replica of a role over the mean: 1 is perfectly even."""
    counts = [r["requests"] for r in rows if r["role"] == role]
    mean = sum(counts) / len(counts)
    return max(counts) / mean if mean else 1.0


def series(result: ClusterResult, t0: float, span: float) -> dict:
    """Per replica, in NUM_BINS bins: requests running, waiting, KV usage (the last value
    in each bin, as a scrape sees it), and its prefix-cache hit rate so far (hits over
    queries since the start, as the two counters read at the bin's end)."""
    width = max(span, 1e-9) / NUM_BINS
    out = []
    for s in result.servers:
        running, waiting, usage = [0] * NUM_BINS, [0] * NUM_BINS, [0.0] * NUM_BINS
        queries, hits = [0] * NUM_BINS, [0] * NUM_BINS
        seen = [False] * NUM_BINS
        for k, end in enumerate(s.seg_end):
            b = min(NUM_BINS - 1, max(0, int((end - t0) / width)))
            running[b], waiting[b], usage[b] = s.running[k], s.waiting[k], s.usage[k]
            queries[b], hits[b] = s.cache_queries[k], s.cache_hits[k]
            seen[b] = True
        for b in range(1, NUM_BINS):  # a bin with no step ending in it keeps the last value
            if not seen[b]:
                running[b], waiting[b], usage[b] = running[b - 1], waiting[b - 1], usage[b - 1]
                queries[b], hits[b] = queries[b - 1], hits[b - 1]
        out.append({"num_requests_running": running, "num_requests_waiting": waiting,
                    "kv_cache_usage_perc": [round(u, 4) for u in usage],
                    "hit_rate": [round(h / q, 4) if q else 0.0 for h, q in zip(hits, queries)]})
    return {"t_s": [round((b + 1) * width, 3) for b in range(NUM_BINS)], "replicas": out}


def cluster_view(config: ClusterConfig, actions: list) -> dict:
    assert not actions
    reqs = window(config)
    result = simulate(config, reqs)
    m = metrics(config, result)
    rows = replica_rows(result)
    t0 = min(result.sent)
    roles = sorted(set(result.roles))
    pc = m["prefix_cache"]
    layout = (f"{config.replicas} replica{'s' * (config.replicas > 1)}" if config.layout == "colocated" else
              f"{config.prefill_replicas} prefill + {config.decode_replicas} decode replicas, KV over "
              f"{LINKS[config.kv_link][0]}")
    sentence = (f"{len(reqs):,} requests of the {traces.TRACES[config.trace]} trace "
                f"({config.window_minutes} min from minute {config.window_start_min}, rate x{config.rate_scale:g}) "
                f"on {layout}, {GPUS[config.gpu].label}, {MODELS[config.model].name}, routed "
                f"{config.router.replace('_', ' ')}: {m['slo_attainment']:.1%} meet both targets, "
                f"{m['goodput_per_gpu']:.3f} good requests/s per GPU; prefix-cache hit rate {pc['hit_rate']:.1%}.")
    return {
        "config": dict(config.__dict__),
        "sentence": sentence,
        "note": NOTE,
        "gpus": m["gpus"],
        "summary": {k: m[k] for k in ("completed", "good", "duration_s", "request_throughput",
                                      "request_goodput", "slo_attainment", "output_throughput",
                                      "goodput_per_gpu")} | {"ttft_ceiling": ttft_ceiling(config, reqs)},
        "prefix_cache": pc | {"metric_names": {"queries": "vllm:prefix_cache_queries",
                                               "hits": "vllm:prefix_cache_hits"}},
        "ttft_ms": m["ttft_ms"],
        "tpot_ms": m["tpot_ms"],
        "replicas": rows,
        "imbalance": {role: imbalance(rows, role) for role in roles},
        "router_reasons": result.reasons if config.router == "cache_aware" else None,
        "transfer_ms": slo.distribution_ms(sorted(result.transfer_s)) if config.layout == "disaggregated" else None,
        "series": series(result, t0, max(result.finished) - t0),
        "slo": {"ttft_ms": config.slo_ttft_ms, "tpot_ms": config.slo_tpot_ms},
        "sweep_gpus": list(SWEEP_GPUS),
        "sweep_sentence": SWEEP_SENTENCE,  # what the page's sweep does, and when it stops
        "sweep_caption": SWEEP_CAPTION,
    }


NOTE = ("A model: every replica is the lab's engine (vLLM 0.33's scheduler, checked against "
        "recordings) on the lab's step-time model, whose error against real vLLM runs the lab "
        "page states; the router and the KV transfer are simplified as the page says.")


# --- the sweep over GPU counts -------------------------------------------------------------
def first_token_floors(config: ClusterConfig, reqs: list) -> list[float]:
    """Each request's time to first token alone on an idle replica, with every prefix
    seen earlier in the window still cached (as `bound_hit_rate` counts it): its prompt
    computed in chunks of the token budget, each a step of the step-time model. No
    cluster of these GPUs can give it a first token sooner."""
    stm = step_time_model(GPUS[config.gpu], MODELS[config.model], DEFAULTS[config.gpu])
    budget = config.max_num_batched_tokens
    out = []
    for r, done in seen_before(reqs, block_size(config)):
        t = 0.0
        while done < r.num_prompt_tokens:
            n = min(budget, r.num_prompt_tokens - done)
            c = done + n  # KV it holds after the chunk; the chunk's pairs as the engine counts them
            t += stm.seconds(n, 1, c, n * c - n * (n - 1) // 2)
            done = c
        out.append(t)
    return out


def surely_late(config: ClusterConfig, reqs: list) -> list[int]:
    """The requests no cluster of these GPUs can give a first token within the TTFT
    target, by a bound that holds for every schedule, so the sweep counts them as missed
    before it runs anything (Watch). A request must compute at least the prompt tokens
    no earlier request had (`seen_before`: N tokens), in at least ceil(N / budget) steps;
    each step costs at least the step overhead, one request's overhead and a read of the
    weights (the step-time model's memory side, with no KV), and all of them together at
    least the FLOPs of those N tokens and their attention pairs (the compute side). The
    step-time model's max(memory, compute) per step is at least either sum's share, so
    the first token comes no sooner than
        steps x (step overhead + request overhead) + max(steps x weights read, FLOPs).
    Looser than `first_token_floors` (which times one schedule), but a true bound."""
    stm = step_time_model(GPUS[config.gpu], MODELS[config.model], DEFAULTS[config.gpu])
    c = stm.coefficients
    budget = config.max_num_batched_tokens
    per_step = c.step_overhead_ms / 1e3 + c.request_overhead_us / 1e6
    weights = stm.roofline(0, 0, 0, 0)[0] / c.memory_efficiency
    limit = config.slo_ttft_ms / 1000 * (1 + 1e-9) + 1e-9  # a margin for rounding: "surely"
    out = []
    for i, (r, cached) in enumerate(seen_before(reqs, block_size(config))):
        n, p = r.num_prompt_tokens - cached, r.num_prompt_tokens
        steps = -(-n // budget)
        flops = stm.roofline(n, 0, n * p - n * (n - 1) // 2, 1)[1] / c.compute_efficiency
        if steps * per_step + max(steps * weights, flops) > limit:
            out.append(i)
    return out


def ttft_ceiling(config: ClusterConfig, reqs: list) -> float:
    """The share of requests that could meet the TTFT target at all (`first_token_floors`)."""
    limit = config.slo_ttft_ms / 1000
    return sum(1 for t in first_token_floors(config, reqs) if t <= limit) / len(reqs)


def ceiling_sentence(config: ClusterConfig, ceiling: float) -> str | None:
    if ceiling >= ATTAINMENT_TARGET:
        return None
    return (f"No number of GPUs can meet the target: even alone on an idle {GPUS[config.gpu].label}, with every "
            f"earlier prefix of the window cached, only {ceiling:.1%} of these requests get their first "
            f"token within {config.slo_ttft_ms:,.0f} ms, short of the {ATTAINMENT_TARGET:.0%} the sweep asks "
            f"for: their prompts are too long for one GPU (a replica here has no tensor parallelism).")


def ceiling_band(config: ClusterConfig, reqs: list) -> dict:
    """The TTFT ceiling with every step time at either end of the GPU's error band
    (pysim.timing.errorband; a floor is a sum of step times, so it scales exactly), and with
    the compute efficiency alone at the ends of the band (the prefills that set the
    floors are compute-bound: the ceiling hinges on that one coefficient)."""
    band = errorband.FACTORS[config.gpu]
    limit = config.slo_ttft_ms / 1000
    floors = first_token_floors(config, reqs)
    out = {"band_fast": band.fast, "band_slow": band.slow,
           "compute_efficiency": DEFAULTS[config.gpu].compute_efficiency}
    for end in ("fast", "slow"):
        s = getattr(band, end)
        out[f"ttft_ceiling_{end}_pct"] = 100 * sum(1 for t in floors if t * s <= limit) / len(reqs)
    return out


def attainment_band(config: ClusterConfig, key: str) -> dict:
    """`config`'s attainment with every step time at either end of the error band: the
    window played at rate x s against targets / s is the real server, s times slower."""
    band = errorband.FACTORS[config.gpu]
    out = {}
    for end in ("fast", "slow"):
        s = getattr(band, end)
        c = replace(config, rate_scale=config.rate_scale * s, slo_ttft_ms=config.slo_ttft_ms / s,
                    slo_tpot_ms=config.slo_tpot_ms / s)
        out[f"{key}_attainment_{end}_pct"] = 100 * metrics(c, simulate(c, window(c)))["slo_attainment"]
    return out


DECODE_BATCH = 32  # the batch the split's rule of thumb prices a decode step at


def split(config: ClusterConfig, gpus: int, reqs: list) -> tuple[int, int]:
    """Prefill and decode replicas for `gpus` GPUs, in proportion to the GPU time each
    side needs for the window: every prompt prefilled alone in one step, and every
    answer token decoded in a batch of DECODE_BATCH requests at the window's mean
    context, both timed by the step model. A rule of thumb, not a search: DistServe
    searches placements by simulation instead."""
    gpu, model = GPUS[config.gpu], MODELS[config.model]
    stm = step_time_model(gpu, model, DEFAULTS[config.gpu])
    prefill = math.fsum(stm.seconds(r.num_prompt_tokens, 1, r.num_prompt_tokens,
                                    r.num_prompt_tokens * (r.num_prompt_tokens + 1) // 2) for r in reqs)
    context = sum(r.num_prompt_tokens + r.max_tokens // 2 for r in reqs) // len(reqs)
    b = DECODE_BATCH
    decode = stm.seconds(b, b, b * context, b * context) / b * sum(r.max_tokens - 1 for r in reqs)
    p = min(max(round(gpus * prefill / (prefill + decode)), 1), gpus - 1)
    return p, gpus - p


LAYOUTS = ("colocated", "disaggregated")


def _check_points(value):
    """The sweep's points so far, as cluster_sweep returned them: only what the answer reads."""
    if not isinstance(value, list) or len(value) >= len(SWEEP_GPUS):
        raise ConfigError("swept", f"expected a list of fewer than {len(SWEEP_GPUS)} sweep points")
    out = []
    for k, p in enumerate(value):
        if not isinstance(p, dict) or p.get("gpus") != SWEEP_GPUS[k]:
            raise ConfigError("swept", f"point {k + 1}: expected an object for {SWEEP_GPUS[k]} GPUs, "
                                              "the sweep's counts in order")
        point = {"gpus": p["gpus"]}
        for layout in LAYOUTS:
            q = p.get(layout)
            if q is None:
                point[layout] = None
                continue
            ok = isinstance(q, dict) and isinstance(q.get("meets"), bool)
            for key in ("slo_attainment", "attainment_at_most"):
                x = q.get(key) if ok else None
                ok = ok and (x is None or (not isinstance(x, bool) and isinstance(x, (int, float)) and 0 <= x <= 1))
            if not ok:
                raise ConfigError("swept", f"point {k + 1}: '{layout}' should hold 'meets' and an "
                                                  "attainment from 0 to 1")
            point[layout] = {"meets": q["meets"], "slo_attainment": q.get("slo_attainment"),
                             "attainment_at_most": q.get("attainment_at_most"),
                             "pass_ttft_ms": q.get("pass_ttft_ms") if isinstance(q.get("pass_ttft_ms"), (int, float)) else None,
                             "prefill_replicas": q.get("prefill_replicas"), "decode_replicas": q.get("decode_replicas")}
        out.append(point)
    return out


@dataclass(frozen=True)
class SweepConfig(ClusterConfig):
    """The cluster's settings and what the sweep asks of one call: a GPU count (or the
    whole sweep), the layouts still without an answer, and the points so far."""

    gpus: int = bounded(0, 0, MAX_GPUS, "GPUs in the cluster for one count of the sweep; 0 runs "
                        "the whole sweep", label="GPUs", unit="GPUs")
    sweep_layouts: str = choice("both", ("both",) + LAYOUTS, "the layouts this count runs (the sweep "
                                "drops a layout once a count meets the target)", label="Sweep layouts")
    sweep_exact: bool = flag(False, "run every request to its end, even once the target is surely "
                             "missed (the sweep's largest count)", label="Exact")
    swept: list = data(list, "the sweep's points so far, in its order (as cluster_sweep "
                              "returned them)", _check_points, label="Counts swept")

    def check(self) -> None:
        if self.gpus == 1:
            raise ConfigError("gpus", "got 1; expected 0 (the whole sweep) or a count from 2 to "
                                      f"{MAX_GPUS} (one prefill and one decode replica at least)")
        ClusterConfig.check(self)


SweepConfig.UNGROUPED = ("gpus", "sweep_layouts", "sweep_exact")  # the page's sweep sets them on each call


def pass_ttft_ms(config: ClusterConfig, result: ClusterResult) -> float | None:
    """The lowest TTFT target, in whole ms, at which this run would have met the sweep's
    target (the same run: targets do not change a schedule), or None if the TPOT target
    alone keeps too many requests out."""
    n = len(result.sent)
    need = next(k for k in range(n + 1) if k / n >= ATTAINMENT_TARGET)
    tpot_limit = config.slo_tpot_ms / 1000
    ttfts = sorted(f - s for f, s, d, o in zip(result.first_token, result.sent, result.finished,
                                                result.output_tokens)
                   if tpot_limit >= (slo.request_tpot(d - s, f - s, o) or 0.0))
    if len(ttfts) < need:
        return None
    if need == 0:
        return 0.0
    ms = math.ceil(ttfts[need - 1] * 1000)
    while ms / 1000 < ttfts[need - 1]:  # as slo.summarize compares: limit >= ttft
        ms += 1
    return float(ms)


def sweep_point(config: ClusterConfig, reqs: list, gpus: int, layouts=LAYOUTS, exact: bool = False,
                late: list | None = None) -> dict:
    """One GPU count of the sweep: each layout in `layouts` at `gpus` GPUs. Unless `exact`,
    a run stops once it is sure to miss the target (Watch), and says when and how sure."""
    ceiling = ttft_ceiling(config, reqs)
    late = surely_late(config, reqs) if late is None else late
    out = {"gpus": gpus, "target": ATTAINMENT_TARGET, "ttft_ceiling": ceiling,
           "ceiling_sentence": ceiling_sentence(config, ceiling), "surely_late": len(late)}
    p, d = split(config, gpus, reqs)
    runs = {"colocated": replace(config, layout="colocated", replicas=gpus),
            "disaggregated": replace(config, layout="disaggregated", prefill_replicas=p, decode_replicas=d)}
    for key in LAYOUTS:
        if key not in layouts:
            out[key] = None
            continue
        c = runs[key]
        try:  # the requests surely late alone may doom the count: then nothing is replayed
            watch = None if exact else Watch(reqs, config.slo_ttft_ms, config.slo_tpot_ms, ATTAINMENT_TARGET, late)
            r = simulate(c, reqs, watch=watch)
        except Doomed as stop:
            out[key] = {"slo_attainment": None, "goodput_per_gpu": None, "request_goodput": None,
                        "hit_rate": None, "ttft_p90_ms": None, "tpot_p90_ms": None, "meets": False,
                        "attainment_at_most": (stop.n - stop.missed) / stop.n, "pass_ttft_ms": None,
                        "stopped": {"at_s": stop.at_s - reqs[0].arrival_s, "missed": stop.missed,
                                    "window_s": reqs[-1].arrival_s - reqs[0].arrival_s,
                                    "replayed": stop.missed > len(late)}}
            continue
        m = metrics(c, r)
        out[key] = {"slo_attainment": m["slo_attainment"], "goodput_per_gpu": m["goodput_per_gpu"],
                    "request_goodput": m["request_goodput"], "hit_rate": m["prefix_cache"]["hit_rate"],
                    "ttft_p90_ms": m["ttft_ms"]["p90"], "tpot_p90_ms": m["tpot_ms"]["p90"],
                    "meets": m["slo_attainment"] >= ATTAINMENT_TARGET,
                    "attainment_at_most": m["slo_attainment"], "pass_ttft_ms": pass_ttft_ms(config, r),
                    "stopped": None}
    if out["disaggregated"] is not None:
        out["disaggregated"] |= {"prefill_replicas": p, "decode_replicas": d}
    return out


def below(x: float) -> str:
    """A share that is an upper bound, rounded down to 0.1% (so 89.98% is not "90.0%")."""
    return f"{math.floor(x * 1000 + 1e-9) / 10:.1f}%"


def sweep_answer(config: ClusterConfig, points: list[dict]) -> dict:
    """What the points of the sweep so far (SWEEP_GPUS in order) say: for each layout the
    first count that meets the target, whether the sweep is done, what it runs next,
    and the sentence the page and the command line print."""
    first = {k: next((p for p in points if p[k] is not None and p[k]["meets"]), None) for k in LAYOUTS}
    pending = tuple(k for k in LAYOUTS if first[k] is None)
    done = len(points)
    complete = not pending or done == len(SWEEP_GPUS)
    nxt = None
    if not complete:
        nxt = {"gpus": SWEEP_GPUS[done], "sweep_layouts": pending[0] if len(pending) == 1 else "both",
               "sweep_exact": done == len(SWEEP_GPUS) - 1, "index": done}
    words = []
    for k in LAYOUTS:
        p = first[k]
        if p is not None:
            q = p[k]
            split_ = (f" ({q['prefill_replicas']} prefill + {q['decode_replicas']} decode)"
                      if k == "disaggregated" else "")
            words.append(f"{p['gpus']} {k}{split_}, {q['slo_attainment']:.1%} meeting both targets")
        elif not complete:
            words.append(f"{k}: none of the {done} count{'s' * (done != 1)} so far")
        else:
            last = points[-1][k]
            what = f"none of {SWEEP_GPUS[0]} to {SWEEP_GPUS[-1]} GPUs {k}"
            if last is not None and last["slo_attainment"] is not None:
                what += (f" (at {SWEEP_GPUS[-1]}, the most swept, {last['slo_attainment']:.1%} meet both "
                         "targets; ")
                what += (f"a TTFT target of {last['pass_ttft_ms']:,.0f} ms would let "
                         f"{ATTAINMENT_TARGET:.0%} pass there)" if last["pass_ttft_ms"] is not None else
                         f"the TPOT target alone keeps more than {1 - ATTAINMENT_TARGET:.0%} out)")
            elif last is not None:
                what += f" (at {SWEEP_GPUS[-1]}, at most {below(last['attainment_at_most'])} could meet both targets)"
            words.append(what)
    sentence = (f"The fewest GPUs that meet the target{'' if complete else ' (so far)'}: "
                + "; ".join(words) + ".")
    return {"complete": complete, "next": nxt, "done": done, "of": len(SWEEP_GPUS),
            "colocated": first["colocated"]["gpus"] if first["colocated"] else None,
            "disaggregated": first["disaggregated"]["gpus"] if first["disaggregated"] else None,
            "sentence": sentence}


def fewest_gpus(config: ClusterConfig, on_point=None) -> dict:
    """The page's sweep in one call: SWEEP_GPUS in order, each layout until a count meets
    the target, runs stopped once surely short (the largest count run exactly), as the
    page runs it one call per count. `on_point(point, answer)` sees each as it comes."""
    reqs = window(config)
    late = surely_late(config, reqs)
    points: list = []
    nxt = {"gpus": SWEEP_GPUS[0], "sweep_layouts": "both", "sweep_exact": len(SWEEP_GPUS) == 1}
    while nxt is not None:
        layouts = LAYOUTS if nxt["sweep_layouts"] == "both" else (nxt["sweep_layouts"],)
        points.append(sweep_point(config, reqs, nxt["gpus"], layouts, nxt["sweep_exact"], late))
        answer = sweep_answer(config, points)
        if on_point:
            on_point(points[-1], answer)
        nxt = answer["next"]
    return {"points": points, "answer": answer}


def sweep_view(config: SweepConfig, actions: list) -> dict:
    """One GPU count of the sweep (`gpus`), its layouts (`sweep_layouts`), and the answer
    so far with `swept`; or, with gpus 0, the whole sweep (`fewest_gpus`)."""
    assert not actions
    base = ClusterConfig(**{k: getattr(config, k) for k in ClusterConfig.__dataclass_fields__})
    if config.gpus == 0:
        return {"config": to_mapping(config)} | fewest_gpus(base)
    layouts = LAYOUTS if config.sweep_layouts == "both" else (config.sweep_layouts,)
    point = sweep_point(base, window(base), config.gpus, layouts, config.sweep_exact)
    known = config.swept if config.gpus == SWEEP_GPUS[len(config.swept)] else None
    answer = sweep_answer(base, known + [point]) if known is not None else None
    return point | {"answer": answer}


def _point_text(p: dict) -> str:
    parts = []
    for k in LAYOUTS:
        q = p[k]
        name = k if k == "colocated" else f"disaggregated {q['prefill_replicas']}P+{q['decode_replicas']}D" if q else k
        if q is None:
            parts.append(f"{k} not run (met at fewer GPUs)")
        elif q["stopped"]:
            st = q["stopped"]
            when = (f"after {st['at_s']:.0f} s of the {st['window_s']:.0f} s window" if st["replayed"]
                    else "before any replay")
            parts.append(f"{name} misses: {st['missed']} requests surely late {when}, "
                         f"at most {below(q['attainment_at_most'])} meet both targets")
        else:
            parts.append(f"{name} {q['slo_attainment']:.1%} meet the SLOs, "
                         f"{q['goodput_per_gpu']:.3f} good req/s per GPU")
    return f"{p['gpus']} GPUs: " + "; ".join(parts)


def text(view: dict) -> str:
    if "points" in view:  # the whole sweep
        lines = [_point_text(p) for p in view["points"]]
        return "\n".join(lines + [view["answer"]["sentence"]])
    if "colocated" in view:  # a sweep point
        return _point_text(view)
    lines = [view["sentence"], ""]
    s = view["summary"]
    lines.append(f"goodput {s['request_goodput']:.3f} req/s ({s['goodput_per_gpu']:.3f} per GPU), "
                 f"throughput {s['request_throughput']:.3f} req/s, SLO attainment {s['slo_attainment']:.1%}")
    lines.append(f"TTFT p50 {view['ttft_ms']['p50']:.0f} ms, p90 {view['ttft_ms']['p90']:.0f} ms; "
                 f"TPOT p50 {view['tpot_ms']['p50']:.1f} ms, p90 {view['tpot_ms']['p90']:.1f} ms")
    lines.append("")
    lines.append(f"{'replica':>7} {'role':>8} {'requests':>8} {'hit rate':>8} {'preempt':>7} {'peak KV':>7}")
    for r in view["replicas"]:
        lines.append(f"{r['replica']:>7} {r['role']:>8} {r['requests']:>8} {r['hit_rate']:>8.1%} "
                     f"{r['num_preemptions']:>7} {r['peak_kv_cache_usage_perc']:>7.0%}")
    return "\n".join(lines)




# --- the page's figures ----------------------------------------------------------------------
def trace_sharing(name: str) -> dict:
    """How much of the trace's prompts repeat blocks seen before (the whole trace, in order)."""
    t = traces.load(name)
    seen: set = set()
    total = repeated = 0
    for ids in t.hash_ids:
        total += len(ids)
        repeated += sum(1 for k in ids if k in seen)
        seen.update(ids)
    return {"requests": len(t), "minutes": t.span_minutes, "blocks": total,
            "blocks_seen_before_pct": 100 * repeated / total, "distinct_blocks": len(seen)}


def bound_hit_rate(reqs: list, block_size: int) -> float:
    """The hit rate of one cache that never forgets, over the requests in order: each
    prompt hits the blocks of its longest prefix seen before, in whole `block_size`
    blocks, and always computes its last token, as vLLM's lookup does. No cluster of
    finite pools can beat it on these requests."""
    queried = hit = 0
    for r, tokens in seen_before(reqs, block_size):
        hit += tokens
        queried += r.num_prompt_tokens
    return hit / queried if queried else 0.0


def seen_before(reqs: list, block_size: int):
    """(request, tokens of its prompt an earlier request already had), in order: its
    longest run of leading block ids seen before, in whole `block_size` blocks, and never
    its last token (vLLM always computes that one)."""
    seen: set = set()
    for r in reqs:
        m = 0
        for k in r.hash_ids:  # ids name a prefix: the shared run ends at the first unseen one
            if k not in seen:
                break
            m += 1
        seen.update(r.hash_ids)
        yield r, min(m * traces.TRACE_BLOCK, r.num_prompt_tokens - 1) // block_size * block_size


def figures() -> dict:
    """The numbers the cluster page quotes, computed at build time."""
    base = ClusterConfig()
    reqs = window(base)
    out = {f"trace_{k}": v for k, v in trace_sharing(base.trace).items()}
    out |= {"window_requests": len(reqs), "window_minutes": base.window_minutes,
            "window_start_min": base.window_start_min,
            "window_rate": len(reqs) / (base.window_minutes * 60),
            "window_bound_hit_pct": 100 * bound_hit_rate(reqs, block_size(base)),
            "slo_ttft_ms": base.slo_ttft_ms, "slo_tpot_ms": base.slo_tpot_ms,
            "replicas": base.replicas, "cache_threshold": base.cache_threshold,
            "balance_abs_threshold": base.balance_abs_threshold,
            "balance_rel_threshold": base.balance_rel_threshold}
    for router in ROUTERS:
        c = replace(base, router=router)
        m = metrics(c, simulate(c, reqs))
        out[f"{router}_hit_pct"] = 100 * m["prefix_cache"]["hit_rate"]
        out[f"{router}_attainment_pct"] = 100 * m["slo_attainment"]
        out[f"{router}_goodput_per_gpu"] = m["goodput_per_gpu"]
        out[f"{router}_ttft_p90_ms"] = m["ttft_ms"]["p90"]
    out["ttft_ceiling_pct"] = 100 * ttft_ceiling(base, reqs)
    out |= ceiling_band(base, reqs)
    for g in (12, 16):  # the sweep's last counts, colocated: how close they come
        c = replace(base, replicas=g)
        out[f"colocated_{g}_attainment_pct"] = 100 * metrics(c, simulate(c, reqs))["slo_attainment"]
        out |= attainment_band(c, f"colocated_{g}")
    one = replace(base, replicas=1)
    out["one_replica_hit_pct"] = 100 * metrics(one, simulate(one, reqs))["prefix_cache"]["hit_rate"]
    for link in ("infiniband", "pcie"):
        c = replace(base, layout="disaggregated", kv_link=link)
        r = simulate(c, reqs)
        m = metrics(c, r)
        out[f"disagg_{link}_attainment_pct"] = 100 * m["slo_attainment"]
        out[f"disagg_{link}_goodput_per_gpu"] = m["goodput_per_gpu"]
        out[f"disagg_{link}_hit_pct"] = 100 * m["prefix_cache"]["hit_rate"]
        out[f"disagg_{link}_transfer_p50_ms"] = slo.distribution_ms(sorted(r.transfer_s))["p50"]
    return out


SIMULATION = Simulation("cluster", ClusterConfig, cluster_view, text=text, figures=figures,
                        data_files=traces.site_files)
# One GPU count of the page's sweep (do colocated replicas and a prefill/decode split meet
# the targets at `gpus` GPUs?): another question, another view, so a simulation of its
# own, which the page calls once per count to show progress and stop between them.
SIMULATIONS = (
    SIMULATION,
    Simulation("cluster_sweep", SweepConfig, sweep_view, text=text, data_files=traces.site_files),
)
