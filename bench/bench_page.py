"""Page load in headless Chromium, for every page that holds a widget, against a bare
page that only boots the same Pyodide and pysim from the same files with the same worker
(the floor no widget page can beat). Everything is measured in one run: each load in a
fresh browser context (cold HTTP cache), floor and pages alternating, median of RUNS.

A page is opened at its first widget (page.html#widget-NAME), as a reader following a
link to a simulation would, so Python starts at once. Columns, in ms from navigation
start:
  first paint    first contentful paint (text on screen)
  pre-rendered   every widget on the page drawn from its build-time model and on
                 screen: mounted, then the end of the next frame (laid out and painted)
  Python start   the page told its worker to boot (the first Pyodide byte comes after)
  Python ready   Pyodide and pysim loaded in the worker (for the floor: its end)
  interactive    every widget answers the reader: Python is up and the widget has gone
                 live on it (data-live="ready")
  vs floor       interactive over the floor's, load by load against the floor load just
                 before it, median (and range) over the runs
and bytes: the page without Python (HTML, CSS, fonts, our scripts: what a reader who
never reaches a widget downloads) and the total at interactive. A second table splits
each page's time: before Python starts, Python's boot against the floor's, and after it;
and the bound a page cannot beat while its text and pictures come first.

Then instant navigation (issue 18; the hosted build, mkdocs.yml): in one browser context
per run, the first widget page opened and live, then each next widget page entered by a
click on the sidebar's link, as a reader does. Columns, in ms from the click: `drawn`
(every widget mounted from its model, and the frame after that painted) and
`interactive` (every widget live on the Python already running: data-live="ready").
Three ways (CLICKS), each page left LOOK_MS after it went live: clicked
at once (the pointer lands and presses, as Playwright's click does, or a finger taps),
and after resting on the link HOVER_MS first (Material's prefetch has fetched the page
by then); and clicked at once READ_MS after, as by a reader who read the page first
(navigation.js has looked ahead at the widget pages next to it meanwhile, once Python
was idle 1 s). And the worker's memory (WebAssembly memory; Python's allocated blocks
after gc.collect()) after the first page, after the first visit of every widget page,
and after NAVIGATIONS clicks through them all.

Then, on the live page, the time of one widget recomputation on its default preset,
asked as the widget asks it (widgets/live.js): PySim.runtime.call(NAME, {config, actions:
[]}, {files}) with the page's config and the data files from the widget's pre-rendered
model (the lab's and the cluster's traces: the worker writes them into Pyodide's file
system on the first call that names them, so a call without them fails), CALLS times per
load, twice: right at interactive,
and again SETTLE_MS later, on a page at rest (when a reader who has just arrived would
touch a control). Right after boot the browser is still optimising Pyodide's WebAssembly
in the background and the page is finishing its own start-up, so the first calls are
slower; both are printed, and the goal is judged at rest. `in Python` is the time the
worker reports for bridge.call, `round trip` adds messaging and JSON parsing in the page.

Last, a redraw that must fit a frame: chunked prefill's timeline on a phone (375 px, dark),
the long document at a 16,384-token budget (about 150 steps) with a pinned run beside it,
stepped from the keyboard (Home, Right, Right, End, Left); the widget reports each
redraw's time (data-draw-ms). Median and worst of REDRAW_RUNS loads, goal a 60 Hz frame.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import statistics
import sys
import threading
from pathlib import Path

from common import ROOT, table

sys.path.insert(0, str(ROOT / "tests" / "browser"))
from conftest import LAUNCH_ARGS, chromium_path, sitemap_here  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

SITE = Path(os.environ.get("PYSIM_SITE_DIR", ROOT / "site"))
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
CALLS = int(os.environ.get("BENCH_CALLS", "20"))
# 0 leaves out the instant-navigation tables (a site built before issue 18 has none)
NAVIGATION = os.environ.get("BENCH_NAVIGATION", "1") != "0"
SETTLE_MS = 1000
GOAL_TTI_RATIO = 1.10
GOAL_NEXT_PAGE_MS = 300
GOAL_MEMORY_GROWTH = 0.10
HOVER_MS = 150
LOOK_MS = 300  # a glance at the page entered before the next click
READ_MS = 2000  # a reader who reads it first (navigation.js looks ahead meanwhile)
# How the next click comes: (ms on the link before it, ms on the page entered before it)
CLICKS = [(0, LOOK_MS), (HOVER_MS, LOOK_MS), (0, READ_MS)]
FIRST_WIDGET = {}  # page file -> the anchor of its first widget
NAVIGATIONS = 20
GOAL_PRERENDER_MS = 1000
GOAL_RECOMPUTE_P95_MS = 16
REDRAW_RUNS = int(os.environ.get("BENCH_REDRAW_RUNS", "5"))
GOAL_REDRAW_MS = 16.7  # one frame at 60 Hz

# Installed before any page script. Marks are ms from navigation start.
AFTER_NEXT_FRAME = """
// The frame after a change ends once the browser has laid out and painted it: a message
// posted from its animation-frame callback arrives in the task after that rendering.
var afterNextFrame = (then) => requestAnimationFrame(() => {
  const channel = new MessageChannel();
  channel.port1.onmessage = then;
  channel.port2.postMessage(null);
});
"""

PROBE = AFTER_NEXT_FRAME + """
window.__marks = {};
const RealWorker = window.Worker;
window.Worker = class extends RealWorker {
  postMessage(message, ...rest) {
    if (message && message.type === 'boot' && !__marks.python) __marks.python = performance.now();
    return super.postMessage(message, ...rest);
  }
};
new MutationObserver(() => {
  const widgets = [...document.querySelectorAll('.pysim-widget')];
  if (!widgets.length) return;
  if (!__marks.mounted && widgets.every(w => w.dataset.mounted)) {
    __marks.mounted = performance.now();
    afterNextFrame(() => { __marks.prerendered = performance.now(); });
  }
  if (!__marks.ready && widgets[0].dataset.runtime === 'ready') __marks.ready = performance.now();
  if (!__marks.interactive && widgets.every(w => w.dataset.live === 'ready'))
    __marks.interactive = performance.now();
}).observe(document, {subtree: true, childList: true, attributes: true});
"""

RECOMPUTE = """
async ([name, n]) => {
  // What the widget's base state is asked with: the page's config, the data files it reads.
  const data = document.querySelector(`.pysim-widget[data-widget="${name}"] template.pysim-prerender`);
  const model = JSON.parse(data.content.textContent);
  const payload = {config: model.config || {}, actions: []};
  // (A generous limit: a call past runtime.call's would restart Python under the bench.)
  const options = {files: model.files || null, timeoutMs: 120000};
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const answer = await PySim.runtime.call(name, payload, options);
    out.push({ok: answer.ok, ms: answer.ms, roundTrip: performance.now() - t0, error: answer.ok ? null : answer.error});
  }
  return out;
}
"""


# Installed once per context: with instant navigation no page reloads, so it sees every
# click and what followed it.
NAV_PROBE = AFTER_NEXT_FRAME + """
window.__nav = [];
const container = () => document.querySelector('[data-md-component=container]');
document.addEventListener('click', (e) => {
  if (e.target.closest && e.target.closest('a')) __nav.push({click: performance.now(), left: container()});
}, true);
new MutationObserver(() => {
  const n = __nav[__nav.length - 1];
  const widgets = [...document.querySelectorAll('.pysim-widget')];
  // (Until the next page is swapped in, the widgets here are the page left's.)
  if (!n || container() === n.left || !widgets.length) return;
  if (!n.mounted && widgets.every(w => w.dataset.mounted)) {
    n.mounted = performance.now();
    afterNextFrame(() => { n.drawn = performance.now(); });
  }
  if (!n.interactive && widgets.every(w => w.dataset.live === 'ready'))
    n.interactive = performance.now();
}).observe(document, {subtree: true, childList: true, attributes: true});
"""

STATS = """() => new Promise((resolve) => {
  const worker = PySim.runtime.worker;
  const take = (e) => { if (e.data.type === 'stats') { worker.removeEventListener('message', take); resolve(e.data); } };
  worker.addEventListener('message', take);
  worker.postMessage({type: 'stats'});
})"""

ALL_LIVE = ("() => { const ws = [...document.querySelectorAll('.pysim-widget')]; "
            "return ws.length > 0 && ws.every(w => w.dataset.live === 'ready'); }")


def click_to(page, page_file: str, hover_ms: int) -> dict:
    """Click the sidebar's link to page_file and return the marks of that click (ms)."""
    link = page.locator(f'nav.md-nav--primary a.md-nav__link[href$="/{page_file}"]').first
    if hover_ms:
        link.hover()
        page.wait_for_timeout(hover_ms)
    link.click()
    page.wait_for_function(f"() => location.pathname.endsWith('/{page_file}')")
    page.wait_for_function("() => { const n = __nav[__nav.length - 1]; return n && n.interactive && n.drawn; }",
                           timeout=60000)
    n = page.evaluate("(({click, drawn, interactive}) => ({click, drawn, interactive}))(__nav[__nav.length - 1])")
    return {"drawn": n["drawn"] - n["click"], "interactive": n["interactive"] - n["click"]}


def navigate(browser, base: str, pages: list[str], hover_ms: int, read_ms: int) -> dict[str, dict]:
    """One context: the first page opened and live, then a click to each next one, each
    read_ms after the page before it went live (the first: after SETTLE_MS)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.add_init_script(NAV_PROBE)
    page.goto(f"{base}{pages[0]}#{FIRST_WIDGET[pages[0]]}")
    page.wait_for_function(ALL_LIVE, timeout=180000)
    page.wait_for_timeout(SETTLE_MS)
    out = {}
    for name in [*pages[1:], pages[0]]:
        out[name] = click_to(page, name, hover_ms)
        page.wait_for_timeout(read_ms)  # a reader looks at the page before the next click
    context.close()
    return out


def memory(browser, base: str, pages: list[str]) -> list[tuple[str, dict]]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.add_init_script(NAV_PROBE)
    page.goto(f"{base}{pages[0]}#{FIRST_WIDGET[pages[0]]}")
    page.wait_for_function(ALL_LIVE, timeout=180000)
    rows = [("the first page live", page.evaluate(STATS))]
    order = [pages[(i + 1) % len(pages)] for i in range(NAVIGATIONS)]
    for i, name in enumerate(order, 1):
        click_to(page, name, 0)
        if i == len(pages):
            rows.append((f"every widget page visited once ({i} clicks)", page.evaluate(STATS)))
    rows.append((f"after {NAVIGATIONS} clicks", page.evaluate(STATS)))
    context.close()
    return rows


def widget_pages(site: Path = SITE) -> dict[str, list[str]]:
    """Page file -> the widgets on it, found in the built site."""
    out = {}
    for path in sorted(site.glob("*.html")):
        found = re.findall(r'class="pysim-widget" data-widget="([a-z_]+)"', path.read_text())
        if found:
            out[path.name] = found
    return out


def floor_page(page_file: str) -> str:
    """A page with nothing but the worker booting Pyodide and loading pysim, sent the
    same boot message the widget runtime sends."""
    html = (SITE / page_file).read_text()
    runtime = json.loads(re.search(r'<script type="application/json" id="pysim-runtime">(.*?)</script>', html).group(1))
    absolute = lambda p: "/" + p.lstrip("./")
    boot = {"type": "boot", "package": runtime["package"], "sizes": runtime.get("sizes", {})}
    return f"""<!doctype html><meta charset="utf-8"><title>floor</title><p>Booting Pyodide.</p>
<script type="module">
window.__marks = {{}};
const worker = new Worker({json.dumps(absolute(runtime['worker']))}, {{type: "module", name: "pysim"}});
worker.onmessage = (e) => {{ if (e.data.type === "ready") window.__marks.ready = window.__marks.interactive = performance.now(); }};
window.__marks.python = performance.now();
worker.postMessage(Object.assign({json.dumps(boot)}, {{
  pyodide: location.origin + {json.dumps(absolute(runtime['pyodide']))},
  lock: location.origin + {json.dumps(absolute(runtime['lock']))},
  stdlib: location.origin + {json.dumps(absolute(runtime['stdlib']))}}}));
</script>"""


class Handler(http.server.SimpleHTTPRequestHandler):
    floor = ""

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path == "/sitemap.xml":
            body = sitemap_here((SITE / "sitemap.xml").read_bytes(), f"http://127.0.0.1:{self.server.server_address[1]}")
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/__floor__.html":
            body = self.floor.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            super().do_GET()


def is_python(url: str) -> bool:
    return "/assets/pyodide/" in url or "/assets/widgets/worker." in url


def measure(browser, url: str, widgets: list[str] = ()) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    sizes = {"page": 0, "python": 0}

    def finished(request):
        s = request.sizes()
        sizes["python" if is_python(request.url) else "page"] += s["responseBodySize"] + s["responseHeadersSize"]

    context.on("requestfinished", finished)
    page = context.new_page()
    page.add_init_script(PROBE)
    page.goto(url)
    page.wait_for_function("() => window.__marks && window.__marks.interactive", timeout=180000)
    page.wait_for_timeout(200)  # let the last requestfinished events arrive
    marks = page.evaluate("window.__marks")
    marks["fcp"] = page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || null")
    marks["page_bytes"], marks["total_bytes"] = sizes["page"], sizes["page"] + sizes["python"]
    marks["calls"] = {name: page.evaluate(RECOMPUTE, [name, CALLS]) for name in widgets}
    page.wait_for_timeout(SETTLE_MS)
    marks["calls_at_rest"] = {name: page.evaluate(RECOMPUTE, [name, CALLS]) for name in widgets}
    context.close()
    return marks


def chapter_order() -> list[str]:
    """Page files in the order of mkdocs.yml's nav (the sidebar's, top to bottom)."""
    return [f"{name}.html" for name in re.findall(r":\s*([\w-]+)\.md\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)]


def timeline_redraws(browser, base: str) -> list[float]:
    """Chunked prefill's timeline redrawn by keyboard steps at 375 px in the dark scheme,
    as tests/browser/test_chunked_prefill_page.py sets it up: ms per redraw."""
    root = '.pysim-widget[data-widget="chunked_prefill"]'
    context = browser.new_context(viewport={"width": 375, "height": 800}, color_scheme="dark")
    page = context.new_page()
    page.goto(base + "chunked-prefill.html#widget-chunked_prefill")  # Python starts at once
    page.wait_for_function("() => window.PySim && PySim.runtime.state === 'ready'", timeout=120_000)
    wait_idle = f"() => !document.querySelector('{root}').dataset.busy"
    widget = page.locator(root)
    widget.get_by_role("button", name="Long document", exact=True).click()
    page.wait_for_function(f"() => document.querySelector('{root}').dataset.scenario === 'long_document'")
    widget.get_by_role("button", name="Budget 2,048 tokens", exact=True).click()
    page.wait_for_function(f"() => document.querySelector('{root}').dataset.budget === '2048'")
    page.wait_for_function(wait_idle)
    widget.get_by_role("button", name="Pin this run").click()
    widget.get_by_role("button", name="Budget 16,384 tokens", exact=True).click()
    page.wait_for_function(f"() => document.querySelector('{root}').dataset.budget === '16384'")
    page.wait_for_function(wait_idle)
    page.locator(".budget-steps summary").click()
    timeline = page.locator("canvas.budget-timeline")
    timeline.focus()
    times = []
    for key in ("Home", "ArrowRight", "ArrowRight", "End", "ArrowLeft"):
        timeline.press(key)
        times.append(float(page.evaluate(f"document.querySelector('{root}').dataset.drawMs")))
    context.close()
    return times


def med(rows, key):
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def click_label(hover_ms: int, read_ms: int) -> str:
    on_link = "clicked at once" if not hover_ms else f"after {hover_ms} ms on the link"
    return on_link + (f", {read_ms} ms after the page before went live" if read_ms != LOOK_MS else "")


def navigation_tables(pages, nav_order, clicks, held, verdicts):
    ms = lambda v: "-" if v is None else f"{v:.0f}"
    print()
    print(f"Instant navigation: from the page before to this one by a click on the sidebar, in one context "
          f"(median of {RUNS}; ms from the click)")
    nav_rows = []
    for name in nav_order:
        row = [f"{name} ({', '.join(pages[name])})"]
        for how in CLICKS:
            runs = [r[name] for r in clicks[how]]
            row += [ms(med(runs, "drawn")), ms(med(runs, "interactive")),
                    f"{min(r['interactive'] for r in runs):.0f}-{max(r['interactive'] for r in runs):.0f}"]
            verdicts.append((f"{name}, {click_label(*how)}", "next", med(runs, "interactive")))
        nav_rows.append(row)
    print(table(["page entered (widgets)", *(f"{click_label(*how)}: {col}" if col == "drawn" else col
                                             for how in CLICKS for col in ("drawn", "interactive", "range"))], nav_rows))
    print()
    print("The worker's memory")
    first_round = next(stats for label, stats in held if label.startswith("every"))
    # (Pyodide's CPython is built without pymalloc, so sys.getallocatedblocks() may say 0:
    # then the WebAssembly memory, which only grows, is the measure.)
    mem_rows = [[label, f"{stats['wasm_bytes'] / 1e6:.1f}",
                 f"{stats['wasm_bytes'] / first_round['wasm_bytes'] - 1:+.1%}", f"{stats['py_blocks'] or '-'}"]
                for label, stats in held]
    print(table(["when", "WebAssembly memory MB", "vs every page visited once", "Python blocks"], mem_rows))
    last = held[-1][1]
    growth = last["wasm_bytes"] / first_round["wasm_bytes"] - 1
    if first_round["py_blocks"]:
        growth = max(growth, last["py_blocks"] / first_round["py_blocks"] - 1)
    verdicts.append((f"worker memory after {NAVIGATIONS} clicks", "memory", growth))


def time_split(name, loads, floors):
    """One row: where `name`'s cold loads spent their time, each against its floor load."""
    boot = [p["ready"] - p["python"] for p in loads]
    floor_boot = [f["ready"] - f["python"] for f in floors]
    return [name, f"{statistics.median(p['python'] for p in loads):.0f}", f"{statistics.median(boot):.0f}",
            f"{statistics.median(floor_boot):.0f}", f"{statistics.median(b / fb for b, fb in zip(boot, floor_boot)):.2f}x",
            f"{statistics.median(p['interactive'] - p['ready'] for p in loads):.0f}",
            f"{statistics.median((p['python'] + fb) / f['interactive'] for p, fb, f in zip(loads, floor_boot, floors)):.2f}x"]


def main():
    pages = widget_pages()
    if not pages:
        sys.exit(f"no page with a widget in {SITE}: run `make site` first")
    Handler.floor = floor_page(next(iter(pages)))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(SITE)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    results = {"floor": []} | {p: [] for p in pages}
    with sync_playwright() as p:
        path = chromium_path(shell=False)
        browser = p.chromium.launch(executable_path=path, args=LAUNCH_ARGS) if path else p.chromium.launch(args=LAUNCH_ARGS)
        for _ in range(RUNS):
            for name, widgets in pages.items():
                results["floor"].append(measure(browser, base + "__floor__.html"))
                results[name].append(measure(browser, f"{base}{name}#widget-{widgets[0]}", widgets))
        nav_order = [p for p in chapter_order() if p in pages]
        FIRST_WIDGET.update({name: f"widget-{widgets[0]}" for name, widgets in pages.items()})
        if NAVIGATION:
            clicks = {how: [navigate(browser, base, nav_order, *how) for _ in range(RUNS)] for how in CLICKS}
            held = memory(browser, base, nav_order)
        redraws = [timeline_redraws(browser, base) for _ in range(REDRAW_RUNS)] if "chunked-prefill.html" in pages else []
        browser.close()
    server.shutdown()

    floor = med(results["floor"], "interactive")
    # Each page load is compared with the floor load just before it (the same minute of
    # the same machine), and the ratio is the median of those pairs: a shared machine's
    # speed drifts by more than the effect we measure.
    pairs = {name: [p["interactive"] / f["interactive"] for p, f in zip(results[name], results["floor"][i::len(pages)])]
             for i, name in enumerate(pages)}
    ms = lambda v: "-" if v is None else f"{v:.0f}"
    rows = [["bare Pyodide + pysim (floor)", "-", "-", ms(med(results["floor"], "python")), ms(floor), ms(floor), "1.00x", "-", "-",
             f"{med(results['floor'], 'total_bytes') / 1e6:.2f}"]]
    verdicts = []
    for name, widgets in pages.items():
        r = results[name]
        ratio = statistics.median(pairs[name])
        rows.append([f"{name} ({', '.join(widgets)})", ms(med(r, "fcp")), ms(med(r, "prerendered")), ms(med(r, "python")),
                     ms(med(r, "ready")), ms(med(r, "interactive")), f"{ratio:.2f}x",
                     f"{min(pairs[name]):.2f}-{max(pairs[name]):.2f}", f"{med(r, 'page_bytes') / 1e3:.0f}",
                     f"{med(r, 'total_bytes') / 1e6:.2f}"])
        verdicts.append((name, ratio, max(med(r, "fcp"), med(r, "prerendered"))))
    print(f"Chromium headless ({Path(path).name if path else 'Playwright download'}), cold cache per load, median of {RUNS} loads each (ms from navigation start; "
          f"{os.cpu_count()} CPUs)")
    print(table(["page (widgets)", "first paint", "pre-rendered", "Python start", "Python ready", "interactive", "vs floor",
                 "range", "KB without Python", "MB total"], rows))
    print("vs floor: median over loads of (this load's interactive / the floor load just before it); range: lowest-highest")
    print()
    print("Where a page's time goes (ms, medians; each load against the floor load just before it)")
    print(table(["page", "before Python", "boot", "the floor's boot", "boot vs the floor's", "boot to interactive",
                 "bound vs floor"], [time_split(name, results[name], results["floor"][i::len(pages)])
                                     for i, name in enumerate(pages)]))
    print("before Python: text and pictures first (issue 7); boot: Python start to ready; bound: this page's\n"
          "Python start plus the floor's boot, over the floor's interactive - what it would reach with a boot as\n"
          "fast as the floor's and nothing to do after it")

    if NAVIGATION:
        navigation_tables(pages, nav_order, clicks, held, verdicts)

    calls = []
    for name, widgets in pages.items():
        for widget in widgets:
            at_start, at_rest = ([c for run in results[name] for c in run[key][widget]]
                                 for key in ("calls", "calls_at_rest"))
            errors = [c["error"] for c in at_start + at_rest if not c["ok"]]
            row = [widget, str(len(at_rest)) + (f" (error: {errors[0].get('message', '')[:60]!r})" if errors else "")]
            for samples in (at_start, at_rest):
                inside = [c["ms"] for c in samples]
                trip = [c["roundTrip"] for c in samples]
                row += [f"{pct(inside, 0.5):.1f}", f"{pct(inside, 0.95):.1f}", f"{pct(trip, 0.95):.1f}"]
            calls.append(row)
            # The goal is judged at rest.
            verdicts.append((widget, None, (pct([c["ms"] for c in at_rest], 0.95),
                                            pct([c["roundTrip"] for c in at_rest], 0.95))))
    print()
    print(f"One recomputation of the default preset, in the page's Pyodide worker ({CALLS} calls per load at "
          f"interactive, {CALLS} more {SETTLE_MS} ms later; ms)")
    print(table(["widget", "calls", "at interactive: in Python p50", "p95", "round trip p95",
                 "at rest: in Python p50", "p95", "round trip p95"], calls))

    if redraws:
        print()
        print(f"Chunked prefill's timeline redrawn from the keyboard, 375 px dark, ~150 steps and a pinned run "
              f"({REDRAW_RUNS} loads x 5 keys; ms per redraw)")
        each = [statistics.median(run) for run in redraws]
        flat = [t for run in redraws for t in run]
        print(table(["redraws", "median", "median of the loads' medians: lowest", "highest", "worst redraw"],
                    [[str(len(flat)), f"{statistics.median(flat):.1f}", f"{min(each):.1f}", f"{max(each):.1f}",
                      f"{max(flat):.1f}"]]))
        verdicts.append(("timeline redraw", "frame", statistics.median(flat)))

    print()
    print("Goals")
    for name, ratio, value in verdicts:
        if ratio == "next":
            print(f"  {name}: interactive {value:.0f} ms after the click (goal <= {GOAL_NEXT_PAGE_MS}): "
                  f"{'met' if value <= GOAL_NEXT_PAGE_MS else 'NOT met'}")
        elif ratio == "frame":
            print(f"  {name}: median {value:.1f} ms (goal <= {GOAL_REDRAW_MS} ms, one 60 Hz frame): "
                  f"{'met' if value <= GOAL_REDRAW_MS else 'NOT met'}")
        elif ratio == "memory":
            print(f"  {name}: {value:+.1%} against every page visited once (goal <= +{GOAL_MEMORY_GROWTH:.0%}): "
                  f"{'met' if value <= GOAL_MEMORY_GROWTH else 'NOT met'}")
        elif ratio is not None:
            print(f"  {name}: interactive {ratio:.2f}x the floor (goal <= {GOAL_TTI_RATIO}x): "
                  f"{'met' if ratio <= GOAL_TTI_RATIO else 'NOT met'}; text and pre-rendered widgets at "
                  f"{value:.0f} ms (goal < {GOAL_PRERENDER_MS}): {'met' if value < GOAL_PRERENDER_MS else 'NOT met'}")
        else:
            inside, trip = value
            print(f"  {name}: recomputation at rest p95 {inside:.1f} ms in Python, {trip:.1f} ms round trip "
                  f"(goal < {GOAL_RECOMPUTE_P95_MS}): {'met' if trip < GOAL_RECOMPUTE_P95_MS else 'NOT met'}")


if __name__ == "__main__":
    main()
