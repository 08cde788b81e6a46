"""The MkDocs hook (named in mkdocs.yml): MkDocs's events, adapted to sitebuild's steps.

Nothing here computes or edits anything itself. At each build (and each rebuild under
`mkdocs serve`) the events call, in this order:

    on_config          iframe_worker: the local shim in `extra.polyfills`, not unpkg's;
                       assets: the site's stylesheet (widgets/theme.css) in `extra_css`,
                       and, with instant navigation, widgets/navigation.js in
                       `extra_javascript`
    on_pre_build       wheel, assets, facts: the wheel, its lock file's name,
                       Python's memory with pysim imported (hosted build), the hashed
                       assets (the lab's traces too, fetched by the worker on first use),
                       the facts table docs/facts.toml
    on_nav             prerender: the pages that hold widgets, in the nav's order
    on_page_markdown   facts, predict, then figures: {{ fact.KEY }} statements about real
                       systems, checkpoints (docs/predict.toml: the reader's guess, then
                       pysim's answer), {{ group.key }} numbers and {{ plot.NAME }} pictures
    on_page_content    katex, tables, prerender, narrow: math rendered, tables made
                       focusable, widgets filled with their models, SVG diagrams kept
                       readable on a phone; what the page must load goes to page.meta
                       for overrides/main.html
    on_post_page       csp, under `mkdocs serve` only: a policy allowing inline scripts
    on_post_build      every file written; the lock file; csp: one policy for every page;
                       offline_zip: the zip (the download build), or the zip that build
                       made, copied in (the hosted build); precompress: .br and .gz
                       copies of the hosted build's text files, for hosts that serve them

What a build needs lives in one `Build` object; on_pre_build refreshes it from the
working tree at every (re)build.
Two builds run these steps (README, "Deploying"): mkdocs.yml, the hosted site, with
Material's instant navigation; mkdocs-offline.yml, the download, with Material's offline
plugin instead (it needs instant navigation off). The offline plugin's shim and the zip
are made only by the second; the first copies its zip in, so the hosted site offers it.
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parent.parent
if sys.path[:1] != [str(ROOT)]:
    sys.path.insert(0, str(ROOT))  # this tree's sitebuild, not an installed one
# `mkdocs serve` runs this file again at every rebuild: take the steps from disk too.
for _name in [m for m in sys.modules if m == "sitebuild" or m.startswith("sitebuild.")]:
    del sys.modules[_name]

from sitebuild import (BuildError, assets, csp, facts, figure_cache, figures, iframe_worker,  # noqa: E402
                       katex, narrow, offline_zip, precompress, predict, prerender, pyodide_runtime,
                       stdlib, tables, wheel, write_files)
import sitebuild.plots  # noqa: E402

log = logging.getLogger("mkdocs.hooks.pysim")


@dataclass
class Build:
    command: str = "build"         # mkdocs's command: build, serve or gh-deploy
    offline: bool = False          # Material's offline plugin is on: ship its shim and the zip
    bridge: object = None          # pysim.bridge, imported fresh from the working tree
    figures: object = None         # pysim.figures, of that pysim
    figure: object = None          # pysim.figures.figure
    plots: object = None           # sitebuild.plots, drawn with that pysim
    facts: dict = field(default_factory=dict)  # docs/facts.toml, checked row by row
    checkpoints: dict = field(default_factory=dict)  # docs/predict.toml, checked row by row
    fields: dict = field(default_factory=dict)
    assets: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)    # widget -> {Pyodide path: Asset} (assets.collect_data)
    shim: assets.Asset | None = None
    theme: assets.Asset | None = None          # widgets/theme.css, linked by every page
    navigation: assets.Asset | None = None     # widgets/navigation.js, on every hosted page
    wheel: Path | None = None
    stdlib_compiled: bytes | None = None  # the page's standard library, as bytecode
    runtime: dict = field(default_factory=dict)  # the worker's settings, paths in the site


build = Build()


def reported(event):
    """A build step's error stops the build with its message, as MkDocs reports a plugin's."""
    @functools.wraps(event)
    def run(*args, **kwargs):
        try:
            return event(*args, **kwargs)
        except BuildError as err:
            raise PluginError(f"pysim build: {err}") from err
    return run


def on_startup(command, dirty=False, **kwargs):
    build.command = command


def on_config(config, **kwargs):
    """Whichever of the offline plugin and this hook runs first, no unpkg URL is left.
    Every page links the site's stylesheet after Material's (Material's template writes
    `extra_css` there), under its hashed name.

    A build starts from nothing the last one left: MkDocs loads this file once per
    process, and `mkdocs serve` (each rebuild) and `python -m sitebuild` (the download,
    then the hosted site) build more than once in one."""
    global build
    build = Build(command=build.command)
    build.theme = assets.theme()
    config.extra_css = [*(c for c in config.extra_css if not str(c).startswith(assets.THEME_DIR + "/theme.")),
                        build.theme.path]
    build.offline = "material/offline" in config.plugins
    config.extra["pysim_download"] = offline_zip.PATH  # both builds' pages offer the zip
    if build.offline:
        build.shim = iframe_worker.shim()
        config.extra["polyfills"] = iframe_worker.without_unpkg(config.extra.get("polyfills", []), build.shim.path)
    if "navigation.instant" in config.theme.get("features", []):
        build.navigation = assets.navigation()
        config.extra_javascript = [*(j for j in config.extra_javascript
                                     if not str(j).startswith(assets.NAVIGATION_DIR + "/navigation.")),
                                   build.navigation.path]
    else:
        build.navigation = None
    return config


@reported
def on_pre_build(config, **kwargs):
    pyodide_runtime.check()
    build.bridge = prerender.fresh_import("pysim.bridge")
    build.figures = importlib.import_module("pysim.figures")
    figure_cache.load(build.figures)  # what a build on these same files computed, if any
    build.figure = build.figures.figure
    build.plots = importlib.reload(sitebuild.plots)  # on the pysim just imported
    build.fields = prerender.describe(build.bridge.call)
    build.facts = facts.load(Path(config.docs_dir) / "facts.toml")
    build.checkpoints = predict.load(Path(config.docs_dir) / "predict.toml")
    build.assets = assets.collect()
    build.data = assets.collect_data({name: sim.data_files() for name, sim in build.bridge.simulations().items()
                                      if sim.data_files is not None})
    build.wheel = wheel.build_wheel(Path(tempfile.mkdtemp(prefix="pysim-wheel-")))
    pyodide_dir = pyodide_runtime.site_dir()
    build.stdlib_compiled = stdlib.compiled(pyodide_runtime.page_stdlib(), pyodide_runtime.NPM_DIR)
    build.runtime = {"pyodide": pyodide_dir, "lock": pyodide_dir + wheel.lock_name(build.wheel),
                     "stdlib": pyodide_dir + stdlib.site_name(build.stdlib_compiled),
                     "sizes": {**pyodide_runtime.download_sizes(compiled=build.stdlib_compiled),
                               build.wheel.name: build.wheel.stat().st_size}}
    log.info("pysim wheel %s", build.wheel.name)


@reported
def on_nav(nav, config, files, **kwargs):
    # Every widget page carries the list of them (navigation.js reads it), so it is
    # made from the Markdown sources before the first page is rendered.
    build.runtime["widget_pages"] = prerender.widget_pages(
        (page.file.url, Path(page.file.abs_src_path).read_text(encoding="utf-8")) for page in nav.pages)


@reported
def on_page_markdown(markdown, page, config, files, **kwargs):
    # Facts first: a fact's text holds no figure, but a page may hold both.
    where = page.file.src_path
    markdown = facts.render(markdown, build.facts, where)
    markdown = predict.render(markdown, build.checkpoints, build.figure, where)
    return figures.expand(markdown, build.figure, build.plots, where)


@reported
def on_page_content(html, page, config, files, **kwargs):
    where = page.file.src_path
    html, has_math = katex.render_math(html, where)
    html = tables.focusable(html)
    scripts = {name[:-3] for name in build.assets if name.endswith(".js") and "/" not in name}
    up = "../" * page.url.count("/")  # from this page back to the site's root
    html, widgets = prerender.prerender(html, build.bridge.call, build.fields, scripts, where,
                                        assets.data_urls(build.data, up))
    html = narrow.diagrams(html, Path(config.docs_dir) / Path(where).parent, where)
    page.meta["pysim_katex"] = up + katex.stylesheet() if has_math else None
    checkpoints = predict.used(html)
    page.meta["pysim_assets"] = (assets.page_assets(widgets, build.assets, build.runtime, up, predict=checkpoints)
                                 if widgets or checkpoints else None)
    return html


def _serve_policy(html: str) -> str:
    # `mkdocs serve` appends a live-reload script whose text changes with every request,
    # so no hash can allow it: locally, inline scripts are allowed instead. (A build's
    # pages get theirs in on_post_build, one policy for all.)
    return csp.with_policy(html, allow_inline=True) if build.command == "serve" else html


# After other plugins' on_post_page, so the policy sees the page's final scripts.
@event_priority(-100)
@reported
def on_post_page(output, page, config, **kwargs):
    return _serve_policy(output)


@reported
def on_post_template(output_content, template_name, config, **kwargs):
    """Static templates (404.html) get the same policy as the pages."""
    return _serve_policy(output_content) if template_name.endswith(".html") else output_content


def _site_policy(site: Path) -> None:
    """Every finished page (404.html too) with the site's one policy (csp.site_policy):
    their inline scripts, and the one the offline shim writes into its iframe."""
    pages = {p: p.read_text(encoding="utf-8") for p in sorted(site.rglob("*.html"))}
    extra = set()
    for page_html in pages.values():
        search = build.shim and build.shim.path in page_html and iframe_worker.search_worker_url(page_html)
        if search:
            extra.add(iframe_worker.iframe_script(iframe_worker.SHIM, search))
    for path, page_html in csp.site_policy(pages, sorted(extra)).items():
        path.write_text(page_html, encoding="utf-8")


# After every other plugin (the offline plugin writes search/search_index.js at
# priority -100), so the zip holds the finished site.
@event_priority(-200)
@reported
def on_post_build(config, **kwargs):
    site = Path(config.site_dir)
    figure_cache.save(build.figures)  # for the tests that check these pages (make test)
    pyodide_dir = pyodide_runtime.site_dir()
    lock = wheel.lock_file(build.wheel, pyodide_runtime.NPM_DIR / "pyodide-lock.json")
    write_files(site, {
        **pyodide_runtime.runtime_files(compiled=build.stdlib_compiled),
        **katex.katex_files(),
        **assets.files(build.assets),
        **assets.data_files(build.data),
        **({build.shim.path: build.shim.data} if build.shim else {}),
        build.theme.path: build.theme.data,
        pyodide_dir + build.wheel.name: build.wheel,
        build.runtime["lock"]: lock.encode("utf-8"),
        **({build.navigation.path: build.navigation.data} if build.navigation else {}),
    })
    if build.command != "serve":
        _site_policy(site)
    if build.offline:
        zipped = offline_zip.site_zip(site)
        write_files(site, {offline_zip.PATH: zipped})
        log.info("offline zip %s (%.1f MB)", offline_zip.PATH, len(zipped) / 1e6)
    else:
        made = offline_zip.made_by_offline_build()
        if made is None and build.command != "serve":
            raise BuildError(f"the download build's zip is missing ({offline_zip.OFFLINE_SITE / offline_zip.PATH}): "
                             "build it first, `mkdocs build -f mkdocs-offline.yml` (make site does both)")
        if made is None:
            log.warning("no offline zip yet: the footer's download link is broken until "
                        "`mkdocs build -f mkdocs-offline.yml` has run")
        else:
            write_files(site, {offline_zip.PATH: made})
        if build.command != "serve":  # (mkdocs serve's own server ignores such copies)
            files, saved = precompress.write_copies(site)
            log.info("precompressed %d files (.br and .gz), %.1f MB saved over the originals", files, saved / 1e6)
