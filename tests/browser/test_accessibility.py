"""Issue 16: WCAG 2.1 AA on every page, and buttons and links a reader can tell apart.

1. axe-core (node_modules, evaluated in the page over the DevTools protocol: the page
   fetches nothing for it and keeps its Content-Security-Policy) on every page of the nav
   and the 404 page, light and dark, at 1280 and 375 px, once the page's widgets are live
   and its collapsed blocks unfolded: no violation of impact serious or critical
   (tests/browser/a11y.py; run it as a script for the full table). A widget page is the
   one its widget tests share (conftest.live_page), left as it was found; the widths and
   the schemes are switched on the open page, the scheme with the header's palette
   toggle, as a reader does.
2. Contrast measured from the computed styles (the background resolved through the
   ancestors): an outlined button's text, its hover and focus state, its focus ring; a
   disabled button looks disabled (opacity) and an enabled one does not; a prose link is
   underlined and its text, at rest and under the pointer, is readable.
3. What scrolls sideways (a table at phone width) is reached by Tab and scrolled by the
   arrow keys, with a visible ring.
"""

from __future__ import annotations

import pytest
from a11y import (FAILING, SCHEMES, combinations, describe, fold_back, open_live, pages, run_axe,
                  scheme_applied, unfold)
from conftest import SITE, page_url, settle, until, wait_for_python, widget_pages

PAGES = pages()
WIDGET_PAGES = widget_pages()


def test_every_built_page_is_checked():
    """The nav (mkdocs.yml) and the 404 page are every page the build wrote."""
    assert sorted(PAGES) == sorted(p.stem for p in SITE.glob("*.html"))


@pytest.mark.long
@pytest.mark.parametrize("name", PAGES)
def test_no_serious_or_critical_violation(live_page, make_page, site_url, name):
    # With the network cut, as every test is.
    if name in WIDGET_PAGES:
        page = live_page(name)  # every widget live, on the Python its widget tests share
        unfold(page)
    else:
        page = make_page()
        open_live(page, page_url(site_url, name))
    assert page.locator("article h1").count() == 1, name
    failures = []
    try:
        for scheme, width in combinations(page):
            bad = [v for v in run_axe(page) if v["impact"] in FAILING]
            if bad:
                failures.append(describe(bad, f"{name} at {width} px, {scheme}"))
    finally:  # the blocks as they were (live_page resets the size and the scheme)
        fold_back(page)
    assert not failures, "axe-core (WCAG 2.1 A/AA) found:\n" + "\n".join(failures)


# ------------------------------------------------------------------ measured contrast

# In the page: WCAG's relative luminance and contrast ratio, and the colour an element
# is really drawn on (its own background over its ancestors', down to the first opaque).
CONTRAST_JS = """
(() => {
  const parse = (c) => {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) throw new Error("unparsed colour " + c);
    const [r, g, b, a = 1] = m[1].split(/[,\\s/]+/).filter(Boolean).map(Number);
    return [r, g, b, a];
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1);
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let bg = [255, 255, 255, 1];
    for (const layer of layers.reverse()) bg = over(layer, bg);
    return bg;
  };
  const lum = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) => {
      v /= 255;
      return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  // The text on `el`, the fill of `el` against what is around it, and its outline.
  window.__measure = (el) => {
    const s = getComputedStyle(el);
    const bg = background(el);
    const around = background(el.parentElement);
    const fg = over(parse(s.color), bg);
    return {
      text: ratio(fg, bg),
      fill: ratio(bg, around),
      outline: s.outlineStyle === "none" ? 0 : ratio(over(parse(s.outlineColor), around), around),
      outlineWidth: parseFloat(s.outlineWidth) || 0,
      opacity: parseFloat(s.opacity),
      cursor: s.cursor,
      underline: s.textDecorationLine.includes("underline"),
      color: s.color, background: `rgb(${bg.slice(0, 3).map(Math.round).join(", ")})`,
    };
  };
})()
"""

WIDGET_PAGE = "paged-kv-cache"   # outlined buttons, some disabled until the reader acts
OUTLINED = '.pysim-widget .md-button:not(.md-button--primary)'


def measure(locator) -> dict:
    return locator.evaluate("e => window.__measure(e)")


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_outlined_buttons_readable_at_rest_on_hover_and_on_focus(make_page, site_url, scheme):
    """Issue 16 item 3: in the dark scheme an outlined button's text was 2.35:1 and an
    enabled button looked like a disabled one; the orange hover/focus was 2.8:1 in both."""
    page = make_page(color_scheme=scheme)   # the scheme from the reader's system setting
    page.goto(page_url(site_url, WIDGET_PAGE))
    assert scheme_applied(page) == {"scheme": SCHEMES[scheme], "dark": scheme == "dark"}
    wait_for_python(page)
    page.evaluate(CONTRAST_JS)
    enabled = page.locator(f"{OUTLINED}:enabled").first
    disabled = page.locator(f"{OUTLINED}:disabled").first
    assert enabled.count() and disabled.count()

    rest = measure(enabled)
    assert rest["text"] >= 4.5, rest
    # Enabled and disabled look different: full strength, against opacity 0.45.
    off = measure(disabled)
    assert rest["opacity"] == 1 and off["opacity"] <= 0.5 and off["cursor"] == "not-allowed", (rest, off)

    # Focus from the keyboard: the button fills with the accent; its text on the fill,
    # the fill against the page and the ring around it are all visible.
    enabled.focus()
    assert enabled.evaluate("e => e.matches(':focus-visible')")
    settle(page)  # Material's 125 ms colour transition
    focus = measure(enabled)
    assert focus["text"] >= 4.5, focus
    assert focus["fill"] >= 3 and focus["outline"] >= 3 and focus["outlineWidth"] >= 2, focus
    enabled.evaluate("e => e.blur()")

    enabled.hover()
    settle(page)
    hover = measure(enabled)
    assert hover["text"] >= 4.5 and hover["fill"] >= 3, hover
    assert hover["background"] != rest["background"], (rest, hover)  # hovering shows


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_prose_links_are_underlined_and_readable(make_page, site_url, scheme):
    page = make_page(color_scheme=scheme)
    page.goto(page_url(site_url, "index"))
    assert scheme_applied(page)["scheme"] == SCHEMES[scheme]
    page.evaluate(CONTRAST_JS)
    link = page.locator("article p a[href]:not(.headerlink)").first
    rest = measure(link)
    assert rest["underline"] and rest["text"] >= 4.5, rest
    link.hover()
    settle(page)
    hover = measure(link)
    assert hover["underline"] and hover["text"] >= 4.5 and hover["color"] != rest["color"], hover


def test_a_wide_table_is_reached_by_tab_and_scrolled_by_the_arrow_keys(make_page, site_url):
    page = make_page(width=375, color_scheme="dark")
    page.goto(page_url(site_url, "real-systems"))
    page.evaluate(CONTRAST_JS)
    box = page.locator("article .pysim-scroll").first
    assert box.locator(".md-typeset__scrollwrap table").count() == 1   # Material's box, inside
    assert box.evaluate("e => e.scrollWidth > e.clientWidth")   # it does scroll at 375 px
    # Tab from the element before it, as a reader would (a table without a link is a stop too).
    box.evaluate("""b => { const all = [...document.querySelectorAll('article :is(a[href], button, [tabindex="0"])')];
                           all[all.indexOf(b) - 1].focus(); }""")
    page.keyboard.press("Tab")
    assert box.evaluate("b => b === document.activeElement && b.matches(':focus-visible')")
    ring = measure(box)
    assert ring["outline"] >= 3 and ring["outlineWidth"] >= 2, ring
    page.keyboard.press("ArrowRight")
    # (The keyboard's scroll is animated: its first steps are enough.)
    until(page, "document.querySelector('article .pysim-scroll').scrollLeft > 0", timeout=5)
