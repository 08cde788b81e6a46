"""The serving lab in a real browser, doing what a reader does: the default run is on
the page before Python starts and equals Pyodide's; the trace is downloaded only when
the lab is used; picking a trace and setting SLOs gives pysim's numbers; the capacity
sweep shows its progress, can be cancelled and ends with pysim's capacity; a pinned
configuration is compared with a new one; a real published `vllm bench serve` summary,
pasted, is replayed beside its measurement, and broken text gets a message naming its
line while nothing else changes; benchmark traffic prints vLLM's own summary block."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from conftest import page_url, pysim_view, until, wait_for_python

from pysim import bridge

PAGE = "lab"
WIDGET = '.pysim-widget[data-widget="lab"]'


def computed(**config) -> dict:
    return pysim_view("lab", config)


def bench_sample() -> str:
    """The summary the unit tests parse (tests/unit/test_lab_bench.py, SAMPLE)."""
    path = Path(__file__).parents[1] / "unit" / "test_lab_bench.py"
    spec = importlib.util.spec_from_file_location("lab_bench_sample", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SAMPLE


def card(page, label: str) -> str:
    """A headline figure as the reader sees it (its first line: a pin adds a second)."""
    cell = page.locator(f"{WIDGET} .lab-card", has=page.locator("dt", has_text=label)).first
    return cell.locator("dd").evaluate("dd => dd.firstChild.textContent")


def wait_idle(page):
    """Until no change waits out its debounce and nothing computes (live.js's signals)."""
    page.wait_for_function(f"() => {{ const d = document.querySelector('{WIDGET}').dataset; return !d.pending && !d.busy; }}")


def open_ready(page, site_url, fragment=""):
    page.goto(page_url(site_url, PAGE, fragment))
    wait_for_python(page)
    page.wait_for_function(
        f"() => {{ const w = document.querySelector('{WIDGET}'); return w.dataset.live && w.dataset.live !== 'pending'; }}",
        timeout=60000)


def test_default_run_is_prerendered_and_the_traces_come_with_python(page, site_url):
    want = computed()
    asked = []  # requests in the order they were made, and when Python said it was ready
    page.on("request", lambda r: asked.append(r.url))
    page.expose_function("pysimReadyForTest", lambda: asked.append("ready"))
    page.add_init_script("new MutationObserver(() => { const w = document.querySelector('.pysim-widget');"
                         " if (w && w.dataset.runtime === 'ready' && !window.toldReady) {"
                         " window.toldReady = true; window.pysimReadyForTest(); } })"
                         ".observe(document, {subtree: true, childList: true, attributes: true});")
    page.goto(page_url(site_url, PAGE))
    # Before Python: the cards already hold pysim's numbers.
    assert card(page, "Goodput") == f"{want['summary']['request_goodput']:.2f}"
    assert card(page, "Preemptions") == f"{want['summary']['num_preemptions']:,}"
    wait_for_python(page)
    page.wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.live === 'ready'", timeout=60000)
    # (That the cards' model is what Pyodide computes: test_widget_pages.py.)
    # The traces come with Python's boot, not before it (a reader who never reaches a
    # widget downloads neither), and not after it (they download while Python starts).
    first = lambda pred: next((i for i, u in enumerate(asked) if pred(u)), None)
    trace = first(lambda u: "/assets/data/conv." in u)
    assert trace is not None, "the lab computed without its trace"
    assert first(lambda u: "/assets/pyodide/" in u) < trace < asked.index("ready"), asked
    # Every chart is a picture with words, and the numbers are also a table.
    labels = page.locator(f"{WIDGET} .u-wrap[role=img]").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    assert len(labels) == 5 and all(labels)
    assert "p90" in labels[0] and "target" in labels[0].lower()
    rows = page.locator(f"{WIDGET} .lab-results tbody tr").count()
    assert rows >= 15


def test_trace_and_slo_targets_give_pysims_numbers(live_page):
    page = live_page(PAGE)
    root = page.locator(WIDGET)
    root.get_by_label("Trace", exact=True).select_option("code")
    wait_idle(page)
    box = root.locator('.pysim-control[data-field="slo_ttft_ms"] input[type="number"]')
    box.fill("200")
    box.press("Enter")
    wait_idle(page)
    want = computed(trace="code", slo_ttft_ms=200)
    until(page, f"document.querySelector('{WIDGET} .lab-traffic').textContent.startsWith('{want['traffic']['num_requests']:,} requests of the coding service: 5 min of the trace')")
    assert card(page, "SLO attainment") == f"{want['summary']['slo_attainment'] * 100:.1f}%"
    assert card(page, "Goodput") == f"{want['summary']['request_goodput']:.2f}"
    assert card(page, "TTFT p90") == ms(want["ttft_ms"]["p90"])
    assert "trace=code" in page.url and "slo_ttft_ms=200" in page.url


def ms(x: float) -> str:
    """lab.charts.js's `ms`."""
    if x >= 10000:
        return f"{round(x / 100) / 10:,g} s"
    if x >= 100:
        return f"{round(x):,} ms"
    return f"{x:.1f} ms" if x >= 10 else f"{x:.2f} ms"


def test_out_of_range_setting_names_its_bounds_and_keeps_the_run(live_page):
    page = live_page(PAGE)
    before = card(page, "Goodput")
    box = page.locator(f'{WIDGET} .pysim-control[data-field="window_minutes"] input[type="number"]')
    box.fill("20")
    box.press("Enter")
    wait_idle(page)
    error = page.locator(f'{WIDGET} .pysim-control[data-field="window_minutes"] .pysim-error').inner_text()
    assert "Window" in error and "1" in error and "10" in error, error
    assert card(page, "Goodput") == before


def test_capacity_sweep_progress_cancel_and_answer(live_page):
    page = live_page(PAGE)
    root = page.locator(WIDGET)
    run, cancel = root.get_by_role("button", name="Run the capacity sweep"), root.get_by_role("button", name="Cancel")
    assert cancel.is_disabled()
    run.click()
    until(page, f"document.querySelector('{WIDGET} .lab-progress').textContent.includes('of 8')")
    assert root.get_attribute("data-sweep") == "running" and run.is_disabled()
    # The page answers while the worker sweeps.
    assert page.evaluate("new Promise(r => requestAnimationFrame(() => r(1)))") == 1
    until(page, f"document.querySelectorAll('{WIDGET} .lab-sweep-table tbody tr').length >= 1", timeout=60)
    cancel.click()
    until(page, f"document.querySelector('{WIDGET}').dataset.sweep === 'partial'")
    assert "Cancelled after" in root.locator(".lab-progress").inner_text()
    assert run.is_enabled() and cancel.is_disabled()
    swept = root.locator(".lab-sweep-table tbody tr").count()
    page.wait_for_timeout(3000)  # nothing more arrives after Cancel
    assert root.locator(".lab-sweep-table tbody tr").count() == swept

    run.click()
    until(page, f"document.querySelector('{WIDGET}').dataset.sweep === 'done'", timeout=120)
    want = pysim_view("lab_sweep", {})
    got = root.locator(".lab-sweep-table tbody tr td:nth-child(2)").all_inner_texts()
    assert got == [f"{p['slo_attainment'] * 100:.1f}%" for p in want["points"]]
    c = want["capacity"]
    text = root.locator(".lab-capacity").inner_text()
    assert f"x{c['rate_scale']:.2f}" in text and f"needs {c['replicas']} " in text, text
    assert root.locator(".lab-sweep-chart .u-wrap[role=img]").count() == 1


def test_pin_and_compare(live_page):
    page = live_page(PAGE)
    root = page.locator(WIDGET)
    clear = root.get_by_role("button", name="Clear pin")
    assert clear.is_disabled()
    root.get_by_role("button", name="Pin this configuration").click()
    box = root.locator('.pysim-control[data-field="max_num_batched_tokens"] input[type="number"]')
    box.fill("2048")
    box.press("Enter")
    wait_idle(page)
    base, small = computed(), computed(max_num_batched_tokens=2048)
    until(page, f"document.querySelectorAll('{WIDGET} .lab-results thead th').length === 3")
    row = root.locator(".lab-results tbody tr", has=page.locator("th", has_text="TPOT p99"))
    assert row.locator("td").all_inner_texts() == [ms(small["tpot_ms"]["p99"]), ms(base["tpot_ms"]["p99"])]
    assert root.locator(".lab-card-pin").count() >= 7
    assert "max_num_batched_tokens 8,192" in root.locator(".lab-pin-note").inner_text()
    clear.click()
    assert root.locator(".lab-results thead th").count() == 2 and clear.is_disabled()


def ms_text(x: float) -> str:
    """A time as the lab prints it (widgets/lab.charts.js, `ms`)."""
    if x >= 10_000:
        return f"{round(x / 100) / 10:,g} s"
    return f"{round(x):,} ms" if x >= 100 else f"{x:.1f} ms" if x >= 10 else f"{x:.2f} ms"


def real_record(record_id: str) -> str:
    """A published run's printed summary, as its author pasted it (data/realbench/)."""
    path = Path(__file__).parents[2] / "data" / "realbench" / "records.jsonl"
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["id"] == record_id:
            return record["summary_text"]
    raise KeyError(record_id)


def test_pasted_real_run_is_replayed_beside_its_measurement_and_broken_text_named(live_page):
    page = live_page(PAGE)
    root = page.locator(WIDGET)
    # Llama 3.1 8B on one H100 (the lab's default machine), 640 requests at concurrency 64,
    # from vLLM issue #24684.
    text = real_record("vllm-issue24684-llama31-8b-h100-c64")
    area = root.get_by_label("vllm bench serve output")
    area.fill(text)
    root.get_by_role("button", name="Fit to these runs").click()
    until(page, f"document.querySelector('{WIDGET} .lab-fit').textContent.startsWith('Fitted to your run')", timeout=60)
    want = computed(bench_text=text)
    run = want["calibration"]["runs"][0]
    tables = root.locator(".lab-fit-table")
    assert tables.count() == 1  # one table per pasted run
    assert "--max-concurrency 64" in tables.first.locator("caption").inner_text()
    # Measured as the author printed it, replayed as pysim computes it, side by side.
    mean_ttft = tables.first.locator("tbody tr", has=page.locator("th", has_text="Mean TTFT"))
    cells = mean_ttft.locator("td").all_inner_texts()
    assert cells[0] == "579 ms" and cells[1] == ms_text(run["replayed"]["mean_ttft_ms"]), cells
    assert tables.first.locator("tbody tr").count() == len(run["measured"])
    assert f"memory efficiency {want['calibration']['coefficients']['memory_efficiency']:.2f}" in root.locator(".lab-fit").inner_text()
    assert card(page, "Goodput") == f"{want['summary']['request_goodput']:.2f}"
    assert "bench_text" not in page.url  # a paste is never put in the link

    fitted = card(page, "TPOT p90")
    broken = text.replace("Mean TPOT (ms):", "Mean TPOT (ms): lots", 1)
    area.fill(broken)
    root.get_by_role("button", name="Fit to these runs").click()
    wait_idle(page)
    message = root.locator(".lab-bench + .pysim-error").text_content()
    answer = json.loads(bridge.call("lab", json.dumps({"config": {"bench_text": broken}})))
    assert not answer["ok"] and answer["error"]["message"] in message and "line" in message, message
    assert card(page, "TPOT p90") == fitted  # nothing else changed
    root.get_by_role("button", name="Clear the paste").click()
    until(page, f"document.querySelector('{WIDGET} .lab-fit').textContent.startsWith('Nothing pasted')")
    assert card(page, "Goodput") == f"{computed()['summary']['request_goodput']:.2f}"


def test_benchmark_traffic_prints_what_vllm_bench_serve_would(live_page):
    page = live_page(PAGE)
    root = page.locator(WIDGET)
    root.get_by_label("Traffic", exact=True).select_option("benchmark")
    until(page, f"!document.querySelector('{WIDGET} .lab-printed').closest('details').hidden", timeout=60)
    wait_idle(page)
    want = computed(traffic="benchmark")
    assert root.locator(".lab-printed").text_content() == want["bench_summary"]["text"]
    assert root.locator(".lab-traffic").inner_text() == want["traffic"]["sentence"]
    # Only the benchmark's settings show now, under vLLM's flag names.
    assert root.get_by_label("random_input_len", exact=True).first.is_visible()
    assert not root.get_by_label("Window start", exact=True).first.is_visible()


def test_phone_dark_fits_the_screen(make_page, site_url):
    page = make_page(width=375, height=800, color_scheme="dark")
    open_ready(page, site_url)
    wide = page.evaluate(f"""() => [...document.querySelectorAll('{WIDGET} *')]
        .filter(e => !e.closest('.lab-scroll') && e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
        .map(e => e.className || e.tagName).slice(0, 5)""")
    assert wide == [], wide
    assert page.locator(f"{WIDGET} .u-wrap[role=img]").count() == 5


def test_a_link_made_before_the_fitted_clock_still_opens(page, site_url):
    # Links made before issue 34 hold lab.efficiency: it is left out, with a note that
    # says why, and the rest of the link (the rate scale) is applied.
    open_ready(page, site_url, "#lab.efficiency=0.45&lab.rate_scale=2")
    until(page, f"document.querySelector('{WIDGET} .pysim-hash-message').textContent.includes('efficiency')")
    wait_idle(page)
    assert card(page, "Goodput") == f"{computed(rate_scale=2)['summary']['request_goodput']:.2f}"
    assert "fitted to published runs" in page.locator(f"{WIDGET} .pysim-hash-message").text_content()


def test_control_groups_hold_no_empty_boxes(live_page):
    """A reader saw empty areas in the control fieldsets: a grid row took its tallest
    group's height. Each group is now as tall as its controls (a little padding)."""
    page = live_page(PAGE)
    for group in page.locator(f"{WIDGET} .lab-group").all():
        if not group.is_visible():  # the other traffic's group
            continue
        inner = group.evaluate("g => Math.max(...[...g.querySelectorAll('.pysim-control')].map((c) => c.getBoundingClientRect().bottom))")
        assert group.bounding_box()["y"] + group.bounding_box()["height"] - inner < 30, group.locator("legend").inner_text()
    values = page.locator(f"{WIDGET} .u-legend .u-value").all_inner_texts()
    assert values and not [v for v in values if v.strip() in ("–", "-", "")], values


def test_the_settings_as_commands_shown_and_copyable(live_page):
    page = live_page(PAGE)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    root = page.locator(WIDGET)
    want = computed()["commands"]
    shown = root.locator("pre.lab-command").all_text_contents()
    assert want["serve"] in shown and want["bench"] in shown
    assert want["serve"].startswith("vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 1024")
    root.get_by_role("button", name="Copy vllm serve").click()
    until(page, f"document.querySelector('{WIDGET} .lab-copied').textContent !== ''")
    said = root.locator(".lab-copied").inner_text()
    assert said in ("Copied the vllm serve command.",
                    "The browser refused the clipboard: select the vllm serve command and copy it."), said
    if said.startswith("Copied"):
        assert page.evaluate("navigator.clipboard.readText()") == want["serve"]
    # What the command cannot say about a trace window is listed under it.
    assert root.locator(".lab-cannot li").count() == len(want["cannot"])


def test_the_published_run_fills_the_box_and_fits(live_page):
    page = live_page(PAGE)
    root = page.locator(WIDGET)
    sample = computed()["sample_bench"]
    assert "vLLM issue" in root.locator(".lab-sample-note").inner_text() or "issue #24684" in root.locator(".lab-sample-note").inner_text()
    root.get_by_role("button", name="Paste a published run").click()
    assert root.get_by_label("vllm bench serve output").input_value() == sample["text"]
    until(page, f"document.querySelector('{WIDGET} .lab-fit').textContent.startsWith('Fitted to your run')", timeout=60)
    root.get_by_role("button", name="Clear the paste").click()
    until(page, f"document.querySelector('{WIDGET} .lab-fit').textContent.startsWith('Nothing pasted')")


def detailed_result() -> str:
    """tests/unit/test_lab_commands.py's hand-made --save-detailed result."""
    path = Path(__file__).resolve().parents[1] / "unit" / "test_lab_commands.py"
    spec = importlib.util.spec_from_file_location("lab_commands_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return json.dumps(module.detailed())


def test_a_detailed_paste_is_compared_request_by_request(live_page):
    page = live_page(PAGE)
    root = page.locator(WIDGET)
    text = detailed_result()
    root.get_by_label("vllm bench serve output").fill(text)
    root.get_by_role("button", name="Fit to these runs").click()
    until(page, f"document.querySelector('{WIDGET} .lab-per-request') !== null", timeout=60)
    want = computed(bench_text=text)["calibration"]["runs"][0]["per_request"]
    block = root.locator(".lab-per-request")
    assert block.locator("p").first.inner_text() == want["sentence"]
    # Two charts (TTFT and TPOT, measured against replayed), and their table alternative.
    assert block.locator(".u-wrap[role=img]").count() == 2
    dist = block.locator(".lab-per-request-dist tbody tr", has=page.locator("th", has_text="Median"))
    assert dist.locator("td").first.inner_text() == ms_text(want["ttft_ms"]["measured"]["p50"])
    misses = block.locator(".lab-misses").first.locator("tbody tr")
    assert misses.count() == len(want["largest_ttft_misses"]) == 3
    assert misses.first.locator("th").inner_text() == f"#{want['largest_ttft_misses'][0]['index']}"
    root.get_by_role("button", name="Clear the paste").click()
    until(page, f"document.querySelector('{WIDGET} .lab-fit').textContent.startsWith('Nothing pasted')")
