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

    def __len__(self) -> int:
        return len(self._heap)

    def __iter__(self) -> Iterator:
        """In admission order (the heap itself is only partly sorted)."""
        return (entry[-1] for entry in sorted(self._heap))


def create_request_queue(policy: str):
    """The waiting queue for `policy` ("fcfs" or "priority")."""
    return {"fcfs": FCFSRequestQueue, "priority": PriorityRequestQueue}[policy]()
