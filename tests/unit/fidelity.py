"""Read the recordings of vLLM's own code in tests/data/fidelity (see its README).

Each recorded vLLM release has a folder `vllm-<version>/` with one subfolder per kind
of recording (`kv`, `sched`, `sched_async`). The files sit next to the tests, so the
same path works in CPython and inside Pyodide (tests/pyodide/run_pytest.mjs mounts the
whole tests/ folder).
"""

import gzip
import json
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "fidelity"

# The vLLM release the chapter cites (docs/facts.toml, pysim's docstrings). The tests
# check pysim against every recorded release in VERSIONS; this one must be among them.
CITED_VERSION = "0.34.0"


def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in version.split("."))


# Every recorded release, oldest first: the folders tools/record_vllm.py wrote.
VERSIONS = sorted((p.name.removeprefix("vllm-") for p in DATA.glob("vllm-*") if p.is_dir()),
                  key=_version_key)


def load_cases(kind: str, version: str = CITED_VERSION) -> list[dict]:
    """The cases of `kind` ("kv", "sched" or "sched_async") recorded from vLLM `version`,
    one dict per case, in file order."""
    path = DATA / f"vllm-{version}" / kind / "cases.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def first_difference(ours: dict, theirs: dict) -> str | None:
    """The first field where two recorded states differ, as a readable line, or None."""
    for key in sorted(set(ours) | set(theirs)):
        if ours.get(key) != theirs.get(key):
            return f"{key}: pysim {ours.get(key)!r} != vLLM {theirs.get(key)!r}"
    return None


def disagreement(case: dict, steps: list[dict], summary: dict) -> str | None:
    """None when pysim's step records and summary equal the recording's, else where they
    first differ, as a readable line."""
    for k, theirs in enumerate(case["steps"]):
        if k >= len(steps):
            return f"vLLM has {len(case['steps'])} steps, pysim {len(steps)}"
        diff = first_difference(steps[k], theirs)
        if diff:
            return f"step record {k} (step {theirs['step']}): {diff}"
    if len(steps) != len(case["steps"]):
        return f"vLLM has {len(case['steps'])} steps, pysim {len(steps)}"
    return first_difference(summary, case["summary"])
