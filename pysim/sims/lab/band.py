"""`lab_band`: the lab's percentiles and attainment at both ends of the error band.

The real server with every step s times the model's is the model at the rate x s, its
times x s (pysim.timing.errorband): two more replays, asked for once the lab is drawn.
"""

from __future__ import annotations

from pysim.config import to_mapping
from pysim.sims.lab.calibrate import calibrate
from pysim.sims.lab.config import LabConfig
from pysim.sims.lab.workload import run_once
from pysim.timing import errorband
from pysim.timing.steptime import Coefficients


def band_view(config: LabConfig, actions: list) -> dict:
    """`lab_band`: the lab's percentiles and attainment at both ends of the error band.
    Its own call, two more replays, so the lab's answer does not wait for it: the page
    asks for it once the replay is drawn."""
    coefficients, _ = calibrate(config)
    band = percentile_band(config, coefficients)
    f, s_ = band["fast"], band["slow"]
    band["sentence"] = (
        f"If every step took {band['factors']['fast']:.2f}x to {band['factors']['slow']:.2f}x the "
        f"model's ({band['factors']['basis']}: the 10th to 90th percentile of its errors out of "
        f"sample), TTFT p90 would be {f['ttft_ms']['p90']:,.0f} to {s_['ttft_ms']['p90']:,.0f} ms, "
        f"TPOT p90 {f['tpot_ms']['p90']:.1f} to {s_['tpot_ms']['p90']:.1f} ms, and "
        f"{s_['slo_attainment']:.0%} to {f['slo_attainment']:.0%} of requests would meet both targets "
        f"(attainment near the knee was never checked against a real server).")
    return {"config": to_mapping(config), **band}


def percentile_band(config: LabConfig, coefficients: Coefficients) -> dict:
    """The replay's percentiles and attainment with every step time at either end of
    the GPU's error band (pysim.timing.errorband): the real server with steps s times the
    model's is the model at the rate x s, its times x s (two more replays)."""
    band = errorband.FACTORS[config.gpu]
    out = {"factors": band.record(), "method": errorband.METHOD}
    for end in ("fast", "slow"):
        s = getattr(band, end)
        _t, result, m, _stm, _blocks = run_once(config, config.rate_scale * s, coefficients)
        out[end] = {"ttft_ms": {k: m["ttft_ms"][k] * s for k in ("mean", "p50", "p90", "p99")},
                    "tpot_ms": {k: m["tpot_ms"][k] * s for k in ("mean", "p50", "p90", "p99")},
                    "slo_attainment": errorband.attainment(result.ttfts, m["tpots"], config.slo_ttft_ms,
                                                           config.slo_tpot_ms, s)}
    return out
