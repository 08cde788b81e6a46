"""Instant navigation on the hosted site (issue 18): a click on a link inside the site
swaps the page in without reloading it (Material's navigation.instant), so the Python
started on one page serves the next.

What a reader does here is click the sidebar's links, and the browser's back and forward.
The probe counts, across every swap (an init script runs once per real page load, so a
reload would reset it), the workers created and the boots sent to them.
"""

from __future__ import annotations

from conftest import page_url, wait_for_python, until
from test_offline import (PLAIN_PAGES, PROBE, WIDGET_PAGES, far_widget_page, is_pyodide, is_widget_code, pysim_workers,
                          search)

CHAPTER = [name for name in WIDGET_PAGES]  # the widget pages, in name order
LIVE = "w.dataset.live === 'ready'"
ALL_LIVE = f"(() => {{ const ws = [...document.querySelectorAll('.pysim-widget')]; return ws.length > 0 && ws.every(w => {LIVE}); }})()"


CONTAINER = "document.querySelector('[data-md-component=container]')"


def swapped(page, go):
    """Do `go` (a click, back, forward) and wait until the next page's content is in:
    Material changes the URL first, then fetches the page and swaps it in."""
    page.evaluate(f"{CONTAINER}.dataset.left = 'yes'")
    go()
    until(page, f"!{CONTAINER}.dataset.left", timeout=30)


def click_to(page, name: str):
    """Follow the sidebar's link to NAME.html, as a reader does (Material makes every
    href absolute once the page is up, hence the suffix match)."""
    link = page.locator(f'nav.md-nav--primary a.md-nav__link[href$="/{name}.html"]').first
    swapped(page, link.click)
    page.wait_for_url(f"**/{name}.html*")


def go_live(page, name: str):
    """Bring each widget of the page near the screen and wait until all are live."""
    for widget in WIDGET_PAGES[name]:
        page.locator(f'.pysim-widget[data-widget="{widget}"]').scroll_into_view_if_needed()
    until(page, ALL_LIVE, timeout=90)


def boots(page) -> int:
    return len(page.evaluate("__probe.boots"))


def test_every_widget_page_goes_live_on_the_python_of_the_first(make_page, site_url, watch):
    page = make_page()
    page.add_init_script(PROBE + "window.__visit = 'one';")
    first, *rest = CHAPTER
    page.goto(page_url(site_url, first, f"#widget-{WIDGET_PAGES[first][0]}"))
    go_live(page, first)
    listeners = page.evaluate("PySim.runtime.listeners.size")
    for name in [*rest, "index", first]:
        click_to(page, name)
        if name in WIDGET_PAGES:
            go_live(page, name)
            # Mounted are exactly the widgets on screen: the page left's are gone.
            assert page.evaluate("document.querySelectorAll('.pysim-widget[data-mounted]').length") == len(WIDGET_PAGES[name])
        assert page.evaluate("window.__visit") == "one", f"{name} was loaded, not swapped in"
    assert len(pysim_workers(page)) == 1 and boots(page) == 1
    fetched = [u.rsplit("/", 1)[-1] for u in watch.requests if is_pyodide(u)]
    assert sorted(fetched) == sorted(set(fetched)), f"downloaded twice: {fetched}"
    # Back where we started, the runtime has as many listeners as it had then: the
    # widgets of every page left released theirs.
    assert page.evaluate("PySim.runtime.listeners.size") == listeners


# A widget with a link goes live once the link's state is computed (widgets/live.js, goLive).
SHOWS_H200 = "document.querySelector('.pysim-control[data-field=\"gpu\"] :is(select, input)').value === 'H200'"


def test_back_and_forward_restore_each_widgets_state_from_its_link(make_page, site_url):
    page = make_page()
    page.goto(page_url(site_url, "batch-size", "#batch_size.gpu=H200"))
    go_live(page, "batch-size")
    until(page, SHOWS_H200, timeout=10)
    answer = "document.querySelector('.bs-answer').textContent"
    h200 = page.evaluate(answer)
    other = next(n for n in CHAPTER if n != "batch-size")
    click_to(page, other)
    go_live(page, other)
    swapped(page, page.go_back)
    page.wait_for_url("**/batch-size.html#batch_size.gpu=H200*")
    go_live(page, "batch-size")
    until(page, SHOWS_H200, timeout=10)
    until(page, f"{answer} === {h200!r}")
    swapped(page, page.go_forward)
    page.wait_for_url(f"**/{other}.html*")
    go_live(page, other)
    swapped(page, page.go_back)
    go_live(page, "batch-size")
    until(page, SHOWS_H200, timeout=10)


def test_search_palette_math_and_the_editor_work_after_navigating(make_page, site_url):
    page = make_page()
    page.add_init_script(PROBE)
    page.goto(page_url(site_url, "index"))
    for name in ("batch-size", "index", "exercises"):
        click_to(page, name)
    go_live(page, "exercises")
    # Search answers from the page the reader is on now.
    assert search(page, "preemption") > 0
    page.keyboard.press("Escape")
    # The palette toggle switches the scheme, and back.
    scheme = "document.body.getAttribute('data-md-color-scheme')"
    before = page.evaluate(scheme)
    page.locator("label.md-header__button[for^='__palette']:visible").first.click()
    until(page, f"{scheme} !== {before!r}")
    # Formulas were rendered at build time and came in with the page.
    click_to(page, "batch-size")
    assert page.locator(".katex").count() > 0
    # The exercise's editor loads again on a second visit and its checker answers.
    click_to(page, "exercises")
    go_live(page, "exercises")
    until(page, "!!document.querySelector('.ace_editor')", timeout=30)
    assert len(pysim_workers(page)) == 1 and boots(page) == 1


def test_pages_entered_without_widgets_never_fetch_python(make_page, site_url, watch):
    page = make_page()
    page.goto(page_url(site_url, "index"))
    for name in PLAIN_PAGES:
        if name != "index":
            click_to(page, name)
            page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.wait_for_timeout(300)
    assert [u for u in watch.requests if is_pyodide(u) or is_widget_code(u)] == []


def test_a_widget_page_entered_fetches_python_only_when_a_widget_comes_near(make_page, site_url, watch):
    far = far_widget_page(make_page, site_url)
    watch.requests.clear()
    page = make_page(height=700)
    page.goto(page_url(site_url, "index"))
    click_to(page, far)
    page.wait_for_timeout(1500)
    widget = "document.querySelector('.pysim-widget')"
    assert page.evaluate(f"{widget}.dataset.mounted") == "true"
    assert page.evaluate(f"{widget}.dataset.runtime") == "idle"
    assert not [u for u in watch.requests if is_pyodide(u)]
    wait_for_python(page)  # scrolls to the widget, as a reader would


def test_a_crashed_worker_is_restarted_once_for_the_page_in_view(make_page, site_url):
    page = make_page()
    page.add_init_script(PROBE)
    first, second = CHAPTER[:2]
    page.goto(page_url(site_url, first, f"#widget-{WIDGET_PAGES[first][0]}"))
    go_live(page, first)
    click_to(page, second)
    go_live(page, second)
    # Killed behind the runtime's back: the next call times out, a new worker starts.
    page.evaluate("PySim.runtime.worker.terminate()")
    widget = WIDGET_PAGES[second][0]
    outcome = page.evaluate(f"""PySim.runtime.call('{widget}', {{config: {{}}}}, {{timeoutMs: 3000}})
                                .then(a => 'answered', e => String(e && e.message))""")
    assert outcome == "timeout"
    wait_for_python(page, timeout=120000)
    answer = page.evaluate(f"PySim.runtime.call('{widget}', {{config: {{}}}})")
    assert answer["ok"]
    assert len(pysim_workers(page)) == 2 and boots(page) == 2
    # The next page goes live on the new worker; nothing starts a third.
    click_to(page, first)
    go_live(page, first)
    assert len(pysim_workers(page)) == 2


def script_of(widget: str) -> str:
    """Whether `widget`'s script has been put on this page (a look ahead runs it)."""
    return f"document.querySelector('script[src*=\"/{widget}.\"]') !== null"


def test_a_link_rested_on_gets_its_pages_scripts_run_before_the_click(make_page, site_url):
    """With Python idle, resting the pointer on a link to a widget page runs that page's
    widget scripts here (navigation.js); the page entered then goes live on the running
    Python without asking it anything: its widgets keep their pre-rendered pictures. (The
    pointer crosses other links on its way: their pages may be looked ahead at too.)"""
    page = make_page()
    # Not next to each other in the chapter: the page read has its neighbours looked
    # ahead at anyway, once Python is idle (the test below).
    first, second = "batch-size", "exercises"
    page.goto(page_url(site_url, first, f"#widget-{WIDGET_PAGES[first][0]}"))
    go_live(page, first)
    [theirs] = WIDGET_PAGES[second][:1]
    assert not page.evaluate(script_of(theirs))
    link = page.locator(f'nav.md-nav--primary a.md-nav__link[href$="/{second}.html"]').first
    link.hover()
    until(page, script_of(theirs), timeout=30)
    calls = page.evaluate("PySim.runtime.nextId")
    swapped(page, link.click)
    page.wait_for_url(f"**/{second}.html*")
    go_live(page, second)
    assert page.evaluate("PySim.runtime.nextId") == calls, "a widget asked Python for its default view"


def test_the_widget_pages_next_to_the_one_read_are_looked_ahead_at_while_the_reader_reads(make_page, site_url):
    """With Python idle a second, the widget pages just before and after the reader's in
    the chapter (paged-kv-cache: naive-batching before it, past a page without widgets,
    and toy-scheduler after it) get their scripts run, with no pointer or focus on any
    link; no other page does. The next page entered is then live without asking Python
    anything."""
    page = make_page()
    page.goto(page_url(site_url, "paged-kv-cache", "#widget-paged_kv_cache"))
    go_live(page, "paged-kv-cache")
    until(page, f"{script_of('toy_scheduler')} && {script_of('naive_batching')}", timeout=30)
    page.wait_for_timeout(1500)  # longer than a look ahead waits: nothing further is looked at
    others = [w for name, widgets in WIDGET_PAGES.items() if name not in ("naive-batching", "paged-kv-cache", "toy-scheduler")
              for w in widgets]
    assert [w for w in others if page.evaluate(script_of(w))] == []
    calls = page.evaluate("PySim.runtime.nextId")
    # The keyboard, not the pointer: a link under the pointer would be looked ahead at.
    link = page.locator('nav.md-nav--primary a.md-nav__link[href$="/toy-scheduler.html"]').first
    swapped(page, lambda: (link.focus(), page.keyboard.press("Enter")))
    page.wait_for_url("**/toy-scheduler.html*")
    until(page, ALL_LIVE, timeout=30)
    assert page.evaluate("PySim.runtime.nextId") == calls, "the page entered asked Python for something"


HEAD_WATCH = """(() => {
  window.__head = {added: [], removed: []};
  const name = (n) => n.href.split('/').pop().split('.')[0];
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.addedNodes) if (n.matches && n.matches('link[rel=stylesheet]')) __head.added.push(name(n));
      for (const n of r.removedNodes) if (n.matches && n.matches('link[rel=stylesheet]')) __head.removed.push(name(n));
    }
  }).observe(document.head, {childList: true});
})()"""


def test_a_page_looked_ahead_at_comes_in_with_its_stylesheets_already_applied(make_page, site_url):
    """A look ahead puts the stylesheets of the page it looks at into this page's <head>
    (navigation.js), where they change nothing, and Material's swap keeps them: the first
    swap of a visit, like every other, adds no stylesheet and takes out only the page
    left's own, so the widgets entered mount without waiting for a stylesheet to load."""
    page = make_page()
    page.goto(page_url(site_url, "paged-kv-cache", "#widget-paged_kv_cache"))
    go_live(page, "paged-kv-cache")
    box = page.locator(".pysim-widget").first.bounding_box()
    # The read ahead looks at both neighbours, toy-scheduler first (the test above).
    until(page, f"{script_of('toy_scheduler')} && {script_of('naive_batching')}", timeout=30)
    styles = "[...document.head.querySelectorAll('link[rel=stylesheet]')].map(l => l.href.split('/').pop().split('.')[0])"
    assert {"toy_scheduler", "naive_batching"} <= set(page.evaluate(styles))
    assert page.locator(".pysim-widget").first.bounding_box() == box, "a page looked at restyled this one"
    page.evaluate(HEAD_WATCH)
    link = page.locator('nav.md-nav--primary a.md-nav__link[href$="/toy-scheduler.html"]').first
    swapped(page, lambda: (link.focus(), page.keyboard.press("Enter")))
    page.wait_for_url("**/toy-scheduler.html*")
    until(page, ALL_LIVE, timeout=30)
    head = page.evaluate("__head")
    assert head["added"] == [], f"the swap loaded stylesheets again: {head['added']}"
    kept = page.evaluate(styles)
    # Out went the page left's own (its widget's, KaTeX's for its math), and nothing of
    # what the page entered links: Material's, the theme, the widgets' shared sheet.
    assert "paged_kv_cache" in head["removed"] and not set(head["removed"]) & set(kept), (head, kept)
    assert {"main", "palette", "theme", "widgets", "toy_scheduler"} <= set(kept)
    # The page entered is styled: its cards sit in the grid toy_scheduler.css lays out.
    assert page.evaluate("getComputedStyle(document.querySelector('.toy-cards')).display") == "grid"
