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
   test checks they are equal), so the picture is real before Python starts;
5. gives every page a Content-Security-Policy that lets it run only the site's own
   scripts (and the sha256-listed inline scripts of Material), so nothing that slips
   into a page, and nothing from another host, can run.
"""

from __future__ import annotations

import base64
import hashlib
import html
import importlib
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from mkdocs.plugins import event_priority

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
# Libraries a widget can draw its picture without, loaded by the widget itself later
# (PySim.loadLater(NAME), in this order) so they do not compete with Python's start.
VENDOR_LATER = {
    # Exercise 5's editor: Ace (a classic script exposing `ace`), with its Python mode
    # and a light and a dark theme, so Ace never fetches a module itself. Until it
    # comes, the code sits in a plain text area.
    "exercises": ("ace-builds/src-min-noconflict/ace.js",
                 "ace-builds/src-min-noconflict/mode-python.js",
                 "ace-builds/src-min-noconflict/theme-chrome.js",
                 "ace-builds/src-min-noconflict/theme-tomorrow_night.js"),
}

# Math from pymdownx.arithmatex (generic mode): \( ... \) inline, \[ ... \] display.
MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<display>.*?)\\\])</(?P=tag)>',
    re.S,
)
# A figure computed by pysim.figures: {{ little.w_s }} or {{ little.w_s:.1f }}.
FIGURE = re.compile(r"\{\{\s*(?P<name>[a-z_][a-z0-9_]*\.[a-z0-9_]+)\s*(?::(?P<spec>[^}]*))?\}\}")
# A plot drawn at build time: a line holding only {{ plot.NAME }} becomes widgets/plots.py's NAME().
PLOT = re.compile(r"^[ \t]*\{\{\s*plot\.(?P<name>[a-z_][a-z0-9_]*)\s*\}\}[ \t]*$", re.M)
KATEX_NPM = ROOT / "node_modules" / "katex"

# Material's `offline` plugin makes search work from file:// with a shim that runs a
# Worker inside an iframe. It would fetch the shim from unpkg; we ship npm's copy.
IFRAME_WORKER = "iframe-worker/shim/index.js"
# The whole site in one zip for offline reading, linked from every page's footer.
SITE_ZIP = "download/continuous-batching-site.zip"
ZIP_FOLDER = "continuous-batching-site"
ZIP_README = """\
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


def _fresh_plots():
    """Load widgets/plots.py anew (it is not a package), after the fresh pysim import."""
    spec = importlib.util.spec_from_file_location("pysim_plots", WIDGETS_DIR / "plots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fresh_facts():
    """widgets/facts.py (the facts table's loader and renderer), loaded anew like plots."""
    spec = importlib.util.spec_from_file_location("pysim_facts", WIDGETS_DIR / "facts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fill_facts(markdown: str, page) -> str:
    """{{ fact.KEY }} -> the fact from docs/facts.toml with its version and source linked;
    a line {{ fact_sources }} -> every source of the table. (One call per page, before
    the figures: a fact's text may not hold a figure, but a page may hold both.)"""
    facts = _state["facts"]
    try:
        return facts.render(markdown, _state["fact_table"], page.file.src_path)
    except facts.FactError as e:
        raise SystemExit(f"pysim hook: {e}") from None


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


def _polyfill() -> tuple[str, bytes]:
    """The iframe-worker shim's site path (content-hashed) and bytes."""
    data = (ROOT / "node_modules" / IFRAME_WORKER).read_bytes()
    return "assets/vendor/" + _hashed_name("iframe-worker.js", data), data


def _pyodide_version() -> str:
    return json.loads((PYODIDE_NPM / "package.json").read_text())["version"]


# ---------------------------------------------------------------- MkDocs events


def on_config(config, **kwargs):
    """Point Material's `offline` plugin at the local iframe-worker shim. Whichever of
    the plugin and this hook runs first, no unpkg URL is left in `extra.polyfills`."""
    polyfills = [p for p in config.extra.get("polyfills", []) if "iframe-worker" not in str(p)]
    config.extra["polyfills"] = [*polyfills, _polyfill()[0]]
    return config


def on_pre_build(config, **kwargs):
    if not PYODIDE_NPM.exists():
        raise SystemExit("pysim hook: node_modules/pyodide is missing; run `npm ci` (or `make site`).")
    _state.clear()
    _state["bridge"] = bridge = _fresh_bridge()
    _state["figures"] = importlib.import_module("pysim.figures")
    _state["plots"] = _fresh_plots()
    _state["facts"] = facts = _fresh_facts()
    try:
        _state["fact_table"] = facts.load(Path(config.docs_dir) / "facts.toml")
    except facts.FactError as e:
        raise SystemExit(f"pysim hook: {e}") from None
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
    for files in [*VENDOR.values(), *VENDOR_LATER.values()]:
        for rel in files:
            data = (ROOT / "node_modules" / rel).read_bytes()
            assets[rel] = ("assets/vendor/" + _hashed_name(Path(rel).name, data), data)
    assets[IFRAME_WORKER] = _polyfill()
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
    """Replace {{ plot.NAME }} lines with SVG plots and {{ figure }} placeholders with
    numbers, both computed by pysim.figures."""
    figures, plots = _state["figures"], _state["plots"]
    markdown = _fill_facts(markdown, page)

    def draw(match: re.Match) -> str:
        name = match.group("name")
        if name.startswith("_") or not callable(getattr(plots, name, None)):
            raise SystemExit(f"pysim hook: {page.file.src_path} names unknown plot {name!r} (widgets/plots.py)")
        # A raw HTML block without blank lines, so Markdown passes it through untouched.
        # It scrolls sideways on a narrow screen rather than shrinking its text.
        return f'<div class="pysim-plot" style="overflow-x:auto">{getattr(plots, name)()}</div>'

    markdown = PLOT.sub(draw, markdown)

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


# After other plugins' on_post_page, so the policy hashes the page's final scripts.
@event_priority(-100)
def on_post_page(output, page, config, **kwargs):
    """Finish the page's HTML, then give it its Content-Security-Policy."""
    return _with_csp(_link_widgets(output, page))


def on_post_template(output_content, template_name, config, **kwargs):
    """Static templates (404.html) get the same policy as the pages."""
    return _with_csp(output_content) if template_name.endswith(".html") else output_content


MATERIAL_CONFIG = '<script id="__config" type="application/json">'  # just before its bundle


def _link_widgets(output, page):
    """Link the widget runtime into pages that hold a widget, and only those; give
    every page the footer link to the offline zip."""
    up = "../" * page.url.count("/")  # from this page back to the site root
    download = (f'<a class="pysim-download" href="{up}{SITE_ZIP}" download>'
                "Download for offline reading</a>")
    output = output.replace('<div class="md-copyright">', '<div class="md-copyright">' + download, 1)
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
        # Sizes of what the worker downloads, for the progress line ("3.1 of 13.4 MB").
        "sizes": {**{f: (PYODIDE_NPM / f).stat().st_size for f in PYODIDE_FILES},
                  _state["wheel"].name: _state["wheel"].stat().st_size},
    }
    names = sorted(set(widgets))
    runtime["later"] = {n: [up + assets[rel][0] for rel in VENDOR_LATER[n]] for n in names if n in VENDOR_LATER}
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
    # The scripts are fetched from the start (preload) but run at the end of the body,
    # in order (runtime first, so widgets can register), *before* Material's bundle:
    # each widget draws its pre-rendered picture the moment its script runs, and the
    # browser can paint it, and Python can start, without waiting for the bundle and
    # Material's start-up work on DOMContentLoaded (150-250 ms on our 2-core machines).
    head += [f'<link rel="preload" as="script" href="{up}{assets[f][0]}">' for f in scripts]
    body = [f'<script src="{up}{assets[f][0]}"></script>' for f in scripts]
    assert output.count(MATERIAL_CONFIG) == 1, "Material's config script moved: see _link_widgets"
    output = output.replace(MATERIAL_CONFIG, "\n".join(body) + "\n" + MATERIAL_CONFIG, 1)
    return output.replace("</head>", "\n".join(head) + "\n</head>", 1)


# ---------------------------------------------------------------- Content-Security-Policy
#
# Every page runs only this site's own files. The policy (a <meta> before any script)
# allows scripts from the site itself, WebAssembly compilation for Pyodide, workers and
# fetches from the site, inline styles (KaTeX, Material and the widgets set style
# attributes) and images from the site or data: URLs. Inline scripts run only if their
# sha256 is listed: Material's own few, computed here from the page's final HTML. So
# text that slipped into a page as markup could not run, and no page can load code from
# another host. JSON data blocks (<script type="application/json">) never run.
CSP = ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{hashes}; worker-src 'self'; "
       "connect-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'")
INLINE_SCRIPT = re.compile(r"<script(?P<attrs>(?:\s[^>]*)?)>(?P<body>.*?)</script>", re.S | re.I)
SCRIPT_TYPE = re.compile(r"""\stype\s*=\s*["']?(?P<type>[^"'\s>]*)""", re.I)
JS_TYPES = {"", "module", "text/javascript", "application/javascript", "text/ecmascript",
            "application/ecmascript"}


def _source_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _inline_scripts(html_text: str) -> list[str]:
    """The text of every inline script the browser would run."""
    out = []
    for m in INLINE_SCRIPT.finditer(html_text):
        attrs = m.group("attrs")
        kind = SCRIPT_TYPE.search(attrs)
        if re.search(r"\ssrc\s*=", attrs, re.I):
            continue
        if kind and kind.group("type").lower() not in JS_TYPES:
            continue  # a data block
        out.append(m.group("body"))
    return out


def _iframe_worker_script(worker_url: str) -> str:
    """The inline script the iframe-worker shim writes into its iframe on file://.

    The iframe inherits the page's policy, so that script needs its hash too. The shim
    builds it from a template and the source text of two of its own functions; we do
    the same from the shim's file, for this page's search worker URL.
    """
    shim = _state["assets"][IFRAME_WORKER][1].decode("utf-8")
    found = re.search(r"document\.write\(`<html><body><script>(.*?)<\\/script>", shim, re.S)
    if not found:
        raise SystemExit("pysim hook: the iframe-worker shim changed; update _iframe_worker_script")

    def value(m: re.Match) -> str:
        start = shim.find(f"function {m.group(1)}(")
        if start < 0:
            return worker_url  # the one value that is not a function: the worker's URL
        depth, i = 0, shim.index("{", start)
        while True:
            depth += {"{": 1, "}": -1}.get(shim[i], 0)
            i += 1
            if depth == 0:
                return shim[start:i]

    return re.sub(r"\$\{(\w+)\}", value, found.group(1))


_command = {"name": "build"}  # the mkdocs command running: build, serve or gh-deploy


def on_startup(command, dirty=False, **kwargs):
    _command["name"] = command


def _with_csp(output: str) -> str:
    if _command["name"] == "serve":
        # `mkdocs serve` appends a live-reload script whose text changes with every
        # request, so no hash can allow it: locally, inline scripts are allowed instead.
        return _insert_csp(output, CSP.format(hashes=" 'unsafe-inline'"))
    scripts = _inline_scripts(output)
    if _state["assets"][IFRAME_WORKER][0] in output:  # the offline plugin's shim is on the page
        config = re.search(re.escape(MATERIAL_CONFIG) + r"(.*?)</script>", output, re.S)
        search = config and json.loads(config.group(1)).get("search")
        if search:
            scripts.append(_iframe_worker_script(search))
    hashes = "".join(" " + h for h in dict.fromkeys(_source_hash(s) for s in scripts))
    return _insert_csp(output, CSP.format(hashes=hashes))


def _insert_csp(output: str, policy: str) -> str:
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
    # First in <head>, so it covers every script and style; only the charset declaration
    # goes before it, which must stay within the page's first 1,024 bytes.
    head = re.search(r'<head>\s*(<meta charset="[^"]*">)?', output)
    if not head:
        raise SystemExit("pysim hook: a page without <head>")
    return output[:head.end()] + meta + output[head.end():]


# After every other plugin (the `offline` plugin writes search/search_index.js at
# priority -100), so the zip holds the finished site.
@event_priority(-200)
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
    _write_zip(site)


def _write_zip(site: Path) -> None:
    """The whole site (but this zip) in one folder with a README.txt, for readers who
    download it. Entries are sorted and dated 1980, so the same site gives the same zip."""
    out = site / SITE_ZIP
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    files = sorted(p for p in site.rglob("*") if p.is_file() and p != out)

    def entry(name: str) -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(f"{ZIP_FOLDER}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        return info

    with zipfile.ZipFile(out, "w", compresslevel=6) as zf:
        zf.writestr(entry("README.txt"), ZIP_README.format(folder=ZIP_FOLDER))
        for path in files:
            data = path.read_bytes()
            if path.suffix == ".html":
                data = _footer_in_zip(data.decode("utf-8")).encode("utf-8")
            zf.writestr(entry(path.relative_to(site).as_posix()), data)
    log.info("offline zip %s (%.1f MB)", SITE_ZIP, out.stat().st_size / 1e6)


def _footer_in_zip(html_text: str) -> str:
    """Inside the zip the footer cannot offer the zip (it is not inside itself): it
    points to the README that says how to read the downloaded copy instead."""
    return DOWNLOAD_LINK.sub(lambda m: f'<a class="pysim-download" href="{m["up"]}README.txt">'
                                       "Reading offline: see README.txt</a>", html_text)


DOWNLOAD_LINK = re.compile(r'<a class="pysim-download" href="(?P<up>(?:\.\./)*)'
                           + re.escape(SITE_ZIP) + r'" download>[^<]*</a>')


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
