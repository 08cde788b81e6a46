"""CPU a browser test pays per page, in Chromium's headless shell and in the full Chromium.

The browser suite is CPU-bound on these 2-core machines (both cores busy from start to
end), so its length follows the CPU its pages cost, not their wall time. Each row here
is one thing a test does, from a fresh context (a cold cache, a renderer of its own) to
that context closed, measured as the machine's busy time (/proc/stat: every process,
the Playwright driver and this one included, so run it on an otherwise idle machine):

- a blank page: a new context and page, closed (the renderer's start and end);
- the home page, loaded, then one idle second (Material's scripts, the search index);
- a widget page until every widget is live (Python started).

tests/browser/conftest.py picks the headless shell for the tests because of these
figures; the benchmarks that time pages keep the full Chromium, the reader's browser.
Needs the built site (`make site`) and both browsers (Debian: `chromium` and
`chromium-headless-shell`); a browser not found is left out of the table.
"""

from __future__ import annotations

import statistics
import sys
import time

from common import ROOT, busy, table

sys.path.insert(0, str(ROOT / "tests" / "browser"))
from conftest import (ALL_LIVE, FULL, LAUNCH_ARGS, SHELLS, SITE, first_found,  # noqa: E402
                      start_server, until, wait_for_python)
from playwright.sync_api import sync_playwright  # noqa: E402

RUNS = 7  # medians of this many, after one warm-up load of each
WIDGET_PAGE = "lab"  # the heaviest pre-rendered view, and a Python start like any other


def blank(browser, base):
    context = browser.new_context()
    context.new_page()
    context.close()


def home(browser, base):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(base + "index.html")
    page.wait_for_load_state("load")
    page.wait_for_timeout(1000)  # what the page still does once loaded (the search worker)
    context.close()


def widget_page(browser, base):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{base}{WIDGET_PAGE}.html")
    wait_for_python(page)
    until(page, ALL_LIVE)
    context.close()


STEPS = {"blank page (context and renderer)": blank, "home page, loaded": home,
         f"{WIDGET_PAGE} page, every widget live": widget_page}


def measure(path: str, base: str) -> dict[str, tuple[float, float]]:
    """Median (CPU-s, wall s) of each step in the browser at `path`."""
    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=LAUNCH_ARGS)
        for name, step in STEPS.items():
            step(browser, base)  # warm-up: the OS's file cache, the browser's first renderer
            cpu, wall = [], []
            for _ in range(RUNS):
                time.sleep(0.5)  # let the last context's processes end
                b0, t0 = busy(), time.monotonic()
                step(browser, base)
                time.sleep(0.5)  # and count what they do on the way out
                cpu.append(busy() - b0)
                wall.append(time.monotonic() - t0 - 0.5)
            out[name] = (statistics.median(cpu), statistics.median(wall))
        browser.close()
    return out


def main():
    if not (SITE / "index.html").exists():
        sys.exit(f"{SITE} has no index.html: run `make site` first")
    server, base = start_server(SITE)
    browsers = {"full Chromium": first_found(FULL), "headless shell": first_found(SHELLS)}
    found = {name: path for name, path in browsers.items() if path}
    if not found:
        sys.exit("no Chromium found (apt-get install chromium chromium-headless-shell)")
    results = {name: measure(path, base) for name, path in found.items()}
    print(f"CPU per page from a fresh context, median of {RUNS} (CPU-s: the machine's busy time; "
          f"wall s in brackets); {', '.join(f'{n}: {p}' for n, p in found.items())}")
    headers = ["step", *found]
    if len(found) == 2:
        headers.append("shell / full")
    rows = []
    for step in STEPS:
        row = [step, *(f"{results[n][step][0]:.2f} ({results[n][step][1]:.2f})" for n in found)]
        if len(found) == 2:
            row.append(f"{results['headless shell'][step][0] / results['full Chromium'][step][0]:.2f}")
        rows.append(row)
    print(table(headers, rows))
    server.shutdown()


if __name__ == "__main__":
    main()
