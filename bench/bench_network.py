"""Page load over a throttled network (issue 37, item 1): how many bytes a reader's
browser downloads before a widget page is live, and how long the text, the pre-rendered
pictures and the live widgets take on a fast link, an ordinary one and a slow phone.

The hosted build (site/, or $PYSIM_SITE_DIR) is served the way a static host serves it:
a threaded HTTP/1.1 server on 127.0.0.1 that
  - compresses by content type (HTML, CSS, JavaScript, JSON, SVG, XML, text, .wasm, .ttf)
    with Brotli where the browser offers `br` (it does), else gzip: it sends the build's
    precompressed FILE.br / FILE.gz where there is one (sitebuild/precompress.py: Brotli
    11, gzip 9), as nginx's `brotli_static` / `gzip_static` do, and compresses the rest
    itself (Brotli 11, gzip 6); files that are compressed already (the `.gz` traces,
    `.zip`, `.whl`, images, woff fonts) go as they are;
  - sends the cache headers README "Deploying" recommends: `Cache-Control: public,
    max-age=31536000, immutable` for the files named by content hash or version number
    (its table), `no-cache` for everything else (pages, search/, sitemap.xml, images),
    with an ETag, so a warm load revalidates those with a 304;
  - counts the bytes it writes to the socket for each response, headers included: the
    bytes over the wire (before TCP's own overhead).

Headless Chromium (Playwright) opens each widget page at its first widget
(page.html#widget-NAME, as bench_page.py does: a reader following a link to a simulation,
so Python starts right after the first paint), with the page's network throttled by the
DevTools protocol (Network.emulateNetworkConditions: a latency added to every request and
a download and upload rate shared by all of them, the worker's included) at PROFILES:
"100" (100 Mbit/s, 10 ms), "20" (20 Mbit/s, 40 ms) and "slow" (1.6 Mbit/s, 150 ms) by
default; "loopback" is the same server with no network emulation at all. BENCH_PROFILES
(keys, comma-separated, e.g. `loopback,100`) chooses them.
Each load is cold (a fresh browser context, so an empty HTTP cache) or warm (a second tab
in the same context, after the cold one: the immutable files come from the cache, the
pages are revalidated). Columns, seconds from navigation start, medians:
  MB over the wire   what the server sent by the time the page was interactive
  at link rate       those bytes at the profile's download rate alone: the floor a load
                     of that size cannot beat on that link
  first paint        first-contentful-paint (PerformanceObserver 'paint')
  pre-rendered       every widget mounted from its build-time model, and the frame after
                     that painted (bench_page.py's mark)
  interactive        every widget on the page answers the reader (Python is up): its
                     data-live is set and no longer "pending"
Then, for the first widget page of the chapter, every file fetched on the fastest profile
with its bytes over the wire, largest first: what to cut.

The slow profile costs half a minute or more per cold load, so by default it measures
only the chapter's first widget page. BENCH_FULL=1 measures every page at every profile.
BENCH_COLD (3) and BENCH_WARM (2) set the loads per cell.

Before and after (issue 37's "no regression at 100 Mbit/s or over loopback beyond
noise"): BENCH_BASELINE_SITE=/path/to/an/older/site serves that build too, from a copy,
on a server of its own with the same rules. A build made before sitebuild/precompress.py
has no FILE.br / FILE.gz, so that server compresses its text itself (Brotli 11, made once
before any load and kept: the smallest an on-the-fly host could send, which favours the
baseline). Then every widget page either build has is measured (the
slow profile: the chapter's first only, unless BENCH_FULL=1), and the profiles default
to `loopback,100`. Each run takes every page once per build, the two builds' visits back
to back and the one going first alternating, so both see the same minute of the machine.
One table per profile, a row per page and cache state; each cell "before -> after":
  loads              before+after
  MB over the wire, first paint, pre-rendered, interactive   as above
  interactive after/before   median over runs of (the after load's interactive / the
                     before load's in the same run), and its range (lowest-highest)
  failed             loads that never went interactive, and the first one's reason
A page only one build has is marked "(new only)" and has no ratio. Under each table,
per cache state, the median of the pages' ratios and the pages whose after was slower in
every pair. The baseline's widgets go live (data-live "same"/"updated") only after Python
has recomputed each widget's default model to check the pre-rendered one (the check left
the reader's browser in 25202b8), so its interactive includes that computation.

Run: .venv/bin/python bench/bench_network.py   (after `make site`; ~12 minutes on 2 cores)
Before and after, e.g. a baseline built in a worktree at 6e36e5f (~10 minutes on 2 cores at rest):
  git worktree add --detach ../base 6e36e5f && make -C ../base site
  BENCH_BASELINE_SITE=../base/site BENCH_PROFILES=loopback,100 .venv/bin/python bench/bench_network.py
"""

from __future__ import annotations

import gzip
import http.server
import mimetypes
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from common import ROOT, table

sys.path.insert(0, str(ROOT / "tests" / "browser"))
from bench_page import AFTER_NEXT_FRAME, chapter_order, widget_pages  # noqa: E402
from conftest import LAUNCH_ARGS, chromium_path, sitemap_here  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

import brotli

SITE = Path(os.environ.get("PYSIM_SITE_DIR", ROOT / "site"))
COLD = int(os.environ.get("BENCH_COLD", "3"))
WARM = int(os.environ.get("BENCH_WARM", "2"))
FULL = os.environ.get("BENCH_FULL", "0") == "1"


@dataclass(frozen=True)
class Profile:
    key: str  # its name in BENCH_PROFILES
    name: str
    down_mbit: float | None  # download rate, Mbit/s; upload is a quarter of it; None: not throttled
    latency_ms: float  # added to every request (DevTools' "latency": the round trip)
    every_page: bool  # measure every widget page, or only the chapter's first

    def conditions(self) -> dict | None:
        if self.down_mbit is None:
            return None
        down = self.down_mbit * 1e6 / 8
        return {"offline": False, "latency": self.latency_ms, "downloadThroughput": down, "uploadThroughput": down / 4}

    def title(self) -> str:
        if self.down_mbit is None:
            return f"{self.name} (no network emulation; seconds from navigation start)"
        return f"{self.name} (latency {self.latency_ms:.0f} ms; seconds from navigation start)"

    def at_rate(self, wire: float) -> str:
        return "-" if self.down_mbit is None else f"{wire * 8 / (self.down_mbit * 1e6):.2f}"


ALL_PROFILES = [
    Profile("loopback", "loopback", None, 0, True),
    Profile("100", "100 Mbit/s, 10 ms", 100, 10, True),
    Profile("20", "20 Mbit/s, 40 ms", 20, 40, True),
    Profile("slow", "slow mobile, 1.6 Mbit/s, 150 ms", 1.6, 150, False),
]
BASELINE = os.environ.get("BENCH_BASELINE_SITE")


def chosen_profiles(keys: str) -> list[Profile]:
    by_key = {p.key: p for p in ALL_PROFILES}
    unknown = [k for k in keys.split(",") if k.strip() not in by_key]
    if unknown:
        sys.exit(f"BENCH_PROFILES: unknown {', '.join(unknown)}; known: {', '.join(by_key)}")
    return [by_key[k.strip()] for k in keys.split(",")]


PROFILES = chosen_profiles(os.environ.get("BENCH_PROFILES", "loopback,100" if BASELINE else "100,20,slow"))

# ------------------------------------------------------------------ the static host

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
# README "Deploying": folders named by a version number, and file names carrying a
# content hash (ours: 10 hex digits; Material's: 8), may be cached for a year.
VERSIONED = ("assets/pyodide/", "assets/vendor/katex/")
HASHED = re.compile(r"\.[0-9a-f]{8,12}(\.min)?\.(js|css|json|gz)$")
# Pyodide's wheel carries its hash in the version ("0h<hash>"), under assets/pyodide/.

TYPES = {
    ".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json", ".map": "application/json", ".xml": "application/xml",
    ".svg": "image/svg+xml", ".txt": "text/plain; charset=utf-8", ".wasm": "application/wasm",
    ".ttf": "font/ttf", ".woff": "font/woff", ".woff2": "font/woff2", ".png": "image/png",
    ".gz": "application/gzip", ".zip": "application/zip", ".whl": "application/zip",
}
COMPRESSIBLE = ("text/", "application/json", "application/xml", "image/svg+xml", "application/wasm", "font/ttf")
# Already compressed, whatever their type says: compressing again only costs time.
PACKED = (".gz", ".zip", ".whl", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".ico", ".woff", ".woff2")
MIN_COMPRESS = 256  # bytes; smaller bodies go as they are (a header costs as much)
CHUNK = 64 * 1024  # the body goes out in pieces, so an aborted transfer is counted fairly


def cache_control(path: str) -> str:
    if path.startswith(VERSIONED) or (path.startswith("assets/") and HASHED.search(path)):
        return IMMUTABLE
    return REVALIDATE


def content_type(path: str) -> str:
    suffix = Path(path).suffix
    return TYPES.get(suffix) or mimetypes.guess_type(path)[0] or "application/octet-stream"


def compressible(path: str) -> bool:
    return content_type(path).startswith(COMPRESSIBLE) and not path.endswith(PACKED)


def encode(data: bytes, encoding: str) -> bytes:
    if encoding == "br":
        return brotli.compress(data, quality=11)  # as a host that compresses ahead of time
    if encoding == "gzip":
        return gzip.compress(data, compresslevel=6, mtime=0)  # a common host default
    return data


class Counter:
    """The handler's socket writer, counting every byte it writes."""

    def __init__(self, raw):
        self.raw, self.count = raw, 0

    def write(self, data) -> int:
        n = self.raw.write(data)
        self.count += len(data)
        return n

    def __getattr__(self, name):  # closed, flush, ...: the writer's own
        return getattr(self.raw, name)


class Host:
    """The site's files, their compressed forms (made once), and a log of what was sent."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self.encodings = ("br", "gzip")
        self.bodies: dict[tuple[str, str], bytes] = {}
        self.lock = threading.Lock()
        self.log: list[dict] = []  # one entry per response, in the order they ended
        self.accept_encoding: set[str] = set()

    def precompress(self):
        """Compress every compressible file once, before any load is timed."""
        for file in self.root.rglob("*"):
            path = file.relative_to(self.root).as_posix()
            if file.is_file() and not path.startswith("download/") and compressible(path):
                for encoding in self.encodings:
                    self.body(path, encoding)

    def body(self, path: str, encoding: str) -> bytes:
        key = (path, encoding)
        if key not in self.bodies:
            ready = self.root / (path + {"br": ".br", "gzip": ".gz"}.get(encoding, ""))
            if encoding != "identity" and ready.is_file():
                self.bodies[key] = ready.read_bytes()  # the build's copy, as a static host sends it
            else:
                self.bodies[key] = encode((self.root / path).read_bytes(), encoding)
        return self.bodies[key]

    def record(self, **entry):
        with self.lock:
            self.log.append(entry | {"at": time.monotonic()})

    def since(self, start: int) -> list[dict]:
        with self.lock:
            return self.log[start:]

    def mark(self) -> int:
        with self.lock:
            return len(self.log)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as every real host
    host: Host = None  # set on a subclass per server

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.wfile = Counter(self.wfile)

    def do_GET(self):
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
        if path == "" or path.endswith("/"):
            path += "index.html"
        start, outcome = self.wfile.count, {"status": None, "encoding": "identity"}
        try:
            outcome = self.answer(path)
        except (BrokenPipeError, ConnectionResetError):
            outcome["status"] = "aborted"  # the browser left (its context closed)
            self.close_connection = True
        finally:
            self.host.record(path=path, wire=self.wfile.count - start, **outcome)

    def answer(self, path: str) -> dict:
        self.host.accept_encoding.add(self.headers.get("Accept-Encoding", ""))
        file = (self.host.root / path).resolve()
        if not file.is_relative_to(self.host.root) or not file.is_file():
            return self.send(404, b"not found\n", {"Content-Type": "text/plain", "Cache-Control": REVALIDATE})
        encoding = self.encoding_for(path)
        if path == "sitemap.xml":  # the URLs of this server, for instant navigation
            body = sitemap_here(file.read_bytes(), f"http://127.0.0.1:{self.server.server_address[1]}")
            body = encode(body, encoding)
        else:
            body = self.host.body(path, encoding)
        stat = file.stat()
        headers = {"Content-Type": content_type(path), "Cache-Control": cache_control(path),
                   "ETag": f'"{stat.st_mtime_ns:x}-{stat.st_size:x}-{encoding}"',
                   "Last-Modified": self.date_time_string(stat.st_mtime)}
        if compressible(path):
            headers["Vary"] = "Accept-Encoding"
        if encoding != "identity":
            headers["Content-Encoding"] = encoding
        if headers["ETag"] in self.headers.get("If-None-Match", ""):
            # Revalidated: only the validators and the cache policy go back.
            keep = ("ETag", "Cache-Control", "Last-Modified", "Vary")
            return self.send(304, b"", {k: v for k, v in headers.items() if k in keep})
        return self.send(200, body, headers, encoding)

    def encoding_for(self, path: str) -> str:
        if not compressible(path) or (self.host.root / path).stat().st_size < MIN_COMPRESS:
            return "identity"
        offered = {part.split(";")[0].strip().lower() for part in self.headers.get("Accept-Encoding", "").split(",")}
        return next((e for e in self.host.encodings if e in offered), "identity")

    def send(self, status: int, body: bytes, headers: dict, encoding: str = "identity") -> dict:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for i in range(0, len(body), CHUNK):
            self.wfile.write(body[i:i + CHUNK])
        return {"status": status, "encoding": encoding if status == 200 else "identity"}


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A tab closed mid-transfer is part of every run; anything else is reported.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def serve(host: Host) -> Server:
    handler = type("SiteHandler", (Handler,), {"host": host})
    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ------------------------------------------------------------------ the page

# Installed before any page script; marks are ms from navigation start.
PROBE = AFTER_NEXT_FRAME + """
window.__net = {};
new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    if (e.name === 'first-contentful-paint' && !__net.fcp) __net.fcp = e.startTime;
}).observe({type: 'paint', buffered: true});
new MutationObserver(() => {
  const widgets = [...document.querySelectorAll('.pysim-widget')];
  if (!widgets.length) return;
  if (!__net.mounted && widgets.every(w => w.dataset.mounted)) {
    __net.mounted = performance.now();
    afterNextFrame(() => { __net.prerendered = performance.now(); });
  }
  const live = widgets.map(w => w.dataset.live);
  // (The baseline's widgets say data-live="failed" when Python's check of their model fails.)
  if (!__net.failed && (widgets[0].dataset.runtime === 'failed' || live.includes('failed')))
    __net.failed = performance.now();
  if (!__net.interactive && live.every(v => v && v !== 'pending')) {
    __net.interactive = performance.now();
    __net.live = live;
  }
}).observe(document, {subtree: true, childList: true, attributes: true});
"""

DONE = "() => !!(window.__net && ((window.__net.interactive && window.__net.prerendered) || window.__net.failed))"
RESULT = "() => Object.assign({}, window.__net, {status: (document.querySelector('.pysim-status') || {}).textContent || ''})"


def poll(page, expression: str, timeout_s: float) -> bool:
    """Poll a JavaScript function until it is truthy (page.evaluate: the site's CSP
    forbids the string eval wait_for_function's polling would use)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if page.evaluate(expression):
            return True
        time.sleep(0.25)
    return False


def timeout_for(profile: Profile) -> float:
    """Long enough for ~16 MB at the profile's rate, plus Python's start on a busy machine."""
    return (16e6 * 8 / (profile.down_mbit * 1e6) * 1.5 if profile.down_mbit else 0) + 60


def load(context, host: Host, url: str, profile: Profile) -> dict:
    """Open url in a new tab of `context`, throttled; return its marks and what was sent."""
    page = context.new_page()
    if profile.conditions():
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", profile.conditions())
    start = host.mark()
    page.goto(url, wait_until="commit", timeout=60000)
    finished = poll(page, DONE, timeout_for(profile))
    files = host.since(start)  # what had arrived by interactive (or by the give-up)
    marks = page.evaluate(RESULT)
    page.close()
    time.sleep(0.3)  # transfers the closed tab aborts are logged before the next load starts
    ok = finished and not marks.get("failed")
    return {"ok": ok, "files": files, "wire": sum(f["wire"] for f in files),
            "fcp": marks.get("fcp"), "prerendered": marks.get("prerendered"),
            "interactive": marks.get("interactive") if ok else None,
            "live": marks.get("live"),
            "why": None if ok else (marks.get("status") or "timed out")}


def visit(browser, host: Host, url: str, profile: Profile, warm: bool) -> list[dict]:
    """One fresh context: a cold load, then (warm) a second one from its cache."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(PROBE)
    try:
        loads = [load(context, host, url, profile)]
        if warm:
            loads.append(load(context, host, url, profile))
    finally:
        context.close()
    return loads


# ------------------------------------------------------------------ the plan and the tables

def cells(pages: list[str]) -> list[tuple[Profile, str]]:
    """(profile, page) to measure: see the docstring for what is left out."""
    return [(profile, page) for profile in PROFILES for page in (pages if profile.every_page or FULL else pages[:1])]


def seconds(values) -> str:
    values = [v for v in values if v is not None]
    return f"{statistics.median(values) / 1000:.2f}" if values else "-"


def summary_rows(results: dict, profile: Profile) -> list[list]:
    rows = []
    for (p, page), loads in results.items():
        if p != profile:
            continue
        for kind, group in (("cold", [v[0] for v in loads]), ("warm", [v[1] for v in loads if len(v) > 1])):
            if not group:
                continue
            wire = statistics.median(g["wire"] for g in group)
            failed = [g["why"] for g in group if not g["ok"]]
            rows.append([page, kind, len(group), f"{wire / 1e6:.2f}", profile.at_rate(wire),
                         seconds(g["fcp"] for g in group), seconds(g["prerendered"] for g in group),
                         seconds(g["interactive"] for g in group),
                         f"{len(failed)}: {failed[0][:60]}" if failed else ""])
    return rows


def kind_of(entry: dict) -> str:
    return {200: "", 304: " (304)", 404: " (404)"}.get(entry["status"], f" ({entry['status']})")


def file_rows(root: Path, cold_load: dict, warm_load: dict | None) -> list[list]:
    """Every file of the first page's loads, by its bytes over the wire, largest first."""
    def by_path(load):
        out = {}
        for f in (load or {}).get("files", []):
            out.setdefault(f["path"], []).append(f)
        return out

    cold, warm = by_path(cold_load), by_path(warm_load)
    kb = lambda entries: "-" if not entries else "+".join(f"{e['wire'] / 1e3:.1f}{kind_of(e)}" for e in entries)
    size = lambda path: (root / path).stat().st_size if (root / path).is_file() else 0
    rows = []
    for path in sorted(cold, key=lambda p: -sum(e["wire"] for e in cold[p])):
        rows.append([path, content_type(path).split(";")[0], cold[path][0]["encoding"], f"{size(path) / 1e3:.1f}",
                     kb(cold[path]), kb(warm.get(path)), "immutable" if cache_control(path) == IMMUTABLE else "no-cache"])
    total = lambda load: f"{(load or {}).get('wire', 0) / 1e3:.1f}"
    rows.append(["total", "", "", "", total(cold_load), total(warm_load), ""])
    return rows


@dataclass
class Build:
    """One build of the site, served as a static host on a port of its own."""
    label: str
    host: Host
    pages: dict[str, list[str]]  # page file -> the widgets on it
    server: Server | None = None

    def start(self, prefix: str = ""):
        t0 = time.monotonic()
        self.host.precompress()
        ready = sum(1 for _ in self.host.root.rglob("*.br"))
        done = f"in {time.monotonic() - t0:.1f} s"
        print(f"{prefix}Compression: {' and '.join(self.host.encodings)}; " + (
            f"the build's precompressed copies of {ready} files, the rest compressed once ahead, {done}" if ready else
            f"no precompressed copies in the build: the server compressed every file itself (Brotli 11, gzip 6), "
            f"once ahead, {done}"))
        self.server = serve(self.host)

    def url(self, page: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{page}#widget-{self.pages[page][0]}"


def copy_of(site: Path, into: Path) -> Path:
    """A copy of a build, so a `make site` running meanwhile cannot change it under a load."""
    site = site.resolve()
    return Path(shutil.copytree(site, into, ignore=lambda d, names: ["download"] if Path(d) == site else []))


def launch(p):
    path = chromium_path(shell=False)
    return p.chromium.launch(executable_path=path, args=LAUNCH_ARGS) if path else p.chromium.launch(args=LAUNCH_ARGS)


def print_header(began: float):
    free = [pr.name for pr in PROFILES if pr.down_mbit is None]
    path = chromium_path(shell=False)
    print(f"Chromium headless ({Path(path).name if path else 'Playwright download'}), throttled by DevTools (Network.emulateNetworkConditions; upload a quarter of "
          f"download{'; ' + ', '.join(free) + ': not throttled' if free else ''}); cold: a fresh context, warm: a "
          f"second tab in it; medians of {COLD} cold and {WARM} warm loads "
          f"({os.cpu_count()} CPUs; {time.monotonic() - began:.0f} s in all)")


def main():
    new = widget_pages()
    if not new:
        sys.exit(f"no page with a widget in {SITE}: run `make site` first")
    old = widget_pages(Path(BASELINE)) if BASELINE else {}
    if BASELINE and not old:
        sys.exit(f"no page with a widget in BENCH_BASELINE_SITE={BASELINE}")
    order = chapter_order()
    with tempfile.TemporaryDirectory(prefix="bench-network-") as copy:
        site = Build("after", Host(copy_of(SITE, Path(copy) / "site")), new)
        if BASELINE:
            compare(Build("before", Host(copy_of(Path(BASELINE), Path(copy) / "baseline")), old), site,
                    [p for p in order if p in new or p in old])
        else:
            run(site, [p for p in order if p in new])


def run(build: Build, pages: list[str]):
    build.start()
    host = build.host
    plan = cells(pages)
    results = {cell: [] for cell in plan}
    began = time.monotonic()
    with sync_playwright() as p:
        browser = launch(p)
        for profile in PROFILES:
            # Runs outermost, so each cell's loads are spread over the profile's minutes.
            for i in range(COLD):
                for cell in [c for c in plan if c[0] == profile]:
                    results[cell].append(visit(browser, host, build.url(cell[1]), profile, warm=i < WARM))
            print(f"  ({profile.name}: done at {time.monotonic() - began:.0f} s)", file=sys.stderr)
        browser.close()
    build.server.shutdown()

    print_header(began)
    print(f"Accept-Encoding sent by the browser: {' | '.join(sorted(host.accept_encoding - {''})) or '(none)'}")
    only_first = [pr.name for pr in PROFILES if not (pr.every_page or FULL)]
    for profile in PROFILES:
        print()
        print(profile.title())
        print(table(["page", "cache", "loads", "MB over the wire", "at link rate", "first paint",
                     "pre-rendered", "interactive", "failed"], summary_rows(results, profile)))
    print()
    if only_first:
        print(f"{', '.join(only_first)}: the first widget page only")
    print("at link rate: the bytes over the wire at the profile's download rate alone (no latency, no CPU)")

    first = pages[0]
    fastest = PROFILES[0]
    loads = results[(fastest, first)][0]
    print()
    print(f"{first}: every file fetched on {fastest.name}, first run, by its bytes over the wire (KB; "
          f"headers included; a file asked for twice shows both)")
    print(table(["file", "type", "encoding", "on disk KB", "cold", "warm", "cache"],
                file_rows(host.root, loads[0], loads[1] if len(loads) > 1 else None)))


# ------------------------------------------------------------------ before and after

def compare(old: Build, new: Build, pages: list[str]):
    """Both builds, each load of one next to the same load of the other (see the docstring)."""
    old.start(prefix=f"{old.label} ({BASELINE}): ")
    new.start(prefix=f"{new.label} ({SITE}): ")
    results: dict[tuple[Profile, str, str], list[list[dict]]] = {}
    began = time.monotonic()
    with sync_playwright() as p:
        browser = launch(p)
        for profile in PROFILES:
            for i in range(COLD):
                for j, page in enumerate(pages if profile.every_page or FULL else pages[:1]):
                    builds = [b for b in (old, new) if page in b.pages]
                    # Alternating which build goes first, so neither always follows the other.
                    for b in builds if (i + j) % 2 == 0 else builds[::-1]:
                        results.setdefault((profile, page, b.label), []).append(
                            visit(browser, b.host, b.url(page), profile, warm=i < WARM))
            print(f"  ({profile.name}: done at {time.monotonic() - began:.0f} s)", file=sys.stderr)
        browser.close()
    old.server.shutdown()
    new.server.shutdown()

    print_header(began)
    print(f"Accept-Encoding sent by the browser: "
          f"{' | '.join(sorted((old.host.accept_encoding | new.host.accept_encoding) - {''})) or '(none)'}")
    print(f"before: {BASELINE}, served with its text compressed by the server (its build has no precompressed "
          f"copies: Brotli 11 made once ahead, the smallest an on-the-fly host could send); after: {SITE}, "
          f"served with the build's own .br/.gz copies; the loads alternate between the two")
    for profile in PROFILES:
        rows, ratios = compare_rows(results, profile, pages, old, new)
        print()
        print(f"{profile.title()}: before -> after")
        print(table(["page", "cache", "loads", "MB over the wire", "first paint", "pre-rendered", "interactive",
                     "interactive after/before", "range", "failed"], rows))
        for kind, values in ratios.items():
            slower = [page for page, lo, ratio in values if lo > 1]
            if values:
                print(f"{kind}: interactive after/before, median over the shared pages "
                      f"{statistics.median(r for _, _, r in values):.2f}; after slower in every pair: "
                      f"{', '.join(slower) or 'none'}")
    print()
    print("Each cell: before -> after. interactive after/before: median over runs of (the after load's interactive /"
          " the before load's of the same run); range: lowest-highest")


def compare_rows(results: dict, profile: Profile, pages: list[str], old: Build, new: Build):
    """The before/after table's rows, and per cache state (page, lowest, median) of the ratios."""
    rows, ratios = [], {"cold": [], "warm": []}
    for page in pages:
        visits = [results.get((profile, page, b.label), []) for b in (old, new)]
        if not any(visits):
            continue
        for kind, index in (("cold", 0), ("warm", 1)):
            before, after = ([v[index] for v in side if len(v) > index] for side in visits)
            if not before and not after:
                continue
            both = lambda fn: f"{fn(before) if before else '-'} -> {fn(after) if after else '-'}"
            pairs = [a["interactive"] / b["interactive"] for b, a in zip(before, after)
                     if a["interactive"] and b["interactive"]]
            failed = [g["why"] for g in before + after if not g["ok"]]
            name = page if before and after else f"{page} ({'new' if after else 'before'} only)"
            rows.append([name, kind, f"{len(before)}+{len(after)}",
                         both(lambda g: f"{statistics.median(x['wire'] for x in g) / 1e6:.2f}"),
                         both(lambda g: seconds(x["fcp"] for x in g)),
                         both(lambda g: seconds(x["prerendered"] for x in g)),
                         both(lambda g: seconds(x["interactive"] for x in g)),
                         f"{statistics.median(pairs):.2f}" if pairs else "-",
                         f"{min(pairs):.2f}-{max(pairs):.2f}" if pairs else "-",
                         f"{len(failed)}: {failed[0][:60]}" if failed else ""])
            if pairs:
                ratios[kind].append((page, min(pairs), statistics.median(pairs)))
    return rows, ratios


if __name__ == "__main__":
    main()
