"""The scheduling-policy interface: what a policy written as Python code sees, and how the
engine calls it.

A policy is code defining

    def order(request, engine):      # required: a sort key, smallest admitted first
        return request.arrival_time

    def victim(running, engine):     # optional: which running request to preempt
        return running[-1]

The engine (pysim.engine, through pysim.engine.request_queue.PolicyRequestQueue) calls `order`
for every waiting request at each schedule that may admit someone, sorts by the keys
(ties by add order) and admits from the head, head-of-line as vLLM does. When a running
request needs a KV block the pool cannot give, it calls `victim` with the running
requests in admission order; without `victim`, the last of them goes (vLLM's FCFS rule).

`request` is read-only, with vLLM's names (vllm/v1/request.py, `Request`):
`arrival_time` (s), `num_prompt_tokens`, `num_computed_tokens`, `num_output_tokens`,
`max_tokens`, `priority`, `num_preemptions`, `num_cached_tokens` (the prefix-cache hit it
would get now), and the lab's own `tenant`, `tier` ("interactive" or "batch"), `waited`
(seconds since it entered the queue, or re-entered it after a preemption) and
`arrival_index` (the order requests were added: vLLM's arrival timestamps never tie,
pysim's may, and this breaks the tie as they would).

`engine` is read-only: `now` (s), `served_tokens`, `served_input_tokens`,
`served_output_tokens` (per tenant, mappings: tokens the engine computed for the
tenant's prompts, prefix-cache hits excluded, and tokens it sampled for them),
`num_requests_running`, `num_requests_waiting`, `num_free_blocks`.

A key is a number or a tuple of numbers (Python compares tuples item by item).
"""

from __future__ import annotations

import math
from operator import attrgetter
from types import MappingProxyType


class ReadOnlyError(AttributeError):
    """A policy tried to change what it may only read."""


def _read(path: str, doc: str) -> property:
    """A read-only property reading `path` off the view (`_request.arrival`...) in C
    (operator.attrgetter): no Python frame, so a policy reads it as fast as a plain
    attribute."""
    return property(attrgetter(path), doc=doc)


_set = object.__setattr__  # the views' own writes (they refuse everyone else's)


class RequestView:
    """One request as a policy sees it: read-only properties over the engine's request."""

    __slots__ = ("_request", "_queue", "tenant", "tier", "_entered", "_stamp", "_cached")

    def __init__(self, request, queue, tenant: str, tier: str):
        _set(self, "_request", request)
        _set(self, "_queue", queue)
        _set(self, "tenant", tenant)
        _set(self, "tier", tier)
        _set(self, "_entered", request.arrival)
        _set(self, "_stamp", -1)
        _set(self, "_cached", 0)

    def __setattr__(self, name, value):
        raise ReadOnlyError(f"the request is read-only: a policy cannot set request.{name}")

    __delattr__ = __setattr__

    arrival_time = _read("_request.arrival", "seconds")
    arrival_index = _read("_request.seq", "the order requests were added (breaks ties in arrival_time)")
    num_prompt_tokens = _read("_request.num_prompt_tokens", "tokens")
    num_computed_tokens = _read("_request.num_computed", "tokens whose KV is in the cache now")
    num_output_tokens = _read("_request.num_output", "tokens sampled so far")
    max_tokens = _read("_request.max_tokens", "its answer's length")
    priority = _read("_request.priority", "vLLM's: lower is served first")
    num_preemptions = _read("_request.num_preemptions", "times it was preempted")

    @property
    def waited(self) -> float:
        return self._queue.now - self._entered

    @property
    def num_cached_tokens(self) -> int:
        """Tokens of its prompt (and answer so far) the prefix cache holds now: the hit an
        admission would get (vLLM: `KVCacheManager.get_computed_blocks`). Looked up once
        per schedule."""
        queue = self._queue
        if self._stamp != queue.stamp:
            engine = queue.view._engine
            r = self._request
            hit = engine.kv.lookup(r.token_ids, r.block_hashes)[1] \
                if engine.config.enable_prefix_caching else 0
            object.__setattr__(self, "_cached", hit)
            object.__setattr__(self, "_stamp", queue.stamp)
        return self._cached

    def __repr__(self):
        return (f"<request {self.arrival_index}: tenant {self.tenant!r}, tier {self.tier!r}, "
                f"prompt {self.num_prompt_tokens}, output {self.num_output_tokens}/{self.max_tokens}>")


class Tally:
    """What one tenant was served so far, counted by the engine as it works
    (pysim.engine.scheduler): `served`, tokens handed out for its requests (each one's
    `served_tokens`: recomputes count again, prefix-cache hits do not); `output`, tokens
    sampled; `first`, requests that sampled at least one."""

    __slots__ = ("served", "output", "first")

    def __init__(self):
        self.served = self.output = self.first = 0

    def input(self) -> int:
        """Served tokens less the samples fed back as the next step's input: every sample
        but each request's last one is fed back, and a request's first sample is never
        its input (`served_tokens - max(num_output - 1, 0)`, summed over requests)."""
        return self.served - self.output + self.first


class EngineView:
    """The engine as a policy sees it: the clock and what each tenant was served."""

    __slots__ = ("_engine", "_queue", "_stamp", "_tallies", "_p_in", "_p_out", "_p_all")

    def __init__(self, engine, queue):
        for name, value in (("_engine", engine), ("_queue", queue), ("_stamp", -1),
                            ("_tallies", {t: Tally() for t in queue._policy.tenants}),
                            ("_p_in", None), ("_p_out", None), ("_p_all", None)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise ReadOnlyError(f"the engine is read-only: a policy cannot set engine.{name}")

    __delattr__ = __setattr__

    now = _read("_queue.now", "seconds")

    @property
    def num_requests_running(self) -> int:
        return len(self._engine.running)

    @property
    def num_requests_waiting(self) -> int:
        return len(self._engine.waiting)

    @property
    def num_free_blocks(self) -> int:
        return self._engine.pool.num_free_blocks

    # Brought up to date (`_update`) by the queue before it calls the policy, so a read
    # here runs no Python frame.
    served_input_tokens = _read("_p_in", "tokens computed for each tenant's prompts")
    served_output_tokens = _read("_p_out", "tokens sampled for each tenant")
    served_tokens = _read("_p_all", "the two together, per tenant")

    def _tally(self, tenant) -> Tally:
        tally = self._tallies.get(tenant)
        if tally is None:
            tally = self._tallies[tenant] = Tally()
        return tally

    def _update(self) -> None:
        """Read the tenants' tallies once per schedule, into read-only mappings (the
        queue calls this before it asks the policy anything)."""
        if self._stamp == self._queue.stamp:
            return
        tallies = self._tallies
        inp = {t: k.input() for t, k in tallies.items()}
        out = {t: k.output for t, k in tallies.items()}
        for name, value in (("_p_in", inp), ("_p_out", out), ("_p_all", {t: inp[t] + out[t] for t in inp})):
            object.__setattr__(self, name, MappingProxyType(value))
        object.__setattr__(self, "_stamp", self._queue.stamp)


def is_key(key) -> bool:
    """A number (not NaN) or a tuple of them: what `order` may return."""
    kind = type(key)
    if kind is int or kind is float:
        return key == key
    if kind is tuple:
        return all((type(x) is int or type(x) is float) and x == x for x in key)
    return isinstance(key, (int, float)) and not isinstance(key, bool) and not math.isnan(key)


class Policy:
    """A policy's two functions, the tenant and tier of each request, and how they are
    called. `guard` (pysim.policy.reader) wraps the calls of a reader's code: a budget,
    and checks of what it returns; the built-ins run unguarded."""

    def __init__(self, name: str, order, victim=None, *, labels=None, guard=None):
        self.name, self.order, self.victim, self.guard = name, order, victim, guard
        self.labels = labels or {}  # request id -> (tenant, tier)
        self.tenants = tuple(dict.fromkeys(t for t, _ in self.labels.values()))

    def with_labels(self, labels: dict) -> "Policy":
        """The same functions, for requests labelled `labels` (one run's)."""
        return Policy(self.name, self.order, self.victim, labels=labels, guard=self.guard)

    def view_of(self, request, queue) -> RequestView:
        tenant, tier = self.labels.get(request.id, ("", ""))
        return RequestView(request, queue, tenant, tier)

    def sort(self, views: list, engine_view: EngineView) -> list:
        """The waiting requests, largest (key, add order) first: the head is the last."""
        if self.guard is not None:
            return self.guard.sort(self.order, views, engine_view)
        order = self.order
        keyed = [(order(v, engine_view), v._request.seq, v) for v in views]
        keyed.sort(reverse=True)
        return [k[2] for k in keyed]

    def pick_victim(self, running: list, engine_view: EngineView) -> RequestView:
        if self.guard is not None:
            return self.guard.victim(self.victim, running, engine_view)
        chosen = self.victim(running, engine_view)
        assert any(chosen is v for v in running), f"{self.name}: victim() returned no running request"
        return chosen
