"""The hosted build's precompressed copies (sitebuild/precompress.py): FILE.br and
FILE.gz decompress to FILE's exact bytes, are written only where they pay, and come from
the cache when the content is unchanged. (That every copy in the built site matches its
file, written after every other step, is tests/browser/test_offline.py's.)"""

import gzip
import os

import brotli

from sitebuild import precompress


def test_copies_decompress_to_the_file_and_only_pay(tmp_path, monkeypatch):
    monkeypatch.setattr(precompress, "CACHE", tmp_path / "cache")
    site = tmp_path / "site"
    (site / "assets").mkdir(parents=True)
    text = ("<p>continuous batching</p>\n" * 400).encode()
    (site / "index.html").write_bytes(text)
    (site / "assets" / "small.js").write_bytes(b"let x = 1;\n")  # under MIN_BYTES
    (site / "assets" / "noise.json").write_bytes(os.urandom(4096))  # does not compress
    (site / "assets" / "trace.txt.gz").write_bytes(gzip.compress(text))  # packed already
    files, saved = precompress.write_copies(site)
    assert files == 2  # index.html and noise.json were worth trying
    assert brotli.decompress((site / "index.html.br").read_bytes()) == text
    assert gzip.decompress((site / "index.html.gz").read_bytes()) == text
    assert saved == 2 * len(text) - len((site / "index.html.br").read_bytes()) - len((site / "index.html.gz").read_bytes())
    made = sorted(p.name for p in site.rglob("*.br")) + sorted(p.name for p in site.rglob("*.gz") if p.name != "trace.txt.gz")
    assert made == ["index.html.br", "index.html.gz"]
    # gzip's copy carries no time stamp: two builds write the same bytes.
    assert (site / "index.html.gz").read_bytes()[4:8] == b"\0\0\0\0"


def test_unchanged_content_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(precompress, "CACHE", tmp_path / "cache")
    site = tmp_path / "site"
    site.mkdir()
    text = b"the same words, again and again. " * 200
    (site / "a.css").write_bytes(text)
    precompress.write_copies(site)
    calls = []
    monkeypatch.setitem(precompress.ENCODERS, ".br", lambda data: calls.append(data) or b"")
    (site / "b.css").write_bytes(text)  # another file, the same bytes: no new compression
    precompress.write_copies(site)
    assert calls == []
    assert (site / "b.css.br").read_bytes() == (site / "a.css.br").read_bytes()
    (site / "c.css").write_bytes(text + b"!")  # new content is compressed
    precompress.write_copies(site)
    assert calls == [text + b"!"]
