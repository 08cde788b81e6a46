"""The one door between the page and pysim: `call(name, json_text) -> json_text`.

The browser's worker (and the build-time hook, which pre-renders each widget)
sends a simulation name and a JSON payload `{"config": {...}, "actions": [...]}`.
The answer is always JSON, never an exception:

    {"ok": true,  "result": <view model>}
    {"ok": false, "error": {"field": "num_gpu_blocks", "message": "got -1, expected ..."}}

so a bad slider value or a crafted link can only ever produce a message.
"""

from __future__ import annotations

import contextlib
import gc
import json
from typing import Any

from pysim.config import ConfigError, check_json_depth, describe, from_mapping
from pysim.registry import simulation, simulations

# A payload larger than this is refused before parsing: no allowed input needs it.
# (Nesting is limited too: pysim.config.MAX_JSON_DEPTH.)
MAX_PAYLOAD_CHARS = 200_000


def run(name: str, payload: Any, *, from_text: bool = False) -> dict:
    """Validate and run; raises ConfigError on bad input. Used by the CLI and tests."""
    sim = simulation(name)
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise ConfigError("", "expected an object with 'config' and optionally 'actions'")
    extra = set(payload) - {"config", "actions"}
    if extra:
        raise ConfigError(str(sorted(extra)[0])[:40], "unknown key; the payload takes 'config' and 'actions'")
    config = from_mapping(sim.config_cls, payload.get("config"), from_text=from_text)
    actions = payload.get("actions", [])
    if not isinstance(actions, list):
        raise ConfigError("actions", "expected a list of actions")
    if actions and not sim.takes_actions:
        raise ConfigError("actions", f"{name} takes no actions")
    with contextlib.nullcontext() if sim.runs_reader_code else _cycle_collector_paused():
        return sim.run(config, actions)


@contextlib.contextmanager
def _cycle_collector_paused():
    """Run a simulation without the cycle collector, then put it back as it was.

    A simulation allocates tens of thousands of small objects (requests, reports, batch
    entries) that reference counting frees as soon as the view is built; none of them
    form cycles. Left on, the collector walks them again and again while they are
    alive, which made the slowest of 20 recomputations up to 40 % slower than the
    median in Pyodide (bench/bench_page.py). The exercise runs a reader's code, which
    may build cycles, so it keeps the collector on.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def call(name: str, json_text: str) -> str:
    """Run simulation `name` on a JSON payload; answer JSON. Never raises."""
    try:
        if not isinstance(name, str) or not isinstance(json_text, str):
            raise ConfigError("", "name and payload must be strings")
        if len(json_text) > MAX_PAYLOAD_CHARS:
            raise ConfigError("", f"payload too large ({len(json_text):,} characters; at most {MAX_PAYLOAD_CHARS:,})")
        if name == "describe":
            result = _describe_all()
        else:
            check_json_depth(json_text)
            try:
                payload = json.loads(json_text, parse_constant=_refuse_constant)
            except (ValueError, RecursionError) as exc:
                raise ConfigError("", f"payload is not valid JSON ({str(exc)[:80]})") from None
            result = run(name, payload)
        return json.dumps({"ok": True, "result": result}, allow_nan=False, separators=(",", ":"))
    except ConfigError as exc:
        error = {"field": exc.field, "message": exc.message}
    except BaseException as exc:  # a bug in pysim (or SystemExit from a reader's code):
        # report it as data and keep the page alive
        error = {"field": "", "message": f"internal error: {type(exc).__name__}: {str(exc)[:200]}"}
    return json.dumps({"ok": False, "error": error})


def _refuse_constant(token: str):
    raise ConfigError("", f"{token} is not allowed in the payload; use a finite number")


def _describe_all() -> dict:
    return {name: {"fields": describe(sim.config_cls), "takes_actions": sim.takes_actions}
            for name, sim in simulations().items()}
