"""Two small integer helpers every simulation shares, so each is written once."""

from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """Ceiling division of whole numbers, as vLLM's `vllm.utils.cdiv`: cdiv(17, 16) == 2."""
    return -(a // -b)


def nearest_rank(values, q: float):
    """The nearest-rank q-quantile: the ceil(q x n)-th smallest value (1-based), None if empty.

    q is taken to 3 decimals (0.9 -> 900/1000) so the rank is exact integer arithmetic:
    for 10 values q = 0.9 gives the 9th smallest, q = 0.5 the 5th.
    """
    if not values:
        return None
    ordered = sorted(values)
    k = max(1, cdiv(round(q * 1000) * len(ordered), 1000))
    return ordered[k - 1]
