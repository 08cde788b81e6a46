"""Widgets that size their drawing to the page redraw when its width changes, and only
then: a ResizeObserver's first report, which comes with the first frame at the width the
pre-rendered picture was just drawn at, must not draw it all again (it would hold up the
frame that first shows the picture)."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT, page_url, settle, until, widget_homes

# A script that gives the width the widget's drawing was made for: a uPlot chart's box,
# a canvas's pixels or an SVG's viewBox, whichever the widget draws first; NaN (the test
# fails) if none. A widget whose drawing is none of these names its own here.
ANY_DRAWING = ("(ROOT.querySelector('.uplot') ? ROOT.querySelector('.uplot').getBoundingClientRect().width"
               " : ROOT.querySelector('canvas') ? ROOT.querySelector('canvas').width"
               " : ROOT.querySelector('svg[viewBox]')"
               " ? Number(ROOT.querySelector('svg[viewBox]').getAttribute('viewBox').split(' ')[2]) : NaN)")
WIDTH = {
    "naive_batching": "parseFloat(ROOT.querySelector('.race-scroll').style.width)",
    "toy_scheduler": "Number(ROOT.querySelector('.toy-chart').getAttribute('viewBox').split(' ')[2])",
    "batch_size": "ROOT.querySelector('.bs-chart .uplot').getBoundingClientRect().width",
    "lab": "ROOT.querySelector('.lab-chart .uplot').getBoundingClientRect().width",
    "cluster": "ROOT.querySelector('.cluster-chart .uplot').getBoundingClientRect().width",
    "chunked_prefill": "ROOT.querySelector('canvas').width",
}


REDRAW = re.compile(r"\bredraw\s*[(:]")  # the widget's `redraw` hook (widgets/live.js)


def sizes_to_the_page(widget: str) -> bool:
    """Its scripts (widgets/NAME.js and NAME.PART.js) give live.js a `redraw` hook, which
    live.js calls when the widget's width changes (or a ResizeObserver of their own)."""
    scripts = [*(ROOT / "widgets").glob(f"{widget}.js"), *(ROOT / "widgets").glob(f"{widget}.*.js")]
    return any(REDRAW.search(text) or "ResizeObserver" in text
               for text in (p.read_text(encoding="utf-8") for p in scripts))


# page, widget, and its width script: every widget of the built site that sizes its drawing
DRAWINGS = [(page, widget, WIDTH.get(widget, ANY_DRAWING))
            for widget, page in widget_homes().items() if sizes_to_the_page(widget)]


def drawn_width(page, widget, script) -> float:
    return page.evaluate(f"() => {{ const ROOT = document.querySelector(\".pysim-widget[data-widget='{widget}']\"); "
                         f"return {script}; }}")


@pytest.mark.parametrize("name,widget,script", DRAWINGS, ids=[d[0] for d in DRAWINGS])
def test_the_drawing_follows_the_page_width(make_page, site_url, watch, name, widget, script):
    page = make_page(width=1280)
    page.goto(page_url(site_url, name))
    root = f".pysim-widget[data-widget='{widget}']"
    until(page, f"document.querySelector(\"{root}\").dataset.mounted")
    settle(page)  # the first frames and the observers' first reports
    wide = drawn_width(page, widget, script)
    page.set_viewport_size({"width": 700, "height": 900})
    until(page, f"(() => {{ const ROOT = document.querySelector(\"{root}\"); return {script}; }})() < {wide}")
    narrow = drawn_width(page, widget, script)
    page.set_viewport_size({"width": 1280, "height": 900})
    until(page, f"(() => {{ const ROOT = document.querySelector(\"{root}\"); return {script}; }})() > {narrow}")
    assert drawn_width(page, widget, script) == pytest.approx(wide, abs=1)
    assert not watch.errors


def test_the_lab_rebuilds_its_charts_for_a_new_width_or_scheme_only(make_page, site_url, watch):
    """The lab's uPlot charts are rebuilt (every .uplot element replaced) when the
    widget's width or the colour scheme changes, and not for a height change or for
    Material setting the scheme it already has (its bundle does so as it starts)."""
    page = make_page(width=1280)
    page.goto(page_url(site_url, "lab"))
    root = ".pysim-widget[data-widget='lab']"
    until(page, f"document.querySelector(\"{root} .uplot\")")
    page.wait_for_timeout(1500)  # the page's own start-up is over

    def rebuilt(change: str) -> bool:
        page.evaluate(f"() => {{ window.__charts = [...document.querySelectorAll(\"{root} .uplot\")]; }}")
        page.evaluate(change)
        settle(page)  # a rebuild waits for the next frame
        return page.evaluate(f"""() => {{
            const now = [...document.querySelectorAll("{root} .uplot")];
            return !(now.length === __charts.length && now.every((el, i) => el === __charts[i]));
        }}""")

    same_scheme = "document.body.setAttribute('data-md-color-scheme', document.body.getAttribute('data-md-color-scheme'))"
    taller = f"document.querySelector(\"{root} .pysim-body\").append(Object.assign(document.createElement('p'), {{textContent: 'x'}}))"
    assert not rebuilt(same_scheme)
    assert not rebuilt(taller)
    assert rebuilt("document.body.setAttribute('data-md-color-scheme', 'slate')")
    assert rebuilt("document.querySelector('.md-content').style.maxWidth = '600px'")
    assert not watch.errors
