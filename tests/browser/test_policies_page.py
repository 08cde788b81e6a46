"""Page 9's scheduling-policy lab in a real browser, doing what a reader does: picking a
policy changes the table to pysim's figures; a policy written in the editor runs beside
the built-ins; an error is shown with its line marked; an endless loop is stopped by
pysim's budget and the page goes on answering; a puzzle is graded on held-out traffic,
pass or fail, and a pass is remembered in the browser; Run and Grade are reachable
from the keyboard."""

from __future__ import annotations

import json

from conftest import pysim_view, until

from pysim import bridge
from pysim.policy import builtin as builtin_policies

PAGE = "priority-and-preemption"
ROOT = ".pysim-widget[data-widget='policies']"
DATA = f"document.querySelector(\"{ROOT}\").dataset"

ERROR_CODE = '''def order(request, engine):
    key = request.arrival_time
    return request.deadline  # no such field
'''
LOOP_CODE = '''def order(request, engine):
    n = 0
    while True:
        n += 1
'''
MY_CODE = '''def order(request, engine):
    # interactive first, then the shortest prompt
    return (request.priority, request.num_prompt_tokens)
'''


def fmt(x: float) -> str:
    return f"{x:,.0f}"


def ms(x: float) -> str:
    """widgets/charts.js's ms(): a latency as the table writes it."""
    if x >= 10000:
        return f"{round(x / 100) / 10:,g} s"
    if x >= 100:
        return f"{round(x):,} ms"
    return f"{x:.1f} ms" if x >= 10 else f"{x:.2f} ms"


def cell(page, group: int, run: str, column: int) -> str:
    """A figure of the results table: group (0 all, then tenants, then tiers), the run's
    row (a built-in's name, or "mine"), the column after the row's two headers."""
    row = page.locator(f"{ROOT} .pol-results tbody[data-group='{group}'] tr[data-run='{run}']")
    return row.locator("td").nth(column).inner_text()


def paste(page, code: str) -> None:
    page.evaluate("code => document.querySelector(\"" + ROOT + "\").pysimEditor.set(code)", code)


def run_mine(page, timeout: float = 60) -> str:
    page.locator(ROOT).get_by_role("button", name="Run my policy").click()
    until(page, f"{DATA}.running === 'false' && !!{DATA}.result", timeout=timeout)
    return page.locator(f"{ROOT} .pol-verdict").first.inner_text()


def with_code(code: str, **config) -> dict:
    answer = json.loads(bridge.call("policies", json.dumps({"config": {**config, "policy_code": code, "compare": "none"}})))
    assert answer["ok"], answer
    return answer["result"]


def test_picking_a_policy_changes_the_table(live_page):
    page = live_page(PAGE)
    fcfs = pysim_view("policies", {})["results"][0]
    # Group 3 is the interactive tier (all, conv, code, interactive, batch); column 2 its TTFT p90.
    assert cell(page, 3, "fcfs", 2) == ms(fcfs["tiers"]["interactive"]["ttft_ms"]["p90"])
    page.locator(f"{ROOT} .pysim-control[data-field='policy'] select").select_option("priority")
    until(page, f"{DATA}.shown === 'priority' && !{DATA}.busy && !{DATA}.pending")
    want = pysim_view("policies", {"policy": "priority"})["results"][0]
    assert cell(page, 3, "priority", 2) == ms(want["tiers"]["interactive"]["ttft_ms"]["p90"])
    assert cell(page, 4, "priority", 4).endswith(" s")  # the batch tier's longest wait
    assert "policies.policy=priority" in page.url
    # A second policy beside the first: both rows in every group.
    page.locator(f"{ROOT} .pysim-control[data-field='compare'] select").select_option("fcfs")
    until(page, f"{DATA}.shown === 'priority,fcfs' && !{DATA}.busy && !{DATA}.pending")
    assert cell(page, 3, "fcfs", 2) == ms(fcfs["tiers"]["interactive"]["ttft_ms"]["p90"])
    assert page.locator(f"{ROOT} .pol-chart .u-wrap[role='img']").count() == 2


def test_an_error_is_shown_with_its_line_marked(live_page):
    page = live_page(PAGE)
    until(page, f"{DATA}.editor === 'ace'")
    paste(page, ERROR_CODE)
    verdict = run_mine(page)
    want = with_code(ERROR_CODE)
    assert want["error_line"] == 3
    assert "line 3" in verdict
    assert page.locator(f"{ROOT} .pol-error").inner_text() == want["error"]
    assert "deadline" in want["error"]
    assert page.get_attribute(ROOT, "data-result") == "error"
    # Ace marks the line: an error annotation in the gutter on row 3.
    assert page.locator(f"{ROOT} .ace_gutter-cell.ace_error").inner_text().strip() == "3"


def test_an_endless_loop_is_stopped_and_the_page_still_answers(live_page):
    page = live_page(PAGE)
    paste(page, LOOP_CODE)
    verdict = run_mine(page, timeout=90)
    error = page.locator(f"{ROOT} .pol-error").inner_text()
    assert "stopped" in error and "budget" in error, error
    assert "line" in verdict
    # pysim stopped it: Python was not restarted, and it answers the next change.
    assert page.get_attribute(ROOT, "data-runtime") == "ready"
    page.locator(f"{ROOT} .pysim-control[data-field='policy'] select").select_option("sjf")
    until(page, f"{DATA}.shown === 'sjf' && !{DATA}.busy && !{DATA}.pending")
    want = pysim_view("policies", {"policy": "sjf"})["results"][0]
    assert cell(page, 0, "sjf", 2) == ms(want["summary"]["ttft_ms"]["p90"])


def test_a_correct_policy_runs_beside_the_built_in(live_page):
    page = live_page(PAGE)
    paste(page, MY_CODE)
    verdict = run_mine(page)
    assert "Your policy ran" in verdict
    mine = with_code(MY_CODE)["results"][0]
    assert page.get_attribute(ROOT, "data-shown") == "fcfs,mine"
    assert cell(page, 3, "mine", 2) == ms(mine["tiers"]["interactive"]["ttft_ms"]["p90"])
    assert cell(page, 0, "mine", 0) == fmt(mine["summary"]["num_requests"])
    # Another traffic: the reader's row goes (it was for other settings), with a note.
    page.locator(f"{ROOT} .pysim-control[data-field='batch_share'] input[type='number']").fill("0.5")
    page.locator(f"{ROOT} .pysim-control[data-field='batch_share'] input[type='number']").press("Enter")
    until(page, f"{DATA}.shown === 'fcfs' && !{DATA}.busy && !{DATA}.pending")
    assert "other settings" in page.locator(f"{ROOT} .pol-mine-note").inner_text()


def test_start_from_loads_the_chosen_built_in(live_page):
    page = live_page(PAGE)
    page.locator(f"{ROOT} .pysim-control[data-field='policy'] select").select_option("aging")
    until(page, f"{DATA}.shown === 'aging' && !{DATA}.busy && !{DATA}.pending")
    page.locator(ROOT).get_by_role("button", name="Start from").click()
    code = page.evaluate(f"document.querySelector(\"{ROOT}\").pysimEditor.get()")
    assert code == builtin_policies.source("aging")


def grade(page, puzzle: str, code: str) -> str:
    page.locator(f"{ROOT} select.pol-puzzle-select").select_option(puzzle)
    paste(page, code)
    page.locator(ROOT).get_by_role("button", name="Grade on held-out traffic").click()
    until(page, f"{DATA}.running === 'false' && !!{DATA}.grade", timeout=150)
    return page.get_attribute(ROOT, "data-grade")


def test_grading_a_puzzle_pass_and_fail(live_page):
    page = live_page(PAGE)
    statement = page.locator(f"{ROOT} .pol-statement").inner_text()
    assert "interactive tier" in statement
    assert grade(page, "tiers", builtin_policies.source("fcfs")) == "fail"
    want = pysim_view("puzzle", {"puzzle": "tiers", "policy_code": builtin_policies.source("fcfs")})
    windows = page.locator(f"{ROOT} .pol-windows > li")
    assert windows.count() == len(want["windows"]) == 3
    for i, w in enumerate(want["windows"]):
        assert windows.nth(i).get_attribute("data-passed") == str(w["passed"]).lower()
        assert f"Minutes {w['window_start_min']} " in windows.nth(i).inner_text()
    assert "Not yet" in page.locator(f"{ROOT} .pol-grade-verdict").inner_text()
    # aging passes this puzzle (pysim/sims/puzzles.py, good_policy): a pass, remembered here only.
    assert grade(page, "tiers", builtin_policies.source("aging")) == "pass"
    assert "Passed" in page.locator(f"{ROOT} .pol-grade-verdict").inner_text()
    stored = page.evaluate("JSON.parse(localStorage.getItem('pysim.policies.passed'))")
    assert stored == {"tiers": True}
    assert "(passed)" in page.locator(f"{ROOT} select.pol-puzzle-select option[value='tiers']").inner_text()
    assert "this browser" in page.locator(f"{ROOT} .pol-passes").inner_text()


def test_grading_names_the_line_of_an_error(live_page):
    page = live_page(PAGE)
    assert grade(page, "shortest", ERROR_CODE) == "error"
    assert "deadline" in page.locator(f"{ROOT} .pol-grade-details .pol-error").inner_text()


def test_run_and_grade_are_reachable_from_the_keyboard(live_page):
    page = live_page(PAGE)
    until(page, f"{DATA}.editor === 'ace'")
    page.locator(f"{ROOT} .pol-editor textarea").focus()
    page.keyboard.press("Escape")  # leave the editor's text, as its help says
    reached = set()
    for _ in range(12):
        page.keyboard.press("Tab")
        name = page.evaluate("document.activeElement && document.activeElement.textContent")
        reached.add(name)
        if name == "Run my policy":
            # Its focus is visible (Material's buttons draw an outline or a fill on focus).
            assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none" or \
                page.evaluate("document.activeElement.matches(':focus-visible')")
            break
    assert "Run my policy" in reached
    page.keyboard.press("Enter")
    until(page, f"{DATA}.running === 'false' && !!{DATA}.result", timeout=60)
    assert page.get_attribute(ROOT, "data-result") == "ran"
    page.locator(f"{ROOT} select.pol-puzzle-select").focus()
    for _ in range(4):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "Grade on held-out traffic":
            break
    assert page.evaluate("document.activeElement.textContent") == "Grade on held-out traffic"


def test_a_link_in_the_prose_opens_its_state(live_page):
    page = live_page(PAGE)
    # (Material writes the page's links out in full: the hash is what follows "#".)
    link = page.locator("a[href*='#policies.']").first
    href = link.get_attribute("href")
    link.click()
    until(page, f"{DATA}.shown === 'priority,fcfs' && !{DATA}.busy && !{DATA}.pending")
    # The link is rewritten with the whole state (live.js), the link's settings among it.
    for pair in href.split("#", 1)[1].split("&"):
        assert pair in page.url.split("&") or "#" + pair in page.url, pair
    assert page.evaluate(f"document.querySelector(\"{ROOT}\").getBoundingClientRect().top") < 200


def normal_answers(page):
    """What test_robustness.py checks after its random actions: the controls set back to
    their defaults, the table shows pysim's figures for them."""
    from test_robustness import restore_defaults

    restore_defaults(page, "policies")
    until(page, f"{DATA}.shown.startsWith('fcfs') && !{DATA}.busy && !{DATA}.pending", timeout=90)
    want = pysim_view("policies", {})["results"][0]
    assert cell(page, 3, "fcfs", 2) == ms(want["tiers"]["interactive"]["ttft_ms"]["p90"])
