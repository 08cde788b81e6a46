"""The chapter's pages as a reader sees them: math rendered by KaTeX at build time, no
raw TeX or unfilled {{ figure }} placeholder left, and the numbers pysim computed shown
where the text quotes them."""

from __future__ import annotations

import pytest
from conftest import ROOT, page_url

from pysim.figures import figure

PAGES = sorted(p.stem for p in (ROOT / "docs").glob("*.md"))
MATH_PAGES = [p for p in PAGES if "$" in (ROOT / "docs" / f"{p}.md").read_text()]


def article_text(page) -> str:
    return page.locator("article").inner_text()


@pytest.mark.parametrize("name", PAGES)
def test_page_has_no_raw_math_or_placeholders(page, site_url, name):
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
