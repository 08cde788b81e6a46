"""What every widget page must do, checked on each one the build made (the pages and
their widgets are read from the built HTML, so a new simulation's page is in here
without a line changed):

1. The pre-rendered view is Pyodide's. A page draws each widget from the model the build
   computed with pysim in CPython, and never recomputes it in the reader's browser; so
   here, for every widget on the page, the same payload goes to pysim in the page's own
   worker, and its answer must equal the embedded model, byte for byte after JSON (and
   CPython's answer too). All of it under the site's Content-Security-Policy: Pyodide's
   WebAssembly and the widgets run, and nothing is reported as a violation.
2. A crafted link (script tags, HTML, event handlers, huge values, wrong types, unknown
   keys) is refused with a visible message, and nothing of it becomes markup or code.
3. A phone (375 px, dark scheme): the widgets, mounted at that size, fit the screen and
   every control is reached without scrolling sideways.
"""

from __future__ import annotations

import json

import pytest
from a11y import set_scheme
from conftest import ALL_LIVE, page_url, settle, until, wait_for_python
from test_offline import WIDGET_PAGES
from test_security import LINKED, PROBE, crafted_hash, markup_census

from pysim import bridge

# In the page: the payload a widget's pre-rendered model was made from (its fields'
# defaults under the page's own config, no actions, as live.js starts from), sent to
# pysim in the page's worker; whether the answer equals the model, and both.
COMPARE = """async (i) => {
  const root = document.querySelectorAll('.pysim-widget[data-widget]')[i];
  const model = JSON.parse(root.querySelector('template.pysim-prerender').content.textContent);
  const config = Object.fromEntries((model.fields || []).map((f) => [f.name, f.default]));
  Object.assign(config, model.config || {});
  const payload = {config, actions: []};
  const answer = await PySim.runtime.call(root.dataset.widget, payload, {files: model.files || null, timeoutMs: 120000});
  return {name: root.dataset.widget, payload, ok: answer.ok, error: answer.error || null,
          same: answer.ok && JSON.stringify(answer.result) === JSON.stringify(model.view),
          live: answer.result || null, model: model.view};
}"""


@pytest.mark.parametrize("name", sorted(WIDGET_PAGES))
def test_prerendered_views_are_what_pyodide_computes(live_page, name):
    page = live_page(name)
    assert page.locator('meta[http-equiv="Content-Security-Policy"]').count() == 1
    widgets = page.locator(".pysim-widget[data-widget]").count()
    assert widgets == len(WIDGET_PAGES[name])
    for i in range(widgets):
        got = page.evaluate(COMPARE, i)
        assert got["ok"], got["error"]
        # (A diff of the two is easier to read than "False": compare the data first.)
        assert got["live"] == got["model"], f"{got['name']}: the pre-rendered view differs from Pyodide's"
        assert got["same"], f"{got['name']}: equal as data, not as JSON text"
        cpython = json.loads(bridge.call(got["name"], json.dumps(got["payload"])))
        assert cpython["ok"] and cpython["result"] == got["model"], f"{got['name']}: CPython disagrees"
    # Booting Pyodide needed WebAssembly; the policy allowed it, and nothing else tried.
    assert page.evaluate("__violations") == []


@pytest.mark.parametrize("name", sorted(WIDGET_PAGES))
def test_crafted_link_is_refused_and_injects_nothing(live_page, make_page, site_url, name):
    baseline = markup_census(live_page(name))  # the same page, opened without a link
    assert baseline["handlers"] == 0 and not baseline["pwned"]

    dialogs = []
    page = make_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.add_init_script(PROBE)
    page.goto(page_url(site_url, name, crafted_hash(name, WIDGET_PAGES[name])))
    wait_for_python(page)
    until(page, ALL_LIVE)  # every widget has computed (or refused) what the link held
    for widget in WIDGET_PAGES[name]:
        root = page.locator(f'.pysim-widget[data-widget="{widget}"]')
        # The widget still draws its picture...
        assert root.locator(".pysim-body").evaluate("b => b.childElementCount") > 0
        if widget in LINKED:
            # ...and says, visibly, which part of the link it ignored.
            # (live.js: "Ignored the link's settings; ... <pysim's message>")
            message = root.locator("p.pysim-error", has_text="Ignored the link")
            assert message.count() >= 1, f"{widget}: no message about the crafted link"
            assert message.first.is_visible()
            assert len(message.first.inner_text()) < 3000
    after = markup_census(page)
    assert after == baseline, f"the crafted link changed the page's markup: {after} vs {baseline}"
    assert dialogs == []
    assert page.evaluate("__violations") == []  # nothing even tried to run


@pytest.mark.parametrize("name", sorted(WIDGET_PAGES))
def test_widgets_fit_a_phone_in_the_dark(live_page, name):
    # The page its widget tests share, switched to the dark scheme with the header's
    # toggle (a reader's system setting on load: test_accessibility.py), narrowed to a
    # phone, and its widgets mounted again at that size, as instant navigation mounts
    # them. (The next live_page puts the size and the scheme back.)
    page = live_page(name)
    set_scheme(page, "dark")
    page.set_viewport_size({"width": 375, "height": 800})
    settle(page)
    page.evaluate("() => { PySim.unmountAll(); PySim.mountAll(); }")
    until(page, ALL_LIVE)  # (its controls drawn for Python's answer: nothing moves now)
    for widget in WIDGET_PAGES[name]:
        root = page.locator(f'.pysim-widget[data-widget="{widget}"]')
        root.scroll_into_view_if_needed()
        until(page, f"document.querySelector('.pysim-widget[data-widget=\"{widget}\"]').dataset.mounted")
        box = root.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 375 + 0.5, (widget, box)
        # Every control can be reached without scrolling sideways.
        for control in root.locator("input, select, button").all():
            if control.is_visible():
                b = control.bounding_box()
                assert b["x"] >= 0 and b["x"] + b["width"] <= 375 + 0.5, (widget, control.evaluate("e => e.outerHTML.slice(0, 120)"))
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
