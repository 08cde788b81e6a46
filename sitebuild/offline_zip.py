"""The whole built site in one zip, for readers who download it (every page's footer
links to it: overrides/partials/copyright.html).

Entries are sorted and dated 1980-01-01 (the earliest date a zip entry can hold), so
the same site gives the same bytes. Inside the zip a page cannot offer the zip (it is
not inside itself): its footer points to the README.txt that says how to read the copy.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

from . import ROOT

PATH = "download/continuous-batching-site.zip"
# Where the download build (mkdocs-offline.yml's site_dir) writes its site and this zip;
# the hosted build copies the zip from there.
OFFLINE_SITE = ROOT / "site-offline"
FOLDER = "continuous-batching-site"
README = """\
Continuous Batching & Request Scheduling: the chapter for offline reading
========================================================================

To read it, open index.html (in this folder) in a web browser. Navigation, search,
the text and the pre-computed picture of every simulation work straight from disk.

To run the simulations live (real Python in your browser), serve this folder with any
local web server, for example:

    cd {folder}
    python3 -m http.server 8000

and open http://127.0.0.1:8000/ . Browsers do not start Python (a Web Worker loading
WebAssembly) for pages opened from disk, which is why the server is needed. Nothing is
fetched from the internet either way: Python (Pyodide) and everything else is in here.
"""
DOWNLOAD_LINK = re.compile(r'<a class="pysim-download" href="(?P<up>(?:\.\./)*)'
                           + re.escape(PATH) + r'" download>[^<]*</a>')


def footer_in_zip(page_html: str) -> str:
    """The page's download link turned into a pointer to the zip's README.txt."""
    return DOWNLOAD_LINK.sub(lambda m: f'<a class="pysim-download" href="{m["up"]}README.txt">'
                                       "Reading offline: see README.txt</a>", page_html)


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(f"{FOLDER}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16  # rw-r--r--, whoever built it
    return info


def site_zip(site_dir: Path) -> bytes:
    """The zip of every file in `site_dir` (but a zip already at PATH), with a README.txt."""
    files = sorted(p for p in site_dir.rglob("*") if p.is_file() and p != site_dir / PATH)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compresslevel=6) as zf:
        zf.writestr(_entry("README.txt"), README.format(folder=FOLDER))
        for path in files:
            data = path.read_bytes()
            if path.suffix == ".html":
                data = footer_in_zip(data.decode("utf-8")).encode("utf-8")
            zf.writestr(_entry(path.relative_to(site_dir).as_posix()), data)
    return out.getvalue()


def made_by_offline_build(offline_site: Path = OFFLINE_SITE) -> Path | None:
    """The zip the download build wrote, for the hosted build to offer, or None."""
    made = offline_site / PATH
    return made if made.is_file() else None
