"""The built-in scheduling policies, each written in the interface a reader writes
(pysim.policy.api): `order(request, engine)` gives a sort key, smallest admitted first;
`victim(running, engine)`, where given, picks whom to preempt (otherwise the last of
`running`, vLLM's FCFS rule). Ties between equal keys go by add order.

Sources, read for this file:
- fcfs, priority: vLLM 0.33, vllm/v1/core/sched/request_queue.py (`FCFSRequestQueue`,
  `PriorityRequestQueue`: a heap on (priority, arrival_time)) and the victim in
  vllm/v1/core/sched/scheduler.py, `Scheduler.schedule` (FCFS: `self.running.pop()`;
  PRIORITY: `max(self.running, key=lambda r: (r.priority, r.arrival_time))`).
- lpm, sjf, aging: SGLang, python/sglang/srt/managers/schedule_policy.py (read at commit
  00550cd1), `SchedulePolicy._sort_by_longest_prefix` (lpm),
  `_sort_by_shortest_prefill` (the `shortest-prefill-first` policy, PR #40024) and
  `_sort_by_hrrn` (PR #32911). Left out: SGLang's in-batch deduplication (a request
  whose prefix another waiting request shares is moved to the back), its switch to FCFS
  when more than 128 requests wait (lpm, hrrn), and its retraction rule for victims
  (`ScheduleBatch.retract_decode`); pysim keeps vLLM's victim.
- vtc: Sheng et al., "Fairness in Serving Large Language Models", OSDI 2024, section 4
  (Algorithm 2, the Virtual Token Counter), with input tokens weighted 1 and output
  tokens 2 (section 5's setting); the counter lift for a tenant that was idle is left
  out: a tenant is served by what it received, whenever.
"""

from __future__ import annotations

import inspect

from pysim.policy.api import Policy


# --- vLLM ------------------------------------------------------------------------------
def fcfs_order(request, engine):
    """First come, first served: the earliest arrival first (vLLM's default)."""
    return request.arrival_time


def fcfs_victim(running, engine):
    """The most recently admitted running request."""
    return running[-1]


def priority_order(request, engine):
    """Lower priority values first, then the earliest arrival (vLLM's heap)."""
    return (request.priority, request.arrival_time)


def priority_victim(running, engine):
    """The running request that sorts last: largest (priority, arrival_time), the
    arrival index standing for vLLM's arrival timestamps, which never tie."""
    return max(running, key=lambda r: (r.priority, r.arrival_time, r.arrival_index))


# --- SGLang ----------------------------------------------------------------------------
def lpm_order(request, engine):
    """Longest prefix match: the most prompt tokens already in the prefix cache first."""
    return -request.num_cached_tokens


def uncached(request):
    """The prefill work a request still needs: its tokens the cache does not hold (at least 1)."""
    return max(1, request.num_prompt_tokens + request.num_output_tokens - request.num_cached_tokens)


def sjf_order(request, engine):
    """Shortest uncached prefill first (SGLang's shortest-prefill-first)."""
    return uncached(request)


def aging_order(request, engine):
    """Highest response ratio next, (waited + service) / service, with the service time
    counted in uncached tokens: ordering by waited / uncached gives the same order at
    any prefill speed. Short prefills go first, and every wait raises a request's
    ratio until it goes first too (SGLang's hrrn counts the wait in tokens the server
    prefilled meanwhile; here it is seconds)."""
    return -request.waited / uncached(request)


# --- Sheng et al., OSDI 2024 -----------------------------------------------------------
INPUT_WEIGHT, OUTPUT_WEIGHT = 1, 2


def vtc_order(request, engine):
    """Virtual Token Counter: the tenant served the fewest weighted tokens so far goes
    first; within a tenant, the earliest arrival."""
    tenant = request.tenant
    served = (INPUT_WEIGHT * engine.served_input_tokens.get(tenant, 0)
              + OUTPUT_WEIGHT * engine.served_output_tokens.get(tenant, 0))
    return (served, request.arrival_time)


BUILTINS = {
    "fcfs": Policy("fcfs", fcfs_order, fcfs_victim),
    "priority": Policy("priority", priority_order, priority_victim),
    "lpm": Policy("lpm", lpm_order),
    "sjf": Policy("sjf", sjf_order),
    "aging": Policy("aging", aging_order),
    "vtc": Policy("vtc", vtc_order),
}
NAMES = tuple(BUILTINS)
DESCRIPTIONS = {
    "fcfs": "vLLM's default: arrival order; preempts the newest running request",
    "priority": "vLLM's --scheduling-policy priority: lower priority value first (interactive 0, "
                "batch 1), then arrival; preempts the running request that sorts last",
    "lpm": "SGLang's lpm: the longest cached prefix first",
    "sjf": "SGLang's shortest-prefill-first: the fewest uncached tokens first",
    "aging": "SGLang's hrrn: highest response ratio (waited + service) / service first",
    "vtc": "Virtual Token Counter (OSDI 2024): the tenant served the fewest weighted tokens first",
}


def source(name: str) -> str:
    """A built-in as a file a reader could load (`--policy-file`): its functions, renamed
    `order` and `victim`, and the helpers they call."""
    policy = BUILTINS[name]
    parts = []
    if policy.order in (sjf_order, aging_order):
        parts.append(inspect.getsource(uncached))
    if policy.order is vtc_order:
        parts.append(f"INPUT_WEIGHT, OUTPUT_WEIGHT = {INPUT_WEIGHT}, {OUTPUT_WEIGHT}\n")
    parts.append(inspect.getsource(policy.order).replace(f"def {name}_order(", "def order(", 1))
    if policy.victim is not None:
        parts.append(inspect.getsource(policy.victim).replace(f"def {name}_victim(", "def victim(", 1))
    return "\n\n".join(p.rstrip() + "\n" for p in parts)
