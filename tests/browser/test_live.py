"""The one widget lifecycle (widgets/live.js) in a real browser: controls come from
pysim's describe metadata, so a field added to a config appears with no JS change; a
widget taken off the page leaves nothing running; the link follows back and forward."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, page_url, settle, until, wait_for_python, widget_homes

# Widgets built on live.js (their script calls PySim.widget), with the page that holds
# them: read from the built site and the widget files, so a new widget is here unlisted.
LIVE = {widget: page for widget, page in widget_homes().items()
        if "PySim.widget(" in (ROOT / "widgets" / f"{widget}.js").read_text(encoding="utf-8")}

EXTRA = {"name": "extra_knob", "kind": "int", "default": 3, "lo": 1, "hi": 9, "options": [],
         "label": "Extra knob", "unit": "turns", "help": "a field only this test adds"}


def with_extra_field(route):
    """Serve the page with one more field in each widget's embedded describe list, as
    the build would embed it had the field been added to the config dataclass."""
    response = route.fetch()
    html = response.text()
    marker = '"fields":['
    assert marker in html
    html = html.replace(marker, marker + json.dumps(EXTRA) + ",")
    route.fulfill(response=response, body=html)


@pytest.mark.parametrize("widget", sorted(LIVE))
def test_a_field_added_to_the_config_appears_as_a_control(page, site_url, watch, widget):
    url = page_url(site_url, LIVE[widget])
    page.route(url, with_extra_field)
    page.goto(url)
    root = f'.pysim-widget[data-widget="{widget}"]'
    control = page.locator(f'{root} .pysim-control[data-field="extra_knob"]')
    # Drawn before Python starts, from the metadata alone: label, range, help.
    assert control.count() == 1
    assert control.locator("label").first.inner_text() == "Extra knob"
    assert control.locator(".pysim-help").inner_text() == EXTRA["help"]
    slider = control.locator('input[type="range"]')
    assert (slider.get_attribute("min"), slider.get_attribute("max")) == ("1", "9")
    assert slider.get_attribute("aria-valuetext") == "3 turns"
    assert control.locator('input[type="number"]').input_value() == "3"
    # Its value goes to pysim like any other. This pysim has no such field, so it refuses
    # it by name, and the message appears at the new control; the picture stays.
    wait_for_python(page)
    until(page, f"!['pending', undefined].includes(document.querySelector('{root}').dataset.live)")
    box = control.locator('input[type="number"]')
    box.fill("5")
    box.press("Enter")
    error = control.locator(".pysim-error")
    error.wait_for(state="visible")
    assert error.inner_text().startswith("Extra knob: unknown setting"), error.inner_text()
    assert page.evaluate(f"document.querySelector('{root}').dataset.error") == "extra_knob"


# Counts what could outlive a widget: listeners on window, document, <html>, <body> and
# media queries, pending timeouts, intervals and animation frames, connected observers.
# Each is counted only if the widget took it: its creation's stack runs through live.js,
# the kit files that take things on its behalf (track.js, redraw.js) or the widget's own
# file (uPlot's window listeners, say, are called from there); the page's own
# (Material's, rpc.js's, boot.js's) are left out.
PROBE = """
(() => {
  Error.stackTraceLimit = 60;
  const mine = () => /assets\\/widgets\\/(live|track|redraw|WIDGET)(\\.[a-z]+)?\\.[0-9a-f]+\\.js/.test(new Error().stack);
  const live = { listeners: [], timeouts: new Set(), intervals: new Set(), frames: new Set(), observers: new Set() };
  window.__live = live;
  const global = (t) => t === window || t === document || t === document.documentElement ||
    t === document.body || (window.MediaQueryList && t instanceof MediaQueryList);
  const capture = (opts) => !!(opts === true || (opts && opts.capture));
  const add = EventTarget.prototype.addEventListener, remove = EventTarget.prototype.removeEventListener;
  EventTarget.prototype.addEventListener = function (type, fn, opts) {
    if (global(this) && fn && !(opts && opts.once) && mine() &&
        !live.listeners.some((l) => l.t === this && l.type === type && l.fn === fn && l.c === capture(opts))) {
      // Called straight from a library (Ace, uPlot) rather than from our code: kept apart,
      // since Ace installs one window listener for the page's life on its first editor.
      const lib = /assets\\/vendor\\//.test(new Error().stack.split("\\n")[2] || "");
      live.listeners.push({ t: this, type, fn, c: capture(opts), lib });
    }
    return add.call(this, type, fn, opts);
  };
  EventTarget.prototype.removeEventListener = function (type, fn, opts) {
    const i = live.listeners.findIndex((l) => l.t === this && l.type === type && l.fn === fn && l.c === capture(opts));
    if (i >= 0) live.listeners.splice(i, 1);
    return remove.call(this, type, fn, opts);
  };
  const st = window.setTimeout, ct = window.clearTimeout;
  window.setTimeout = function (fn, ms, ...rest) {
    const owned = mine();
    const id = st.call(window, (...a) => { live.timeouts.delete(id); if (typeof fn === "function") fn(...a); }, ms, ...rest);
    if (owned) live.timeouts.add(id);
    return id;
  };
  window.clearTimeout = function (id) { live.timeouts.delete(id); return ct.call(window, id); };
  const si = window.setInterval, ci = window.clearInterval;
  window.setInterval = function (...a) { const id = si.apply(window, a); if (mine()) live.intervals.add(id); return id; };
  window.clearInterval = function (id) { live.intervals.delete(id); return ci.call(window, id); };
  const rf = window.requestAnimationFrame, cf = window.cancelAnimationFrame;
  window.requestAnimationFrame = function (fn) {
    const owned = mine();
    const id = rf.call(window, (t) => { live.frames.delete(id); fn(t); });
    if (owned) live.frames.add(id);
    return id;
  };
  window.cancelAnimationFrame = function (id) { live.frames.delete(id); return cf.call(window, id); };
  for (const name of ["ResizeObserver", "MutationObserver", "IntersectionObserver"]) {
    const Real = window[name];
    if (!Real) continue;
    window[name] = class extends Real {
      observe(...a) { if (mine()) live.observers.add(this); return super.observe(...a); }
      disconnect() { live.observers.delete(this); return super.disconnect(); }
    };
  }
})();
"""

CENSUS = """() => ({
  listeners: __live.listeners.filter((l) => !l.lib).length,
  library_listeners: __live.listeners.filter((l) => l.lib).length, timeouts: __live.timeouts.size, intervals: __live.intervals.size,
  frames: __live.frames.size, observers: __live.observers.size, subscribers: PySim.runtime.listeners.size,
  canvases: document.querySelectorAll('.pysim-widget canvas').length,
})"""


@pytest.mark.parametrize("widget", sorted(LIVE))
def test_unmount_leaves_nothing_running(page, site_url, widget):
    page.add_init_script(PROBE.replace("WIDGET", widget))
    page.goto(page_url(site_url, LIVE[widget]))
    root = f'.pysim-widget[data-widget="{widget}"]'
    wait_for_python(page)
    until(page, f"document.querySelector('{root}').dataset.live === 'ready'")
    mounted = page.evaluate(CENSUS)
    # The probe sees what the widget holds while mounted (live.js's hashchange listener
    # at least; charts' canvases and observers), so it would see them left behind.
    assert mounted["listeners"] + mounted["library_listeners"] > 0, mounted

    page.evaluate("PySim.unmountAll()")
    page.wait_for_timeout(500)
    unmounted = page.evaluate(CENSUS)
    assert page.locator(f"{root} .pysim-body").count() == 0
    widgets = page.locator(".pysim-widget").count()
    # At least two runtime subscriptions a widget, its status line's and its lifecycle's,
    # and any it took with w.onRuntime (the exercise's); search.js keeps one for the page.
    assert mounted["subscribers"] - unmounted["subscribers"] >= 2 * widgets
    assert unmounted["subscribers"] <= 1
    # A library may keep a page-wide listener it installed once (Ace's window focus
    # handler); the remount loop below checks that it does not grow per mount.
    assert unmounted["library_listeners"] <= 1, unmounted
    assert {k: v for k, v in unmounted.items() if k not in ("subscribers", "library_listeners")} == {
        "listeners": 0, "timeouts": 0, "intervals": 0, "frames": 0, "observers": 0, "canvases": 0}

    # Mounted and unmounted again and again, it leaves exactly as much as before.
    for _ in range(4):
        page.evaluate("PySim.mountAll()")
        until(page, f"document.querySelector('{root}').dataset.live === 'ready'")
        assert page.locator(f"{root} .pysim-body").count() == 1
        page.evaluate("PySim.unmountAll()")
    page.wait_for_timeout(500)
    after = page.evaluate(CENSUS)
    # Ace may have arrived during the loop (it loads once Python has answered): its one
    # page-wide listener is allowed, once; everything else is exactly as before.
    assert after.pop("library_listeners") <= 1, after
    unmounted.pop("library_listeners")
    assert after == unmounted


def test_back_and_forward_follow_the_link(page, offline_site_url):
    # (A hash without state, a heading's anchor, leaves the widgets as they are, so the
    # first entry holds the default explicitly.) Hash edits within one page, on the
    # download served: on the hosted site Material 9.8's instant navigation also takes
    # the first such change of a page for a page change and swaps the page in again
    # (README, "What loads when"); back and forward between pages are
    # test_navigation.py's.
    site_url = offline_site_url
    page.goto(page_url(site_url, "batch-size", "#batch_size.gpu=H100"))
    wait_for_python(page)
    root = '.pysim-widget[data-widget="batch_size"]'
    until(page, f"document.querySelector('{root}').dataset.live === 'ready'")
    answer = f"document.querySelector('{root} .bs-answer').textContent"
    default = page.evaluate(answer)
    gpu = "document.querySelector('.pysim-control[data-field=\"gpu\"] :is(select, input)').value"
    page.evaluate("location.hash = 'batch_size.gpu=H200'")  # a new history entry
    until(page, f"{answer}.includes('H200') && {gpu} === 'H200'")
    assert page.get_by_label("GPU", exact=True).input_value() == "H200"
    page.go_back()
    until(page, f"{answer} === {json.dumps(default)} && {gpu} === 'H100'")
    assert page.get_by_label("GPU", exact=True).input_value() == "H100"
    page.go_forward()
    until(page, f"{answer}.includes('H200') && {gpu} === 'H200'")
    # A heading's anchor changes nothing.
    page.evaluate("location.hash = 'how-to-read-it'")
    settle(page)  # (hashchange has been handled and anything it set off drawn)
    assert page.get_by_label("GPU", exact=True).input_value() == "H200"


NO_SLIDERS = {"exercises", "paged_kv_cache"}  # widgets that show no slider; any other is checked


@pytest.mark.parametrize("widget", sorted(set(LIVE) - NO_SLIDERS))
def test_a_slider_reached_by_the_keyboard_shows_its_focus(live_page, widget):
    """Issue 16: tabbing onto a slider showed nothing. The ring is the text colour (well
    over 3:1 against the page in both themes), and the slider says its value in words."""
    page = live_page(LIVE[widget])
    control = page.locator(f'.pysim-widget[data-widget="{widget}"] .pysim-control[data-kind="int"]',
                           has=page.locator('input[type="range"]:visible')).first
    control.locator('input[type="number"]').focus()
    page.keyboard.press("Shift+Tab")  # back onto the slider before it, as a reader would
    slider = control.locator('input[type="range"]')
    assert slider.evaluate("e => e === document.activeElement && e.matches(':focus-visible')")
    style = slider.evaluate("e => { const s = getComputedStyle(e); return [s.outlineStyle, parseFloat(s.outlineWidth)]; }")
    assert style[0] != "none" and style[1] >= 2, style
    assert slider.get_attribute("aria-valuetext")  # the value, not the slider's position index
