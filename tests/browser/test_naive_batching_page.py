"""The scheduler race in a real browser: pre-rendered at once, recomputed by Pyodide,
played from the controls, and robust to bad input."""

from __future__ import annotations

import json

from conftest import page_url, prerendered, pysim_view, until, wait_for_python

from pysim import bridge

PAGE = "naive-batching"
ORDER = ["static", "continuous_reserved", "continuous_paged"]


def table_steps(page) -> dict[str, int]:
    """Steps to finish per scheduler, read from the table the reader sees."""
    out = {}
    for name in ORDER:
        row = page.locator(f'.race-table tr[data-scheduler="{name}"]')
        out[name] = int(row.locator("td").first.inner_text())
    return out


def expected_default():
    answer = json.loads(bridge.call("naive_batching", json.dumps({"config": {}})))
    assert answer["ok"]
    return answer["result"]


def test_prerendered_before_python_then_python_from_this_site(page, site_url, watch):
    page.goto(page_url(site_url, PAGE))
    # The finished race is drawn from the embedded model before any Python has run.
    page.wait_for_selector('.race-table tr[data-finished="true"]')
    expected = expected_default()
    assert table_steps(page) == {n: expected["schedulers"][n]["steps_to_finish"] for n in ORDER}
    model = prerendered(page.locator(".pysim-widget"))
    assert model["view"] == expected
    wait_for_python(page)
    # (That Pyodide computes this same model: test_widget_pages.py, for every widget.)
    # The worker fetched Pyodide and the wheel from this site, and nothing else.
    assert any(u.endswith("pyodide.asm.wasm") for u in watch.requests)
    assert any("/pysim-" in u and u.endswith(".whl") for u in watch.requests)


def test_run_all_three_and_read_the_table(live_page):
    page = live_page(PAGE)
    page.get_by_role("button", name="Reset").click()
    assert page.locator('.race-table tr[data-finished="true"]').count() == 0
    page.locator('input[type="range"][id^="race-speed"]').fill("60")
    page.get_by_role("button", name="Run").click()
    page.wait_for_function(
        "() => document.querySelectorAll('.race-table tr[data-finished=\"true\"]').length === 3",
        timeout=30000)
    steps = table_steps(page)
    assert steps["static"] > steps["continuous_reserved"] > steps["continuous_paged"]
    # By a wide margin, as the spec expects: paged at least twice as fast as static.
    assert steps["static"] >= 2 * steps["continuous_paged"]
    assert "Step" in page.locator(".pysim-step-label").inner_text()


def test_step_and_single_scheduler(live_page):
    page = live_page(PAGE)
    page.get_by_role("button", name="Reset").click()
    for _ in range(3):
        page.get_by_role("button", name="Step").click()
    assert page.locator(".pysim-step-label").inner_text().startswith("Step 3 of")
    page.get_by_label("Schedulers to show").select_option("continuous_paged")
    assert page.locator('.race-panel[data-scheduler="static"]').is_hidden()
    assert page.locator('.race-panel[data-scheduler="continuous_paged"]').is_visible()


def test_bad_value_shows_beside_its_control_and_keeps_the_picture(live_page):
    page = live_page(PAGE)
    before = table_steps(page)
    box = page.locator('.pysim-control[data-field="num_gpu_blocks"] input[type="number"]')
    box.fill("-5")
    box.press("Enter")
    error = page.locator('.pysim-control[data-field="num_gpu_blocks"] .pysim-error')
    error.wait_for(state="visible")
    message = error.inner_text()
    assert "num_gpu_blocks" in message and "-5" in message and "2,000" in message
    assert table_steps(page) == before  # the last good picture stays
    # A good value clears the message and redraws.
    box.fill("100")
    box.press("Enter")
    error.wait_for(state="hidden")
    page.wait_for_function("() => document.querySelector('.race-table caption').textContent.includes('100 blocks')")


def test_state_lives_in_the_url_hash(live_page):
    page = live_page(PAGE)
    seed = page.locator('.pysim-control[data-field="seed"] input[type="number"]')
    seed.fill("7")
    seed.press("Enter")
    page.wait_for_function("() => location.hash.includes('naive_batching.seed=7')")
    url = page.url
    page.goto("about:blank")
    page.goto(url)
    wait_for_python(page)
    page.wait_for_function("() => document.querySelector('.race-table caption').textContent.includes('seed 7')")
    assert seed.input_value() == "7"


def test_crafted_hash_is_data_not_markup(page, site_url):
    # The seed goes to pysim as text, and pysim refuses it with its own message (shown
    # after the label pysim gives the field); "view" is the widget's own key, and a value
    # it does not know leaves all three panels shown.
    page.goto(page_url(site_url, PAGE, "#naive_batching.seed=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&naive_batching.view=%3Cscript%3E"))
    wait_for_python(page)
    refused = json.loads(bridge.call("naive_batching", json.dumps({"config": {"seed": "<img src=x onerror=alert(1)>"}})))
    message = page.locator(".pysim-widget .pysim-hash-message")
    message.wait_for(state="visible")
    assert message.inner_text().startswith("Ignored the link")
    assert message.inner_text().endswith("Seed: " + refused["error"]["message"])
    assert page.locator(".race-panel:not([hidden])").count() == 3
    assert page.locator(".pysim-widget img").count() == 0
    assert page.locator(".pysim-widget script").count() == 0


def test_requests_has_one_range_everywhere(live_page):
    """Issue 16: the request-count slider stopped at 200 while its box took 300 and the error
    said 1 to 400. The slider, the box and pysim's message now say the same range."""
    page = live_page(PAGE)
    control = page.locator('.pysim-widget[data-widget="naive_batching"] .pysim-control[data-field="num_requests"]')
    slider, box = control.locator('input[type="range"]'), control.locator('input[type="number"]')
    assert (slider.get_attribute("min"), slider.get_attribute("max")) == ("1", "400")
    assert (box.get_attribute("min"), box.get_attribute("max")) == ("1", "400")
    box.fill("401")
    box.press("Enter")
    page.wait_for_function("() => document.querySelector('.pysim-widget[data-widget=naive_batching]').dataset.error === 'num_requests'")
    assert "from 1 to 400" in control.locator(".pysim-error").inner_text()


def test_a_link_made_before_the_rename_still_opens(page, site_url):
    """Issue 36 renamed the count `requests` to `num_requests`: a link that holds the old
    key opens with its value, and the page rewrites the link under the new name."""
    page.goto(page_url(site_url, PAGE, "#naive_batching.requests=30&naive_batching.seed=4"))
    wait_for_python(page)
    box = page.locator('.pysim-widget[data-widget="naive_batching"] .pysim-control[data-field="num_requests"] input[type="number"]')
    until(page, "location.hash.includes('naive_batching.num_requests=30')")
    assert box.input_value() == "30"
    assert "naive_batching.requests=" not in page.evaluate("location.hash")
    assert not page.locator('.pysim-widget[data-widget="naive_batching"] .pysim-hash-message').inner_text()


def test_a_change_shows_the_finished_race_at_once(live_page):
    """Issue 16: changing num_gpu_blocks or Seed emptied the timelines at step 0 until Run
    was pressed. The new race is drawn finished at once; Run replays it."""
    page = live_page(PAGE)
    root = page.locator('.pysim-widget[data-widget="naive_batching"]')
    page.get_by_label("Schedulers to show").select_option("all")
    box = root.locator('.pysim-control[data-field="seed"] input[type="number"]')
    box.fill("5")
    box.press("Enter")
    want = json.loads(bridge.call("naive_batching", json.dumps({"config": {"seed": 5}})))["result"]
    page.wait_for_function("() => document.querySelector('.race-table caption').textContent.includes('(seed 5)')")
    assert page.locator('.race-table tr[data-finished="true"]').count() == 3  # no Run pressed
    assert root.get_attribute("data-playing") != "true"
    assert table_steps(page) == {n: want["schedulers"][n]["steps_to_finish"] for n in want["schedulers"]}
    root.get_by_label("Speed").fill("60")  # the fastest replay a reader can pick: 60 steps/s
    root.get_by_role("button", name="Run").click()  # replays from the start...
    page.wait_for_function("() => document.querySelectorAll('.race-table tr[data-finished=\"true\"]').length < 3")
    page.wait_for_function(
        "() => document.querySelectorAll('.race-table tr[data-finished=\"true\"]').length === 3", timeout=60000)


# What a reader sees of the preemptions in one panel's timeline, read from its pixels:
# pixels in the preempted red, and the red boxes (marks) counted along each slot's row.
READ_MARKS = """(name) => {
  const c = document.querySelector(`.race-panel[data-scheduler="${name}"] canvas.race-timeline`);
  const hex = getComputedStyle(c).getPropertyValue('--pysim-preempt').trim();
  const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  const ratio = c.width / c.getBoundingClientRect().width;
  const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const red = (x, y) => { const i = (y * c.width + x) * 4; return want.every((v, k) => Math.abs(data[i + k] - v) < 24); };
  let pixels = 0, marks = 0;
  for (let y = 0; y < c.height; y++) for (let x = 0; x < c.width; x++) if (red(x, y)) pixels++;
  for (let s = 0; s * 9 * ratio < c.height - 1; s++) {
    const y = Math.floor((s * 9 + 4.5) * ratio);
    for (let x = 0; x < c.width; x++) if (red(x, y) && (x === 0 || !red(x - 1, y))) marks++;
  }
  return { pixels, marks };
}"""


def preemptions_seen(page, name):
    panel = page.locator(f'.race-panel[data-scheduler="{name}"]')
    row = page.locator(f'.race-table tr[data-scheduler="{name}"]')
    return page.evaluate(READ_MARKS, name), panel.locator(".race-status").inner_text(), \
        row.locator("td").last.inner_text()


def test_cell_colour_is_state_and_each_preemption_is_one_mark(live_page):
    """Issue 16: requests had their own hues, some red or green, so static batching showed
    "preempted" red cells while reporting 0 preemptions. Colour is now the slot's state,
    and every preemption is one outlined red mark: count them and get pysim's number."""
    page = live_page(PAGE)
    page.wait_for_selector('.race-table tr[data-finished="true"]')
    for config in ({}, {"num_gpu_blocks": 60}):
        if config:  # as a reader: type the pool size
            box = page.locator('.pysim-control[data-field="num_gpu_blocks"] input[type="number"]')
            box.fill("60")
            box.press("Enter")
            page.wait_for_function("() => document.querySelector('.race-table caption').textContent.includes('pool of 60 blocks')")
        want = pysim_view("naive_batching", config)["schedulers"]
        # Static batching never preempts, and no cell of it is drawn in the preempted red.
        seen, status, cell = preemptions_seen(page, "static")
        assert want["static"]["preemptions"] == 0
        assert seen == {"pixels": 0, "marks": 0}
        assert status.endswith("0 preemptions") and cell == "0"
        # The paged scheduler's marks: as many as pysim counts, and the panel and the table say so.
        n = want["continuous_paged"]["preemptions"]
        assert n > 10
        seen, status, cell = preemptions_seen(page, "continuous_paged")
        assert seen["marks"] == n, (seen, n)
        assert status.endswith(f"{n} preemptions") and cell == str(n)
        if not config:  # pointing at a cell names its request (identity is no longer a colour)
            frames = want["continuous_paged"]["frames"]
            t, s = 30, next(s for s, slot in enumerate(frames[30]) if slot and slot[4] == "run")
            timeline = page.locator('.race-panel[data-scheduler="continuous_paged"] canvas.race-timeline')
            cell_px = float(timeline.get_attribute("data-cell"))
            timeline.hover(position={"x": (t + 0.5) * cell_px, "y": s * 9 + 4.5})
            pointer = page.locator('.race-panel[data-scheduler="continuous_paged"] .race-pointer').inner_text()
            assert pointer.startswith(f"slot {s + 1}, step {t + 1}: request {frames[t][s][0]} "), pointer
    # Stepping shows the preemptions so far, mark for mark.
    page.get_by_role("button", name="Reset").click()
    for _ in range(20):
        page.get_by_role("button", name="Step").click()
    frames = want["continuous_paged"]["frames"][:20]
    so_far = sum(1 for f in frames for slot in f if slot and slot[4] == "pre")
    assert so_far > 0
    seen, status, _ = preemptions_seen(page, "continuous_paged")
    assert seen["marks"] == so_far and status.endswith(f"{so_far} preemptions so far")


def test_on_a_phone_what_scrolls_says_so_and_reset_says_not_started(make_page, site_url):
    """A reader on a 375 px phone: the timelines and the results table scrolled sideways
    with no cue, an empty KV-bars box sat under each timeline, and after Reset every row
    of the table said "running…"; the speed slider had no words for a screen reader."""
    page = make_page(width=375, height=800)
    page.goto(page_url(site_url, PAGE))
    wait_for_python(page)
    panel = page.locator('.race-panel[data-scheduler="static"]')
    panel.scroll_into_view_if_needed()
    # The static race is longer than the screen: a line says how much is in view, and a
    # shade marks the right edge; scrolled to the end, the shade moves to the left.
    cue = panel.locator(".race-cue")
    assert cue.is_visible() and "scrolls sideways" in cue.inner_text()
    box = panel.locator(".race-scroll-box")
    assert box.get_attribute("data-more-right") is not None and box.get_attribute("data-more-left") is None
    panel.locator(".race-scroll").evaluate("s => s.scrollTo({ left: s.scrollWidth })")
    until(page, "document.querySelector('.race-panel[data-scheduler=\"static\"] .race-scroll-box').hasAttribute('data-more-left')", timeout=5)
    assert box.get_attribute("data-more-right") is None
    # So does the results table, which is wider than the phone.
    table_cue = page.locator(".race-table-wrap + .race-cue")
    assert table_cue.is_visible() and "scrolls sideways" in table_cue.inner_text()
    # The KV bars are titled, and hidden when no slot holds anything (before the first step).
    assert panel.locator(".race-bars-title").inner_text().startswith("KV blocks per slot at step")
    page.get_by_role("button", name="Reset").click()
    assert not page.locator(".race-bars-box").first.is_visible()
    rows = page.locator(".race-table tbody tr td:first-of-type").all_inner_texts()
    assert rows and all(t == "not started: press Run or Step" for t in rows), rows
    page.get_by_role("button", name="Step").click()
    assert page.locator(".race-table tbody tr td:first-of-type").first.inner_text() == "running… (step 1)"
    assert panel.locator(".race-bars-box").is_visible()
    # The speed slider says its value in words.
    speed = page.get_by_label("Speed")
    assert speed.get_attribute("aria-valuetext") == "12 steps per second"
    speed.fill("1")
    assert speed.get_attribute("aria-valuetext") == "1 step per second"
