"""Fixtures for the browser tests: the built site served on 127.0.0.1, and headless
Chromium driven by Playwright, with every request recorded.

The site must be built first (`make site`; `make test` does it). Chromium comes from
the machine: $CHROMIUM, else Chromium's headless shell (Debian's
`chromium-headless-shell`), else a full Chromium, else Playwright's own download where
a reader's machine has one. Every request outside 127.0.0.1 is aborted and recorded, and
each test fails if any was attempted or if the page logged an error.
"""

from __future__ import annotations

import functools
import json
import http.server
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
# The two builds (`make site` makes both): the hosted site, with instant navigation
# (mkdocs.yml), and the download, with Material's offline plugin (mkdocs-offline.yml).
SITE = Path(os.environ.get("PYSIM_SITE_DIR", ROOT / "site"))
OFFLINE_SITE = Path(os.environ.get("PYSIM_OFFLINE_SITE_DIR", ROOT / "site-offline"))

LAUNCH_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    # Nothing resolves except this machine, so a stray CDN URL fails fast and visibly.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


# Chromium's headless shell is the same engine (Blink, V8, the same version) without the
# desktop browser around it: it is what Playwright itself runs headless tests on since
# 1.49 (microsoft/playwright#33566). It spends less CPU a page than `chromium --headless`
# (bench/bench_browser_cpu.py prints the two side by side: a blank page, the home page,
# a widget page until it is live), and CPU is what the browser suite waits on. The
# benchmarks time pages as a reader's browser loads them, so they ask for the full
# Chromium.
SHELLS = ["/usr/lib/chromium/chromium-headless-shell", shutil.which("chromium-headless-shell"),
          shutil.which("chrome-headless-shell")]
FULL = ["/usr/lib/chromium/chromium", "/usr/bin/chromium", shutil.which("chromium"),
        shutil.which("chromium-browser"), shutil.which("google-chrome"), shutil.which("google-chrome-stable")]


def pytest_configure(config):
    config.addinivalue_line("markers", "long: takes tens of seconds here; runs first (see below)")


def pytest_collection_modifyitems(config, items):
    """The long tests first, half at the head of each worker's share. pytest-xdist's
    worksteal gives each of the two workers one half of the collection, and an idle
    worker takes the tail of the other's queue; with the long tests started first, both
    workers end on short ones, instead of one idling while the other runs a minute-long
    test last (the random actions were late in the alphabet)."""
    long = [item for item in items if item.get_closest_marker("long")]
    short = [item for item in items if not item.get_closest_marker("long")]
    half = (len(items) + 1) // 2
    first = long[0::2] + short[:half - len(long[0::2])]
    items[:] = first + long[1::2] + short[half - len(long[0::2]):]


def first_found(paths: list) -> str | None:
    """The first of `paths` (None skipped) that exists on this machine."""
    return next((p for p in paths if p and Path(p).exists()), None)


def chromium_path(shell: bool = True) -> str | None:
    """$CHROMIUM, else a Chromium on this machine (its headless shell first when `shell`,
    the full browser first otherwise), or None to let Playwright use its own."""
    return first_found([os.environ.get("CHROMIUM"), *(SHELLS + FULL if shell else FULL + SHELLS)])


SITEMAP_LOC = re.compile(rb"<loc>https?://[^/<]+/")


def sitemap_here(data: bytes, origin: str) -> bytes:
    """sitemap.xml as if the site had been built with site_url at `origin` (where this
    server runs, a port picked at random). Material's instant navigation swaps in only
    pages whose URL the sitemap lists, host and port included (mkdocs.yml, site_url)."""
    return SITEMAP_LOC.sub(b"<loc>" + origin.encode() + b"/", data)


# bench/bench_browser_starts.py names a file here: every request the test servers answer
# is appended to it, one line each, after the test that was running (pytest's own
# PYTEST_CURRENT_TEST), so the bench can say which tests start Python and how often.
REQUEST_LOG = os.environ.get("PYSIM_REQUEST_LOG")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if REQUEST_LOG:
            test = os.environ.get("PYTEST_CURRENT_TEST", "-").rsplit(" ", 1)[0]
            with open(REQUEST_LOG, "a", encoding="utf-8") as log:  # one short write: whole lines
                log.write(f"{test}\t{self.path}\n")
        if self.path.split("?")[0] != "/sitemap.xml":
            return super().do_GET()
        data = sitemap_here(Path(self.directory, "sitemap.xml").read_bytes(),
                            f"http://127.0.0.1:{self.server.server_address[1]}")
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def end_headers(self):
        # Every use of a file asks this server again (a just-built file is never stale in
        # a test), as a careful host serves its HTML. "no-cache", not "no-store": with
        # no-store Chromium keeps no copy of what a page preloads, so each script and
        # stylesheet a widget page preloads in its <head> is downloaded a second time
        # when the page uses it, which no reader's host does.
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()


class _QuietServer(http.server.ThreadingHTTPServer):
    """A reader who closes a page mid-download is no error of the site's: the connection
    they dropped is not printed as a traceback in the test output."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # BrokenPipe, ConnectionReset...
            super().handle_error(request, client_address)


WIDGET_TAG = re.compile(r'class="pysim-widget" data-widget="([a-z_]+)"')


def widget_pages(site: Path = SITE) -> dict[str, list[str]]:
    """The built site's widget pages: page name (NAME.html, in name order) -> the widgets
    on it, in page order, read from the HTML. Every list of widgets or widget pages in
    these tests comes from here, so a new simulation's page is in them with no edit."""
    out = {}
    for path in sorted(site.glob("*.html")):
        found = WIDGET_TAG.findall(path.read_text(encoding="utf-8"))
        if found:
            out[path.stem] = found
    return out


def widget_homes(site: Path = SITE) -> dict[str, str]:
    """Widget -> the page that holds it (the first by name, should two pages hold it)."""
    homes = {}
    for name, widgets in widget_pages(site).items():
        for widget in widgets:
            homes.setdefault(widget, name)
    return dict(sorted(homes.items()))


def page_url(base: str, name: str, fragment: str = "") -> str:
    """The URL of the page built from docs/NAME.md under `base` (site_url or a file://
    folder URL). Pages are NAME.html, not NAME/, so the same links work from disk."""
    return f"{base}{name}.html{fragment}"


def start_server(site: Path) -> tuple[_QuietServer, str]:
    """A server of the built site on 127.0.0.1 (a free port), answering from a thread of
    its own, and its base URL (the tests', tests/browser/a11y.py's and the benchmarks')."""
    server = _QuietServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def serve(site: Path):
    """Serve a built site on 127.0.0.1 until the session ends."""
    if not (site / "index.html").exists():
        pytest.fail(f"{site} has no index.html: build the site first (make site)")
    server, url = start_server(site)
    yield url
    server.shutdown()


@pytest.fixture(scope="session")
def site_url():
    """The hosted site, served."""
    yield from serve(SITE)


@pytest.fixture(scope="session")
def offline_site_url():
    """The download build, served (as its README tells a reader to)."""
    yield from serve(OFFLINE_SITE)


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        path = chromium_path()
        browser = p.chromium.launch(executable_path=path, args=LAUNCH_ARGS) if path else \
            p.chromium.launch(args=LAUNCH_ARGS)
        yield browser
        browser.close()


class PageWatch:
    """What a page did: every request, console errors, uncaught exceptions."""

    def __init__(self):
        self.requests: list[str] = []
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.allowed_errors: list[str] = []

    def allow_error(self, fragment: str):
        self.allowed_errors.append(fragment)

    def unexpected_errors(self) -> list[str]:
        return [e for e in self.errors if not any(a in e for a in self.allowed_errors)]


@pytest.fixture
def watch():
    return PageWatch()


def _is_local(url: str) -> bool:
    parsed = urlparse(url)
    if parsed.scheme in ("data", "blob", "about", "file"):
        return True
    return parsed.hostname == "127.0.0.1"


# The URLs `_is_local` refuses, as one pattern (test_security.py checks that the two
# agree). A context routes only these: Playwright matches a pattern in its own server
# and lets every other request through in Chromium, where a Python function as the
# route would take each of the page's requests on a round trip to this process first.
OUTSIDE = re.compile(r"^(?!(?:[a-z][a-z0-9+.-]*://127\.0\.0\.1(?:[:/?#]|$))|(?:data|blob|about|file):)",
                     re.IGNORECASE)


_FUNCTION = re.compile(r"\s*(async\s+)?(function\b|\([^()]*\)\s*=>|[\w$]+\s*=>)")


def _without_eval(wait_for_function):
    """Playwright runs a wait_for_function *expression* through eval in the page, which
    the site's Content-Security-Policy forbids (no 'unsafe-eval'); a function it passes
    without eval. So an expression becomes a function returning it, and the pages are
    tested under their real policy."""
    def wait(expression, *args, **kwargs):
        if not _FUNCTION.match(expression):
            expression = f"() => ({expression})"
        return wait_for_function(expression, *args, **kwargs)
    return wait


def _watched_page(browser, current, *, width=1280, height=900, color_scheme="light",
                  reduced_motion="no-preference", **kwargs):
    """A page in a context of its own that records requests (the worker's too) and errors
    into `current()` (a PageWatch), and aborts any request that would leave 127.0.0.1."""
    context = browser.new_context(viewport={"width": width, "height": height},
                                  color_scheme=color_scheme, reduced_motion=reduced_motion, **kwargs)

    def refuse(route_, request):
        current().outside.append(request.url)
        route_.abort()

    context.route(OUTSIDE, refuse)
    context.on("request", lambda r: current().requests.append(r.url))
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and current().errors.append("console: " + m.text))
    page.on("pageerror", lambda e: current().errors.append(f"pageerror: {e}"))
    page.wait_for_function = _without_eval(page.wait_for_function)
    return context, page


def _check(watch):
    assert watch.outside == [], f"requests left the machine: {watch.outside}"
    assert watch.unexpected_errors() == [], f"errors in the page: {watch.unexpected_errors()}"


@pytest.fixture
def make_page(browser, watch):
    """Open pages in a fresh context (a cold cache, a Python of their own)."""
    contexts = []

    def make(**kwargs):
        context, page = _watched_page(browser, lambda: watch, **kwargs)
        contexts.append(context)
        return page

    yield make
    for context in contexts:
        context.close()
    _check(watch)


@pytest.fixture(scope="session")
def _open_pages(browser):
    """The pages live_page keeps open for the whole run: site page name -> (page, whose
    watch records it now)."""
    kept = {}
    yield kept
    for page, _ in kept.values():
        page.context.close()


# Python and every widget of the page answer (live.js: data-live), nothing is computing.
# (The exercise marks its own runs data-busy="true" / "false".)
ALL_LIVE = ("[...document.querySelectorAll('.pysim-widget')].every("
            "w => w.dataset.live === 'ready' && [undefined, 'false'].includes(w.dataset.busy))")

# Records every Content-Security-Policy violation the page reports, from its start.
CSP_PROBE = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', e => __violations.push(
  {directive: e.violatedDirective, blocked: e.blockedURI, sample: e.sample}), true);
"""


@pytest.fixture
def live_page(_open_pages, browser, site_url, watch):
    """open(name) -> the hosted page NAME.html, 1280 x 900 in the light scheme, every
    widget live. Booting Python takes a few seconds, so each page is opened once per run
    and shared by the tests that ask for it: between them its widgets are unmounted and
    mounted again from their pre-rendered models (as instant navigation does), with no
    state in the link or the page's storage, so each test starts from the picture a reader first sees, on the
    Python already running, at 1280 x 900 in the light scheme (switched back with the
    header's toggle if a test took it to the dark one). A page a test took elsewhere
    (another URL, a Python not ready) is loaded again. For a test that needs a page of its own (a route,
    an init script, another screen, a crash), make_page gives a fresh one."""
    used = []

    def open_(name: str):
        url = page_url(site_url, name)
        if name not in _open_pages:
            _open_pages[name] = (_watched_page(browser, lambda: _open_pages[name][1][0])[1], [watch])
            _open_pages[name][0].add_init_script(CSP_PROBE)
        page, current = _open_pages[name]
        current[0] = watch
        used.append(current)
        page.set_viewport_size({"width": 1280, "height": 900})
        page.emulate_media(media="screen", color_scheme="light", reduced_motion="no-preference")
        as_left = page.url.split("#")[0] == url and page.evaluate(
            "() => !!(window.PySim && PySim.runtime.state === 'ready')")
        if as_left:
            # A test that took the page to the dark scheme did it with the header's
            # toggle, as a reader does: it comes back the same way (no-op when light).
            from a11y import set_scheme
            set_scheme(page, "light")
            # (The exercise keeps the reader's code in localStorage: that goes too.)
            page.evaluate("() => { PySim.unmountAll(); history.replaceState(null, '', location.pathname);"
                          " localStorage.clear(); sessionStorage.clear();"
                          " document.activeElement && document.activeElement.blur(); scrollTo(0, 0);"
                          " PySim.mountAll(); }")
        else:
            # (Nor a scheme a test chose with the toggle, which Material keeps there.)
            page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }")
            page.goto(url)
            wait_for_python(page)
        until(page, ALL_LIVE)
        return page

    yield open_
    for current in used:
        current[0] = PageWatch()  # what the page does between tests is no test's
    _check(watch)


@pytest.fixture
def page(make_page):
    return make_page()


def wait_for_python(page, timeout=60000):
    """Scroll to the page's first widget, as a reader would (Python starts only when a
    widget comes near the screen), and wait until the worker is ready."""
    page.locator(".pysim-widget").first.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => { const w = document.querySelector('.pysim-widget');"
        " return w && (w.dataset.runtime === 'ready' || w.dataset.runtime === 'failed'); }",
        timeout=timeout,
    )
    state = page.evaluate("document.querySelector('.pysim-widget').dataset.runtime")
    assert state == "ready", page.evaluate("document.querySelector('.pysim-status').textContent")


def until(page, expression: str, timeout: float = 60):
    """Poll a JavaScript expression until it is truthy. (page.evaluate, not
    wait_for_function: the site's Content-Security-Policy forbids the string eval that
    wait_for_function's polling uses.)"""
    end = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < end, f"timed out waiting for {expression}"
        page.wait_for_timeout(100)


# Three animation frames (a ResizeObserver's or a scheme switch's report comes in one,
# live.js's redraw runs in the next: widgets/live.js, redrawOn), then the end of every
# CSS transition under way (Material fades colours over 125 ms), then one more frame.
SETTLE = """async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(done));
  for (let i = 0; i < 3; i++) await frame();
  await Promise.all(document.getAnimations().filter((a) => a instanceof CSSTransition)
    .map((a) => a.finished.catch(() => null)));
  await frame();
}"""


def settle(page) -> None:
    """Wait until what the last change set off has been drawn: the widgets' redraws and
    the page's colour transitions. (Instead of a fixed sleep: it takes as long as the page
    needs, a few frames on an idle machine.)"""
    page.evaluate(SETTLE)


def prerendered(widget) -> dict:
    """The model a widget's page carries (sitebuild/prerender.py's data block), read in
    the page from the widget's locator."""
    return json.loads(widget.locator("template.pysim-prerender").evaluate("t => t.content.textContent"))


def pysim_view(name: str, config: dict) -> dict:
    """What pysim in CPython computes for these settings: the numbers a page must show."""
    from pysim import bridge

    answer = json.loads(bridge.call(name, json.dumps({"config": config})))
    assert answer["ok"], answer
    return answer["result"]
