"""The pysim wheel the browser runs, and the lock file that names it for Pyodide.

The wheel is pure Python, built by hatchling from the working tree (the same code gives
the same bytes). Its file name carries its own sha256 as a wheel build tag
(`pysim-0.1.0-0h<hash>-py3-none-any.whl`, PEP 427 allows a build tag that starts with a
digit), so a browser that cached an older build never runs it against a newer page.

The lock file is Pyodide's own `pyodide-lock.json` with one entry added by pyodide-build's
`pyodide lockfile add-wheels`, which records the wheel's sha256 in the entry's `sha256` field. The
worker reads the wheel's name and sha256 there and fetches it with that hash as the
request's `integrity`, so the browser refuses any other bytes (widgets/worker.js).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

from . import ROOT, BuildError

HASH_CHARS = 12  # enough to tell builds apart; the lock file holds the full sha256


def build_wheel(outdir: Path, project: Path = ROOT) -> Path:
    """Build the wheel into `outdir` and name it by its content: the path of the file."""
    from hatchling.build import build_wheel as hatch_build  # a dev dependency, not the wheel's

    cwd = os.getcwd()
    os.chdir(project)  # hatchling reads pyproject.toml from the working directory
    try:
        built = outdir / hatch_build(str(outdir))
    finally:
        os.chdir(cwd)
    hashed = outdir / hashed_wheel_name(built.name, built.read_bytes())
    return built.rename(hashed)


def hashed_wheel_name(name: str, data: bytes) -> str:
    """`pysim-0.1.0-py3-none-any.whl` -> `pysim-0.1.0-0h<hash>-py3-none-any.whl`."""
    dist, version, rest = name.split("-", 2)
    return f"{dist}-{version}-0h{hashlib.sha256(data).hexdigest()[:HASH_CHARS]}-{rest}"


def lock_name(wheel: Path) -> str:
    """The lock file names the wheel, so its name carries the wheel's hash too."""
    return f"pyodide-lock.{hashlib.sha256(wheel.read_bytes()).hexdigest()[:HASH_CHARS]}.json"


def pyodide_cli() -> str:
    """pyodide-build's CLI. It needs Python >= 3.12, so the Makefile gives it a virtual
    environment of its own (.venv-lock); $PYODIDE_CLI overrides the path."""
    cli = os.environ.get("PYODIDE_CLI") or str(ROOT / ".venv-lock" / "bin" / "pyodide")
    if not Path(cli).exists():
        raise BuildError(f"pyodide-build's CLI not found at {cli}. Run `make site` "
                         "(it creates .venv-lock with Python >= 3.12), or set PYODIDE_CLI.")
    return cli


def lock_file(wheel: Path, pyodide_lock: Path, cli: str | None = None) -> str:
    """The text of a pyodide-lock.json for the wheel, served from the same folder.

    `add-wheels` copies every entry of Pyodide's lock file; only pysim's is kept, because
    the npm package holds the core runtime only and this site serves nothing else.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lock.json"
        subprocess.run(
            [cli or pyodide_cli(), "lockfile", "add-wheels", "--input", str(pyodide_lock),
             "--output", str(out), "--base-path", str(wheel.parent), str(wheel)],
            check=True, capture_output=True, text=True,
        )
        lock = json.loads(out.read_text())
    entry = lock["packages"]["pysim"]
    assert entry["file_name"] == wheel.name, entry
    assert entry["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest(), "lock file and wheel disagree"
    lock["packages"] = {"pysim": entry}
    return json.dumps(lock, indent=1, sort_keys=True)
