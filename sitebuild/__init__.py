"""The site's build steps, as plain functions that take files or strings and return them.

One module per job:

    wheel.py            the pysim wheel, named by its content, and the pyodide-lock.json naming it
    pyodide_runtime.py  the pinned Pyodide runtime files from node_modules
    assets.py           our widget scripts and styles (and vendored libraries) under
                        content-hashed names, and the tags one page needs to load them;
                        the site's own stylesheet (widgets/theme.css), linked by every page
    facts.py            docs/facts.toml, the real systems' facts, and their {{ fact.KEY }} in a page
    predict.py          docs/predict.toml, the "predict first" checkpoints, each with pysim's
                        answer read from its figures, in a page's checkpoint tags
    figures.py          {{ group.key }} numbers and {{ plot.NAME }} pictures in a page's Markdown
    plots.py            the SVG plots those lines draw, from pysim.figures' numbers
    katex.py            formulas rendered to HTML by KaTeX at build time, and its stylesheet and fonts
    tables.py           the prose's tables made reachable by the keyboard (they scroll sideways)
    prerender.py        each widget placeholder filled with its default view model, computed by pysim
    csp.py              the Content-Security-Policy of a finished page
    iframe_worker.py    the shim Material's offline plugin needs for search from file://
    offline_zip.py      the whole site in one zip for offline reading

`hooks.py` is the only file that knows MkDocs's events: it adapts them to these
functions and keeps what one build needs in one small object. (`__main__.py` runs the
two builds, as `mkdocs build` would, in one process.) The HTML around our
tags comes from Material's own template blocks (`overrides/main.html`), not from
editing Material's output as strings.

Why the split. Material for MkDocs 9.x has announced its end of life (the 9.8.1 release
notes, github.com/squidfunk/mkdocs-material/releases/tag/9.8.1: critical fixes and
security updates until May 5, 2027), and MkDocs 1.x itself is unmaintained. Their
successor, Zensical, reads an existing mkdocs.yml and Material's template overrides but
has no plugin API yet. Steps that do not depend on MkDocs's plugin API can be called
from whatever runs the build next, or from a test, so the move stays open; until then
pyproject.toml pins `mkdocs<2` and `mkdocs-material` 9.x.

None of this ships to the reader: the wheel holds `pysim/` only.
"""

from __future__ import annotations

from pathlib import Path

# The repository: pysim/, widgets/, docs/, node_modules/ are all found from here.
ROOT = Path(__file__).resolve().parent.parent
NODE_MODULES = ROOT / "node_modules"

# What to write into the built site: its path in the site -> the bytes, or a file to copy.
Files = dict[str, "bytes | Path"]


class BuildError(Exception):
    """A page or a source that cannot be built (the message names the file and why)."""


def write_files(site_dir: Path, files: Files) -> None:
    """Write each file into the built site, making folders as needed."""
    for rel, content in files.items():
        out = site_dir / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(content if isinstance(content, bytes) else Path(content).read_bytes())
