"""Page 2's model of a decode step: what one forward pass over B requests costs.

t(B) = t0 + beta * B, the chapter's step-time model (pysim.timing.steptime) with its roofline
set aside: a fixed cost a step and a cost a request. Throughput B / t(B) approaches
1 / beta; Little's law L = lambda * W turns it into the stability check of page 2.
"""

from __future__ import annotations

import math

from pysim.timing.steptime import overheads_only


def step_ms(t0_ms: float, beta_ms: float, batch: int) -> float:
    """Time of one decode step over `batch` requests: t0 + beta x batch."""
    return overheads_only(t0_ms, beta_ms * 1000).seconds(batch, batch, 0, 0) * 1000


def throughput_tok_s(t0_ms: float, beta_ms: float, batch: int) -> float:
    """Tokens per second of the whole batch: one token per request per step."""
    return batch / (step_ms(t0_ms, beta_ms, batch) / 1000)


def roofline_tok_s(beta_ms: float) -> float:
    """The limit of B / (t0 + beta B) as B grows: 1 / beta."""
    return 1000 / beta_ms


def batch_for_fraction(t0_ms: float, beta_ms: float, fraction: float) -> float:
    """Smallest B whose throughput reaches `fraction` of the roofline.

    B / (t0 + beta B) = f / beta  =>  B = f t0 / (beta (1 - f)).
    """
    assert 0 < fraction < 1
    return fraction * t0_ms / (beta_ms * (1 - fraction))


def littles_law(t0_ms=20.0, beta_ms=0.2, b_max=64, rate_per_s=20.0, max_tokens=500) -> dict:
    """The stability check of page 2: what the device delivers vs what users ask for."""
    delivered = throughput_tok_s(t0_ms, beta_ms, b_max)
    per_stream = 1000 / step_ms(t0_ms, beta_ms, b_max)
    w_s = max_tokens / per_stream  # time one request stays resident
    return {
        "t0_ms": t0_ms, "beta_ms": beta_ms, "b_max": b_max, "rate_per_s": rate_per_s,
        "max_tokens": max_tokens,
        "step_ms": step_ms(t0_ms, beta_ms, b_max),
        "delivered_tok_s": delivered,
        "per_stream_tok_s": per_stream,
        "w_s": w_s,
        "l_resident": rate_per_s * w_s,
        # Little's L against the batch the KV cache holds: how many times too many.
        "resident_ratio": rate_per_s * w_s / b_max,
        "offered_tok_s": rate_per_s * max_tokens,
        "oversubscription": rate_per_s * max_tokens / delivered,
        # Requests per second the device can finish, and how fast the queue grows beyond it.
        "served_per_s": delivered / max_tokens,
        "queue_growth_per_s": rate_per_s - delivered / max_tokens,
        "queue_growth_per_min": 60 * (rate_per_s - delivered / max_tokens),
        # Identical replicas needed to serve the offered load (each delivering `delivered`).
        # (rounded to 9 places first, so 5.000000001 from float error still means 5)
        "replicas": math.ceil(round(rate_per_s * max_tokens / delivered, 9)),
        # Even with unlimited KV memory one device tops out at 1 / beta.
        "offered_over_roofline": rate_per_s * max_tokens / roofline_tok_s(beta_ms),
    }

