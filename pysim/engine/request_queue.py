"""The engine's waiting queue, one class per policy, as in vLLM's
`vllm/v1/core/sched/request_queue.py` (`FCFSRequestQueue`, `PriorityRequestQueue`,
`create_request_queue`).

The scheduler never asks which policy it runs: it adds arrivals, peeks at and pops the
head, and puts a preempted request back with `prepend_request`. FCFS keeps arrival order
and a preempted request goes to the very front; PRIORITY keeps the queue sorted by
(priority, arrival, add order), so "prepending" just re-inserts in that order. The policy
also decides whom to preempt when the pool runs dry (vLLM does this in
`Scheduler.schedule`): FCFS the most recently admitted running request, PRIORITY the
running request that sorts last.

A third queue, `PolicyRequestQueue`, runs a policy written as Python code (the
scheduling-policy lab, pysim.sims.policies): its `order` sorts the queue, its `victim` picks
whom to preempt. FCFS and PRIORITY written that way (pysim.policy.builtin) agree with
the two queues above step for step (tests/unit/test_policies.py); the engine keeps these
two for speed.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Iterator


class FCFSRequestQueue(deque):
    """First come, first served: a deque in admission order."""

    def add_request(self, request) -> None:
        self.append(request)

    def pop_request(self):
        return self.popleft()

    def peek_request(self):
        return self[0]

    def prepend_request(self, request) -> None:
        """A preempted request goes back to the front: it is the next one admitted."""
        self.appendleft(request)

    def remove_request(self, request) -> None:
        self.remove(request)

    @staticmethod
    def preemption_victim(running: list):
        """The most recently admitted running request (possibly the one asking)."""
        return running[-1]

    def on_schedule(self, now) -> None:
        """A schedule starts (only a policy written as code needs to know)."""


def priority_key(request):
    """PRIORITY order: smaller goes first and the largest is preempted first. Ties between
    equal priorities go by arrival, then by add order (vLLM's arrival timestamps never tie)."""
    return (request.priority, request.arrival, request.seq)


class PriorityRequestQueue:
    """Lowest (priority, arrival, add order) first: a heap of (key..., request)."""

    def __init__(self):
        self._heap: list[tuple] = []

    def add_request(self, request) -> None:
        heapq.heappush(self._heap, (*priority_key(request), request))

    def pop_request(self):
        return heapq.heappop(self._heap)[-1]

    def peek_request(self):
        return self._heap[0][-1]

    def prepend_request(self, request) -> None:
        """No front in a priority queue: a preempted request re-enters by its key."""
        self.add_request(request)

    def remove_request(self, request) -> None:
        self._heap = [entry for entry in self._heap if entry[-1] is not request]
        heapq.heapify(self._heap)

    @staticmethod
    def preemption_victim(running: list):
        """The running request that sorts last (possibly the one asking)."""
        return max(running, key=priority_key)

    def on_schedule(self, now) -> None:
        """A schedule starts (only a policy written as code needs to know)."""

    def __len__(self) -> int:
        return len(self._heap)

    def __iter__(self) -> Iterator:
        """In admission order (the heap itself is only partly sorted)."""
        return (entry[-1] for entry in sorted(self._heap))


class PolicyRequestQueue:
    """The waiting queue of a policy written as Python code (pysim.policy.api): its
    `order(request, engine)` gives each waiting request a sort key, smallest admitted
    first, ties by add order (as vLLM's arrival timestamps never tie).

    Keys may depend on time and on what was served, so they are computed again at each
    schedule (`on_schedule`), and only when the engine looks at the head: a step that
    cannot admit anyone (no seat, no budget) asks nothing. Within one schedule the
    order holds, as SGLang sorts its waiting queue once per batch it forms
    (python/sglang/srt/managers/schedule_policy.py, `SchedulePolicy.calc_priority`).
    It holds the requests' read-only views (what `order` is given), sorted largest key
    first, so the head is popped from the end.
    """

    def __init__(self, policy, engine):
        from pysim.policy.api import EngineView  # the views live with the interface

        self._policy = policy
        self._items: list = []  # RequestViews; sorted largest key first when `_sorted`
        self._sorted = True
        self.now = 0.0
        self.stamp = 0  # schedules so far: views cache what they compute per schedule
        self.views: dict = {}  # request seq -> its RequestView
        self.view = EngineView(engine, self)
        self.first_admitted: dict = {}  # request id -> `now` of its first admission

    def tally_of(self, request_id):
        """The Tally of the request's tenant: the engine counts its tokens there."""
        tenant = self._policy.labels.get(request_id, ("", ""))[0]
        return self.view._tally(tenant)

    # --- the engine's side (the same methods as the FCFS and PRIORITY queues) ------
    def on_schedule(self, now) -> None:
        self.now = now
        self.stamp += 1
        self._sorted = False

    def add_request(self, request, entered=None) -> None:
        view = self.views.get(request.seq)
        if view is None:
            view = self.views[request.seq] = self._policy.view_of(request, self)
        object.__setattr__(view, "_entered", request.arrival if entered is None else entered)
        self._items.append(view)
        self._sorted = False

    def prepend_request(self, request) -> None:
        """A preempted (or skipped) request goes back in; its place comes from its key."""
        self.add_request(request, entered=self.now)

    def peek_request(self):
        if not self._sorted:
            self._sort()
        return self._items[-1]._request

    def pop_request(self):
        if not self._sorted:
            self._sort()
        r = self._items.pop()._request
        self.first_admitted.setdefault(r.id, self.now)
        return r

    def remove_request(self, request) -> None:
        self._items.remove(self.views[request.seq])

    def preemption_victim(self, running: list):
        """The policy's `victim`, else vLLM's FCFS rule: the last of `running`."""
        if self._policy.victim is None:
            return running[-1]
        views = self.views
        self.view._update()  # what the tenants were served, as of this schedule
        return self._policy.pick_victim([views[r.seq] for r in running], self.view)._request

    def least_demanding(self) -> list:
        """Every waiting request: any may be the head at a later schedule (decode runs
        must know none of them fits, pysim.engine.decode_run)."""
        return [v._request for v in self._items]

    def _sort(self) -> None:
        self.view._update()  # what the tenants were served, as of this schedule
        self._items = self._policy.sort(self._items, self.view)
        self._sorted = True

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator:
        """Head first, in the order of the last sort (new arrivals since, after it)."""
        items = self._items if self._sorted else list(self._items)
        return (v._request for v in reversed(items))


def create_request_queue(policy: str, code_policy=None, engine=None):
    """The waiting queue for `policy` ("fcfs" or "priority"), or, given `code_policy`
    (a pysim.policy.api.Policy), that policy's queue over `engine`."""
    if code_policy is not None:
        return PolicyRequestQueue(code_policy, engine)
    return {"fcfs": FCFSRequestQueue, "priority": PriorityRequestQueue}[policy]()


