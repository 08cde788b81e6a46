"""Python's standard library for the page, cut to what the page's Python uses.

Pyodide's `python_stdlib.zip` holds the whole standard library, which every reader
would download before Python can start, although the chapter's code imports a small
part of it. The site ships a copy that keeps:

  - what Pyodide needs to start, what pysim imports, and what the widgets and the
    exercise run (recorded by tests/pyodide/cut_stdlib.mjs with `--list`, in Pyodide
    from the full zip: every simulation's default view, the exercise's run and check);
  - the modules a reader's exercise code may reasonably import (stdlib_reader.json:
    collections, heapq, dataclasses, random, typing, ...), and what they import;
  - the encodings Python needs to start and the common Unicode ones a reader may name.

Everything else (email, asyncio's servers, xml, unittest, sqlite3, the REPL, ...) is
left out, and the zip carries a `sitecustomize.py` (Python runs it as it starts) that
appends a finder to `sys.meta_path`: an import of a left-out module then fails with a
message saying so, not with a bare "No module named". It sits last, so a module a reader
writes under a left-out name is still found first.

The cut ships compiled to bytecode in Pyodide at build time, `python_stdlib.<hash>.pyc.zip`,
named by its content hash: Python imports many modules as it starts, and compiling
their sources would be a large part of that start on every reader's machine; the
bytecode is larger to download than the sources, and bench/bench_network.py prints what
each file costs over the wire. Tracebacks through the standard library then show
no source line; the reader's own code and pysim's (the wheel) keep theirs.

tests/pyodide/cut_stdlib.mjs proves the zip the site ships boots, runs pysim, the
exercise and each reader module; tests/build/test_stdlib.py that the cut is deterministic
and that every standard module pysim's source imports is kept.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

from . import ROOT, BuildError

NAME = "python_stdlib.zip"  # Pyodide's, in its npm package


def site_name(compiled: bytes) -> str:
    """`python_stdlib.<hash>.pyc.zip`: named by content, since the cut (unlike the Pyodide
    folder it sits in) changes with this file."""
    return f"python_stdlib.{hashlib.sha256(compiled).hexdigest()[:10]}.pyc.zip"
COMPILE_SCRIPT = Path(__file__).with_name("stdlib_pyc.mjs")
CACHE = ROOT / ".cache" / "stdlib"
READER = json.loads(Path(__file__).with_name("stdlib_reader.json").read_text())

# Top-level modules and packages kept whole: what tests/pyodide/cut_stdlib.mjs --list
# found imported (Pyodide's own start imports asyncio, logging, ssl, ...; importlib's
# metadata imports email), which includes what the reader's modules import; and what
# Pyodide reads without importing at start (sysconfig's data, the site-packages folder).
KEEP = frozenset({
    "__future__", "_collections_abc", "_colorize", "_opcode_metadata", "_py_warnings", "_pyodide",
    "_sitebuiltins", "_ssl", "_weakrefset", "abc", "annotationlib", "ast", "asyncio", "base64",
    "bisect", "bz2", "codecs", "codeop", "collections", "compression", "concurrent", "contextlib",
    "contextvars", "copy", "copyreg", "dataclasses", "datetime", "decimal", "dis", "email", "enum",
    "fnmatch", "fractions", "functools", "genericpath", "glob", "gzip", "hashlib", "heapq",
    "importlib", "inspect", "io", "json", "keyword", "linecache", "locale", "logging", "lzma",
    "ntpath", "numbers", "opcode", "operator", "os", "pathlib", "pkgutil", "posixpath", "pprint",
    "pyodide", "random", "re", "reprlib", "selectors", "shutil", "signal", "site", "socket", "ssl",
    "stat", "statistics", "string", "struct", "subprocess", "tempfile", "textwrap", "threading",
    "token", "tokenize", "traceback", "types", "typing", "warnings", "weakref", "zipfile", "zipimport",
    # read by sysconfig and site, not imported by name
    "sysconfig", "_sysconfigdata__emscripten_wasm32-emscripten", "site-packages",
    # imported by datetime and decimal when their C parts are missing; small
    "_pydatetime", "_pydecimal", "_strptime", "calendar",
})

# Of `encodings`, the package and these codecs: Python's start needs utf_8 and aliases;
# the rest are the encodings a reader is likely to name. (codecs.lookup of another one
# fails with "unknown encoding", as in any Python without that codec.)
ENCODINGS = frozenset({
    "__init__", "aliases", "ascii", "latin_1", "utf_8", "utf_8_sig", "utf_16", "utf_16_le",
    "utf_16_be", "utf_32", "raw_unicode_escape", "unicode_escape", "idna", "punycode", "cp1252",
    "cp437",  # zipfile's names (the wheel's unpacking)
})

FINDER = '''\
"""This page's Python leaves part of the standard library out (sitebuild/stdlib.py in the
site's sources): importing a left-out module says so."""
import sys


class LeftOut:
    NAMES = frozenset(%(names)r)

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in cls.NAMES:
            raise ModuleNotFoundError(
                f"No module named {name!r}: the standard module {top!r} was left out of this "
                "page's Python so that the page downloads less; it holds only what the "
                "chapter's code and exercises use", name=top)
        return None


sys.meta_path.append(LeftOut)
del sys
'''

# A fixed date for every entry: the same sources make the same bytes.
STAMP = (1980, 1, 1, 0, 0, 0)


def top_name(path: str) -> str:
    first = path.split("/")[0]
    return first[:-3] if first.endswith(".py") else first


def kept(path: str) -> bool:
    top = top_name(path)
    if top == "encodings":
        rest = path[len("encodings/"):]
        return rest == "" or rest.removesuffix(".py") in ENCODINGS
    return top in KEEP


def left_out(names: list[str]) -> list[str]:
    """The top-level module names of the full zip's `names` that the cut leaves out."""
    return sorted({top_name(n) for n in names if not kept(n) and top_name(n) != "encodings"})


def cut(full: bytes) -> bytes:
    """The page's standard library: `full` (Pyodide's zip) without what the page does not
    use, plus the finder that names what was left out. Deterministic."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(full)) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
        names = source.namelist()
        finder = FINDER % {"names": tuple(left_out(names))}
        entries = [(n, source.read(n)) for n in names if kept(n)] + [("sitecustomize.py", finder.encode())]
        for name, data in sorted(entries):
            info = zipfile.ZipInfo(name, STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o40755 if name.endswith("/") else 0o100644) << 16
            target.writestr(info, data, compresslevel=9)
    return out.getvalue()


def compiled(source: bytes, npm_dir: Path, cache: Path = CACHE) -> bytes:
    """`source` (a cut zip) with every module compiled to bytecode by the Pyodide in
    `npm_dir` (sitebuild/stdlib_pyc.mjs); made once per zip and Pyodide, then cached."""
    version = json.loads((npm_dir / "package.json").read_text())["version"]
    key = hashlib.sha256(source + version.encode()).hexdigest()[:16]
    out = cache / f"{key}.pyc.zip"
    if out.exists():
        return out.read_bytes()
    if shutil.which("node") is None:
        raise BuildError("node is needed to compile the standard library (run `npm ci`; see README)")
    cache.mkdir(parents=True, exist_ok=True)
    given, partial = cache / f"{key}.source.zip", cache / f"{key}.part"
    given.write_bytes(source)
    try:
        done = subprocess.run(["node", str(COMPILE_SCRIPT), str(npm_dir), str(given), str(partial)],
                              capture_output=True, text=True)
    finally:
        given.unlink()
    if done.returncode != 0:
        raise BuildError(f"compiling the standard library failed: {done.stderr.strip()[-800:]}")
    partial.rename(out)
    return out.read_bytes()
