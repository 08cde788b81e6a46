"""Scheduling across replicas in a real browser, doing what a reader does: the default run
is on the page before Python starts, then goes live; picking a router changes the
hit rate to pysim's; replicas can be added; the disaggregated layout shows its own fields
(and hides the replica count) and the KV transfer's figures; the GPU sweep shows its
progress and ends with pysim's answer, and another sweep can be cancelled midway; a
pinned run is compared with a new one; an out-of-range value gets pysim's message beside
its control while the page keeps working.

Each test starts from the page a reader first sees (conftest's `live_page`, Python
already running) and sets its own starting point, so any test runs alone, in any order,
on any xdist worker."""

from __future__ import annotations

import json

from conftest import page_url, pysim_view, until, wait_for_python

PAGE = "cluster"
WIDGET = '.pysim-widget[data-widget="cluster"]'


SHORT = {"window_minutes": 1}  # the window the tests after the first use


def computed(**config) -> dict:
    return pysim_view("cluster", {**SHORT, **config})


def sweep_point(**config) -> dict:
    return pysim_view("cluster_sweep", config)


def pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def ms(x: float) -> str:
    """cluster.charts.js's `ms`."""
    if x >= 10000:
        return f"{round(x / 100) / 10:,g} s"
    if x >= 100:
        return f"{round(x):,} ms"
    return f"{x:.1f} ms" if x >= 10 else f"{x:.2f} ms"


def card(page, label: str) -> str:
    """A headline figure as the reader sees it (its first line: a pin adds a second)."""
    cell = page.locator(f"{WIDGET} .cluster-card", has=page.locator("dt", has_text=label)).first
    return cell.locator("dd").evaluate("dd => dd.firstChild.textContent")


def wait_idle(page):
    """Until no change waits out its debounce and nothing computes (live.js's signals)."""
    page.wait_for_function(f"() => {{ const d = document.querySelector('{WIDGET}').dataset; return !d.pending && !d.busy; }}",
                           timeout=60000)


def type_value(page, field: str, value) -> None:
    box = page.locator(f'{WIDGET} .pysim-control[data-field="{field}"] input[type="number"]')
    box.fill(str(value))
    box.press("Enter")
    wait_idle(page)


def shown(page, field: str) -> bool:
    return page.locator(f'{WIDGET} .pysim-control[data-field="{field}"]').is_visible()


MENUS = {"router": "Router", "layout": "Layout", "kv_link": "KV link"}  # the choices' labels


def opened(live_page, **config):
    """The live page, its window cut to one minute (every run then takes well under a
    second), then `config` set through the controls, a reader's way."""
    page = live_page(PAGE)
    type_value(page, "window_minutes", 1)
    root = page.locator(WIDGET)
    for name, value in config.items():
        if name in MENUS:
            root.get_by_label(MENUS[name], exact=True).select_option(value)
            wait_idle(page)
        else:
            type_value(page, name, value)
    want = computed(**config)
    until(page, f"document.querySelector('{WIDGET} .cluster-sentence').textContent === {json.dumps(want['sentence'])}")
    return page


def test_default_run_is_prerendered_then_goes_live(page, site_url):
    want = pysim_view("cluster", {})
    page.goto(page_url(site_url, PAGE))
    # Before Python: the cards already hold pysim's numbers, and the charts are drawn.
    assert card(page, "Goodput per GPU") == f"{want['summary']['goodput_per_gpu']:.3f}"
    assert card(page, "Prefix-cache hit rate") == pct(want["prefix_cache"]["hit_rate"])
    assert card(page, "GPUs") == str(want["gpus"])
    assert page.locator(f"{WIDGET} .cluster-sentence").inner_text() == want["sentence"]
    wait_for_python(page)
    until(page, f"document.querySelector('{WIDGET}').dataset.live && document.querySelector('{WIDGET}').dataset.live !== 'pending'")
    # (test_widget_pages.py checks the pre-rendered view equals Pyodide's for every widget.)
    assert page.get_attribute(WIDGET, "data-live") == "ready"
    # Every chart is a picture with words; the numbers are also tables.
    labels = page.locator(f"{WIDGET} .u-wrap[role=img]").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    assert len(labels) == 4 and all(labels), labels
    assert "Target" in labels[0] and "replica" in labels[2]
    assert page.locator(f"{WIDGET} .cluster-replicas tbody tr").count() == want["config"]["replicas"]
    # Only the fields of the colocated layout and the cache-aware router show.
    assert shown(page, "replicas") and not shown(page, "prefill_replicas") and not shown(page, "kv_link")
    assert shown(page, "cache_threshold")


def test_router_changes_the_hit_rate(live_page):
    page = opened(live_page)
    root = page.locator(WIDGET)
    root.get_by_label("Router", exact=True).select_option("round_robin")
    wait_idle(page)
    want = computed(router="round_robin")
    until(page, f"document.querySelector('{WIDGET} .cluster-sentence').textContent === {json.dumps(want['sentence'])}")
    assert card(page, "Prefix-cache hit rate") == pct(want["prefix_cache"]["hit_rate"])
    assert card(page, "SLO attainment") == pct(want["summary"]["slo_attainment"])
    assert not shown(page, "cache_threshold")  # the thresholds belong to the cache-aware router
    assert "router=round_robin" in page.url


def test_adding_replicas(live_page):
    page = opened(live_page, router="round_robin")
    type_value(page, "replicas", 6)
    want = computed(router="round_robin", replicas=6)
    until(page, f"document.querySelector('{WIDGET} .cluster-sentence').textContent === {json.dumps(want['sentence'])}")
    assert card(page, "GPUs") == "6"
    assert page.locator(f"{WIDGET} .cluster-replicas tbody tr").count() == 6
    assert card(page, "TTFT p90") == ms(want["ttft_ms"]["p90"])


def test_out_of_range_value_gets_pysims_message_and_the_page_keeps_working(live_page):
    page = opened(live_page, router="round_robin")
    before = card(page, "Goodput per GPU")
    type_value(page, "replicas", 40)
    error = page.locator(f'{WIDGET} .pysim-control[data-field="replicas"] .pysim-error').inner_text()
    assert "Replicas" in error and "16" in error, error
    assert page.get_attribute(WIDGET, "data-error") == "replicas"
    assert card(page, "Goodput per GPU") == before  # the last good picture stays
    type_value(page, "replicas", 4)
    until(page, f"!document.querySelector('{WIDGET}').dataset.error")
    want = computed(router="round_robin")
    until(page, f"document.querySelector('{WIDGET} .cluster-sentence').textContent === {json.dumps(want['sentence'])}")


def test_disaggregated_layout_shows_its_fields_and_the_transfer(live_page):
    page = opened(live_page)
    root = page.locator(WIDGET)
    root.get_by_label("Layout", exact=True).select_option("disaggregated")
    # The fields switch at once, before pysim answers.
    assert shown(page, "prefill_replicas") and shown(page, "decode_replicas") and shown(page, "kv_link")
    assert not shown(page, "replicas")
    wait_idle(page)
    want = computed(layout="disaggregated")
    until(page, f"document.querySelector('{WIDGET} .cluster-sentence').textContent === {json.dumps(want['sentence'])}")
    assert card(page, "KV transfer p50") == ms(want["transfer_ms"]["p50"])
    text = root.locator(".cluster-transfer").inner_text()
    assert ms(want["transfer_ms"]["p90"]) in text and "InfiniBand" in text
    roles = root.locator(".cluster-replicas tbody tr td:nth-child(2)").all_inner_texts()
    assert roles == [r["role"] for r in want["replicas"]] == ["prefill", "prefill", "decode", "decode"]
    assert card(page, "Load imbalance") == ", ".join(f"{k} x{v:.2f}" for k, v in want["imbalance"].items())


def test_a_refused_value_the_other_layout_hides_gives_way(live_page):
    """A reader types a bad prefill count, then picks the colocated layout, which hides
    that field: its message could not be read nor the value fixed, so the value goes back
    to the last one pysim took and the colocated run is drawn (a random-actions run found
    the widget stuck refusing a field it had hidden)."""
    page = opened(live_page, layout="disaggregated")
    root = page.locator(WIDGET)
    type_value(page, "prefill_replicas", 40)
    assert page.get_attribute(WIDGET, "data-error") == "prefill_replicas"
    root.get_by_label("Layout", exact=True).select_option("colocated")
    wait_idle(page)
    want = computed()
    until(page, f"document.querySelector('{WIDGET} .cluster-sentence').textContent === {json.dumps(want['sentence'])}")
    assert page.get_attribute(WIDGET, "data-error") is None
    root.get_by_label("Layout", exact=True).select_option("disaggregated")
    wait_idle(page)
    assert page.locator(f'{WIDGET} .pysim-control[data-field="prefill_replicas"] input[type="number"]').input_value() == "2"
    want = computed(layout="disaggregated")
    until(page, f"document.querySelector('{WIDGET} .cluster-sentence').textContent === {json.dumps(want['sentence'])}")


def test_pin_and_compare(live_page):
    page = opened(live_page, layout="disaggregated")
    root = page.locator(WIDGET)
    clear = root.get_by_role("button", name="Clear pin")
    assert clear.is_disabled()
    root.get_by_role("button", name="Pin this configuration").click()
    root.get_by_label("Layout", exact=True).select_option("colocated")
    wait_idle(page)
    pinned, now = computed(layout="disaggregated"), computed()
    until(page, f"document.querySelectorAll('{WIDGET} .cluster-results thead th').length === 3")
    until(page, f"document.querySelector('{WIDGET} .cluster-sentence').textContent === {json.dumps(now['sentence'])}")
    assert root.locator(".cluster-results thead th").last.inner_text() == "Pinned"
    row = root.locator(".cluster-results tbody tr", has=page.locator("th", has_text="SLO attainment"))
    assert row.locator("td").all_inner_texts() == [pct(now["summary"]["slo_attainment"]), pct(pinned["summary"]["slo_attainment"])]
    assert root.locator(".cluster-card-pin").count() >= 7
    assert "2 prefill + 2 decode" in root.locator(".cluster-pin-note").inner_text()
    # The pinned CDFs are drawn too: the TTFT chart's legend has a "pinned" line.
    assert "pinned" in root.locator(".cluster-chart").first.locator(".u-legend").inner_text()
    clear.click()
    assert root.locator(".cluster-results thead th").count() == 2 and clear.is_disabled()


def test_gpu_sweep_progress_answer_and_cancel(live_page):
    page = opened(live_page)
    root = page.locator(WIDGET)
    run, cancel = root.get_by_role("button", name="Find the fewest GPUs"), root.get_by_role("button", name="Cancel")
    assert cancel.is_disabled()
    # Every progress message, as the page shows them (a sweep on this window is quick).
    page.evaluate(f"""() => {{ const el = document.querySelector('{WIDGET} .cluster-progress');
      window.__progress = []; new MutationObserver(() => window.__progress.push(el.textContent))
        .observe(el, {{ childList: true, characterData: true, subtree: true }}); }}""")
    run.click()
    assert page.evaluate("new Promise(r => requestAnimationFrame(() => r(1)))") == 1  # the page answers meanwhile
    until(page, f"document.querySelector('{WIDGET}').dataset.sweep === 'done'", timeout=180)
    said = page.evaluate("window.__progress")
    assert said[0].startswith("Count 1 of 9: simulating 2 GPUs, both layouts"), said
    assert any(x.startswith("Count 9 of 9: simulating 16 GPUs") for x in said), said
    # pysim's whole sweep (cluster_sweep without gpus), count by count, and its answer: on
    # this one-minute window no count meets the target, so the answer says how close the
    # largest came and what TTFT target would pass there.
    whole = sweep_point(window_minutes=1)
    got = root.locator(".cluster-sweep-table tbody tr th").all_inner_texts()
    assert got == [str(p["gpus"]) for p in whole["points"]]
    answer = root.locator(".cluster-answer").inner_text()
    assert answer.startswith(whole["answer"]["sentence"]), answer
    assert whole["answer"]["colocated"] is None and "a TTFT target of" in answer and "would let 90% pass" in answer
    assert "Swept 9 of 9 counts" in root.locator(".cluster-progress").inner_text()
    # A run stopped once surely short says so in its cell; the largest count ran to the end.
    cells = root.locator(".cluster-sweep-table tbody tr").first.locator("td").all_inner_texts()
    assert all(c.startswith(("misses: at most", "1P + 1D: misses: at most")) for c in cells), cells
    last = root.locator(".cluster-sweep-table tbody tr").last.locator("td").all_inner_texts()
    assert last[0].startswith(pct(whole["points"][-1]["colocated"]["slo_attainment"])), last
    # The table fits its column: its cells wrap instead of widening it.
    assert page.evaluate(f"(() => {{ const t = document.querySelector('{WIDGET} .cluster-sweep-table'); "
                         "return t.scrollWidth <= t.parentElement.clientWidth + 1; })()")
    assert root.locator(".cluster-sweep-chart .u-wrap[role=img]").count() == 1

    # Another sweep, cancelled after its first count: nothing more arrives.
    run.click()
    until(page, f"document.querySelectorAll('{WIDGET} .cluster-sweep-table tbody tr').length >= 1", timeout=60)
    cancel.click()
    until(page, f"document.querySelector('{WIDGET}').dataset.sweep !== 'running'")
    assert "Cancelled after" in root.locator(".cluster-progress").inner_text() or root.get_attribute("data-sweep") == "done"
    assert run.is_enabled() and cancel.is_disabled()
    swept = root.locator(".cluster-sweep-table tbody tr").count()
    page.wait_for_timeout(2500)
    assert root.locator(".cluster-sweep-table tbody tr").count() == swept


def normal_answers(page):
    """tests/browser/test_robustness.py: after random actions, the widget still gives
    pysim's default answer once its controls are set back."""
    from test_robustness import restore_defaults

    restore_defaults(page, "cluster")
    want = pysim_view("cluster", {})
    until(page, f"document.querySelector('{WIDGET} .cluster-sentence').textContent === {json.dumps(want['sentence'])}")
    assert card(page, "Goodput per GPU") == f"{want['summary']['goodput_per_gpu']:.3f}"


def test_readouts_show_a_point_not_dashes_away_from_the_charts(live_page):
    """A reader saw each chart's hover readout full of dashes while the pointer was
    elsewhere: away from a chart, it reads the chart's last point."""
    page = live_page(PAGE)
    page.mouse.move(2, 2)
    values = page.locator(f"{WIDGET} .u-legend .u-value").all_inner_texts()
    assert values and not [v for v in values if v.strip() in ("–", "-", "")], values
