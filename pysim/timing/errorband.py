"""The error band on the lab's and the cluster's answers: how far they move when the
step times are off by as much as they were measured to be, out of sample.

Method: every step time scaled by one factor s (the real server's steps s times the
model's). Why a factor and not the coefficients at their bounds: the held-out errors
are of whole runs, not of single coefficients (which trade off against each other on
few runs, pysim.timing.steptime), and one factor has an exact consequence on a replay. With
every step s times longer, a server receiving requests at rate R goes through the same
schedule as the model receiving them at rate R x s, in a clock s times slower: every
request's TTFT and TPOT are s times the model's at R x s. So:

- a percentile at the lab's rate R: s x the model's percentile at R x s (two more
  replays, `pysim.sims.lab.band`);
- the capacity sweep needs no replay more: the model's point at rate R_k, its times
  multiplied by s, is the real server's at R_k / s, so the attainment at the targets
  divided by s (`attainment`) gives the curve the capacity is read from (`crossing`);
- the cluster's figures likewise (pysim.sims.cluster.figures: the window at rate x s, the
  targets / s).

The factors: for a GPU with enough benchmark records, the 10th and 90th percentiles of
1 / (1 + e) over its records' leave-one-out errors e (predicted / measured - 1 of mean
TPOT, the figure that measures step times, pysim.timing.fidelity `held_out`); for a GPU with none or few, the same
over every record's leave-one-GPU-out errors (`gpu_out`), which are larger: a card
known only from its datasheet gets a wider band. `python -m pysim.timing.fidelity` prints
FACTORS as written here, and the lab's build-time figures check they still match.

Why TPOT and not TTFT too: a TTFT also holds what happens to a request outside the
engine's steps (the API server's tokenizing, a chat template, the network), which the
model leaves out. The records at concurrency 1 to 8 show it: their TTFT is 4 to 5 times
the model's while their TPOT agrees within 10%, and on the same GPU and benchmark SGLang
reached the first token in under half vLLM's time at the same TPOT (docs/facts.toml,
sglang_engines_first_token). Scaling every step by those errors
would say the server's steps are three times slower than they are measured to be, so the
TTFT errors are reported on the page (pysim.timing.fidelity) and left out of the factor. What one
factor cannot say: prefill (compute-bound) and decode (memory-bound) steps may be off by
different amounts; and none of the records measured attainment near the knee (they report
means and percentiles at their own rates), so the capacity's band comes from time
errors measured elsewhere, never from a checked attainment.
"""

from __future__ import annotations

from dataclasses import dataclass

from pysim.timing.catalog import GPUS


@dataclass(frozen=True)
class Band:
    fast: float  # the real steps at least this share of the model's (10th percentile)
    slow: float  # ... at most this multiple (90th percentile)
    errors: int  # how many held-out errors the percentiles are of
    basis: str  # which records, held out how

    def record(self) -> dict:
        return {"fast": self.fast, "slow": self.slow, "errors": self.errors, "basis": self.basis}


# Printed by `python -m pysim.timing.fidelity` from data/realbench/records.jsonl.
FACTORS: dict[str, Band] = {
    "H100": Band(0.847, 1.348, 21, "21 H100 records, each held out"),
    "H200": Band(0.569, 1.349, 41, "every GPU held out in turn (41 records)"),
    "L40S": Band(0.972, 1.05, 4, "4 L40S records, each held out"),
    "A100": Band(0.801, 1.351, 15, "15 A100 records, each held out"),
    "H100-PCIe": Band(0.569, 1.349, 41, "every GPU held out in turn (41 records)"),
    "A100-40GB": Band(0.569, 1.349, 41, "every GPU held out in turn (41 records)"),
    "L4": Band(0.569, 1.349, 41, "every GPU held out in turn (41 records)"),
    "A10G": Band(0.569, 1.349, 41, "every GPU held out in turn (41 records)"),
    "MI300X": Band(0.569, 1.349, 41, "every GPU held out in turn (41 records)"),
}
assert set(FACTORS) == set(GPUS)
assert all(b.fast <= 1 <= b.slow for b in FACTORS.values())

METHOD = ("every step time scaled by the 10th and 90th percentiles of the model's held-out "
          "TPOT errors on this GPU (a replay at rate R with steps s times longer is the model's at "
          "R x s, s times slower)")


def attainment(ttfts: list[float], tpots: list, slo_ttft_ms: float, slo_tpot_ms: float,
               factor: float) -> float:
    """The share of requests meeting both targets with every time `factor` times the
    model's (pysim.traffic.slo.summarize's rule: a one-token answer has no TPOT to miss)."""
    ttft_limit, tpot_limit = slo_ttft_ms / 1000, slo_tpot_ms / 1000
    good = sum(1 for t, tp in zip(ttfts, tpots)
               if ttft_limit >= t * factor and tpot_limit >= (tp * factor if tp is not None else 0.0))
    return good / len(ttfts) if ttfts else 0.0


def crossing(rates: list[float], attainments: list[float], target: float) -> tuple[float | None, str | None]:
    """The highest rate with attainment >= target, linear between the points (sorted by
    rate): (rate, None); (the last rate, "at_least") when every point meets it;
    (the first rate, "below") when none does."""
    if not rates:
        return None, None
    if attainments[0] < target:
        return rates[0], "below"
    for (ra, fa), (rb, fb) in zip(zip(rates, attainments), zip(rates[1:], attainments[1:])):
        if fb < target:
            return ra + (fa - target) / (fa - fb) * (rb - ra), None
    return rates[-1], "at_least"
