"""The site runs no one else's code: shared links are data, and a Content-Security-Policy
lets a page run only the site's own files.

1. A crafted link (script tags, HTML, event handlers, huge values, wrong types, unknown
   keys) on every widget page is refused with a visible message, and nothing of it
   becomes markup or code: no new element, no on* attribute, no dialog, no script run.
2. Every page carries the policy (sitebuild/csp.py): first in <head>, scripts only from
   the site plus the sha256 of each of Material's own inline scripts, WebAssembly for
   Pyodide, nothing from another host. The widgets run under it (Pyodide included, and
   from file://), and a script injected into the page is blocked.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import (CSP_PROBE, OFFLINE_SITE, OUTSIDE, ROOT, SITE, _is_local, page_url, wait_for_python,
                      widget_pages)
from sitebuild import iframe_worker, prerender

PAGES = sorted(p.stem for p in SITE.glob("*.html"))
WIDGET_PAGES = widget_pages()
# Widgets whose state lives in the link: every one on live.js but those that say
# `link: false` (the exercise keeps the reader's code on their own machine, never in a link).
def _linked(source: str) -> bool:
    return "PySim.widget(" in source and "link: false" not in source


LINKED = {w for ws in WIDGET_PAGES.values() for w in ws
          if _linked((ROOT / "widgets" / f"{w}.js").read_text())}

PROBE = CSP_PROBE  # records every policy violation

EVIL = [
    '<img src=x onerror="window.__pwned=1">',
    "<script>window.__pwned=1</script>",
    '"><svg onload="window.__pwned=1">',
    "javascript:window.__pwned=1",
    "'; window.__pwned=1; '",
    "1e999", "-1", "NaN", "Infinity", "0x10", "1.5", "", "9" * 400, "x" * 5000,
    '{"__proto__": {"polluted": 1}}', "[1,2]", "true", "null", "%00", "\u202e\u0000",
]


def prerendered_fields(page_name: str, widget: str) -> list[str]:
    html = (SITE / f"{page_name}.html").read_text()
    start = re.search(r'data-widget="%s"[^>]*>' % widget, html).end()
    [data, *_] = prerender.models(html[start:])  # the widget's own block comes first
    return [f["name"] for f in data.get("fields") or []]


def crafted_hash(page_name: str, widgets: list[str]) -> str:
    parts = []
    for widget in widgets:
        keys = prerendered_fields(page_name, widget) + [
            "actions", "view", "step", "scenario", "pin_max_num_batched_tokens", "enable_prefix_caching",  # keys some widgets read
            "<b>unknown</b>", "__proto__", "constructor", "on" + "load", "x" * 300]
        for i, key in enumerate(keys):
            value = EVIL[i % len(EVIL)]
            parts.append(f"{quote(widget + '.' + key)}={quote(value)}")
        parts.append(f"{widget}.broken=%E0%A4%A")  # not decodable
    parts.append(quote("<script>alert(1)</script>") + "=" + quote("<img src=x onerror=alert(1)>"))
    return "#" + "&".join(parts)


def markup_census(page) -> dict:
    """What could carry code: scripts (but our JSON data blocks, and the site's own
    script files, which a look ahead at the next pages adds while the reader reads),
    images, frames, objects, and any on* attribute anywhere in the document."""
    return page.evaluate("""() => ({
      scripts: [...document.querySelectorAll('script:not([type="application/json"])')].filter((s) =>
          !(s.src && new URL(s.src).origin === location.origin && new URL(s.src).pathname.includes('/assets/'))).length,
      images: document.querySelectorAll('img').length,
      frames: document.querySelectorAll('iframe, object, embed').length,
      handlers: [...document.querySelectorAll('*')].filter(el =>
          [...el.attributes].some(a => a.name.toLowerCase().startsWith('on'))).length,
      widgetSvgs: document.querySelectorAll('.pysim-widget svg').length,
      pwned: window.__pwned === 1 || ({}).polluted === 1,
    })""")


# (A crafted link on every widget page, and the widgets running under the policy:
# test_widget_pages.py, which opens each page once for its checks.)


# ===================================================================== the policy itself

def policy_of(html: str) -> str:
    found = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    assert len(found) == 1, "exactly one policy per page"
    return found[0]


def directives(policy: str) -> dict[str, list[str]]:
    out = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


BUILDS = {"hosted": SITE, "download": OFFLINE_SITE}


@pytest.mark.parametrize("build", BUILDS)
def test_every_page_has_the_sites_one_policy_first_and_it_hashes_exactly_the_inline_scripts(build):
    """One policy for the whole site (sitebuild/csp.py, site_policy): with instant
    navigation the first page's policy stays while the others come and go."""
    policies, listed, shim = set(), set(), set()
    for path in sorted(BUILDS[build].glob("*.html")):
        html = path.read_text()
        policy = policy_of(html)
        policies.add(policy)
        # First in <head>: only the charset declaration comes before it.
        head = html[html.index("<head>") + len("<head>"):]
        assert re.match(r'\s*(<meta charset="utf-8">)?<meta http-equiv="Content-Security-Policy"', head), path
        inline = [m.group(2) for m in re.finditer(r"<script(\s[^>]*)?>(.*?)</script>", html, re.S)
                  if not re.search(r"\ssrc=|type=\"application/json\"", m.group(1) or "")]
        assert inline, f"{path}: Material's own inline scripts"
        listed |= {sha256_source(s) for s in inline}
        if "iframe-worker" in html:  # the file:// search shim, and the script it will write
            shim.add(sha256_source(iframe_worker.iframe_script(iframe_worker.SHIM, iframe_worker.search_worker_url(html))))
    assert len(policies) == 1, f"{len(policies)} different policies"
    d = directives(policies.pop())
    assert d["default-src"] == ["'self'"]
    assert d["object-src"] == ["'none'"] and d["base-uri"] == ["'self'"]
    assert d["worker-src"] == ["'self'"] and d["connect-src"] == ["'self'"]
    assert d["img-src"] == ["'self'", "data:"] and d["font-src"] == ["'self'"]
    assert d["style-src"] == ["'self'", "'unsafe-inline'"]
    script = d["script-src"]
    assert script[:2] == ["'self'", "'wasm-unsafe-eval'"]
    hashes = script[2:]
    assert all(h.startswith("'sha256-") for h in hashes), script  # no host, no unsafe-*
    # Every inline script of every page is listed, and nothing else but, in the
    # download, the ones the file:// search shim writes into its iframe.
    assert listed <= set(hashes)
    assert set(hashes) - listed == shim and bool(shim) == (build == "download")


def test_injected_code_is_blocked(page, site_url, watch):
    watch.allow_error("Content Security Policy")  # Chrome reports each blocked attempt
    page.add_init_script(PROBE)
    page.goto(page_url(site_url, "naive-batching"))
    wait_for_python(page)
    # An inline script inserted into the page does not run...
    page.evaluate("""() => { const s = document.createElement('script');
                             s.textContent = 'window.__ran = (window.__ran || 0) + 1';
                             document.head.append(s); }""")
    try:
        page.add_script_tag(content="window.__ran = (window.__ran || 0) + 1")
    except Exception:
        pass  # Playwright may report the blocked script as an error: either way it did not run
    # ...nor an event handler written as an attribute, nor eval, nor a script from elsewhere.
    page.evaluate("""() => { const b = document.createElement('button');
                             b.setAttribute('onclick', 'window.__ran = (window.__ran || 0) + 1');
                             document.body.append(b); b.click(); b.remove(); }""")
    # (Code typed into DevTools may eval; the page's own timers may not run strings.)
    page.evaluate("() => { setTimeout('window.__ran = (window.__ran || 0) + 1', 0); }")
    page.evaluate("""() => { const s = document.createElement('script');
                             s.src = 'http://127.0.0.2:9/x.js'; document.head.append(s); }""")
    page.wait_for_function("() => __violations.length >= 5")
    assert page.evaluate("window.__ran") is None
    seen = page.evaluate("__violations")
    assert {v["directive"] for v in seen} <= {"script-src-elem", "script-src-attr", "script-src"}
    assert sum(v["blocked"] == "inline" for v in seen) >= 3  # two scripts and the handler
    assert any(v["blocked"] == "eval" for v in seen)
    assert any(v["blocked"].startswith("http://127.0.0.2") for v in seen)
    # The widgets did not notice: the race still answers.
    assert page.evaluate("PySim.runtime.call('naive_batching', {config: {seed: 3}}).then(a => a.ok)")


def test_pictures_draw_under_the_policy_from_disk(make_page):
    page = make_page()
    page.add_init_script(PROBE)
    base = Path(SITE).as_uri() + "/"
    for page_name, widgets in WIDGET_PAGES.items():
        page.goto(page_url(base, page_name))
        for widget in widgets:
            root = page.locator(f'.pysim-widget[data-widget="{widget}"]')
            root.scroll_into_view_if_needed()
            page.wait_for_function(
                f"() => document.querySelector('.pysim-widget[data-widget=\"{widget}\"]').dataset.runtime === 'unavailable'")
            assert root.locator(".pysim-body").evaluate("b => b.childElementCount") > 0
        assert policy_of(page.content())
        assert page.evaluate("__violations") == [], page_name


URLS = ["http://127.0.0.1:8000/", "http://127.0.0.1/x.js", "http://127.0.0.1?q", "ws://127.0.0.1:9/",
        "HTTP://127.0.0.1:1/a", "data:text/plain,hi", "blob:http://127.0.0.1:1/u", "about:blank",
        "file:///tmp/site/index.html", "http://127.0.0.2:9/x.js", "http://127.0.0.1.evil.com/",
        "https://cdn.example.com/a.js", "http://8.8.8.8/", "http://localhost:8000/",
        "http://evil.com/?http://127.0.0.1/", "https://fonts.googleapis.com/css"]


@pytest.mark.parametrize("url", URLS)
def test_the_routed_pattern_is_exactly_what_leaves_the_machine(url):
    assert bool(OUTSIDE.match(url)) == (not _is_local(url))


def test_a_request_that_would_leave_the_machine_is_refused_and_recorded(page, watch):
    """The fixture routes every request that would leave 127.0.0.1 to an abort, and each
    test then fails on it (conftest._check). The site's own policy already forbids such
    fetches, so this asks from a page without one: an IP address, which is not looked up,
    so Chromium's resolver rule (LAUNCH_ARGS) alone would not stop it."""
    watch.allow_error("net::ERR_FAILED")  # Chromium logs the aborted request
    page.goto("about:blank")
    outcome = page.evaluate("""Promise.race([
        fetch('http://192.0.2.1/from-the-page').then(() => 'fetched', () => 'refused'),
        new Promise((done) => setTimeout(() => done('no answer'), 10000))])""")
    assert outcome == "refused"
    assert watch.outside == ["http://192.0.2.1/from-the-page"]
    watch.outside.clear()  # made on purpose: the fixture's own check would fail the test
