"""The batch-size calculator in a real browser: the pre-rendered answer equals Pyodide's,
presets and precision toggles change what the page says exactly as pysim computes it,
bad input stays beside its control, the link restores the settings, and a phone-sized
dark page neither overflows nor loses its chart."""

from __future__ import annotations

import json

from conftest import page_url, pysim_view, wait_for_python, prerendered

from pysim import bridge

PAGE = "batch-size"
WIDGET = '.pysim-widget[data-widget="batch_size"]'


def computed(**config) -> dict:
    """What pysim in CPython says for these settings."""
    return pysim_view("batch_size", config)


def figure(page, key: str) -> int | None:
    """A key number as the reader sees it, e.g. "396,270" -> 396270 ("none" -> None)."""
    text = page.locator(f'{WIDGET} .bs-figure[data-key="{key}"] .bs-value').inner_text().strip()
    return None if text == "none" else int(text.replace(",", "").split()[0])


def answer_text(page) -> str:
    return page.locator(f"{WIDGET} .bs-answer").inner_text().strip()


def wait_for_answer(page, contains: str):
    page.wait_for_function(
        "(s) => document.querySelector('.bs-answer').textContent.includes(s)", arg=contains)


def open_ready(page, site_url, fragment=""):
    page.goto(page_url(site_url, PAGE, fragment))
    wait_for_python(page)
    page.wait_for_function(
        "() => { const w = document.querySelector('.pysim-widget[data-widget=\"batch_size\"]');"
        " return w.dataset.live && w.dataset.live !== 'pending'; }")


def test_prerendered_answer_is_drawn_before_python(page, site_url):
    # (That this model is what Pyodide computes: test_widget_pages.py.)
    expected = computed()
    page.goto(page_url(site_url, PAGE))
    # The answer is on the page from the embedded model before any Python runs.
    page.wait_for_selector(f"{WIDGET} .bs-answer")
    assert answer_text(page) == expected["answer"]
    assert figure(page, "recommended") == expected["recommended_max_num_seqs"]
    assert page.locator(f"{WIDGET} .bs-table tbody tr").count() == len(expected["curve"])
    model = prerendered(page.locator(WIDGET))
    assert model["view"] == expected
    # Everything is labelled as an ideal ceiling.
    assert expected["note"] in page.locator(f"{WIDGET} .bs-note").inner_text()
    assert "Ideal" in answer_text(page)


def test_coding_agent_preset_gives_a_smaller_batch(live_page):
    page = live_page(PAGE)
    default = computed()
    chatbot = page.get_by_role("button", name="Chatbot")
    agent = page.get_by_role("button", name="Coding agent")
    assert chatbot.get_attribute("aria-pressed") == "true"
    chat_batch = figure(page, "recommended")
    assert chat_batch == default["recommended_max_num_seqs"]

    agent.click()
    preset = default["presets"]["coding_agent"]
    expected = computed(context_tokens=preset["context_tokens"], target_tok_s=preset["target_tok_s"])
    wait_for_answer(page, f"{preset['context_tokens']:,} tokens of context")
    assert answer_text(page) == expected["answer"]
    agent_batch = figure(page, "recommended")
    assert agent_batch == expected["recommended_max_num_seqs"]
    assert agent_batch < chat_batch
    assert agent.get_attribute("aria-pressed") == "true"
    assert chatbot.get_attribute("aria-pressed") == "false"
    box = page.locator('.pysim-control[data-field="context_tokens"] input[type="number"]')
    assert box.input_value() == str(preset["context_tokens"])

    chatbot.click()
    wait_for_answer(page, "2,048 tokens of context")
    assert figure(page, "recommended") == chat_batch
    # The page's "Try this" names the contexts the presets really use.
    prose = page.locator("article").inner_text()
    for key in ("chatbot", "coding_agent"):
        assert f"{default['presets'][key]['context_tokens']:,}" in prose


def test_fp8_kv_cache_doubles_the_pool(live_page):
    page = live_page(PAGE)
    tokens_before = figure(page, "kv_pool_tokens")
    batch_before = figure(page, "max_batch_memory")
    # The default: H100, Llama 3.1 8B, 2,048 tokens, 16-bit, vLLM 0.34.0's pool (worked out
    # by hand in tests/unit/test_batch_size.py).
    assert batch_before == computed()["max_batch_memory"] == 251

    page.get_by_role("switch", name="FP8 KV cache").check()
    wait_for_answer(page, "FP8 KV cache")
    tokens_after = figure(page, "kv_pool_tokens")
    assert abs(tokens_after - 2 * tokens_before) <= 1
    assert figure(page, "max_batch_memory") == 2 * batch_before == 502
    expected = computed(kv_fp8=True)
    assert tokens_after == expected["kv_pool_tokens"]
    assert answer_text(page) == expected["answer"]
    page.wait_for_function("location.hash.includes('batch_size.kv_fp8=true')")


def test_bad_context_shows_beside_its_control_and_keeps_the_answer(live_page):
    page = live_page(PAGE)
    before = answer_text(page)
    box = page.locator('.pysim-control[data-field="context_tokens"] input[type="number"]')
    box.fill("50")
    box.press("Enter")
    error = page.locator('.pysim-control[data-field="context_tokens"] .pysim-error')
    error.wait_for(state="visible")
    message = error.inner_text()
    assert "Context" in message and "50" in message and "128" in message, message
    assert page.evaluate(f"document.querySelector('{WIDGET}').dataset.error") == "context_tokens"
    assert answer_text(page) == before  # the last good answer stays
    assert figure(page, "recommended") == computed()["recommended_max_num_seqs"] == 251
    # A good value clears the message and recomputes.
    box.fill("4096")
    box.press("Enter")
    error.wait_for(state="hidden")
    wait_for_answer(page, "4,096 tokens of context")
    assert answer_text(page) == computed(context_tokens=4096)["answer"]


def test_context_slider_works_from_the_keyboard(live_page):
    page = live_page(PAGE)
    slider = page.locator('.pysim-control[data-field="context_tokens"] input[type="range"]')
    slider.focus()
    page.keyboard.press("ArrowRight")  # the next step of the log scale: 2,048 x 1.25
    wait_for_answer(page, "2,560 tokens of context")
    assert figure(page, "recommended") == computed(context_tokens=2560)["recommended_max_num_seqs"]
    assert slider.get_attribute("aria-valuetext") == "2,560 tokens"


def test_state_lives_in_the_url_hash(live_page):
    page = live_page(PAGE)
    page.get_by_label("GPU", exact=True).select_option("H200")
    wait_for_answer(page, "H200")
    page.get_by_role("switch", name="FP8 weights").check()
    wait_for_answer(page, "FP8 weights")
    box = page.locator('.pysim-control[data-field="context_tokens"] input[type="number"]')
    box.fill("8192")
    box.press("Enter")
    wait_for_answer(page, "8,192 tokens")
    page.wait_for_function("location.hash.includes('batch_size.context_tokens=8192')")
    url = page.url
    for part in ("batch_size.gpu=H200", "batch_size.weights_fp8=true", "batch_size.kv_fp8=false",
                 "batch_size.model=llama-3.1-8b", "batch_size.target_tok_s=30"):
        assert part in url

    page.goto("about:blank")
    page.goto(url)
    wait_for_python(page)
    expected = computed(gpu="H200", weights_fp8=True, context_tokens=8192)
    page.wait_for_function("(s) => document.querySelector('.bs-answer').textContent === s",
                           arg=expected["answer"])
    assert page.get_by_label("GPU", exact=True).input_value() == "H200"
    assert page.get_by_role("switch", name="FP8 weights").is_checked()
    assert not page.get_by_role("switch", name="FP8 KV cache").is_checked()
    assert box.input_value() == "8192"
    assert figure(page, "recommended") == expected["recommended_max_num_seqs"]


def refusal(config: dict) -> dict:
    """What pysim in CPython says about a config it refuses."""
    answer = json.loads(bridge.call("batch_size", json.dumps({"config": config})))
    assert not answer["ok"], answer
    return answer["error"]


def test_crafted_hash_is_data_not_markup(page, site_url):
    # The link's values go to pysim as they are (text, or JSON where they read as JSON);
    # pysim refuses the first thing wrong with them, and the widget shows pysim's own
    # message and keeps the default picture. Unknown keys are checked before values, so
    # here pysim names "evil".
    page.goto(page_url(site_url, PAGE, "#batch_size.gpu=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"
                       "&batch_size.context_tokens=50&batch_size.kv_fp8=yes&batch_size.evil=1"))
    wait_for_python(page)
    refused = refusal({"gpu": "<img src=x onerror=alert(1)>", "context_tokens": 50, "kv_fp8": "yes", "evil": 1})
    assert refused["field"] == "evil"
    message = page.locator(f"{WIDGET} .pysim-hash-message")
    message.wait_for(state="visible")
    text = message.inner_text()
    assert text.startswith("Ignored the link"), text
    assert text.endswith(f"evil: {refused['message']}"), text
    assert page.locator(f"{WIDGET} img").count() == 0
    assert answer_text(page) == computed()["answer"]
    # The controls show what the picture shows: the defaults.
    assert page.get_by_label("GPU", exact=True).input_value() == "H100"


def test_a_bad_value_in_the_link_is_named_by_its_label(page, site_url):
    # Without the unknown key, pysim names the first bad value (fields in their order:
    # gpu first), and the widget calls the field by the label pysim gives it.
    page.goto(page_url(site_url, PAGE, "#batch_size.gpu=%3Cimg%20src%3Dx%3E&batch_size.kv_fp8=yes"))
    wait_for_python(page)
    refused = refusal({"gpu": "<img src=x>", "kv_fp8": "yes"})
    assert refused["field"] == "gpu"
    message = page.locator(f"{WIDGET} .pysim-hash-message")
    message.wait_for(state="visible")
    assert message.inner_text().endswith(f"GPU: {refused['message']}")
    assert "<img src=x>" in refused["message"]  # shown as text...
    assert page.locator(f"{WIDGET} img").count() == 0  # ...never as markup
    assert answer_text(page) == computed()["answer"]


def test_every_control_shows_pysims_help(live_page):
    # Labels, units and help come from pysim's describe: the page shows each help text.
    page = live_page(PAGE)
    fields = prerendered(page.locator(WIDGET))["fields"]
    for f in fields:
        control = page.locator(f'{WIDGET} .pysim-control[data-field="{f["name"]}"]')
        assert control.locator(".pysim-help").inner_text() == f["help"]
        assert control.locator(".pysim-help").is_visible()
    slider = page.locator('.pysim-control[data-field="context_tokens"] input[type="range"]')
    assert slider.get_attribute("aria-valuetext") == "2,048 tokens"


def test_a_model_that_does_not_fit_says_why_and_keeps_the_chart(live_page):
    page = live_page(PAGE)
    page.get_by_label("Model", exact=True).select_option("llama-3.1-70b")
    expected = computed(model="llama-3.1-70b")
    assert expected["reason"] == "weights_do_not_fit"
    wait_for_answer(page, "no --max-num-seqs works")
    reason = page.locator(f"{WIDGET} .bs-reason")
    assert reason.is_visible()
    assert expected["reason_text"] in reason.inner_text()
    # ...said once (issue 16: "the weights alone take 141.2 GB" appeared twice).
    seen = page.locator(WIDGET).evaluate("(w, s) => w.innerText.split(s).length - 1", expected["reason_text"])
    assert seen == 1, seen
    assert figure(page, "recommended") is None
    assert page.locator(f"{WIDGET} .bs-chart canvas").first.is_visible()
    assert page.locator(f"{WIDGET} .bs-table tbody tr").count() == len(expected["curve"])
    assert page.locator(f"{WIDGET} .bs-table tbody tr[data-batch='1'] td").nth(4).inner_text() == "no"


def test_narrow_dark_page_does_not_overflow(make_page, site_url):
    page = make_page(width=375, color_scheme="dark")
    open_ready(page, site_url)
    assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    canvas = page.locator(f"{WIDGET} .bs-chart canvas").first
    assert canvas.is_visible()
    box = canvas.bounding_box()
    assert box["width"] >= 200 and box["x"] >= 0 and box["x"] + box["width"] <= 375
    # The chart's axis text is drawn in the dark theme's text colour, not black.
    text_color = page.evaluate(
        f"getComputedStyle(document.querySelector('{WIDGET}')).getPropertyValue('--pysim-text').trim()")
    assert text_color.lower() not in ("#222", "#000", "black")
    # Switching to light re-creates the chart with the light palette.
    old = page.locator(f"{WIDGET} .bs-chart .uplot").element_handle()
    page.evaluate("document.body.setAttribute('data-md-color-scheme', 'default')")
    page.wait_for_function("(el) => !el.isConnected", arg=old)
    assert page.locator(f"{WIDGET} .bs-chart canvas").first.is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375


# Columns of the chart's canvas that hold a vertical run of a colour (a line across the
# plot): {column x: pixels of that colour}, for the memory limit's red and the
# recommendation's green, read from the custom properties the chart draws with.
LINE_COLUMNS = """() => {
  const root = document.querySelector('.pysim-widget[data-widget="batch_size"]');
  const canvas = root.querySelector('.bs-chart canvas');
  const ctx = canvas.getContext('2d');
  const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  const rgb = (name) => { const hex = getComputedStyle(root).getPropertyValue(name).trim();
    return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)); };
  const out = {};
  for (const [key, want] of [['memory', rgb('--bs-memory')], ['rec', rgb('--bs-rec')]]) {
    out[key] = {};
    for (let x = 0; x < canvas.width; x++) {
      let n = 0;
      for (let y = 0; y < canvas.height; y++) {
        const i = (y * canvas.width + x) * 4;
        if (want.every((v, k) => Math.abs(data[i + k] - v) < 40)) n++;
      }
      if (n > canvas.height / 5) out[key][x] = n;
    }
  }
  return out;
}"""


def test_memory_limit_and_recommendation_both_show_where_they_meet(live_page):
    """Issue 16: by default both lines stand at one batch (251) and the memory limit hid under
    the recommendation. Its dashes are drawn over the green line, each has its own label,
    and the legend names both values."""
    view = computed()
    assert view["recommended_max_num_seqs"] == view["max_batch_memory"]  # the case in question
    n = f"{view['max_batch_memory']:,}"
    page = live_page(PAGE)
    legend = page.locator(f"{WIDGET} .bs-legend")
    assert legend.locator('[data-key="rec"]').inner_text().endswith(f"recommended --max-num-seqs: {n}")
    assert f"memory limit (dashed, over the recommendation where they meet): {n} (the same batch)" in \
        legend.locator('[data-key="memory"]').inner_text()
    columns = page.evaluate(LINE_COLUMNS)
    memory, rec = set(map(int, columns["memory"])), set(map(int, columns["rec"]))
    assert memory and rec, columns  # a reader sees a red line and a green line ...
    assert min(abs(a - b) for a in memory for b in rec) <= 2  # ... at the same batch


def test_the_table_fits_at_128_tokens_and_1_tok_s(live_page):
    """Issue 16: at 128 tokens and 1 tok/s the table was cut at "Meets targe...". Typed as a
    reader would, the table fits the column and every heading is inside it."""
    page = live_page(PAGE)
    box = lambda field: page.locator(f'.pysim-control[data-field="{field}"] input[type="number"]')
    # The reader typed 128 and pressed Enter, and is typing 1 in the next box when the
    # answer to 128 arrives. That answer once put 30 back in the box being typed in, so
    # the Enter that followed sent 30. Here the answer is made to land mid-typing every
    # time: the 128 is committed by its change event while the focus stays on the 1.
    box("target_tok_s").fill("1")
    box("context_tokens").evaluate("b => { b.value = '128'; b.dispatchEvent(new Event('change')); }")
    wait_for_answer(page, "128 tokens of context")
    assert box("target_tok_s").input_value() == "1"  # the answer left the typed value alone
    box("target_tok_s").press("Enter")
    rows = len(computed(context_tokens=128, target_tok_s=1)["curve"])
    page.wait_for_function(f"() => !document.querySelector('{WIDGET}').dataset.busy && "
                           f"document.querySelectorAll('{WIDGET} .bs-table tbody tr').length === {rows}")
    wrap = page.locator(f"{WIDGET} .bs-table-wrap")
    box = wrap.bounding_box()
    heads = page.locator(f"{WIDGET} .bs-table thead th").all()
    assert heads[-1].inner_text() == "Meets target"
    for th in heads:
        b = th.bounding_box()
        assert b["x"] + b["width"] <= box["x"] + box["width"] + 0.5, (th.inner_text(), b, box)
    assert wrap.evaluate("w => w.scrollWidth <= w.clientWidth")
    # Where it must scroll (a phone), it scrolls in a region a keyboard reaches.
    assert wrap.get_attribute("tabindex") == "0" and "scrolls sideways" in wrap.get_attribute("aria-label")


def test_no_figure_tile_stands_alone_on_its_row(live_page, make_page, site_url):
    """A reader saw the ninth tile alone on a row of four: three a row now (two on a
    phone), and a last tile that would stand alone takes the whole row."""
    def rows(page):
        boxes = [t.bounding_box() for t in page.locator(f"{WIDGET} .bs-figure").all()]
        out = {}
        for b in boxes:
            out.setdefault(round(b["y"]), []).append(b)
        return list(out.values()), page.locator(f"{WIDGET} .bs-figures").bounding_box()
    for page in (live_page(PAGE), make_page(width=375)):
        if page.url == "about:blank":
            page.goto(page_url(site_url, PAGE))
        found, grid = rows(page)
        for row in found:
            assert len(row) > 1 or row[0]["width"] > grid["width"] - 2, (len(found), row)
