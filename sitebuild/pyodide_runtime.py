"""The Pyodide runtime, served by the site itself from the pinned npm package.

The worker loads Pyodide from `assets/pyodide/<version>/` with `indexURL` and
`packageBaseUrl` pointing there (widgets/worker.js), so it never falls back to a CDN.
The folder is named by the version (package.json pins it exactly), so a host may cache
it for a year. Its standard library is not Pyodide's whole `python_stdlib.zip` but the
cut the page uses (sitebuild/stdlib.py), compiled to bytecode.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from . import NODE_MODULES, BuildError, Files, stdlib

NPM_DIR = NODE_MODULES / "pyodide"
# What a browser needs; the rest of the npm package is for Node and for type checkers.
FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")


def check(npm_dir: Path = NPM_DIR) -> None:
    if not (npm_dir / "package.json").exists():
        raise BuildError(f"{npm_dir} is missing; run `npm ci` (or `make site`).")


def version(npm_dir: Path = NPM_DIR) -> str:
    return json.loads((npm_dir / "package.json").read_text())["version"]


def site_dir(npm_dir: Path = NPM_DIR) -> str:
    """Where the runtime lives in the site, e.g. `assets/pyodide/314.0.7/`."""
    return f"assets/pyodide/{version(npm_dir)}/"


def runtime_files(compiled: bytes, npm_dir: Path = NPM_DIR) -> Files:
    """The runtime's files, by their path in the site: Pyodide's own, but for its standard
    library the cut the page uses (page_stdlib), `compiled` to bytecode (stdlib.compiled)."""
    files: Files = {site_dir(npm_dir) + name: npm_dir / name for name in FILES if name != stdlib.NAME}
    files[site_dir(npm_dir) + stdlib.site_name(compiled)] = compiled
    return files


def page_stdlib(npm_dir: Path = NPM_DIR) -> bytes:
    """The standard library the site ships (sitebuild/stdlib.py), cut from npm's."""
    full = npm_dir / stdlib.NAME
    stat = full.stat()
    return _cut(full, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=2)
def _cut(full: Path, mtime_ns: int, size: int) -> bytes:  # once per file (`mkdocs serve`)
    return stdlib.cut(full.read_bytes())


def download_sizes(compiled: bytes, npm_dir: Path = NPM_DIR) -> dict[str, int]:
    """Bytes of each file the worker downloads, for its progress line ("3.1 of 5.4 MB")."""
    return {path.rsplit("/", 1)[1]: len(content) if isinstance(content, bytes) else content.stat().st_size
            for path, content in runtime_files(compiled, npm_dir).items()}
