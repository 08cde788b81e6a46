"""The router in front of the replicas: round robin, least loaded, or SGLang's cache-aware.

Load is what the router counts itself (requests sent and not seen finish); the
cache-aware record is its own, every prompt it sent to each replica, as in
sglang-router 0.3.2 (`src/policies/cache_aware.rs`).
"""

from __future__ import annotations

from pysim.engine.replay import Replica
from pysim.sims.cluster.config import BALANCE_ABS_THRESHOLD, BALANCE_REL_THRESHOLD, CACHE_THRESHOLD, ROUTERS
from pysim.traffic import traces


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

    def choose(self, servers: list[Replica], hash_ids: tuple, num_prompt_tokens: int) -> int:
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


def least_loaded(servers: list[Replica]) -> int:
    """The fewest outstanding requests; ties to the lower KV usage, then the lower index."""
    return min(range(len(servers)), key=lambda i: (servers[i].outstanding(), servers[i].kv_usage(), i))
