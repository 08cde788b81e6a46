"""The KV-cache block manager widget in a real browser: the "Try this" walk-through of
the page, clicked through the buttons and read back from the grid, the block tables,
the log and the counters the reader sees. Expected values come from pysim in CPython."""

from __future__ import annotations

import json
import re

from conftest import SITE, wait_for_python, prerendered

from pysim import bridge

PAGE = "paged-kv-cache.html" if (SITE / "paged-kv-cache.html").exists() else "paged-kv-cache/"
WIDGET = '.pysim-widget[data-widget="paged_kv_cache"]'


def widget(page):
    return page.locator(WIDGET)


def expected(actions, caching=True):
    answer = json.loads(bridge.call("paged_kv_cache", json.dumps({"config": {"enable_prefix_caching": caching}, "actions": actions})))
    assert answer["ok"], answer
    return answer["result"]


def open_widget(page, site_url, hash_=""):
    page.goto(site_url + PAGE + hash_)
    page.wait_for_selector(f"{WIDGET} .kv-block")
    # Python starts when the widget comes near the screen; it sits deep in the page.
    page.locator(WIDGET).scroll_into_view_if_needed()
    wait_for_python(page)


def wait_actions(page, n):
    """Wait until the page shows the state after n actions (its summary line says so)."""
    page.wait_for_function(
        "n => /^After (\\d+) actions? \\(/.exec(document.querySelector('.kv-summary').textContent)?.[1] === String(n)",
        arg=n, timeout=60000)


def click(page, name, then_actions):
    widget(page).get_by_role("button", name=name, exact=True).click()
    wait_actions(page, then_actions)


def chips(page, request):
    texts = page.locator(f'.kv-table tr[data-request="{request}"] .kv-chip').all_inner_texts()
    return [int(t) for t in texts]


def ref(page, block):
    text = page.locator(f'.kv-block[data-block="{block}"] .kv-ref').inner_text()
    return int(re.fullmatch(r"ref (\d+)", text.strip()).group(1))


def described(tile) -> str:
    """A block tile's description: its state in words (its name is what it shows)."""
    return tile.evaluate("e => document.getElementById(e.getAttribute('aria-describedby')).textContent")


def log_lines(page):
    return [t.strip() for t in page.locator(".kv-log li").all_inner_texts()]


def new_log_lines(page):
    return [t.strip() for t in page.locator(".kv-log li.kv-log-new").all_inner_texts()]


def counter(page, key):
    return int(page.locator(f'.kv-counter[data-counter="{key}"] .kv-counter-value').inner_text().replace(",", ""))


def prose_text(page):
    """The page's own text around the widget, whitespace collapsed."""
    return " ".join(page.locator("article").inner_text().split())


def snapshot(page):
    """Everything the reader sees of the simulation's state, as text."""
    return {sel: page.locator(sel).inner_text()
            for sel in (".kv-grid", ".kv-table tbody", ".kv-log", ".kv-counters", ".kv-pool-title", ".kv-queue")}


def test_prerendered_at_once_and_pyodide_agrees_after_actions(page, site_url):
    page.goto(site_url + PAGE)
    # The default state (every request waiting, 24 blocks: block 0 the null block, 23
    # free) is drawn before Python runs.
    page.wait_for_selector(f"{WIDGET} .kv-block")
    assert page.locator(".kv-block").count() == 24
    assert page.locator('.kv-block[data-state="free"]').count() == 23
    assert page.locator('.kv-table tr[data-status="waiting"]').count() == 5
    page.locator(WIDGET).scroll_into_view_if_needed()
    wait_for_python(page)
    # (That the default model is what Pyodide computes: test_widget_pages.py; here a
    # state after three actions.)
    pyodide_view = page.evaluate("PySim.runtime.call('paged_kv_cache', {config: {}, actions: ['admit', 'admit', 'gen']}).then(a => a.result)")
    assert pyodide_view == expected(["admit", "admit", "gen"])
    model = prerendered(page.locator(WIDGET))
    assert model["view"] == expected([])


def test_caching_on_b_shares_two_blocks_of_a(live_page):
    page = live_page("paged-kv-cache")
    assert widget(page).get_by_role("switch", name="enable_prefix_caching", exact=True).is_checked()
    click(page, "Admit next", 1)
    click(page, "Admit next", 2)
    a, b = chips(page, "A"), chips(page, "B")
    want = expected(["admit", "admit"])
    assert a == want["requests"][0]["block_table"] and b == want["requests"][1]["block_table"]
    shared = [x for x in b if x in a]
    assert shared == a[:2] == b[:2] and len(shared) == 2
    for block in shared:
        assert ref(page, block) == 2
        cell = page.locator(f'.kv-block[data-block="{block}"]')
        assert cell.get_attribute("data-owners") == "A B"
        assert "kv-shared" in cell.get_attribute("class")
    assert all(ref(page, x) == 1 for x in a + b if x not in shared)
    assert "prefill skips 8 tokens" in new_log_lines(page)[-1]
    assert new_log_lines(page)[-1].startswith("B admitted")
    assert counter(page, "blocks_saved_by_caching") == 2
    assert counter(page, "prefill_tokens_skipped") == 8


def test_caching_off_b_gets_its_own_copies(live_page):
    page = live_page("paged-kv-cache")
    widget(page).get_by_role("switch", name="enable_prefix_caching", exact=True).uncheck()
    page.wait_for_function("() => location.hash.includes('paged_kv_cache.enable_prefix_caching=false')")
    page.wait_for_function("() => document.querySelector('.kv-pool-title').textContent.includes('prefix caching off')")
    click(page, "Admit next", 1)
    click(page, "Admit next", 2)
    a, b = chips(page, "A"), chips(page, "B")
    want = expected(["admit", "admit"], caching=False)
    assert a == want["requests"][0]["block_table"] and b == want["requests"][1]["block_table"]
    assert not set(a) & set(b)
    assert len(b) == 3  # 10 prompt tokens in blocks of 4, all computed
    assert all(ref(page, x) == 1 for x in a + b)
    assert page.locator(".kv-shared").count() == 0
    assert "from cache" not in new_log_lines(page)[-1]
    assert counter(page, "blocks_saved_by_caching") == 0


def test_out_of_blocks_preempts_the_newest(page, site_url):
    # The walk-through: caching off, "Admit next" (while anyone waits) then "Generate
    # one token", until a request is preempted. pysim says which step and which victim.
    plan, view = [], expected([], caching=False)
    while view["counters"]["preemptions"] == 0:
        assert len(plan) < 60, "the default scenario should run out of blocks"
        if view["next_actions"]["can_admit"]:
            plan.append("admit")
        plan.append("gen")
        view = expected(plan, caching=False)
    victim = next(r for r in view["requests"] if r["preemptions"])
    line = next(x for x in view["log"] if x.startswith("out of blocks"))
    requester = line.split(": ", 1)[1].split(" ", 1)[0]
    # With vLLM's timing and null block the newest running request is the requester.
    assert requester == victim["name"] and "preempt itself (newest" in line

    open_widget(page, site_url, "#paged_kv_cache.enable_prefix_caching=false")
    page.wait_for_function("() => document.querySelector('.kv-pool-title').textContent.includes('prefix caching off')")
    admit = widget(page).get_by_role("button", name="Admit next", exact=True)
    done = 0
    for action in plan:
        if action == "admit":
            assert admit.is_enabled()
            click(page, "Admit next", done + 1)
        else:
            click(page, "Generate one token", done + 1)
        done += 1
        if action == "gen" and done < len(plan) and plan[done] == "gen":
            assert admit.is_disabled()  # nobody waits: the button says so
    assert line in new_log_lines(page)
    assert counter(page, "preemptions") == 1
    row = page.locator(f'.kv-table tr[data-request="{victim["name"]}"]')
    assert row.get_attribute("data-status") == "preempted"
    assert row.locator(".kv-status").inner_text().startswith("preempted, waiting (1st")
    assert chips(page, victim["name"]) == []
    assert page.locator(".kv-last").inner_text().count("preempt") >= 1
    # The page's "Try this" tells the same story.
    prose = prose_text(page)
    assert (f"On generate step {view['step']}, {requester} needs a new block for the token it "
            f"sampled last step") in prose
    assert f"{victim['name']} itself, so {victim['name']} preempts itself" in prose
    assert f"keeping the {len(victim['generated'])} tokens it had generated" in prose


def test_block_0_is_drawn_as_vllms_null_block(live_page):
    page = live_page("paged-kv-cache")
    click(page, "Run to completion", 1)  # every other block has been used by now
    tile = page.locator('.kv-block[data-block="0"]')
    assert tile.get_attribute("data-state") == "null"
    assert tile.locator(".kv-owners").inner_text() == "null block"
    assert tile.locator(".kv-ref").inner_text() == "ref 0"
    assert "null block" in described(tile)
    assert "23 are usable" in page.locator(".kv-pool-title").inner_text()
    # Nobody ever holds it: no block table lists block 0, the free queue never has it.
    for name in "ABCDE":
        assert 0 not in chips(page, name)
    assert " 0 " not in f" {page.locator('.kv-queue').inner_text()} "
    # Clicking it explains why it is reserved.
    tile.click()
    inspector = page.locator(".kv-inspector")
    assert inspector.locator("h4").inner_text() == "Block 0: reserved, vLLM's null block"
    assert expected(["run"])["pool"]["null_block_why"] in inspector.inner_text()
    assert "has 23 usable" in inspector.inner_text()


def test_a_sampled_token_is_drawn_pending_until_the_next_step(page, site_url):
    # admit A, gen, gen: A has sampled a2 but its KV is written by the next gen, in a
    # block A does not hold yet; B (admitted second) has b1 pending inside block 4.
    open_widget(page, site_url, "#paged_kv_cache.enable_prefix_caching=true&paged_kv_cache.actions=admit,admit,gen,gen")
    wait_actions(page, 4)
    want = {r["name"]: r for r in expected(["admit", "admit", "gen", "gen"])["requests"]}
    assert (want["A"]["pending_token"], want["A"]["pending_needs_block"]) == ("a2", True)
    assert (want["B"]["pending_token"], want["B"]["pending_needs_block"]) == ("b2", False)
    row_a = page.locator('.kv-table tr[data-request="A"]')
    pending = row_a.locator(".kv-w-pending")
    assert pending.count() == 1 and pending.inner_text() == "a2"
    assert pending.get_attribute("title") == "sampled; KV written next step"
    # a2 sits alone in a dashed group: the block it needs next step.
    assert row_a.locator(".kv-tokgroup-next").inner_text() == "a2"
    assert chips(page, "A") == want["A"]["block_table"] == [1, 2, 3]
    # B's pending b2 is drawn in the tile of the block where its slot is.
    b_last = want["B"]["block_table"][-1]
    tile = page.locator(f'.kv-block[data-block="{b_last}"]')
    assert tile.locator(".kv-w-pending").inner_text() == "b2"
    assert "pending (KV written next step): b2" in described(tile)
    # One more Generate writes a2 into a new block: A's table grows, nothing is pending
    # from before, and the new a3 is pending instead.
    click(page, "Generate one token", 5)
    grown = expected(["admit", "admit", "gen", "gen", "gen"])["requests"][0]
    assert chips(page, "A") == grown["block_table"] and len(grown["block_table"]) == 4
    assert row_a.locator(".kv-w-pending").inner_text() == "a3"
    assert "A writes its last token into new block" in " ".join(new_log_lines(page))


def test_run_to_completion_counts_the_blocks_caching_saved(live_page):
    page = live_page("paged-kv-cache")
    click(page, "Run to completion", 1)
    want = expected(["run"])
    assert counter(page, "blocks_saved_by_caching") == want["counters"]["blocks_saved_by_caching"] > 0
    assert counter(page, "prefill_tokens_skipped") == want["counters"]["prefill_tokens_skipped"]
    saved = want["counters"]["blocks_saved_by_caching"]
    assert f"The counter of blocks saved by caching reads {saved}:" in prose_text(page)
    assert counter(page, "evictions") == want["counters"]["evictions"]
    assert page.locator('.kv-table tr[data-status="finished"]').count() == 5
    assert widget(page).get_by_role("button", name="Run to completion", exact=True).is_disabled()
    # Finished requests leave their full blocks cached in the free queue.
    assert page.locator('.kv-block[data-state="cached"]').count() == want["pool"]["cached"] > 0


def test_undo_and_named_admission(live_page):
    page = live_page("paged-kv-cache")
    click(page, "Admit next", 1)
    click(page, "Admit next", 2)
    before = snapshot(page)
    click(page, "Generate one token", 3)
    assert snapshot(page) != before
    click(page, "Undo", 2)
    assert snapshot(page) == before
    # Admit a named waiting request out of order.
    widget(page).get_by_label("Waiting request", exact=True).select_option("D")
    click(page, "Admit this one", 3)
    assert page.locator('.kv-table tr[data-request="D"]').get_attribute("data-status") == "running"
    assert chips(page, "D") == expected(["admit", "admit", "admit:D"])["requests"][3]["block_table"]
    page.wait_for_function("() => location.hash.includes('paged_kv_cache.actions=admit,admit,admit:D')")
    click(page, "Reset", 0)
    assert page.locator('.kv-block[data-state="free"]').count() == 23


def test_url_hash_restores_the_state(page, offline_site_url):
    # (On the download served: the pasted link below is a hash edit within one page,
    # which Material 9.8's instant navigation on the hosted site takes for a page change;
    # test_live.py's back-and-forward test says more.)
    site_url = offline_site_url
    open_widget(page, site_url)
    click(page, "Admit next", 1)
    click(page, "Admit next", 2)
    click(page, "Generate one token", 3)
    page.wait_for_function("() => location.hash.includes('paged_kv_cache.actions=admit,admit,gen')")
    assert "paged_kv_cache.enable_prefix_caching=true" in page.evaluate("location.hash")
    before = snapshot(page)
    url = page.url
    page.goto("about:blank")
    page.goto(url)
    wait_actions(page, 3)  # the link's actions start Python and are replayed
    assert snapshot(page) == before
    # A link pasted into the same tab (only the hash changes) is replayed too, and
    # runs of one action may be written compactly.
    page.evaluate("location.hash = 'paged_kv_cache.enable_prefix_caching=false&paged_kv_cache.actions=admit*2,gen*3'")
    wait_actions(page, 5)
    want = expected(["admit", "admit", "gen", "gen", "gen"], caching=False)
    assert chips(page, "B") == want["requests"][1]["block_table"]
    assert not widget(page).get_by_role("switch", name="enable_prefix_caching", exact=True).is_checked()


def test_keyboard_focus_shows_the_block_in_the_inspector(live_page):
    page = live_page("paged-kv-cache")
    widget(page).get_by_role("button", name="Admit next", exact=True).focus()
    page.keyboard.press("Enter")
    wait_actions(page, 1)
    page.keyboard.press("Enter")
    wait_actions(page, 2)
    widget(page).get_by_role("switch", name="enable_prefix_caching", exact=True).focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.block") == "0"
    inspector = page.locator(".kv-inspector")
    assert inspector.locator("h4").inner_text() == "Block 0: reserved, vLLM's null block"
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.block") == "1"
    assert inspector.locator("h4").inner_text() == "Block 1: in use"
    text = inspector.inner_text()
    assert "A, B" in text  # its owners
    want = expected(["admit", "admit"])["blocks"][1]
    assert want["hash"] in text and want["parent_hash"] in text and " ".join(want["tokens"]) in text
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.block") == "2"
    page.keyboard.press("End")
    assert inspector.locator("h4").inner_text() == "Block 23: free"
    assert "Free-queue position" in inspector.inner_text()
    # Tab leaves the grid in one step: it holds a single tab stop.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('kv-block')") is False


def test_narrow_dark_page_has_no_horizontal_overflow(make_page, site_url):
    page = make_page(width=375, color_scheme="dark")
    open_widget(page, site_url)
    assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"
    click(page, "Admit next", 1)
    click(page, "Admit next", 2)
    click(page, "Generate one token", 3)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    click(page, "Run to completion", 4)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375


def test_crafted_hash_is_data_not_markup(page, site_url):
    page.goto(site_url + PAGE + "#paged_kv_cache.actions=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&paged_kv_cache.enable_prefix_caching=%3Cscript%3E")
    page.wait_for_selector(f"{WIDGET} .kv-block")
    # The link goes to pysim, which checks the config before the actions: it names the
    # caching flag, and the widget shows its message after the flag's label.
    wait_for_python(page)
    refused = json.loads(bridge.call("paged_kv_cache", json.dumps(
        {"config": {"enable_prefix_caching": "<script>"}, "actions": ["<img src=x onerror=alert(1)>"]})))
    message = page.locator(f"{WIDGET} .pysim-hash-message")
    message.wait_for(state="visible")
    assert message.inner_text().startswith("Ignored the link")
    assert message.inner_text().endswith("enable_prefix_caching: " + refused["error"]["message"])
    assert page.locator(f"{WIDGET} img").count() == 0
    assert page.locator(f"{WIDGET} script").count() == 0
    assert page.locator('.kv-block[data-state="free"]').count() == 23
