"""Small helpers every simulation shares, so each is written once."""

from __future__ import annotations

import math


def cdiv(a: int, b: int) -> int:
    """Ceiling division of whole numbers, as vLLM's `vllm.utils.cdiv`: cdiv(17, 16) == 2."""
    return -(a // -b)


def percentile(sorted_values, p: float) -> float:
    """The p-th percentile of already sorted values, as `vllm bench serve` computes it.

    vLLM's `vllm/benchmarks/serve.py` (`calculate_metrics`) calls `np.percentile(x, p)`,
    whose default method is "linear": rank h = (n - 1) x p / 100, interpolated between
    the values at floor(h) and ceil(h). So p50 of [1, 2, 3, 4] is 2.5, and p90 of 1..10 is
    9.1. Every percentile and median pysim reports is this one. Empty input gives 0, as
    vLLM's `np.percentile(x or 0, p)` does.
    """
    n = len(sorted_values)
    if n == 0:
        return 0.0
    assert 0 <= p <= 100, p
    h = (n - 1) * p / 100
    lo = math.floor(h)
    hi = min(lo + 1, n - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (h - lo)
