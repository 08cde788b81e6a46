"""Read the recordings of vLLM 0.33.0's own code in tests/data/fidelity (see its README).

The files sit next to the tests, so the same path works in CPython and inside Pyodide
(tests/pyodide/run_pytest.mjs mounts the whole tests/ folder).
"""

import gzip
import json
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "fidelity"


def load_cases(kind: str) -> list[dict]:
    """The cases of `kind` ("kv" or "sched"), one dict per recorded case, in file order."""
    with gzip.open(DATA / kind / "cases.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def first_difference(ours: dict, theirs: dict) -> str | None:
    """The first field where two recorded states differ, as a readable line, or None."""
    for key in sorted(set(ours) | set(theirs)):
        if ours.get(key) != theirs.get(key):
            return f"{key}: pysim {ours.get(key)!r} != vLLM {theirs.get(key)!r}"
    return None
