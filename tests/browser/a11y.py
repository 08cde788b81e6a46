"""axe-core on the built pages (issue 16): what tests/browser/test_accessibility.py runs,
and, run as a script, the table of every violation on every page.

Every page of the site's nav (read from mkdocs.yml, so a new page is checked without
touching this file) and Material's 404 page, in the light and the dark scheme, at 1280
and 375 px, once the page's widgets are live. axe-core comes from node_modules
(package.json's devDependencies) and is evaluated in the page over the DevTools protocol,
which the page's Content-Security-Policy does not govern: the page fetches nothing for it
and runs under its real policy. The rules are WCAG 2.1 A and AA, colour contrast included.

    .venv/bin/python tests/browser/a11y.py                      # the table, every impact
    .venv/bin/python tests/browser/a11y.py --save before.json   # ... and keep the counts
    .venv/bin/python tests/browser/a11y.py --before before.json # counts before -> now

(The site must be built first: make site.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import yaml
from conftest import settle

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
FAILING = ("serious", "critical")
WIDTHS = (1280, 375)
# Playwright's prefers-color-scheme -> the Material scheme mkdocs.yml's palette gives it.
SCHEMES = {"light": "default", "dark": "slate"}
NOT_FOUND = "404"   # Material's page for a bad link: not in the nav, but a page all the same


class _AnyTag(yaml.SafeLoader):
    """mkdocs.yml may hold tags (!ENV, !!python/name:...) that only MkDocs resolves."""


_AnyTag.add_multi_constructor("", lambda loader, suffix, node: None)


def nav_pages(mkdocs_yml: Path = ROOT / "mkdocs.yml") -> list[str]:
    """The page names (docs/NAME.md -> NAME) of the nav, in its order."""
    found = []

    def walk(item):
        if isinstance(item, str):
            if item.endswith(".md"):
                found.append(item[:-3])
        elif isinstance(item, dict):
            for value in item.values():
                walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)

    walk(yaml.load(mkdocs_yml.read_text(), Loader=_AnyTag).get("nav", []))
    return found


def pages() -> list[str]:
    return [*nav_pages(), NOT_FOUND]


def open_live(page, url: str):
    """Open `url`, wait until every widget on it has its live answer, and unfold every
    collapsed block (see unfold)."""
    page.goto(url)
    if page.locator(".pysim-widget").count():
        # As a reader would: Python starts when a widget comes near the screen; then every
        # widget on the page goes live on it.
        page.locator(".pysim-widget").first.scroll_into_view_if_needed()
        page.wait_for_function(
            "() => [...document.querySelectorAll('.pysim-widget')]"
            ".every(w => w.dataset.live && w.dataset.live !== 'pending')", timeout=120000)
        live = page.evaluate("[...document.querySelectorAll('.pysim-widget')].map(w => w.dataset.live)")
        assert set(live) == {"ready"}, (url, live)
    # What a reader can unfold is checked too (axe skips what is not rendered).
    unfold(page)


def unfold(page):
    """Open every collapsed block, so axe checks what is inside it too, and scroll to the
    top. The blocks it opened are marked: fold_back closes them again, on a page that
    other tests share."""
    page.evaluate("document.querySelectorAll('details:not([open])')"
                  ".forEach(d => { d.open = true; d.dataset.a11yUnfolded = ''; })")
    page.evaluate("window.scrollTo(0, 0)")


def fold_back(page):
    """Close the blocks unfold opened: the page as it was."""
    page.evaluate("document.querySelectorAll('details[data-a11y-unfolded]')"
                  ".forEach(d => { d.open = false; delete d.dataset.a11yUnfolded; })")


def scheme_applied(page) -> dict:
    """Material's scheme on the page, and whether its background really is dark."""
    return page.evaluate("""() => {
        const rgb = getComputedStyle(document.body).backgroundColor.match(/[\\d.]+/g).map(Number);
        return {scheme: document.body.dataset.mdColorScheme, dark: (rgb[0] + rgb[1] + rgb[2]) / 3 < 80};
    }""")


def set_scheme(page, scheme: str):
    """Switch to `scheme` (light/dark) as a reader does, with the header's palette toggle
    (mkdocs.yml: palette), and check the page really is in it."""
    if scheme_applied(page)["scheme"] != SCHEMES[scheme]:
        target = page.locator(f'input[name="__palette"][data-md-color-scheme="{SCHEMES[scheme]}"]').get_attribute("id")
        page.locator(f'label[for="{target}"]').click()
        page.wait_for_function(f"() => document.body.dataset.mdColorScheme === '{SCHEMES[scheme]}'")
        settle(page)  # the widgets redraw their canvases in the new colours
    assert scheme_applied(page) == {"scheme": SCHEMES[scheme], "dark": scheme == "dark"}


def set_width(page, width: int):
    """The same page at another width: Material's layout follows its media queries, the
    widgets redraw on resize; wait for that to settle."""
    if page.viewport_size["width"] == width:
        return
    page.set_viewport_size({"width": width, "height": page.viewport_size["height"]})
    settle(page)
    assert page.evaluate("window.innerWidth") == width


def combinations(page):
    """Put the open page in each scheme and width in turn, yielding (scheme, width)."""
    for scheme in SCHEMES:
        set_width(page, WIDTHS[0])   # the palette toggle, where a reader finds it
        set_scheme(page, scheme)
        for width in WIDTHS:
            set_width(page, width)
            yield scheme, width


def inject_axe(page):
    """axe-core into the page, once: not as a <script> (the page's policy refuses inline
    ones, and bypassing it would test another page) but evaluated over the protocol."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;undefined")


def run_axe(page) -> list[dict]:
    """axe-core's WCAG 2.1 A/AA violations on the page as it is now:
    [{id, impact, help, nodes: [{target, summary}]}]."""
    inject_axe(page)
    return page.evaluate(
        """async (tags) => {
             const r = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                                resultTypes: ['violations']});
             return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
               nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary || ''}))}));
           }""", TAGS)


def describe(violations: list[dict], where: str, nodes: int = 3) -> str:
    """One line per violation, with its first few nodes: what a failing test prints."""
    lines = []
    for v in violations:
        lines.append(f"{where}: {v['id']} ({v['impact']}, {len(v['nodes'])} nodes): {v['help']}")
        for n in v["nodes"][:nodes]:
            summary = " ".join(n["summary"].split())[:160]
            lines.append(f"    {n['target']}  -- {summary}")
    return "\n".join(lines)


# ------------------------------------------------------------------ the table (a script)

def survey(base: str, make_context, details: dict | None = None) -> Counter:
    """(rule, impact, width, scheme) -> nodes, summed over every page; `details` gets
    every violation by "page width scheme"."""
    from conftest import page_url

    counts = Counter()
    for name in pages():
        start = time.monotonic()
        context = make_context()
        page = context.new_page()
        open_live(page, page_url(base, name))
        for scheme, width in combinations(page):
            found = run_axe(page)
            for v in found:
                counts[(v["id"], v["impact"], width, scheme)] += len(v["nodes"])
            if details is not None:
                details[f"{name} {width} {scheme}"] = found
        context.close()
        print(f"  {name}: {time.monotonic() - start:.1f} s", file=sys.stderr)
    return counts


def table(now: Counter, before: Counter | None = None) -> str:
    columns = [(w, s) for w in WIDTHS for s in SCHEMES]
    rules = sorted({(r, i) for r, i, _, _ in [*now, *(before or {})]},
                   key=lambda ri: (["critical", "serious", "moderate", "minor"].index(ri[1]), ri[0]))

    def cell(key):
        if before is None:
            return str(now.get(key, 0))
        return f"{before.get(key, 0)} -> {now.get(key, 0)}"

    head = ["rule", "impact", *(f"{w} {s}" for w, s in columns), "total"]
    rows = [head, ["---"] * len(head)]
    for rule, impact in rules:
        total = (sum(v for k, v in now.items() if k[:2] == (rule, impact)),
                 sum(v for k, v in (before or {}).items() if k[:2] == (rule, impact)))
        rows.append([rule, impact, *(cell((rule, impact, w, s)) for w, s in columns),
                     str(total[0]) if before is None else f"{total[1]} -> {total[0]}"])
    if len(rows) == 2:
        rows.append(["(none)", "", *([""] * len(columns)), "0"])
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def main(argv=None):
    from playwright.sync_api import sync_playwright

    from conftest import LAUNCH_ARGS, OUTSIDE, SITE, chromium_path, start_server

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--save", type=Path, help="write the counts to this JSON file")
    ap.add_argument("--before", type=Path, help="JSON counts from an earlier --save, shown as before -> now")
    ap.add_argument("--details", type=Path, help="write every violation, by page, width and scheme, to this JSON file")
    args = ap.parse_args(argv)

    server, base = start_server(SITE)
    with sync_playwright() as p:
        path = chromium_path()
        browser = p.chromium.launch(executable_path=path, args=LAUNCH_ARGS) if path else p.chromium.launch(args=LAUNCH_ARGS)

        def make_context():
            context = browser.new_context(viewport={"width": WIDTHS[0], "height": 900})
            context.route(OUTSIDE, lambda route, request: route.abort())
            return context

        details = {} if args.details else None
        now = survey(base, make_context, details)
        if args.details:
            args.details.write_text(json.dumps(details, indent=1))
        browser.close()
    server.shutdown()
    before = None
    if args.before:
        before = Counter({tuple(k): v for k, v in json.loads(args.before.read_text())})
    if args.save:
        args.save.write_text(json.dumps(sorted([list(k), v] for k, v in now.items())))
    print(table(now, before))


if __name__ == "__main__":
    main()
