"""Our front-end files under content-hashed names, and what one page links of them.

A file's name changes whenever its bytes do (`rpc.<hash>.js`), so a host can cache
every file under assets/widgets/ and assets/vendor/ for a year and a reader never runs
stale code (README, "Deploying"). Only pages that hold a widget link any of them: a page
without one loads none of our scripts.

A widget named NAME brings widgets/NAME.js (and widgets/NAME.css if there is one), so
the simulation module, the bridge name and the widget file share one word.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from . import NODE_MODULES, ROOT, Files

WIDGETS_DIR = ROOT / "widgets"
# Every widget page runs these, in this order, before the widgets' own scripts; each one
# needs only those before it (widgets/README.md says what each does): DOM helpers; the
# worker's client, the status line, when Python starts, mounting (which registers the
# widgets and arms the start); search's wait for Python; the describe-driven controls,
# the playback of a run's steps, pin and compare, the link codec, what unmount releases,
# redraw on a new width or scheme; a widget's life while mounted.
SHARED_SCRIPTS = ("dom.js", "rpc.js", "status.js", "boot.js", "mount.js", "search.js", "controls.js",
                  "playback.js", "pin.js", "link.js", "track.js", "redraw.js", "live.js")
WORKER = "worker.js"              # started by rpc.js, never linked from a page
SHARED_STYLES = ("widgets.css",)
# The site's own stylesheet, linked by every page, widget or not (mkdocs.yml's extra_css,
# set by sitebuild/hooks.py): Material's colours brought up to WCAG 2.1 AA and the prose's
# links underlined. It is not a widget's, so it is not under assets/widgets/, from which a
# page without a widget loads nothing.
THEME = "theme.css"
THEME_DIR = "assets/stylesheets"
# Instant navigation's part (widgets/navigation.js): on every page of the hosted build
# (mkdocs.yml's extra_javascript, set by sitebuild/hooks.py), since a reader may enter a
# widget page from one without widgets. Not under assets/widgets/ either: it is small,
# and loads neither Python nor any widget until a page with widgets comes in.
NAVIGATION = "navigation.js"
NAVIGATION_DIR = "assets/javascripts"
PAGE_WIDE = (THEME, NAVIGATION)  # files every page may link, not a widget's
# The "predict first" checkpoints (sitebuild/predict.py): a kit piece that needs neither
# Python nor the widget kit, linked by every page that holds a checkpoint, widget or not,
# after the widgets' scripts. Its classes start with `predict-`.
PREDICT_SCRIPT, PREDICT_STYLE = "predict.js", "predict.css"
# Libraries from npm (pinned in package.json) a widget needs before its own script runs.
VENDOR = {
    "batch_size": ("uplot/dist/uPlot.iife.min.js", "uplot/dist/uPlot.min.css"),
    "lab": ("uplot/dist/uPlot.iife.min.js", "uplot/dist/uPlot.min.css"),
    "cluster": ("uplot/dist/uPlot.iife.min.js", "uplot/dist/uPlot.min.css"),
    "policies": ("uplot/dist/uPlot.iife.min.js", "uplot/dist/uPlot.min.css"),
}
# Our chart kit on uPlot (widgets/charts.js: palette, axes, markers, the latency CDF):
# every page that loads uPlot for a widget gets it too, after the shared scripts.
UPLOT = "uplot/dist/uPlot.iife.min.js"
CHARTS = "charts.js"
# Kit pieces only some widgets take, after the shared scripts and the chart kit: the sweep
# panel (widgets/sweep.js, PySim.sweepPanel: a sweep of pysim calls with progress, Cancel,
# pysim's answer and a table), the lab's and the cluster's.
KITS = {
    "lab": ("sweep.js",),
    "cluster": ("sweep.js",),
}
# The code editor (widgets/editor.js: a text area, then Ace from VENDOR_LATER, which
# widgets/later.js loads when asked): every page holding a widget that edits the reader's
# code gets both, after the shared scripts.
LATER = "later.js"
EDITOR = "editor.js"
# Libraries a widget can draw its picture without: the widget loads them itself later
# (PySim.loadLater(NAME), in this order) so they do not compete with Python's start.
VENDOR_LATER = {
    # Exercise 5's editor: Ace (a classic script exposing `ace`), with its Python mode
    # and a light and a dark theme, so Ace never fetches a module itself. Until it
    # comes, the code sits in a plain text area.
    "exercises": ("ace-builds/src-min-noconflict/ace.js",
                  "ace-builds/src-min-noconflict/mode-python.js",
                  "ace-builds/src-min-noconflict/theme-chrome.js",
                  "ace-builds/src-min-noconflict/theme-tomorrow_night.js"),
    # The policy lab's editor (page 9): the same Ace, for the reader's policy.
    "policies": ("ace-builds/src-min-noconflict/ace.js",
                 "ace-builds/src-min-noconflict/mode-python.js",
                 "ace-builds/src-min-noconflict/theme-chrome.js",
                 "ace-builds/src-min-noconflict/theme-tomorrow_night.js"),
}


@dataclass(frozen=True)
class Asset:
    path: str    # in the site, e.g. assets/widgets/rpc.caecde224a.js
    data: bytes


def hashed_name(filename: str, data: bytes) -> str:
    """`rpc.js` -> `rpc.<first 10 hex digits of its sha256>.js`."""
    stem, _, ext = filename.rpartition(".")
    return f"{stem}.{hashlib.sha256(data).hexdigest()[:10]}.{ext}"


def hashed(folder: str, source: Path, name: str | None = None) -> Asset:
    data = source.read_bytes()
    return Asset(f"{folder}/{hashed_name(name or source.name, data)}", data)


def collect(widgets_dir: Path = WIDGETS_DIR, node_modules: Path = NODE_MODULES) -> dict[str, Asset]:
    """Every widget script and style (by file name) and every vendored file (by its
    path under node_modules), hashed."""
    found = {path.name: hashed("assets/widgets", path)
             for path in sorted([*widgets_dir.glob("*.js"), *widgets_dir.glob("*.css")]) if path.name not in PAGE_WIDE}
    for files in [*VENDOR.values(), *VENDOR_LATER.values()]:
        for rel in files:
            found[rel] = hashed("assets/vendor", node_modules / rel)
    return found


def theme(widgets_dir: Path = WIDGETS_DIR) -> Asset:
    """The site's stylesheet (THEME), hashed: `assets/stylesheets/theme.<hash>.css`."""
    return hashed(THEME_DIR, widgets_dir / THEME)


def navigation(widgets_dir: Path = WIDGETS_DIR) -> Asset:
    """Instant navigation's script (NAVIGATION), hashed: `assets/javascripts/navigation.<hash>.js`."""
    return hashed(NAVIGATION_DIR, widgets_dir / NAVIGATION)


def files(assets: dict[str, Asset]) -> Files:
    return {a.path: a.data for a in assets.values()}


def collect_data(sources: dict[str, dict[str, Path]]) -> dict[str, dict[str, Asset]]:
    """Data a widget downloads only when a reader uses it (the serving lab's traces),
    hashed under assets/data/ like the scripts: by widget, then by the path in Pyodide's
    file system where pysim reads the file (`conv.txt.gz` -> `assets/data/conv.txt.<hash>.gz`)."""
    return {widget: {fs_path: hashed("assets/data", source) for fs_path, source in sorted(found.items())}
            for widget, found in sorted(sources.items())}


def data_urls(data: dict[str, dict[str, Asset]], up: str = "") -> dict[str, dict[str, str]]:
    """By widget, Pyodide path -> URL relative to the page (`up` leads back to the root):
    the map a widget's calls carry, so the worker downloads what it has not got yet."""
    return {widget: {fs_path: up + a.path for fs_path, a in found.items()} for widget, found in data.items()}


def data_files(data: dict[str, dict[str, Asset]]) -> Files:
    return {a.path: a.data for found in data.values() for a in found.values()}


@dataclass(frozen=True)
class PageAssets:
    """What overrides/main.html writes into a widget page (URLs relative to the page)."""
    styles: list[str]     # stylesheets, in <head>
    runtime: str          # the JSON settings of rpc.js, in a data block in <head> ("": none)
    scripts: list[str]    # preloaded in <head>, run in order at the end of <body>


def widget_scripts(name: str, assets: dict[str, Asset]) -> list[str]:
    """A widget's scripts: widgets/NAME.js, after its parts NAME.PART.js (a second file
    for one concept of a large widget, e.g. chunked_prefill.text.js), in name order."""
    parts = sorted(f for f in assets if f.startswith(name + ".") and f.endswith(".js")
                   and f.count(".") == 2 and "/" not in f)
    return [*parts, f"{name}.js"]


def page_assets(widgets: list[str], assets: dict[str, Asset], runtime: dict, up: str = "",
                predict: bool = False) -> PageAssets:
    """The files a page holding `widgets` loads. `runtime` holds the worker's settings
    (paths in the site); `up` leads from the page back to the site's root. A page with a
    checkpoint (`predict`) loads predict.js and predict.css too; one without widgets,
    only those (and no runtime settings: nothing on it starts Python)."""
    extra_styles = [PREDICT_STYLE] if predict else []
    extra_scripts = [PREDICT_SCRIPT] if predict else []
    if not widgets:
        return PageAssets(styles=[up + assets[f].path for f in extra_styles], runtime="",
                          scripts=[up + assets[f].path for f in extra_scripts])
    names = sorted(set(widgets))
    vendor = [rel for n in names for rel in VENDOR.get(n, ())]
    styles = [*(v for v in vendor if v.endswith(".css")), *SHARED_STYLES,
              *(f"{n}.css" for n in names if f"{n}.css" in assets), *extra_styles]
    kit = [*([CHARTS] if UPLOT in vendor else []), *dict.fromkeys(f for n in names for f in KITS.get(n, ())),
           *([LATER, EDITOR] if any(n in VENDOR_LATER for n in names) else [])]
    scripts = [*(v for v in vendor if v.endswith(".js")), *SHARED_SCRIPTS, *kit,
               *(f for n in names for f in widget_scripts(n, assets)), *extra_scripts]
    settings = {
        "pyodide": up + runtime["pyodide"],
        "lock": up + runtime["lock"],
        "worker": up + assets[WORKER].path,
        "package": "pysim",
        "sizes": runtime["sizes"],
        "stdlib": up + runtime["stdlib"],  # the page's cut of it, as bytecode (sitebuild/stdlib.py)
        # Every widget's, not this page's only: rpc.js reads its settings once per
        # visit, and with instant navigation that visit spans pages. (Nothing here is
        # loaded until a widget asks.) So every widget page carries the same settings.
        "later": {n: [up + assets[rel].path for rel in files] for n, files in VENDOR_LATER.items()},
        # The pages that hold widgets, in the nav's order (hooks.on_nav): with Python
        # idle, navigation.js looks ahead at the ones next to the reader's page.
        "widget_pages": [up + url for url in runtime.get("widget_pages", [])],
    }
    return PageAssets(
        styles=[up + assets[f].path for f in styles],
        # "</" cannot appear inside a script element; JSON allows the escaped form.
        runtime=json.dumps(settings).replace("</", "<\\/"),
        scripts=[up + assets[f].path for f in scripts],
    )
