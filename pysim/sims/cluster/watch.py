"""Giving up on a run that cannot meet the sweep's target.

A Watch reads a run as it goes and raises Doomed once more requests have surely missed
a target than the target allows; it only reads, so a run it lets finish is the same as
without it.
"""

from __future__ import annotations

import heapq
import math

from pysim.traffic import slo


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
