"""Precompressed copies of the hosted build's text files: FILE.br (Brotli, quality 11) and
FILE.gz (gzip, level 9) beside FILE.

A host that serves such copies (nginx's `gzip_static` and the ngx_brotli module's
`brotli_static`, and CDNs that honour them) sends them when the browser offers the
encoding, and spends no time compressing; a host that compresses on the fly ignores
them. Brotli at quality 11 is far too slow to run per request (for Pyodide's wasm it
takes tens of seconds) and gives smaller files than hosts make on the fly (README,
"Deploying"; bench/bench_network.py prints the sizes).

The download build (site-offline/) gets none: it is read from disk, where nothing
decompresses. Each copy is kept under .cache/precompressed/ by the SHA-256 of what it
compresses, so a rebuild compresses only the files that changed.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import brotli

# Text, and wasm and TrueType fonts, compress well; .gz, .zip, .whl, woff fonts and
# images are compressed already (bench/bench_network.py's host serves the same set).
SUFFIXES = (".html", ".css", ".js", ".mjs", ".json", ".map", ".xml", ".svg", ".txt", ".wasm", ".ttf")
MIN_BYTES = 1024  # below this the header costs about as much as the bytes saved
KEEP_AT_MOST = 0.9  # a copy that saves less than a tenth is not written
CACHE = Path(__file__).resolve().parent.parent / ".cache" / "precompressed"
ENCODERS = {
    ".br": lambda data: brotli.compress(data, quality=11),
    ".gz": lambda data: gzip.compress(data, compresslevel=9, mtime=0),  # mtime 0: the same bytes every build
}


def wanted(path: Path) -> bool:
    return path.suffix in SUFFIXES and path.stat().st_size >= MIN_BYTES


def _copy(data: bytes, ext: str) -> bytes:
    key = CACHE / (hashlib.sha256(data).hexdigest() + ext)
    if key.is_file():
        return key.read_bytes()
    packed = ENCODERS[ext](data)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = key.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(packed)
    tmp.replace(key)  # whole or absent, should two builds run at once
    return packed


def _write(path: Path) -> int:
    """Write path's copies that pay; the bytes they save over the original, summed."""
    data = path.read_bytes()
    saved = 0
    for ext in ENCODERS:
        packed = _copy(data, ext)
        target = path.with_name(path.name + ext)
        if len(packed) <= KEEP_AT_MOST * len(data):
            target.write_bytes(packed)
            saved += len(data) - len(packed)
        elif target.exists():
            target.unlink()
    return saved


def write_copies(site: Path) -> tuple[int, int]:
    """Precompress every file of `site` worth it: (files, bytes saved over all copies).
    Brotli and zlib release the GIL while they compress, so threads share the cores."""
    files = sorted(p for p in site.rglob("*") if p.is_file() and wanted(p))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        saved = sum(pool.map(_write, files))
    return len(files), saved
