"""The capacity sweep: up to which rate one replica keeps 90% of requests within the SLOs.

Its simulations' config and views: `lab_sweep` (every rate of SWEEP_RATES, the command
line), `lab_sweep_point` (one rate, the page's call per point) and `lab_capacity` (the
conclusion from the points the page has), with the capacity at both ends of the error
band (pysim.timing.errorband). What one call of the page's sweep asks is no setting, so it
comes as the call's actions: `lab_sweep_point` takes one, `{"sweep_index": i}`, and
`lab_capacity` the points so far, each as `lab_sweep_point` returned it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pysim.config import ConfigError
from pysim.sims.lab.calibrate import calibrate
from pysim.sims.lab.config import MIN_RATE, LabConfig, echo
from pysim.sims.lab.workload import run_once
from pysim.timing import errorband
from pysim.timing.steptime import Coefficients
from pysim.traffic import traces

SWEEP_RATES = (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0)


ATTAINMENT_TARGET = 0.9  # the capacity is the highest rate at which 90% of requests are good


def sweep_index(actions: list) -> int:
    """`lab_sweep_point`'s one action, `{"sweep_index": i}`: which rate of SWEEP_RATES to
    replay (its place in the list, from the lowest)."""
    last = len(SWEEP_RATES) - 1
    if len(actions) != 1 or not isinstance(actions[0], dict) or set(actions[0]) != {"sweep_index"}:
        raise ConfigError("actions", f"expected one action, {{\"sweep_index\": i}}, with i the place of "
                                     f"a rate in the sweep: a whole number from 0 to {last}")
    i = actions[0]["sweep_index"]
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i <= last:
        raise ConfigError("actions", f"'sweep_index' should be a whole number from 0 to {last}")
    return i


def sweep_points(actions: list) -> list[dict]:
    """`lab_capacity`'s actions: the sweep's points so far, each as lab_sweep_point
    returned it (only what the capacity reads is kept)."""
    if len(actions) > len(SWEEP_RATES):
        raise ConfigError("actions", f"expected at most {len(SWEEP_RATES)} sweep points, got {len(actions):,}")
    out = []
    for k, p in enumerate(actions):
        if not isinstance(p, dict):
            raise ConfigError("actions", f"point {k + 1}: expected an object")
        point = {}
        for key, lo, hi in (("rate_scale", 0.25, 8), ("slo_attainment", 0, 1),
                            ("request_goodput", 0, 1e6), ("request_throughput", 0, 1e6)):
            x = p.get(key)
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not lo <= x <= hi:
                raise ConfigError("actions", f"point {k + 1}: '{key}' should be a number "
                                             f"from {lo:g} to {hi:g}")
            point[key] = float(x)
        for key in BAND_KEYS:  # the error band's attainments, when the point has them
            x = p.get(key)
            if x is None:
                continue
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= 1:
                raise ConfigError("actions", f"point {k + 1}: '{key}' should be a number "
                                             f"from 0 to 1")
            point[key] = float(x)
        out.append(point)
    return out


BAND_KEYS = ("slo_attainment_fast", "slo_attainment_slow")


@dataclass(frozen=True)
class SweepConfig(LabConfig):
    """The lab's settings, for a sweep: it scales the request rate, so a benchmark needs one."""

    def check(self) -> None:
        super().check()
        if self.traffic == "benchmark" and not self.request_rate:
            raise ConfigError("request_rate", "got 0 (all at once); the capacity sweep scales the "
                                              f"request rate: expected a number from {MIN_RATE:g} "
                                              "to 1,000")


def sweep_view(config: SweepConfig, actions: list) -> dict:
    """The `lab_sweep` simulation: every rate of the sweep, and the capacity they give."""
    assert not actions
    coefficients, calibration = calibrate(config)
    points = [sweep_point(config, rate, coefficients) for rate in SWEEP_RATES]
    return {"config": echo(config), "points": points, "capacity": capacity(config, points),
            "coefficients": coefficients.record(), "calibration": calibration}


def sweep_point_view(config: SweepConfig, actions: list) -> dict:
    """The `lab_sweep_point` simulation: one rate of the sweep, the one its action names."""
    rate = SWEEP_RATES[sweep_index(actions)]  # checked before anything is replayed
    coefficients, _calibration = calibrate(config)
    return {"config": echo(config), "point": sweep_point(config, rate, coefficients),
            "num_points": len(SWEEP_RATES)}


def capacity_view(config: LabConfig, actions: list) -> dict:
    """The `lab_capacity` simulation: the conclusion from the points the page has (its actions)."""
    return {"config": echo(config), "capacity": capacity(config, sweep_points(actions))}


def sweep_point(config: LabConfig, rate: float, coefficients: Coefficients) -> dict:
    _t, result, m, _stm, _blocks = run_once(config, rate, coefficients)
    band = errorband.FACTORS[config.gpu]
    # The error band (pysim.timing.errorband): these requests' times at both ends of it, so
    # capacity() can read the real server's curve off the same replays.
    at = {f"slo_attainment_{end}": errorband.attainment(
        result.ttfts, m["tpots"], config.slo_ttft_ms, config.slo_tpot_ms, getattr(band, end))
        for end in ("fast", "slow")}
    return {"rate_scale": rate, "slo_attainment": m["slo_attainment"], **at,
            "request_goodput": m["request_goodput"], "request_throughput": m["request_throughput"],
            "ttft_p90_ms": m["ttft_ms"]["p90"], "tpot_p90_ms": m["tpot_ms"]["p90"],
            "num_preemptions": result.num_preemptions}


def real_rate(config: LabConfig) -> float:
    """Requests per second at rate scale 1: the trace window's, or the benchmark's."""
    if config.traffic == "benchmark":
        return config.request_rate
    return traces.mean_rate(traces.load(config.trace), config.window_start_min,
                            config.window_minutes)


def capacity(config: LabConfig, points: list[dict]) -> dict:
    """Highest rate scale with attainment >= 90%, the req/s it means, replicas needed,
    and the sentence that says so (the page's and the command line's).

    Between the last rate that meets the target and the first that misses it, the
    crossing is interpolated linearly in attainment. Replicas for the real rate
    (scale 1): ceil(1 / that scale), splitting the traffic evenly.
    """
    out = _crossing(config, points)
    out["band"] = capacity_band(config, points)
    out["sentence"] = _capacity_sentence(out) + _band_sentence(out)
    return out


def capacity_band(config: LabConfig, points: list[dict]) -> dict | None:
    """The capacity with every step time at either end of the GPU's error band
    (pysim.timing.errorband): the point at rate R_k, its times x s, is the real server's at
    R_k / s. None when the points lack the band's attainments."""
    points = sorted(points, key=lambda p: p["rate_scale"])
    if not points or any(k not in p for p in points for k in BAND_KEYS):
        return None
    band = errorband.FACTORS[config.gpu]
    out = {"factors": band.record(), "method": errorband.METHOD,
           "checked": "never against a real server's attainment: only times were measured"}
    for end in ("fast", "slow"):
        s = getattr(band, end)
        scale, bound = errorband.crossing([p["rate_scale"] / s for p in points],
                                          [p[f"slo_attainment_{end}"] for p in points],
                                          ATTAINMENT_TARGET)
        out[end] = {"rate_scale": scale, "bound": bound,
                    "replicas": None if bound == "below" else max(1, math.ceil(1 / scale - 1e-9))}
    return out


def _band_sentence(c: dict) -> str:
    b = c.get("band")
    if not b or c["rate_scale"] is None:
        return ""
    f = b["factors"]

    def end(k):
        e = b[k]
        return (f"below x{e['rate_scale']:.2f}" if e["bound"] == "below" else
                f"at least x{e['rate_scale']:.2f}" if e["bound"] == "at_least" else
                f"x{e['rate_scale']:.2f}")
    replicas = sorted(x for x in (b["slow"]["replicas"], b["fast"]["replicas"]) if x)
    span = (f"; {replicas[0]:,} to {replicas[-1]:,} replicas" if len(replicas) == 2 and replicas[0] != replicas[-1]
            else f"; {replicas[-1]:,} replicas" if replicas else "")
    return (f" With every step x{f['slow']:g} to x{f['fast']:g} of the model's (the central 80% of "
            f"its held-out errors, {f['basis']}), it would be {end('slow')} to {end('fast')}{span}: "
            f"a range from measured time errors, never checked against a real server's attainment.")


def _crossing(config: LabConfig, points: list[dict]) -> dict:
    points = sorted(points, key=lambda p: p["rate_scale"])
    out = {"target": ATTAINMENT_TARGET, "real_rate_req_s": real_rate(config), "rate_scale": None,
           "sustained_req_s": None, "replicas": None, "bound": None,
           "num_points": len(points), "complete": len(points) == len(SWEEP_RATES)}
    if not points:
        return out
    if points[0]["slo_attainment"] < ATTAINMENT_TARGET:
        out["bound"] = "below"  # misses the target even at the lowest rate swept
        out["replicas_at_least"] = math.floor(1 / points[0]["rate_scale"]) + 1
        return out
    scale = points[-1]["rate_scale"]
    out["bound"] = "at_least"  # met at every rate swept
    for a, b in zip(points, points[1:]):
        if b["slo_attainment"] < ATTAINMENT_TARGET:
            fa, fb = a["slo_attainment"], b["slo_attainment"]
            scale = a["rate_scale"] + (fa - ATTAINMENT_TARGET) / (fa - fb) * (b["rate_scale"] - a["rate_scale"])
            out["bound"] = None
            break
    out["rate_scale"] = scale
    out["sustained_req_s"] = scale * out["real_rate_req_s"]
    out["replicas"] = max(1, math.ceil(1 / scale - 1e-9))
    return out


def _capacity_sentence(c: dict) -> str:
    target = f"{c['target']:.0%}"
    so_far = "" if c["complete"] else f" (from the {c['num_points']} of {len(SWEEP_RATES)} rates swept)"
    if c["bound"] == "below":
        return (f"Fewer than {target} of requests meet both targets even at the lowest rate swept{so_far}: "
                f"one replica cannot take this traffic even at x{SWEEP_RATES[0]:g} of its rate; the real "
                f"rate needs more than {c['replicas_at_least']} replicas.")
    if c["rate_scale"] is None:
        return "No sweep points yet."
    more = "at least " if c["bound"] == "at_least" else ""
    replicas = f"{c['replicas']:,} {'replica' if c['replicas'] == 1 else 'replicas'}"
    return (f"One replica sustains {more}x{c['rate_scale']:.2f} of the real rate "
            f"({c['sustained_req_s']:.2f} of {c['real_rate_req_s']:.2f} req/s) with {target} of requests "
            f"meeting both targets{so_far}; the real rate needs {replicas}.")
