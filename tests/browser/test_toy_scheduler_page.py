"""The toy scheduler's widget on page 4 in a real browser: pre-rendered at once, the same
in Pyodide, run with two policies and read back from the page, bad input, the link."""

from __future__ import annotations

import json

from conftest import page_url, until

from pysim import bridge

PAGE = "toy-scheduler"
ROOT = ".pysim-widget[data-widget='toy_scheduler']"


def wait_for_python(page):
    """Python starts when the widget comes near the screen: bring it there, then wait."""
    page.locator(ROOT).scroll_into_view_if_needed()
    until(page, f"['ready', 'failed'].includes(document.querySelector(\"{ROOT}\").dataset.runtime)")
    assert page.locator(ROOT).get_attribute("data-runtime") == "ready"


def expected(**config):
    answer = json.loads(bridge.call("toy_scheduler", json.dumps({"config": config})))
    assert answer["ok"], answer
    return answer["result"]


def row_values(page, policy) -> dict:
    """The figures of the last table row for `policy`, as the reader sees them."""
    row = page.locator(f'{ROOT} .toy-runs tbody tr[data-policy="{policy}"]').last
    cells = {c.get_attribute("data-col"): c.inner_text() for c in row.locator("td").all()}
    out = {"policy": cells.pop("policy"), "settings": cells.pop("settings")}
    return {**out, **{k: float(v.replace(",", "")) for k, v in cells.items()}}


def card(page, metric) -> str:
    return page.locator(f'{ROOT} .toy-card[data-metric="{metric}"] dd').inner_text()


def wait_rows(page, n):
    until(page, f"document.querySelectorAll(\"{ROOT} .toy-runs tbody tr\").length === {n}")


def test_prerendered_before_python(page, site_url):
    page.goto(page_url(site_url, PAGE))
    view = expected()
    # Drawn from the embedded model before Python has started.
    assert card(page, "iterations") == f"{view['results']['iterations']:,}"
    assert card(page, "finished") == "200 of 200"
    # (That this model is what Pyodide computes: test_widget_pages.py.)
    # The chart has a text alternative and a visible table.
    label = page.locator(f"{ROOT} svg.toy-chart").get_attribute("aria-label")
    assert label.startswith(f"Batch size over {view['results']['iterations']:,} iterations")
    assert page.locator(f"{ROOT} .toy-series-table tbody tr").count() == len(view["series"]["start"])


def test_two_policies_run_in_the_browser_and_read_back(live_page):
    page = live_page(PAGE)
    wait_rows(page, 1)
    fcfs = row_values(page, "fcfs")
    page.get_by_label("Policy").select_option("shortest")
    wait_rows(page, 2)
    short = row_values(page, "shortest")
    assert short["policy"] == "shortest"
    view = expected(policy="shortest")["results"]
    assert short["iterations"] == view["iterations"]
    assert short["mean_ttft"] == view["mean_ttft"] and short["max_ttft"] == view["max_ttft"]
    # The chapter's claim, read off the page: shortest-first lowers the mean TTFT and
    # raises the worst one.
    assert short["mean_ttft"] < fcfs["mean_ttft"] and short["max_ttft"] > fcfs["max_ttft"]
    # The cards show the run just made; it is the highlighted row.
    assert card(page, "max_ttft") == str(view["max_ttft"])
    current = page.locator(f'{ROOT} .toy-runs tr[data-current="true"]')
    assert current.get_attribute("data-policy") == "shortest"
    # A constant: more memory, no preemptions (another row).
    box = page.locator(f'{ROOT} .pysim-control[data-field="num_gpu_blocks"] input[type="number"]')
    box.fill("2000")
    box.press("Enter")
    wait_rows(page, 3)
    more = row_values(page, "shortest")
    assert more["settings"] == "num_gpu_blocks 2,000" and more["preemptions"] == 0
    assert "num_gpu_blocks=2000" in page.url and "policy=shortest" in page.url


def test_bad_value_is_shown_beside_its_control_and_the_picture_stays(live_page):
    page = live_page(PAGE)
    before = card(page, "iterations")
    box = page.locator(f'{ROOT} .pysim-control[data-field="max_num_batched_tokens"] input[type="number"]')
    box.fill("500")
    box.press("Enter")
    error = page.locator(f'{ROOT} .pysim-control[data-field="max_num_batched_tokens"] .pysim-error')
    error.wait_for(state="visible")
    assert "max_num_batched_tokens" in error.inner_text() and "855" in error.inner_text()
    assert card(page, "iterations") == before
    box.fill("2048")
    box.press("Enter")
    error.wait_for(state="hidden")
    wait_rows(page, 2)


def test_link_restores_a_run_and_crafted_text_stays_text(page, site_url):
    page.goto(page_url(site_url, PAGE, "#toy_scheduler.policy=priority&toy_scheduler.max_num_seqs=8"))
    wait_for_python(page)
    until(page, f"document.querySelector(\"{ROOT} .toy-runs tr[data-current='true']\")"
                "?.dataset.policy === 'priority'")
    view = expected(policy="priority", max_num_seqs=8)["results"]
    assert card(page, "iterations") == f"{view['iterations']:,}"
    page.goto("about:blank")
    # The link's values go to pysim, which refuses the first bad one (policy comes
    # first); the widget shows pysim's message after the field's label.
    page.goto(page_url(site_url, PAGE, "#toy_scheduler.policy=%3Cimg%20src%3Dx%3E&toy_scheduler.seed=1e9"))
    wait_for_python(page)
    refused = json.loads(bridge.call("toy_scheduler", json.dumps({"config": {"policy": "<img src=x>", "seed": 1e9}})))
    message = page.locator(f"{ROOT} .pysim-hash-message")
    message.wait_for(state="visible")
    assert message.inner_text().startswith("Ignored the link")
    assert message.inner_text().endswith("Policy: " + refused["error"]["message"])
    assert page.locator(f"{ROOT} img").count() == 0


def test_runs_keep_their_numbers_and_the_compared_columns_stay_in_view(live_page):
    """Issue 16: at 1280 px the runs table hid Mean, Max, Urgent TTFT and Preempted past
    its right edge, and going back to FCFS renumbered the runs, so the page's "your first
    row" changed meaning. A run keeps its number; the table fits the column."""
    page = live_page(PAGE)
    wait_rows(page, 1)
    policy = page.get_by_label("Policy")
    number = lambda: page.locator(f'{ROOT} .toy-runs tr[data-current="true"] th').inner_text()
    for choice, n, rows in (("shortest", "2", 2), ("priority", "3", 3), ("fcfs", "1", 3), ("shortest", "2", 3)):
        policy.select_option(choice)
        until(page, f"document.querySelector(\"{ROOT} .toy-runs tr[data-current='true']\").dataset.policy === '{choice}'")
        wait_rows(page, rows)
        assert number() == n, (choice, number())
    numbers = [r.inner_text() for r in page.locator(f"{ROOT} .toy-runs tbody th").all()]
    assert numbers == ["1", "2", "3"]
    # A run with a long settings cell, then every header is inside the visible table box.
    box = page.locator(f'{ROOT} .pysim-control[data-field="num_gpu_blocks"] input[type="number"]')
    box.fill("2000")
    box.press("Enter")
    wait_rows(page, 4)
    wrap = page.locator(f"{ROOT} .toy-runs-wrap").bounding_box()
    headers = page.locator(f"{ROOT} .toy-runs thead th")
    assert [t.inner_text().replace("\n", " ") for t in headers.all()][3:7] == ["Mean TTFT", "Max TTFT", "Urgent TTFT", "Preempted"]
    for th in headers.all():
        b = th.bounding_box()
        assert b["x"] >= wrap["x"] - 0.5 and b["x"] + b["width"] <= wrap["x"] + wrap["width"] + 0.5, (th.inner_text(), b, wrap)
    assert page.evaluate(f"(() => {{ const w = document.querySelector(\"{ROOT} .toy-runs-wrap\"); return w.scrollWidth <= w.clientWidth; }})()")


def test_run_again_says_what_it_did_and_the_chart_is_readable(live_page):
    """A reader pressed "Run the driver" and saw nothing happen: every change had already
    run it. The button is "Run again", and what it did is said beside it and below. The
    batch-size chart was 60 px tall without gridlines; a header wrapped onto three lines."""
    page = live_page(PAGE)
    wait_rows(page, 1)
    page.locator(ROOT).get_by_role("button", name="Run again", exact=True).click()
    until(page, f"document.querySelector(\"{ROOT} .toy-run-hint\").textContent.startsWith('Ran again')")
    assert "same results as run 1" in page.locator(f"{ROOT} .toy-run-hint").inner_text()
    assert "same settings give the same results" in page.locator(f"{ROOT} .toy-status").inner_text()
    wait_rows(page, 1)  # no new row: the same run
    chart = page.locator(f"{ROOT} svg.toy-chart")
    assert chart.bounding_box()["height"] >= 180
    assert chart.locator("line.toy-grid").count() >= 6
    assert "max_num_seqs 32" in chart.locator("text.toy-limit-label").text_content()
    # Every header of the runs table takes two lines at most.
    line = page.evaluate(f"parseFloat(getComputedStyle(document.querySelector(\"{ROOT} .toy-runs thead th\")).lineHeight)")
    for th in page.locator(f"{ROOT} .toy-runs thead th").all():
        assert th.locator("xpath=.").evaluate("e => e.getClientRects()[0].height") <= 2 * line + 12, th.inner_text()
