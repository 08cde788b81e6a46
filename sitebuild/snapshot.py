"""A memory snapshot of Pyodide with pysim imported, so the browser skips Python's start.

Booting Pyodide spends most of its time starting the interpreter, not downloading: on
the 2-core machines we test on, `loadPyodide` takes about 4.6 s in Node, and importing
pysim adds more. A snapshot is the interpreter's WebAssembly memory, taken in Node at
build time (sitebuild/snapshot.mjs) once pysim is imported; the worker hands it to
`loadPyodide` (its `_loadSnapshot` option, widgets/worker.js), which restores the memory
instead of running that start again (about 0.6 s in Node).

`_makeSnapshot`, `makeMemorySnapshot` and `_loadSnapshot` are Pyodide's own, marked
private in its `pyodide.d.ts` (Pyodide 314.0.7; Cloudflare's Python Workers boot from
them). A snapshot only fits the exact `pyodide.asm.wasm` that made it: package.json pins
Pyodide exactly and the snapshot is made from the same node_modules files the site
serves. If it cannot be used, the worker boots the usual way (and says so in the console).

Only the hosted build ships it: the download keeps to the plain boot, so both ways of
starting Python are tested, and the zip stays 6 MB smaller.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from . import ROOT, BuildError
from .pyodide_runtime import NPM_DIR, version

SCRIPT = Path(__file__).with_name("snapshot.mjs")
CACHE = ROOT / ".cache" / "snapshot"  # one snapshot per wheel and Pyodide version (`mkdocs serve`)
HASH_CHARS = 12


def name(wheel: Path, npm_dir: Path = NPM_DIR, stdlib: bytes = b"") -> str:
    """`pysim-<hash>.snapshot.gz`, the hash of what it was made from: the wheel, Pyodide
    and the standard library the site ships."""
    made_from = hashlib.sha256(wheel.read_bytes() + version(npm_dir).encode() + stdlib).hexdigest()
    return f"pysim-{made_from[:HASH_CHARS]}.snapshot.gz"


def make(wheel: Path, npm_dir: Path = NPM_DIR, cache: Path = CACHE, stdlib: bytes = b"") -> Path:
    """The gzipped snapshot for `wheel` (made once, then taken from the cache), with
    `stdlib` as Python's standard library (Pyodide's own zip if empty)."""
    out = cache / name(wheel, npm_dir, stdlib)
    if out.exists():
        return out
    if shutil.which("node") is None:
        raise BuildError("node is needed to make the Python snapshot (run `npm ci`; see README)")
    cache.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".part")
    args = ["node", str(SCRIPT), str(npm_dir), str(wheel), str(partial)]
    if stdlib:
        zipped = out.with_suffix(".stdlib.zip")  # the zip the site ships, for Node to read
        zipped.write_bytes(stdlib)
        args.append(str(zipped))
    try:
        done = subprocess.run(args, capture_output=True, text=True)
    finally:
        if stdlib:
            zipped.unlink()
    if done.returncode != 0:
        raise BuildError(f"making the Python snapshot failed: {done.stderr.strip()[-800:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["modules"] > 0 and report["memory_bytes"] > 0, report
    partial.rename(out)
    return out
