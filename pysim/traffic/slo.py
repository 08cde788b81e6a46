"""Latency metrics and goodput exactly as `vllm bench serve` computes them.

Source: vllm-project/vllm, `vllm/benchmarks/serve.py`, function `calculate_metrics`
(read at commit 009e6d4a, the newest copy we could open):

- TTFT: time from sending a request to its first token.
- TPOT of one request: (end-to-end latency - TTFT) / (output tokens - 1), only for
  requests with more than one output token. The TPOT statistics use those requests;
  for goodput, a one-token request counts with TPOT 0.
- A request is *good* when every SLO given meets `slo >= value` (ms converted to s):
  TTFT and TPOT here (vLLM also accepts E2EL).
- goodput = good requests / benchmark duration; request throughput = completed /
  duration. The duration runs from the first request sent to the last one finished.
- Percentiles: numpy's `np.percentile` default, linear interpolation between the
  two nearest ranks (`pysim.utils.percentile` does the same in pure Python).

SLO attainment (good / completed) is not printed by vLLM; we add it because the
capacity sweep asks "at which rate do 90% of requests still meet their targets".
"""

from __future__ import annotations

import math

from pysim.utils import percentile


def request_tpot(latency: float, ttft: float, output_tokens: int) -> float | None:
    """One request's TPOT, or None when it produced a single token."""
    if output_tokens <= 1:
        return None
    return (latency - ttft) / (output_tokens - 1)


def summarize(ttfts: list[float], latencies: list[float], output_tokens: list[int],
              duration: float, slo_ttft_ms: float, slo_tpot_ms: float) -> dict:
    """vLLM's request metrics for finished requests (seconds in, ms out).

    The lists run over the same requests. Returns the statistics, the per-request
    TPOTs (None for one-token answers) and goodput / attainment.
    """
    assert len(ttfts) == len(latencies) == len(output_tokens)
    assert duration > 0 or not ttfts
    tpots = [request_tpot(lat, t, n) for lat, t, n in zip(latencies, ttfts, output_tokens)]
    ttft_limit, tpot_limit = slo_ttft_ms / 1000, slo_tpot_ms / 1000
    good = sum(1 for t, tp in zip(ttfts, tpots)
               if ttft_limit >= t and tpot_limit >= (tp if tp is not None else 0.0))
    completed = len(ttfts)
    measured_tpots = sorted(tp for tp in tpots if tp is not None)
    sorted_ttfts = sorted(ttfts)
    return {
        "completed": completed,
        "good": good,
        "duration_s": duration,
        "request_throughput": completed / duration if duration else 0.0,
        "request_goodput": good / duration if duration else 0.0,
        "slo_attainment": good / completed if completed else 0.0,
        "output_throughput": sum(output_tokens) / duration if duration else 0.0,
        "ttft_ms": distribution_ms(sorted_ttfts),
        "tpot_ms": distribution_ms(measured_tpots),
        "tpots": tpots,
    }


def distribution_ms(sorted_seconds: list[float]) -> dict:
    """Mean, p50, p90, p99 and a CDF (101 points, 0th to 100th percentile), in ms."""
    n = len(sorted_seconds)
    # math.fsum, not sum: Python 3.12 made sum() of floats compensated, so the build's
    # CPython 3.11 and the page's Pyodide would differ in the last bits; fsum is exact.
    mean = math.fsum(sorted_seconds) / n if n else 0.0
    return {
        "mean": mean * 1000,
        "p50": percentile(sorted_seconds, 50) * 1000,
        "p90": percentile(sorted_seconds, 90) * 1000,
        "p99": percentile(sorted_seconds, 99) * 1000,
        "cdf": [round(percentile(sorted_seconds, q) * 1000, 3) for q in range(101)] if n else [],
    }
