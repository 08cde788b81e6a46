"""The chapter's pages as a reader sees them: math rendered by KaTeX at build time, no
raw TeX or unfilled {{ figure }} placeholder left, and the numbers pysim computed shown
where the text quotes them."""

from __future__ import annotations

import pytest
from conftest import ROOT, page_url, settle, until, widget_pages

from pysim.figures import figure

PAGES = sorted(p.stem for p in (ROOT / "docs").glob("*.md"))
MATH_PAGES = [p for p in PAGES if "$" in (ROOT / "docs" / f"{p}.md").read_text()]
WIDGET_PAGES = widget_pages()


def article_text(page) -> str:
    return page.locator("article").inner_text()


@pytest.mark.parametrize("name", PAGES)
def test_page_has_no_raw_math_or_placeholders(live_page, make_page, site_url, name):
    if name in WIDGET_PAGES:
        page = live_page(name)  # (the open one its widget tests share)
    else:
        page = make_page()
        page.goto(page_url(site_url, name))
    text = article_text(page)
    assert "{{" not in text and "}}" not in text, f"an unfilled figure on {name}"
    # KaTeX leaves the TeX only inside its hidden MathML annotation, which inner_text skips.
    for raw in ("$$", "\\(", "\\[", "\\frac", "\\times", "\\beta"):
        assert raw not in text, f"raw TeX {raw!r} on {name}"


def test_math_pages_have_katex(page, site_url):
    assert {"continuous-batching", "batch-size"} <= set(MATH_PAGES)
    for name in MATH_PAGES:
        page.goto(page_url(site_url, name))
        assert page.locator(".katex").count() > 0, name
        # The stylesheet and fonts come from this site (the fixture fails on any other host).
        assert page.evaluate(
            "() => [...document.styleSheets].some(s => (s.href || '').includes('katex'))")
        # Rendered formulas take up room (KaTeX's CSS applied, not a collapsed span).
        assert page.evaluate(
            "() => [...document.querySelectorAll('.katex')].some(e => e.getBoundingClientRect().height > 10)"), name


def test_the_littles_law_example_shows_pysims_numbers(page, site_url):
    page.goto(page_url(site_url, "continuous-batching"))
    text = article_text(page)
    assert f"{figure('little.delivered_tok_s'):,.0f} tokens/s" in text
    assert f"{figure('little.offered_tok_s'):,.0f} tokens/s" in text


# ---------------------------------------------------------------- a phone (issue 16, item 6)

# Elements of the article sticking out past the screen's right edge that are not inside a
# scroll box (itself on the screen): what a reader on a phone cannot reach.
OUTSIDE_SCROLLERS = """() => {
  const vw = document.documentElement.clientWidth, out = [];
  const inScroller = (el) => {
    for (let a = el.parentElement; a; a = a.parentElement) {
      if (a instanceof SVGElement) continue;
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX) && a.getBoundingClientRect().right <= vw + 0.5) return true;
    }
    return false;
  };
  for (const el of document.querySelectorAll('article *')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 0.5 && !inScroller(el)) out.push(el.outerHTML.slice(0, 120));
  }
  return out;
}"""

# The boxes of ours that scroll sideways: a widget's, a diagram's, a plot's. (Material's
# own, around Markdown tables, formulas and code, are Material's business.)
WIDE_BOXES = """() => [...document.querySelectorAll('article *')].filter((el) =>
    ['auto', 'scroll'].includes(getComputedStyle(el).overflowX) && el.scrollWidth > el.clientWidth + 1
    && !el.closest('.arithmatex, pre, .md-typeset__scrollwrap')).map((el, i) => {
  el.dataset.wideBox = String(i);
  return { box: i, focusable: el.tabIndex >= 0, name: el.getAttribute('aria-label') || el.outerHTML.slice(0, 80) };
})"""


@pytest.mark.parametrize("name", ["naive-batching", "continuous-batching", "paged-kv-cache"])
def test_a_phone_reaches_everything_and_scrolls_it_from_the_keyboard(make_page, site_url, name):
    page = make_page(width=375, height=800)
    page.goto(page_url(site_url, name))
    page.wait_for_load_state("load")
    settle(page)  # Material's tables and the widgets' first drawing
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert page.evaluate(OUTSIDE_SCROLLERS) == []
    boxes = page.evaluate(WIDE_BOXES)
    assert boxes, "nothing of ours is wide on the page: the test would prove nothing"
    for box in boxes:  # each is named, and the reader's Tab and arrow keys scroll it
        assert box["focusable"] and "scrolls sideways" in box["name"], box
        wide = page.locator(f'[data-wide-box="{box["box"]}"]')
        wide.focus()
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        until(page, f'document.querySelector(\'[data-wide-box="{box["box"]}"]\').scrollLeft > 0', timeout=5)


# On-screen font size of every label of the page's SVG pictures: inline plots as they are,
# <img> diagrams through a copy of the file laid out at the image's on-screen width.
LABEL_SIZES = """async () => {
  const px = (svg) => [...svg.querySelectorAll('text')].map((t) => {
    const m = t.getScreenCTM(), r = t.getBoundingClientRect();
    const turned = Math.abs(m.b) > Math.abs(m.a); // an axis title written upwards
    return { text: t.textContent, px: Math.hypot(m.a, m.b) * parseFloat(getComputedStyle(t).fontSize),
             height: turned ? r.width : r.height };
  });
  const out = [];
  for (const svg of document.querySelectorAll('article svg[viewBox][role="img"]')) out.push(...px(svg));
  for (const img of document.querySelectorAll('article img[src$=".svg"]')) {
    const box = document.createElement('div');
    box.style.cssText = `position:absolute;left:0;top:0;width:${img.getBoundingClientRect().width}px`;
    box.append(new DOMParser().parseFromString(await (await fetch(img.src)).text(), 'image/svg+xml').documentElement);
    const svg = box.firstChild;
    svg.removeAttribute('width'); svg.removeAttribute('height');
    svg.style.cssText = 'width:100%;height:auto;display:block';
    document.body.append(box);
    out.push(...px(svg).map((l) => Object.assign(l, { img: img.getAttribute('src') })));
    box.remove();
  }
  return out;
}"""


@pytest.mark.parametrize("name", ["continuous-batching", "paged-kv-cache"])
def test_diagram_labels_stay_readable_on_a_phone(make_page, site_url, name):
    page = make_page(width=375, height=800)
    page.goto(page_url(site_url, name))
    labels = page.evaluate(LABEL_SIZES)
    assert len(labels) > 40
    small = [l for l in labels if l["px"] < 10 - 1e-6 or l["height"] < 10]
    assert small == [], small[:5]


def test_a_facts_source_note_stands_apart_from_its_word(page, site_url):
    """A reader saw "default^vLLM 0.33.0": the source note touched the fact's last word."""
    page.goto(page_url(site_url, "chunked-prefill"))
    note = page.locator("article sup.fact-source").first
    gap = note.evaluate("""sup => {
      const r = document.createRange();
      r.setStart(sup.previousSibling, sup.previousSibling.length - 1);
      r.setEnd(sup.previousSibling, sup.previousSibling.length);
      return sup.getBoundingClientRect().left - r.getBoundingClientRect().right; }""")
    assert gap >= 2, gap


def test_no_back_to_top_pill_over_a_widgets_controls(page, site_url):
    """Material's "Back to top" pill showed while scrolling up, over the controls at the
    top of the screen; it is switched off (mkdocs.yml, no navigation.top)."""
    page.goto(page_url(site_url, "chunked-prefill"))
    page.mouse.wheel(0, 2400)
    page.wait_for_timeout(300)
    button = page.locator(".pysim-widget button:visible").first
    # The control a little below the header, then a scroll up, which is what showed it.
    button.evaluate("b => window.scrollBy(0, b.getBoundingClientRect().top - 220)")
    page.mouse.wheel(0, -120)
    page.wait_for_timeout(400)
    pill = page.locator(".md-top")
    assert pill.count() == 0 or not pill.is_visible()
    # Nothing sits over the control: the element at its centre is the control itself.
    box = button.bounding_box()
    assert 60 < box["y"] < 500, box
    assert button.evaluate("(b, [x, y]) => b.contains(document.elementFromPoint(x, y))",
                           [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
