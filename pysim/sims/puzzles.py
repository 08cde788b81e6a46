"""Graded puzzles for the scheduling-policy lab: write a policy, pass on traffic you never saw.

Each puzzle fixes the traffic's settings (pysim.sims.policies.PoliciesConfig) and a goal, and
grades a policy on HELD_OUT windows of the trace: fixed windows the reader is not shown
(the page and `--list` show only `visible_start_min`, the window to try ideas on). A
policy tuned to that window, or one that recognises its requests and hard-codes their
order, meets the held-out windows as the policy it really is. A pass needs every
held-out window to pass.

- `tiers`: the interactive tier's TTFT p90 well under FCFS's, while the batch tier's
  longest wait stays within a factor of FCFS's.
- `flood`: one tenant floods at several times its rate; the quiet tenant's TTFT p90
  must stay within a factor of its p90 when it runs alone on the same window.
- `shortest`: cut FCFS's mean TTFT without the longest wait growing past a factor of
  FCFS's (shortest-first alone starves long prompts).

The bridge name is `puzzle` (a simulation of its own: `puzzle`, `policy` or
`policy_code`); the command line is `python -m pysim puzzle NAME --policy-file FILE`,
exit status 0 on a pass, 1 on a fail, 2 on a bad file or setting.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from pysim import fields
from pysim.config import choice, to_mapping
from pysim.policy.builtin import BUILTINS, NAMES
from pysim.registry import Simulation
from pysim.sims.exercises import ReaderError
from pysim.sims.policies import PoliciesConfig, figures, policy_code, reader_policy, simulate, traffic_of
from pysim.traffic import traces

MINUTES = 2  # each window's length


@dataclasses.dataclass(frozen=True)
class Puzzle:
    name: str
    title: str
    statement: str
    settings: dict  # PoliciesConfig fields the traffic uses
    visible_start_min: int
    held_out: tuple  # the windows graded (start minutes), never shown
    grade: Callable  # (config, traffic, outcome, baseline) -> (figures, [(goal, met)])
    baseline: Callable | None = None  # (config) -> what `grade` compares with, per window
    good_policy: str = ""  # a policy that passes (the tests', and the statement's hint)
    bounds: dict = dataclasses.field(default_factory=dict)


def _group(traffic, out, config, key: str, value: str) -> dict:
    members = [i for i in range(len(traffic)) if getattr(traffic, key)[i] == value]
    duration = max(out.finished) - min(traffic.arrivals)
    return figures(traffic, out, members, duration, config)


def _all(traffic, out, config) -> dict:
    return figures(traffic, out, list(range(len(traffic))), max(out.finished) - min(traffic.arrivals), config)


# --- the three puzzles -------------------------------------------------------------------
TIERS_BOUNDS = {"interactive_ttft_p90_fraction": 0.7, "batch_wait_max_factor": 1.8}


def _fcfs_tiers(config):
    """FCFS's interactive TTFT p90 and batch longest wait on the same window."""
    traffic = traffic_of(config)
    out = simulate(traffic, BUILTINS["fcfs"], config)
    return (_group(traffic, out, config, "tiers", "interactive")["ttft_ms"]["p90"],
            _group(traffic, out, config, "tiers", "batch")["wait_max_s"])


def _grade_tiers(config, traffic, out, fcfs):
    inter = _group(traffic, out, config, "tiers", "interactive")
    batch = _group(traffic, out, config, "tiers", "batch")
    b = TIERS_BOUNDS
    figs = {"interactive_ttft_p90_ms": inter["ttft_ms"]["p90"], "fcfs_interactive_ttft_p90_ms": fcfs[0],
            "batch_wait_max_s": batch["wait_max_s"], "fcfs_batch_wait_max_s": fcfs[1]}
    return figs, [(f"interactive TTFT p90 <= {b['interactive_ttft_p90_fraction']:g} x FCFS's",
                   figs["interactive_ttft_p90_ms"] <= b["interactive_ttft_p90_fraction"] * fcfs[0]),
                  (f"batch longest wait <= {b['batch_wait_max_factor']:g} x FCFS's",
                   figs["batch_wait_max_s"] <= b["batch_wait_max_factor"] * fcfs[1])]


FLOOD_FACTOR = 2.0  # the quiet tenant's p90 may grow to this many times its solo p90


def _solo(config):
    """The quiet tenant alone on the same window: its p90 with nobody flooding."""
    solo = dataclasses.replace(config, conv_rate_scale=0.1, flood_tenant="none")
    traffic = traffic_of(solo)
    quiet = [i for i in range(len(traffic)) if traffic.tenants[i] == "code"]
    keep = set(quiet)
    # Only the quiet tenant's requests: the same requests, arrivals and tiers.
    from pysim.traffic.tenants import Traffic
    alone = Traffic([traffic.arrivals[i] for i in quiet], [traffic.prompt_tokens[i] for i in quiet],
                    [traffic.output_tokens[i] for i in quiet], ["code"] * len(quiet),
                    [traffic.tiers[i] for i in quiet], None, traffic.scales, traffic.services)
    assert len(keep) == len(alone)
    out = simulate(alone, BUILTINS["fcfs"], config)
    return _all(alone, out, config)["ttft_ms"]["p90"]


def _grade_flood(config, traffic, out, solo_p90):
    quiet = _group(traffic, out, config, "tenants", "code")
    figs = {"code_ttft_p90_ms": quiet["ttft_ms"]["p90"], "code_solo_ttft_p90_ms": solo_p90,
            "ratio": quiet["ttft_ms"]["p90"] / solo_p90}
    return figs, [(f"code's TTFT p90 <= {FLOOD_FACTOR:g} x its solo p90", figs["ratio"] <= FLOOD_FACTOR)]


SHORTEST_BOUNDS = {"ttft_mean_fraction": 0.85, "wait_max_factor": 2.0}


def _fcfs_all(config):
    """FCFS's mean TTFT and longest wait on the same window."""
    traffic = traffic_of(config)
    every = _all(traffic, simulate(traffic, BUILTINS["fcfs"], config), config)
    return every["ttft_ms"]["mean"], every["wait_max_s"]


def _grade_shortest(config, traffic, out, fcfs):
    every = _all(traffic, out, config)
    b = SHORTEST_BOUNDS
    figs = {"ttft_mean_ms": every["ttft_ms"]["mean"], "fcfs_ttft_mean_ms": fcfs[0],
            "wait_max_s": every["wait_max_s"], "fcfs_wait_max_s": fcfs[1]}
    return figs, [(f"mean TTFT <= {b['ttft_mean_fraction']:g} x FCFS's",
                   figs["ttft_mean_ms"] <= b["ttft_mean_fraction"] * fcfs[0]),
                  (f"longest wait <= {b['wait_max_factor']:g} x FCFS's",
                   figs["wait_max_s"] <= b["wait_max_factor"] * fcfs[1])]


PUZZLES = {p.name: p for p in (
    Puzzle("tiers", "Interactive first, batch not forgotten",
           "Azure conv and code traffic, 30% of it in the batch tier (priority 1). Cut the "
           f"interactive tier's TTFT p90 to {TIERS_BOUNDS['interactive_ttft_p90_fraction']:g} x what "
           "FCFS gives it on the same window, while the batch tier's longest wait for its first "
           f"admission stays within {TIERS_BOUNDS['batch_wait_max_factor']:g} x FCFS's.",
           {"code_rate_scale": 0.75, "batch_share": 0.3}, 10, (20, 30, 50), _grade_tiers,
           baseline=_fcfs_tiers, good_policy="aging"),
    Puzzle("flood", "A tenant floods",
           f"The conv tenant floods at x{3:g} its rate while code sends as usual. Keep code's "
           f"TTFT p90 within {FLOOD_FACTOR:g} x what it gets alone on the same window.",
           {"flood_tenant": "conv", "flood_factor": 3.0, "conv_rate_scale": 0.5, "code_rate_scale": 0.5}, 10, (22, 28, 36),
           _grade_flood, baseline=_solo, good_policy="vtc"),
    Puzzle("shortest", "Short first, without starving",
           "Azure conv and code traffic. Cut the mean TTFT to "
           f"{SHORTEST_BOUNDS['ttft_mean_fraction']:g} x FCFS's on the same window, while the "
           f"longest wait for a first admission stays within {SHORTEST_BOUNDS['wait_max_factor']:g} x "
           "FCFS's (shortest-first alone starves long prompts).",
           {"code_rate_scale": 0.75}, 10, (20, 30, 50), _grade_shortest, baseline=_fcfs_all,
           good_policy="aging"),
)}


def window_config(puzzle: Puzzle, start: int) -> PoliciesConfig:
    return PoliciesConfig(**puzzle.settings, window_start_min=start, window_minutes=MINUTES)


def grade_window(puzzle: Puzzle, start: int, make_policy) -> dict:
    """One window: the policy's figures against the goals. `make_policy()` gives a fresh
    policy (a reader's: a fresh module and budget) for the run."""
    config = window_config(puzzle, start)
    traffic = traffic_of(config)
    base = puzzle.baseline(config) if puzzle.baseline else None
    out = simulate(traffic, make_policy(), config)
    figs, goals = puzzle.grade(config, traffic, out, base)
    return {"window_start_min": start, "window_minutes": MINUTES, "figures": figs,
            "goals": [{"goal": g, "met": bool(m)} for g, m in goals],
            "passed": all(m for _, m in goals)}


def grade(puzzle: Puzzle, make_policy, starts=None) -> dict:
    windows = [grade_window(puzzle, s, make_policy) for s in (starts or puzzle.held_out)]
    return {"passed": all(w["passed"] for w in windows), "windows": windows}


# --- the simulation ------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PuzzleConfig:
    puzzle: str = choice("tiers", tuple(PUZZLES), "which puzzle to grade the policy on",
                         label="Puzzle", option_labels={n: p.title for n, p in PUZZLES.items()})
    policy: str = fields.policy("fcfs", NAMES)
    policy_code: str = policy_code()


def run(config: PuzzleConfig, actions: list) -> dict:
    """Grade the reader's code (or, without it, a built-in) on the puzzle's held-out windows."""
    assert not actions
    puzzle = PUZZLES[config.puzzle]
    if config.policy_code:
        code = config.policy_code
        make = lambda: reader_policy.load(code)  # noqa: E731  a fresh module and budget per window
        label = "your policy"
    else:
        make = lambda: BUILTINS[config.policy]  # noqa: E731
        label = fields.POLICY_LABELS[config.policy]
    view = {"config": {**to_mapping(config), "policy_code": f"<{len(config.policy_code):,} characters>"
                       if config.policy_code else ""},
            "puzzle": {"name": puzzle.name, "title": puzzle.title, "statement": puzzle.statement,
                       "settings": {**puzzle.settings, "window_start_min": puzzle.visible_start_min,
                                    "window_minutes": MINUTES},
                       "num_held_out": len(puzzle.held_out)},
            "policy": label, "error": None, "error_line": None, "passed": False, "windows": []}
    try:
        view |= grade(puzzle, make)
    except ReaderError as exc:
        view |= {"error": exc.message, "error_line": exc.line, "passed": False}
    return view


def text(view: dict) -> str:
    p = view["puzzle"]
    lines = [f"Puzzle {p['name']}: {p['title']}", "  " + p["statement"],
             f"  graded: {view['policy']} on {p['num_held_out']} held-out windows of "
             f"{p['settings']['window_minutes']} min (you tune on minute {p['settings']['window_start_min']})"]
    if view["error"]:
        lines.append("error: " + view["error"])
    for w in view["windows"]:
        figs = ", ".join(f"{k} {v:,.3g}" for k, v in w["figures"].items())
        goals = "; ".join(f"{g['goal']}: {'met' if g['met'] else 'MISSED'}" for g in w["goals"])
        lines.append(f"  window {w['window_start_min']}: {'pass' if w['passed'] else 'FAIL'} ({figs}) {goals}")
    lines.append("PASS" if view["passed"] else "FAIL")
    return "\n".join(lines)


def exit_status(view: dict) -> int:
    return 2 if view["error"] else 0 if view["passed"] else 1


SIMULATION = Simulation(name="puzzle", config_cls=PuzzleConfig, run=run, text=text,
                        exit_status=exit_status, cli_argument="puzzle",
                        data_files=traces.site_files)

