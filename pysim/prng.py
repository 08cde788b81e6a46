"""A tiny seeded random number generator: SplitMix64.

Python's `random` module is not guaranteed to produce the same numbers across
versions, and the page runs pysim on Pyodide's Python 3.14 while the build runs
on CPython 3.11+. SplitMix64 (Steele, Lea and Flood, 2014) is a few lines of
integer arithmetic, so every Python gives the same sequence for the same seed,
and the workload a reader sees in the browser equals the one the tests check.
"""

from __future__ import annotations

_MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed: int):
        self.state = seed & _MASK

    def next_u64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def randint(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi], both ends included.

        Rejection sampling keeps it exactly uniform (no modulo bias).
        """
        assert lo <= hi
        span = hi - lo + 1
        limit = (1 << 64) - ((1 << 64) % span)
        while True:
            x = self.next_u64()
            if x < limit:
                return lo + x % span

    def random(self) -> float:
        """Uniform float in [0, 1) with 53 random bits."""
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))

    def choice(self, items):
        return items[self.randint(0, len(items) - 1)]
