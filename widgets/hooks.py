"""MkDocs hooks that ship the simulations with the site.

At every build (and every rebuild under `mkdocs serve`) this file:

1. builds the `pysim` wheel from the working tree, names it with a content hash
   (a wheel build tag, `pysim-0.1.0-0h<hash>-py3-none-any.whl`) and registers it in
   the site's own `pyodide-lock.json` with pyodide-build's `pyodide lockfile
   add-wheels`, so Pyodide loads `pysim` by name and checks its sha256;
2. copies the pinned Pyodide runtime from `node_modules/pyodide` into
   `site/assets/pyodide/<version>/` (never a CDN);
3. copies the widget scripts and styles under content-hashed names, and links them
   only from pages that hold a widget (other pages load nothing of ours);
4. fills each `<div class="pysim-widget" data-widget="NAME">` in a page with the
   widget's default view model, computed here by `pysim.bridge` in CPython. The
   page draws that at once; Pyodide later recomputes the same thing (a browser
   test checks they are equal), so the picture is real before Python starts.
"""

from __future__ import annotations

import hashlib
import html
import importlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.pysim")

ROOT = Path(__file__).resolve().parent.parent
WIDGETS_DIR = ROOT / "widgets"
PYODIDE_NPM = ROOT / "node_modules" / "pyodide"
# The runtime files a browser needs; the rest of the npm package is for Node and types.
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")

# Front-end files. Every widget page gets the shared runtime and styles; a widget
# named NAME brings widgets/NAME.js (and widgets/NAME.css if there is one), so the
# simulation module, the bridge name and the widget file share one word.
RUNTIME = "runtime.js"
WORKER = "worker.js"
SHARED_STYLES = ("widgets.css",)
# Libraries from npm that a widget needs, copied from node_modules (pinned in
# package.json) and loaded before the widget's own script.
VENDOR = {
    "batch_size": ("uplot/dist/uPlot.iife.min.js", "uplot/dist/uPlot.min.css"),
}

# Math from pymdownx.arithmatex (generic mode): \( ... \) inline, \[ ... \] display.
MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<display>.*?)\\\])</(?P=tag)>',
    re.S,
)
# A figure computed by pysim.figures: {{ little.w_s }} or {{ little.w_s:.1f }}.
FIGURE = re.compile(r"\{\{\s*(?P<name>[a-z_][a-z0-9_]*\.[a-z0-9_]+)\s*(?::(?P<spec>[^}]*))?\}\}")
KATEX_NPM = ROOT / "node_modules" / "katex"

WIDGET_DIV = re.compile(
    r'<div class="pysim-widget" data-widget="(?P<name>[a-z_]+)"(?P<attrs>[^>]*)>\s*</div>'
)
CONFIG_ATTR = re.compile(r"data-config='(?P<json>[^']*)'")

_state: dict = {}


# ---------------------------------------------------------------- helpers


def _short_hash(data: bytes, n: int = 12) -> str:
    return hashlib.sha256(data).hexdigest()[:n]


def _hashed_name(filename: str, data: bytes) -> str:
    stem, dot, ext = filename.rpartition(".")
    return f"{stem}.{_short_hash(data, 10)}.{ext}"


def _fresh_bridge():
    """Import pysim.bridge from the working tree, dropping any copy from a previous
    rebuild so `mkdocs serve` always pre-renders with the code on disk."""
    sys.path.insert(0, str(ROOT))
    try:
        for name in [m for m in sys.modules if m == "pysim" or m.startswith("pysim.")]:
            del sys.modules[name]
        return importlib.import_module("pysim.bridge")
    finally:
        sys.path.remove(str(ROOT))


def _pyodide_cli() -> str:
    """pyodide-build's CLI. It needs Python >= 3.12, so the Makefile gives it a venv
    of its own (.venv-lock); PYODIDE_CLI overrides the path."""
    cli = os.environ.get("PYODIDE_CLI") or str(ROOT / ".venv-lock" / "bin" / "pyodide")
    if not Path(cli).exists():
        raise SystemExit(
            f"pysim hook: pyodide-build's CLI not found at {cli}. "
            "Run `make site` (it creates .venv-lock with Python >= 3.12), or set PYODIDE_CLI."
        )
    return cli


def _build_wheel(outdir: Path) -> Path:
    """Build the pure-Python wheel with hatchling (reproducible: same code, same bytes)."""
    from hatchling.build import build_wheel

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        name = build_wheel(str(outdir))
    finally:
        os.chdir(cwd)
    return outdir / name


def _pyodide_version() -> str:
    return json.loads((PYODIDE_NPM / "package.json").read_text())["version"]


# ---------------------------------------------------------------- MkDocs events


def on_pre_build(config, **kwargs):
    if not PYODIDE_NPM.exists():
        raise SystemExit("pysim hook: node_modules/pyodide is missing; run `npm ci` (or `make site`).")
    _state.clear()
    _state["bridge"] = bridge = _fresh_bridge()
    _state["figures"] = importlib.import_module("pysim.figures")
    # Every simulation's fields with their ranges: the widgets size their controls from it.
    _state["fields"] = json.loads(bridge.call("describe", ""))["result"]
    version = _pyodide_version()
    _state["pyodide_dir"] = f"assets/pyodide/{version}/"
    katex_version = json.loads((KATEX_NPM / "package.json").read_text())["version"]
    _state["katex_dir"] = f"assets/vendor/katex/{katex_version}/"

    # Content-hashed front-end files: a hosted site may cache them forever.
    assets = {}
    for path in sorted([*WIDGETS_DIR.glob("*.js"), *WIDGETS_DIR.glob("*.css")]):
        data = path.read_bytes()
        assets[path.name] = ("assets/widgets/" + _hashed_name(path.name, data), data)
    for files in VENDOR.values():
        for rel in files:
            data = (ROOT / "node_modules" / rel).read_bytes()
            assets[rel] = ("assets/vendor/" + _hashed_name(Path(rel).name, data), data)
    _state["assets"] = assets

    # The wheel, named by its content.
    tmp = Path(tempfile.mkdtemp(prefix="pysim-wheel-"))
    wheel = _build_wheel(tmp)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    name, version_, rest = wheel.name.split("-", 2)
    hashed = tmp / f"{name}-{version_}-0h{digest[:12]}-{rest}"
    wheel.rename(hashed)
    _state["wheel"] = hashed
    _state["wheel_sha256"] = digest
    # The lock file names the wheel, so it carries the wheel's hash too.
    _state["lock_name"] = f"pyodide-lock.{digest[:12]}.json"
    log.info("pysim wheel %s", hashed.name)


def on_page_markdown(markdown, page, config, files, **kwargs):
    """Replace {{ figure }} placeholders with numbers computed by pysim.figures."""
    figures = _state["figures"]

    def fill(match: re.Match) -> str:
        name, spec = match.group("name"), match.group("spec") or ""
        try:
            value = figures.figure(name)
        except KeyError:
            raise SystemExit(f"pysim hook: {page.file.src_path} names unknown figure {name!r}") from None
        return format(value, spec.strip())

    return FIGURE.sub(fill, markdown)


def _render_math(html_text: str, page) -> str:
    """Render every formula of the page with KaTeX at build time (one node call)."""
    found = list(MATH.finditer(html_text))
    if not found:
        return html_text
    items = [{"tex": html.unescape(m.group("inline") if m.group("inline") is not None else m.group("display")).strip(),
              "display": m.group("display") is not None} for m in found]
    result = subprocess.run(["node", str(WIDGETS_DIR / "render_math.mjs")], input=json.dumps(items),
                            capture_output=True, text=True, check=True, cwd=ROOT)
    rendered = json.loads(result.stdout)
    out, last = [], 0
    for m, item, r in zip(found, items, rendered):
        if "error" in r:
            raise SystemExit(f"pysim hook: bad math on {page.file.src_path}: {item['tex']!r}: {r['error']}")
        tag = m.group("tag")
        out.append(html_text[last:m.start()])
        out.append(f'<{tag} class="arithmatex">{r["html"]}</{tag}>')
        last = m.end()
    out.append(html_text[last:])
    page.meta["pysim_math"] = True
    return "".join(out)


def on_page_content(html_text, page, config, files, **kwargs):
    """Render math, and fill each widget placeholder with its pre-rendered view model."""
    html_text = _render_math(html_text, page)
    bridge = _state["bridge"]
    found = []

    def fill(match: re.Match) -> str:
        name = match.group("name")
        if f"{name}.js" not in _state["assets"]:
            raise SystemExit(f"pysim hook: page {page.file.src_path} uses widget {name!r} but widgets/{name}.js does not exist")
        cfg_match = CONFIG_ATTR.search(match.group("attrs"))
        cfg = json.loads(html.unescape(cfg_match.group("json"))) if cfg_match else {}
        answer = json.loads(bridge.call(name, json.dumps({"config": cfg})))
        if not answer["ok"]:
            raise SystemExit(f"pysim hook: widget {name!r} on {page.file.src_path}: {answer['error']}")
        found.append(name)
        fields = _state["fields"][name]["fields"]
        model = json.dumps({"config": cfg, "view": answer["result"], "fields": fields}, separators=(",", ":"))
        # "</" cannot appear inside a script element; JSON allows the escaped form.
        model = model.replace("</", "<\\/")
        return (
            f'<div class="pysim-widget" data-widget="{name}" id="widget-{name}"'
            f"{match.group('attrs')}>"
            f'<script type="application/json" class="pysim-prerender">{model}</script>'
            f'<p class="pysim-noscript">This interactive simulation needs JavaScript; '
            f"its numbers are also in the text.</p></div>"
        )

    html_text = WIDGET_DIV.sub(fill, html_text)
    page.meta["pysim_widgets"] = found
    return html_text


def on_post_page(output, page, config, **kwargs):
    """Link the widget runtime into pages that hold a widget, and only those."""
    up = "../" * page.url.count("/")  # from this page back to the site root
    if page.meta.get("pysim_math"):
        katex_css = f'<link rel="stylesheet" href="{up}{_state["katex_dir"]}katex.min.css">'
        output = output.replace("</head>", katex_css + "\n</head>", 1)
    widgets = page.meta.get("pysim_widgets")
    if not widgets:
        return output
    assets = _state["assets"]
    runtime = {
        "pyodide": up + _state["pyodide_dir"],
        "lock": up + _state["pyodide_dir"] + _state["lock_name"],
        "worker": up + assets[WORKER][0],
        "package": "pysim",
    }
    names = sorted(set(widgets))
    vendor = [rel for n in names for rel in VENDOR.get(n, ())]
    styles = [*(v for v in vendor if v.endswith(".css")), *SHARED_STYLES,
              *(f"{n}.css" for n in names if f"{n}.css" in assets)]
    scripts = [*(v for v in vendor if v.endswith(".js")), RUNTIME, *(f"{n}.js" for n in names)]
    head = [f'<link rel="stylesheet" href="{up}{assets[f][0]}">' for f in styles]
    head.append(
        '<script type="application/json" id="pysim-runtime">'
        + json.dumps(runtime).replace("</", "<\\/")
        + "</script>"
    )
    # Deferred classic scripts run in order, runtime first, so widgets can register.
    head += [f'<script defer src="{up}{assets[f][0]}"></script>' for f in scripts]
    return output.replace("</head>", "\n".join(head) + "\n</head>", 1)


def on_post_build(config, **kwargs):
    site = Path(config.site_dir)
    # Pyodide runtime, from the pinned npm package.
    pyodide_out = site / _state["pyodide_dir"]
    pyodide_out.mkdir(parents=True, exist_ok=True)
    for filename in PYODIDE_FILES:
        shutil.copy2(PYODIDE_NPM / filename, pyodide_out / filename)
    # KaTeX's stylesheet and fonts (math is rendered at build time; no KaTeX script ships).
    katex_out = site / _state["katex_dir"]
    shutil.copytree(KATEX_NPM / "dist" / "fonts", katex_out / "fonts", dirs_exist_ok=True)
    shutil.copy2(KATEX_NPM / "dist" / "katex.min.css", katex_out / "katex.min.css")
    # Our front-end files.
    for path, data in _state["assets"].values():
        out = site / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    # The wheel and the lock file that names it.
    wheel = _state["wheel"]
    shutil.copy2(wheel, pyodide_out / wheel.name)
    _write_lock(pyodide_out, wheel.name)


def _write_lock(pyodide_out: Path, wheel_name: str) -> None:
    """Register the wheel with `pyodide lockfile add-wheels`, then keep only the
    entries this site can serve (the npm package holds the core runtime only)."""
    cli = _pyodide_cli()
    with tempfile.TemporaryDirectory() as tmp:
        new_lock = Path(tmp) / "lock.json"
        subprocess.run(
            [cli, "lockfile", "add-wheels", "--input", str(PYODIDE_NPM / "pyodide-lock.json"),
             "--output", str(new_lock), "--base-path", str(pyodide_out), str(pyodide_out / wheel_name)],
            check=True, capture_output=True, text=True,
        )
        lock = json.loads(new_lock.read_text())
    entry = lock["packages"]["pysim"]
    assert entry["file_name"] == wheel_name, entry
    assert entry["sha256"] == _state["wheel_sha256"], "lock file and wheel disagree"
    lock["packages"] = {"pysim": entry}
    (pyodide_out / _state["lock_name"]).write_text(json.dumps(lock, indent=1, sort_keys=True))
