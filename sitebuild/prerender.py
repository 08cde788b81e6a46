"""Each widget's default view model, computed by pysim in CPython and written into its page.

A page holds `<div class="pysim-widget" data-widget="NAME"></div>` (optionally with a
`data-config='{...}'` attribute); this step fills it with a JSON data block holding the
config, the view model `pysim.bridge.call(NAME, ...)` returns for it, and the fields
`describe` lists for NAME. The widget draws that model the moment its script runs, so a
reader sees real numbers before Python has started, and still sees them where Python
cannot start (a page opened from disk). Pyodide later computes the same model (pysim is
deterministic) and a browser test checks that the two are equal.
"""

from __future__ import annotations

import html
import importlib
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterable

from . import ROOT, BuildError

WIDGET_DIV = re.compile(
    r'<div class="pysim-widget" data-widget="(?P<name>[a-z_]+)"(?P<attrs>[^>]*)>\s*</div>'
)
CONFIG_ATTR = re.compile(r"data-config='(?P<json>[^']*)'")
# data-companions='{"SIM": "FIELD"}': a simulation the widget calls besides its own (the
# policy lab's puzzles), drawn before Python too: its fields, and its view for each
# option of its choice FIELD (one puzzle each), at the defaults otherwise.
COMPANIONS_ATTR = re.compile(r"data-companions='(?P<json>[^']*)'")
DATA_BLOCK = re.compile(r'<template class="pysim-prerender">(?P<model>.*?)</template>', re.S)
NOSCRIPT = ('<p class="pysim-noscript">This interactive simulation needs JavaScript; '
            "its numbers are also in the text.</p>")


_IMPORTED: tuple | None = None  # the pysim sources as they were when last imported


def sources(source: Path = ROOT) -> tuple:
    """What identifies the pysim on disk: each file's path, size and modification time."""
    files = sorted(p for p in (source / "pysim").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return tuple((str(p.relative_to(source)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)


def fresh_import(name: str, source: Path = ROOT) -> ModuleType:
    """Import `name` (e.g. "pysim.bridge") from the working tree. A copy of pysim that a
    previous build imported is dropped when any of its files changed since, so `mkdocs
    serve` always uses the code on disk; while none did, it is kept, with the figures it
    has computed (`python -m sitebuild` makes the two builds in one process)."""
    global _IMPORTED
    now = sources(source)
    sys.path.insert(0, str(source))
    try:
        if now != _IMPORTED:
            for loaded in [m for m in sys.modules if m == "pysim" or m.startswith("pysim.")]:
                del sys.modules[loaded]
        module = importlib.import_module(name)
        _IMPORTED = now
        return module
    finally:
        sys.path.remove(str(source))


def describe(call: Callable[[str, str], str]) -> dict:
    """Every simulation's fields with their ranges, by simulation name."""
    return json.loads(call("describe", ""))["result"]


def prerender(page_html: str, call: Callable[[str, str], str], fields: dict, widgets: set[str],
              where: str = "a page", files: dict[str, dict[str, str]] | None = None) -> tuple[str, list[str]]:
    """The page with every widget placeholder filled, and the widgets' names in order.

    `call` is `pysim.bridge.call`; `fields` is what `describe` returned; `widgets` holds
    the names that have a script (widgets/NAME.js). `files` gives, by widget, the data
    files its calls read (Pyodide path -> URL, `assets.data_urls`): the model carries
    them as "files", and the widget passes them on (`runtime.call(name, payload, {files})`).
    """
    found = []

    def fill(match: re.Match) -> str:
        name = match.group("name")
        if name not in widgets:
            raise BuildError(f"{where} uses widget {name!r} but widgets/{name}.js does not exist")
        cfg_match = CONFIG_ATTR.search(match.group("attrs"))
        cfg = json.loads(html.unescape(cfg_match.group("json"))) if cfg_match else {}
        answer = json.loads(call(name, json.dumps({"config": cfg})))
        if not answer["ok"]:
            raise BuildError(f"widget {name!r} on {where}: {answer['error']}")
        found.append(name)
        model = {"config": cfg, "view": answer["result"], "fields": fields[name]["fields"]}
        if files and name in files:
            model["files"] = files[name]
        comp_match = COMPANIONS_ATTR.search(match.group("attrs"))
        if comp_match:
            model["companions"] = companions(json.loads(html.unescape(comp_match.group("json"))), call, fields, where)
        # The data block is a <template>, whose content the browser parses but never runs or
        # shows, not a <script type="application/json">: Material's instant navigation
        # re-creates every <script> of the page it swaps in as a plain (runnable) one,
        # dropping its type and class. So the JSON is HTML text here, escaped as such.
        model = html.escape(json.dumps(model, separators=(",", ":")), quote=False)
        # data-search-exclude: Material's search leaves the block out of its index (its
        # docs, "Setting up site search", "Search exclusion"). A <template>'s content is
        # text to the indexer, and the models are data, not the chapter's words.
        return (f'<div class="pysim-widget" data-widget="{name}" id="widget-{name}"{match.group("attrs")} '
                f'data-search-exclude>'
                f'<template class="pysim-prerender">{model}</template>'
                f"{NOSCRIPT}</div>")

    return WIDGET_DIV.sub(fill, page_html), found


def companions(wanted: dict, call: Callable[[str, str], str], fields: dict, where: str) -> dict:
    """For each companion simulation SIM (data-companions): its fields, and its view
    model for every option of its choice field FIELD, computed by pysim."""
    out = {}
    for sim, field in wanted.items():
        if sim not in fields:
            raise BuildError(f"{where}: companion {sim!r} is no simulation")
        described = fields[sim]["fields"]
        choice = next((f for f in described if f["name"] == field and f["kind"] == "choice"), None)
        if choice is None:
            raise BuildError(f"{where}: companion {sim!r} has no choice field {field!r}")
        views = {}
        for option in choice["options"]:
            answer = json.loads(call(sim, json.dumps({"config": {field: option}})))
            if not answer["ok"]:
                raise BuildError(f"companion {sim!r} ({field}={option}) on {where}: {answer['error']}")
            views[option] = answer["result"]
        out[sim] = {"field": field, "fields": described, "views": views}
    return out


def widget_pages(pages: Iterable[tuple[str, str]]) -> list[str]:
    """Of (url, Markdown source) pairs in the nav's order, the urls of the pages that
    hold a widget, in that order. Known before any page is rendered, so every page can
    carry the list (navigation.js looks ahead at the widget pages next to the reader's)."""
    return [url for url, markdown in pages if WIDGET_DIV.search(markdown)]


def models(page_html: str) -> list[dict]:
    """The models a finished page carries, in page order (the inverse of `prerender`'s
    data blocks; the tests read pages with it)."""
    return [json.loads(html.unescape(m["model"])) for m in DATA_BLOCK.finditer(page_html)]
