"""Page load in headless Chromium: how long until the race widget is interactive,
against a bare page that only boots the same Pyodide and pysim from the same files
(the floor no widget page can beat). Both are measured in one run, each load in a fresh
browser context (cold HTTP cache), alternating, median of N.

Columns: first contentful paint (text on screen), the pre-rendered widget drawn, the
widget interactive (Python ready and the default recomputed in Pyodide), bytes
transferred."""

from __future__ import annotations

import functools
import http.server
import json
import re
import statistics
import sys
import threading
from pathlib import Path

from common import ROOT, table

sys.path.insert(0, str(ROOT / "tests" / "browser"))
from conftest import LAUNCH_ARGS, chromium_path  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

SITE = ROOT / "site"
PAGES = {"race": "naive-batching/"}
RUNS = 5

# Installed before any page script: records when the pre-rendered widget is mounted and
# when the widget says it is live (Pyodide recomputed it).
PROBE = """
window.__marks = {};
new MutationObserver(() => {
  const w = document.querySelector('.pysim-widget');
  if (!w) return;
  if (w.dataset.mounted && !__marks.prerendered) __marks.prerendered = performance.now();
  if ((w.dataset.live === 'same' || w.dataset.live === 'updated') && !__marks.interactive) __marks.interactive = performance.now();
}).observe(document, {subtree: true, childList: true, attributes: true});
"""


def floor_page() -> str:
    """A page with nothing but the worker booting Pyodide and loading pysim."""
    html = (SITE / PAGES["race"] / "index.html").read_text()
    runtime = json.loads(re.search(r'<script type="application/json" id="pysim-runtime">(.*?)</script>', html).group(1))
    fix = lambda p: "/" + p.replace("../", "")
    return f"""<!doctype html><meta charset="utf-8"><title>floor</title><p>Booting Pyodide.</p>
<script type="module">
const worker = new Worker({json.dumps(fix(runtime['worker']))}, {{type: "module"}});
worker.onmessage = (e) => {{ if (e.data.type === "ready") window.__marks = {{interactive: performance.now()}}; }};
worker.postMessage({{type: "boot", pyodide: location.origin + {json.dumps(fix(runtime['pyodide']))},
  lock: location.origin + {json.dumps(fix(runtime['lock']))}, package: "pysim"}});
</script>"""


class Handler(http.server.SimpleHTTPRequestHandler):
    floor = ""

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path == "/__floor__.html":
            body = self.floor.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            super().do_GET()


def measure(browser, url: str) -> dict:
    context = browser.new_context()
    sizes = []
    context.on("requestfinished", lambda r: sizes.append(r.sizes()["responseBodySize"] + r.sizes()["responseHeadersSize"]))
    page = context.new_page()
    page.add_init_script(PROBE)
    page.goto(url)
    page.wait_for_function("window.__marks && window.__marks.interactive", timeout=120000)
    marks = page.evaluate("window.__marks")
    fcp = page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || null")
    page.wait_for_timeout(300)
    context.close()
    return {"fcp": fcp, "prerendered": marks.get("prerendered"), "interactive": marks["interactive"],
            "bytes": sum(sizes)}


def main():
    Handler.floor = floor_page()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(SITE)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    results = {"floor": []} | {name: [] for name in PAGES}
    with sync_playwright() as p:
        path = chromium_path()
        browser = p.chromium.launch(executable_path=path, args=LAUNCH_ARGS) if path else p.chromium.launch(args=LAUNCH_ARGS)
        for _ in range(RUNS):
            results["floor"].append(measure(browser, base + "__floor__.html"))
            for name, page in PAGES.items():
                results[name].append(measure(browser, base + page))
        browser.close()
    server.shutdown()

    def med(rows, key):
        values = [r[key] for r in rows if r[key] is not None]
        return statistics.median(values) if values else None

    floor = med(results["floor"], "interactive")
    rows = [["bare Pyodide + pysim (floor)", "-", "-", f"{floor:.0f}", "1.00x", f"{med(results['floor'], 'bytes') / 1e6:.2f}"]]
    for name, page in PAGES.items():
        r = results[name]
        tti = med(r, "interactive")
        rows.append([f"{page} ({name})", f"{med(r, 'fcp'):.0f}", f"{med(r, 'prerendered'):.0f}", f"{tti:.0f}",
                     f"{tti / floor:.2f}x", f"{med(r, 'bytes') / 1e6:.2f}"])
    print(f"Chromium headless, cold cache per load, median of {RUNS} (ms from navigation start)")
    print(table(["page", "first paint", "pre-rendered widget", "interactive", "vs floor", "MB transferred"], rows))


if __name__ == "__main__":
    main()
