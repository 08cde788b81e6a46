"""The token-budget widget in a real browser: the trade between a long prompt's first token
and the streams' inter-token gaps, read from the page's own table and checked against
pysim in CPython; pinning, stepping, bad input, the link, and a narrow dark screen."""

from __future__ import annotations

import json

import pytest
from conftest import page_url, prerendered, until, wait_for_python

from pysim import bridge

PAGE = "chunked-prefill"
ROOT = ".pysim-widget[data-widget='chunked_prefill']"


def expected(scenario="long_document", budget=2048):
    answer = json.loads(bridge.call("chunked_prefill", json.dumps({"config": {"scenario": scenario, "max_num_batched_tokens": budget}})))
    assert answer["ok"], answer
    return answer["result"]


def root_data(page, key):
    return page.evaluate(f"document.querySelector(\"{ROOT}\").dataset.{key}")


def summary(page, run="live") -> dict[str, float]:
    """The figures of one column of the summary table, as the reader sees them."""
    out = {}
    for row in page.locator(".budget-table tbody tr").all():
        metric = row.get_attribute("data-metric")
        if metric.startswith("ttft_"):  # the fastest and slowest prompt: a digest of the rows
            continue
        cell = row.locator(f'td[data-run="{run}"]')
        value = cell.get_attribute("data-value")
        if value is not None:
            out[metric] = float(value)
            # The text says the same number (formatted to two decimals at most).
            assert float(cell.text_content().replace(",", "")) == pytest.approx(float(value), abs=0.006)
    return out


def expected_summary(view) -> dict[str, float]:
    s = view["summary"]
    out = {f"ttft:{rid}": v for rid, v in s["ttft_ms"].items()}
    out.update(itl_p50=s["itl_p50_ms"], itl_max=s["itl_max_ms"], total=s["total_ms"], steps=s["steps"])
    return out


def choose(page, scenario=None, budget=None):
    """Click a scenario and/or a budget preset, and wait until pysim's answer is drawn."""
    widget = page.locator(ROOT)
    if scenario:
        label = {"long_document": "Long document", "burst_of_chats": "Burst of chats", "mixed": "Mixed"}[scenario]
        widget.get_by_role("button", name=label, exact=True).click()
        page.wait_for_function(f"() => document.querySelector(\"{ROOT}\").dataset.scenario === '{scenario}'")
    if budget:
        widget.get_by_role("button", name=f"Budget {budget:,} tokens", exact=True).click()
        page.wait_for_function(f"() => document.querySelector(\"{ROOT}\").dataset.budget === '{budget}'")
    page.wait_for_function(f"() => !document.querySelector(\"{ROOT}\").dataset.busy")


def run_all(page):
    """Press Run all steps and wait for the playback to reach the last step."""
    widget = page.locator(ROOT)
    widget.get_by_role("button", name="Run all steps").click()
    page.wait_for_function("() => document.querySelector('.budget-table').dataset.finished === 'false'")
    page.wait_for_function("() => document.querySelector('.budget-table').dataset.finished === 'true'", timeout=30000)
    assert root_data(page, "playing") == "false"


def step_label(page):
    return page.locator(f"{ROOT} .pysim-step-label").inner_text()


def test_prerendered_before_python(page, site_url):
    page.goto(page_url(site_url, PAGE))
    page.wait_for_selector('.budget-table[data-finished="true"]')
    default = expected()
    # Drawn from the embedded model before Python has started.
    assert summary(page) == expected_summary(default)
    model = prerendered(page.locator(ROOT))
    assert model["view"] == default
    # The step time is the serving lab's clock, as pysim states it.
    assert default["model"]["label"] in page.locator(".budget-model").inner_text()
    assert default["model"]["formula"] in page.locator(".budget-model").inner_text()
    assert "the serving lab's clock" in page.locator(".budget-model").inner_text()
    # (That this model is what Pyodide computes: test_widget_pages.py.)


def test_long_document_trade_read_from_the_table(live_page):
    page = live_page(PAGE)
    page.locator(ROOT).get_by_label("Pace").select_option("1")  # real time: 1.3 s per run
    read = {}
    for budget in (2048, 16384):
        choose(page, "long_document", budget)
        run_all(page)
        read[budget] = summary(page)
        assert read[budget] == expected_summary(expected("long_document", budget))
        header = page.locator('.budget-table th[data-run="live"]').inner_text()
        assert f"{budget:,}" in header
    # The trade: the bigger budget gives the long document its first token sooner ...
    assert read[16384]["ttft:doc"] < read[2048]["ttft:doc"]
    # ... and makes the users already streaming wait much longer between two tokens.
    assert read[16384]["itl_max"] > read[2048]["itl_max"]
    assert read[16384]["itl_max"] > 5 * read[2048]["itl_max"]


def test_pin_one_run_and_compare_with_the_next(live_page):
    page = live_page(PAGE)
    choose(page, "long_document", 2048)
    page.locator(ROOT).get_by_role("button", name="Pin this run").click()
    choose(page, budget=16384)
    # Both summaries at once, side by side in the table, and both timelines.
    assert page.locator('.budget-table th[data-run="live"]').inner_text().endswith("16,384")
    assert page.locator('.budget-table th[data-run="pin"]').inner_text().endswith("2,048")
    assert page.locator('.budget-table th[data-run="pin"]').is_visible()
    assert summary(page, "live") == expected_summary(expected("long_document", 16384))
    assert summary(page, "pin") == expected_summary(expected("long_document", 2048))
    assert page.locator(".budget-pin-timeline").is_visible()
    assert "budget 2,048" in page.locator(".budget-pin-head").inner_text()
    assert "pin_max_num_batched_tokens=2048" in page.url
    page.locator(ROOT).get_by_role("button", name="Clear pin").click()
    assert page.locator('.budget-table th[data-run="pin"]').count() == 0
    assert page.locator(".budget-pin-timeline").is_hidden()
    assert "pin_max_num_batched_tokens" not in page.url


def test_step_moves_the_cursor_and_shows_the_step(live_page):
    page = live_page(PAGE)
    view = expected()
    steps = view["steps"]
    n = len(steps)
    widget = page.locator(ROOT)
    details = widget.locator(".budget-details")
    widget.get_by_role("button", name="Reset", exact=True).click()
    assert step_label(page) == f"Step 0 of {n}"
    assert "Before the first step" in details.inner_text()
    assert page.locator('.budget-table').get_attribute("data-finished") == "false"
    widget.get_by_role("button", name="Step", exact=True).click()
    assert step_label(page) == f"Step 1 of {n}"
    text = details.inner_text()
    assert f"Step 1 of {n}" in text and "starts at 0 ms" in text and "Decode: 6 tokens" in text
    widget.get_by_role("button", name="Step", exact=True).click()
    assert step_label(page) == f"Step 2 of {n}"
    # It starts where the first step ended (the six streams' decode step, timed by pysim).
    first_ms = expected()["steps"][0]["duration_ms"]
    assert f"starts at {first_ms:.2f} ms" in details.inner_text()
    # The keyboard moves the cursor along the timeline too.
    timeline = widget.locator("canvas.budget-timeline")
    timeline.focus()
    for _ in range(3):
        timeline.press("ArrowRight")
    assert step_label(page) == f"Step 5 of {n}"
    s = steps[4]  # the first chunk of the document
    text = details.inner_text()
    assert f"Step 5 of {n}" in text and f"Prefill: {s['prefill_tokens']:,} tokens" in text
    assert "long document" in text
    assert timeline.get_attribute("aria-valuenow") == "5"
    timeline.press("End")
    assert step_label(page) == f"Step {n} of {n}"
    assert page.locator('.budget-table').get_attribute("data-finished") == "true"
    # Hovering a bar shows that step without moving the cursor.
    box = timeline.bounding_box()
    longest = max(range(n), key=lambda i: steps[i]["duration_ms"])
    mid = steps[longest]["start_ms"] + steps[longest]["duration_ms"] / 2
    x = 4 + mid / view["summary"]["total_ms"] * (box["width"] - 8)
    page.mouse.move(box["x"] + x, box["y"] + 40)
    assert f"Step {longest + 1} of {n}" in details.inner_text()
    assert step_label(page) == f"Step {n} of {n}"


def test_each_step_stays_visible_in_the_close_up(live_page):
    # The first steps last 5 ms of a 1,320 ms axis: about a pixel on the timeline. The
    # close-up under it gives every step a column, and the current one is outlined.
    page = live_page(PAGE)
    widget = page.locator(ROOT)
    widget.get_by_role("button", name="Reset", exact=True).click()
    current = widget.locator(".budget-closeup [data-current]")
    assert current.count() == 0  # before the first step nothing is outlined
    lefts = []
    for k in (1, 2, 3, 4):
        widget.get_by_role("button", name="Step", exact=True).click()
        box = current.bounding_box()
        assert box["width"] >= 16 and box["height"] >= 40, box
        assert current.get_attribute("data-step") == str(k)
        assert current.locator(".budget-closeup-number").inner_text() == str(k)
        lefts.append(box["x"])
    # The outline moves a whole column each step, and the head names the step.
    assert all(b - a >= 16 for a, b in zip(lefts, lefts[1:])), lefts
    assert "step 4 outlined" in widget.locator(".budget-closeup-head").inner_text()
    # A click on a later column moves the cursor there.
    widget.locator('.budget-closeup [data-step="9"]').click()
    assert step_label(page) == f"Step 9 of {len(expected()['steps'])}"


def test_bad_budget_shows_beside_the_control_and_keeps_the_picture(live_page):
    page = live_page(PAGE)
    before = summary(page)
    box = page.locator(f'{ROOT} .pysim-control[data-field="max_num_batched_tokens"] input[type="number"]')
    box.fill("10")
    box.press("Enter")
    error = page.locator(f'{ROOT} .pysim-control[data-field="max_num_batched_tokens"] .pysim-error')
    error.wait_for(state="visible")
    message = error.inner_text()
    assert "max_num_batched_tokens" in message and "10" in message and "64" in message and "65,536" in message
    assert root_data(page, "error") == "max_num_batched_tokens"
    assert summary(page) == before  # the last good picture stays
    assert root_data(page, "budget") == "2048"
    # ... marked out of date: a note says so, and the drawings fade until it is fixed.
    assert root_data(page, "stale") == "true"
    stale = page.locator(f"{ROOT} .pysim-stale-note")
    assert stale.is_visible() and "Out of date" in stale.inner_text()
    fade = f"Number(getComputedStyle(document.querySelector(\"{ROOT} .budget-timeline\")).opacity)"
    until(page, f"{fade} < 0.5", timeout=5)
    assert page.evaluate(f"Number(getComputedStyle(document.querySelector(\"{ROOT} .budget-closeup\")).opacity)") < 0.5
    # A good value clears the message and redraws.
    box.fill("4096")
    box.press("Enter")
    error.wait_for(state="hidden")
    assert root_data(page, "stale") is None and not stale.is_visible()
    until(page, f"{fade} == 1", timeout=5)
    page.wait_for_function(f"() => document.querySelector(\"{ROOT}\").dataset.budget === '4096'")
    assert summary(page) == expected_summary(expected("long_document", 4096))


def test_state_lives_in_the_url_hash(live_page):
    page = live_page(PAGE)
    choose(page, "mixed", 8192)
    page.locator(ROOT).get_by_role("button", name="Pin this run").click()
    choose(page, budget=512)
    widget = page.locator(ROOT)
    widget.get_by_role("button", name="Reset", exact=True).click()
    for _ in range(3):
        widget.get_by_role("button", name="Step", exact=True).click()
    page.wait_for_function("() => location.hash.includes('chunked_prefill.step=3')")
    url = page.url
    for part in ("chunked_prefill.scenario=mixed", "chunked_prefill.max_num_batched_tokens=512", "chunked_prefill.pin_scenario=mixed", "chunked_prefill.pin_max_num_batched_tokens=8192"):
        assert part in url
    page.goto("about:blank")
    page.goto(url)
    wait_for_python(page)
    page.wait_for_function(f"() => document.querySelector(\"{ROOT}\").dataset.budget === '512'")
    page.wait_for_function("() => !document.querySelector('.budget-pin-head').textContent.includes('computing')")
    n = len(expected("mixed", 512)["steps"])
    assert root_data(page, "scenario") == "mixed"
    assert step_label(page) == f"Step 3 of {n}"
    assert widget.get_by_role("button", name="Budget 512 tokens").get_attribute("aria-pressed") == "true"
    assert widget.get_by_role("button", name="Mixed", exact=True).get_attribute("aria-pressed") == "true"
    assert "Mixed, budget 8,192" in page.locator(".budget-pin-head").inner_text()
    pinned = expected("mixed", 8192)
    assert summary(page, "pin") == expected_summary(pinned)
    # Fifteen new prompts: the fastest and slowest show, each prompt's row folds away.
    slowest = page.locator('.budget-table tr[data-metric="ttft_slowest"] td[data-run="pin"]')
    assert float(slowest.get_attribute("data-value")) == max(pinned["summary"]["ttft_ms"].values())
    row = page.locator('.budget-table tr[data-metric="ttft:c1"]')
    assert row.is_hidden()
    widget.get_by_role("button", name="Show the time to first token of each").click()
    assert row.is_visible()


def test_crafted_hash_is_data_not_markup(page, site_url):
    page.goto(page_url(site_url, PAGE, "#chunked_prefill.scenario=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"
                       "&chunked_prefill.max_num_batched_tokens=%3Cscript%3E&chunked_prefill.pin_max_num_batched_tokens=7"))
    # The link's config goes to pysim, which names the scenario first; the pinned run
    # (its budget from the link, the live run's scenario) is computed by pysim too, and
    # refused with its own message.
    wait_for_python(page)
    refused = json.loads(bridge.call("chunked_prefill", json.dumps(
        {"config": {"scenario": "<img src=x onerror=alert(1)>", "max_num_batched_tokens": "<script>"}})))["error"]
    message = page.locator(f"{ROOT} .pysim-hash-message")
    message.wait_for(state="visible")
    assert message.inner_text().startswith("Ignored the link")
    assert message.inner_text().endswith("Scenario: " + refused["message"])
    pin_refused = json.loads(bridge.call("chunked_prefill", json.dumps(
        {"config": {"max_num_batched_tokens": 7}})))["error"]
    page.wait_for_function("() => document.querySelector('.budget-note').textContent.includes('pinned run')")
    assert pin_refused["message"] in page.locator(f"{ROOT} .budget-note").inner_text()
    assert page.locator(f"{ROOT} img").count() == 0
    assert page.locator(f"{ROOT} script").count() == 0
    assert root_data(page, "budget") == "2048"  # the default picture stays


def test_reduced_motion_runs_to_the_end_at_once(make_page, site_url):
    page = make_page(reduced_motion="reduce")
    page.goto(page_url(site_url, PAGE))
    widget = page.locator(ROOT)
    widget.get_by_role("button", name="Reset", exact=True).click()
    widget.get_by_role("button", name="Run all steps").click()
    n = len(expected()["steps"])
    assert step_label(page) == f"Step {n} of {n}"
    assert root_data(page, "playing") != "true"


def test_narrow_dark_page_fits_and_steps_from_the_keyboard(make_page, site_url):
    page = make_page(width=375, height=800, color_scheme="dark")
    page.goto(page_url(site_url, PAGE))
    wait_for_python(page)
    assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"
    choose(page, "long_document", 2048)
    page.locator(ROOT).get_by_role("button", name="Pin this run").click()
    choose(page, budget=16384)
    page.locator(".budget-steps summary").click()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert page.locator("canvas.budget-timeline").bounding_box()["width"] <= 375
    # Keyboard steps redraw the ~150-step timeline with its pinned copy, and the widget
    # reports each redraw's time (bench/bench_page.py holds that to a frame; a shared CI
    # machine's timings do not belong in a test).
    timeline = page.locator("canvas.budget-timeline")
    timeline.focus()
    labels = []
    for key in ("Home", "ArrowRight", "End"):
        timeline.press(key)
        labels.append(step_label(page))
        assert float(root_data(page, "drawMs")) >= 0
    assert len(set(labels)) == 3, labels


def test_a_link_made_before_the_labs_clock_still_opens(page, site_url):
    # Links from before issue 34 hold the page's old coefficients: they are left out,
    # with a note, and the rest of the link (the budget) is applied.
    page.goto(page_url(site_url, PAGE, "#chunked_prefill.base_ms=5&chunked_prefill.max_num_batched_tokens=512"))
    wait_for_python(page)
    until(page, f"document.querySelector(\"{ROOT} .pysim-hash-message\").textContent.includes('base_ms')")
    until(page, f"!document.querySelector(\"{ROOT}\").dataset.busy")
    assert "the serving lab's clock" in page.locator(f"{ROOT} .pysim-hash-message").text_content()
    until(page, f"document.querySelector(\"{ROOT} .budget-table\").dataset.finished === 'true'")
    assert summary(page) == expected_summary(expected(budget=512))
