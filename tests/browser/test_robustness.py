"""Nothing a reader does breaks a widget; a dead Python comes back; a failed download
can be retried; the reader's own code cannot reach the page.

1. Every widget is driven by a few hundred seeded random actions inside it: clicks,
   key presses (Tab, Enter, Space, arrows...), slider moves and typed values, in range
   and out of it. Afterwards there is no uncaught error and no console error (the
   fixture checks), and a normal action still gives pysim's own answer.
2. A worker terminated behind the runtime's back is noticed (the next call times out),
   restarted, and the widget works again; a Pyodide whose interpreter broke (a fatal
   error) is replaced the same way.
3. A failed Pyodide download (the test aborts the .wasm request) shows the reason and a
   Retry button, which works once the request is allowed again.
4. The exercise runs the reader's code in the worker only: `js.document` is not there,
   messages it forges to the page are data, and closing the worker only costs a restart.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import random

import pytest
from conftest import page_url, pysim_view, wait_for_python, until, prerendered, widget_pages

from pysim import bridge
from pysim.sims import exercises

# Random actions per widget. The same seeded actions every run, so the count is how much
# of a widget's state space is walked, paid on every `make test` (CONTRIBUTING.md).
ACTIONS = 150
# How long one action waits for its element to be actionable (a box to fill, a list to
# choose from; a click goes to the pointer's place at once, see PICK). One still being
# redrawn is skipped (it is counted as not done); the next action picks again. Waiting
# longer finds no more bugs, it only makes the test slower.
WAIT_MS = 500
PAGES = widget_pages()

# What the reader can operate inside a widget (shown: a box on screen, not hidden).
TARGETS = "button, input, select, textarea, summary, canvas, [tabindex], [role=button]"
# One look at the widget per action, in the page: the visible targets, one picked by
# the number passed in (0 <= f < 1) and marked, what it is, whether the focus is inside
# the widget, and where a pointer at its centre lands (scrolled to, if it was off screen):
# in the widget (on the element, or on what the widget lays over it: uPlot's event layer
# over its canvas, Ace's text over its hidden input), outside it (the page's header), or
# nowhere on screen (an element taller than the window).
# One round trip instead of three keeps the actions short.
PICK = """([root, targets, f]) => {
  const box = document.querySelector(root);
  for (const old of box.querySelectorAll("[data-robot-pick]")) old.removeAttribute("data-robot-pick");
  const shown = [...box.querySelectorAll(targets)].filter((e) => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== "hidden";
  });
  if (!shown.length) return null;
  const e = shown[Math.floor(f * shown.length)];
  e.setAttribute("data-robot-pick", "");
  const centre = () => { const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; };
  let [x, y] = centre();
  if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) {
    e.scrollIntoView({block: "center", inline: "nearest"});  // as a reader scrolls to it
    [x, y] = centre();
  }
  const hit = document.elementFromPoint(x, y);
  return {tag: e.tagName.toLowerCase(), type: (e.type || "").toLowerCase(), min: e.min, max: e.max,
          options: e.options ? e.options.length : 0, disabled: !!e.disabled,
          inside: !!(document.activeElement && document.activeElement.closest(root)),
          x, y, pointer: !hit ? "none" : box.contains(hit) ? "widget" : "outside"};
}"""
KEYS = ["Tab", "Shift+Tab", "Enter", " ", "ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown",
        "Home", "End", "PageUp", "PageDown", "Escape", "Backspace", "Delete", "1", "0", "-"]


def root_of(widget: str) -> str:
    return f'.pysim-widget[data-widget="{widget}"]'


call = pysim_view


# ===================================================================== random actions

def typed_value(rng: random.Random, lo: float, hi: float) -> str:
    return str(rng.choice([lo, hi, rng.randint(int(lo), int(hi)), int(hi) * 10 + 7, -5, 0, 1.5,
                           "", 10**12, rng.randint(int(lo), int(hi)) + 0.25]))


def act_randomly(page, widget: str, rng: random.Random, n: int) -> dict:
    """`n` random actions inside one widget; returns how many of each kind were tried."""
    root = page.locator(root_of(widget))
    done = {"click": 0, "key": 0, "slider": 0, "typed": 0, "select": 0}
    for _ in range(n):
        kind = rng.random()
        info = page.evaluate(PICK, [root_of(widget), TARGETS, rng.random()])
        if info is None:
            break
        el = root.locator("[data-robot-pick]")
        try:
            if kind < 0.25:
                # Keys go to what has focus, kept inside the widget (a link outside could
                # navigate away, which is the reader leaving, not a widget bug).
                if not info["inside"] and not info["disabled"]:
                    el.focus(timeout=WAIT_MS)
                page.keyboard.press(rng.choice(KEYS))
                done["key"] += 1
            elif info["disabled"]:
                continue
            elif info["tag"] == "input" and info["type"] == "range":
                el.evaluate("(e, f) => { const lo = +e.min || 0, hi = +e.max || 100, st = +e.step || 1;"
                            " e.value = lo + Math.round(f * (hi - lo) / st) * st;"
                            " e.dispatchEvent(new Event('input', {bubbles: true}));"
                            " e.dispatchEvent(new Event('change', {bubbles: true})); }",
                            rng.random(), timeout=WAIT_MS)
                done["slider"] += 1
            elif info["tag"] == "input" and info["type"] == "number":
                lo = float(info["min"] or 0)
                hi = float(info["max"] or 1000)
                el.fill(typed_value(rng, lo, hi), timeout=WAIT_MS)
                el.press(rng.choice(["Enter", "Tab"]), timeout=WAIT_MS)
                done["typed"] += 1
            elif info["tag"] == "select" and info["options"]:
                el.select_option(index=rng.randrange(info["options"]), timeout=WAIT_MS)
                done["select"] += 1
            elif info["pointer"] == "outside":
                continue  # the click would land outside the widget: not a widget action
            elif info["pointer"] == "widget":
                # A reader's click at its centre, reaching whatever is drawn on top there.
                page.mouse.click(info["x"], info["y"])
                done["click"] += 1
            else:
                el.click(timeout=WAIT_MS)
                done["click"] += 1
        except Exception as exc:  # not clickable right now (covered, moved, hidden): skip
            if "Timeout" not in type(exc).__name__ and "not attached" not in str(exc) \
                    and "not visible" not in str(exc) and "not an <input>" not in str(exc) \
                    and "Element is not" not in str(exc) and "detached" not in str(exc):
                raise
        if rng.random() < 0.1:
            page.wait_for_timeout(rng.choice([50, 150, 400]))  # let some calls come back
    return done


# ===================================================================== normal actions

def restore_defaults(page, widget: str) -> None:
    """Put every control of `widget` back to its default, as a reader would, and wait
    for pysim's answer: random actions may have left any setting anywhere. Only the
    controls that differ are touched, one after another without waiting (each change
    sends the whole draft, so pysim's last answer is for all of them); a second pass
    reaches controls that a choice in the first one showed (the lab's benchmark
    settings, shown only when its traffic is the benchmark)."""
    root = page.locator(root_of(widget))
    fields = prerendered(root)["fields"]
    data = f"document.querySelector('{root_of(widget)}').dataset"
    idle = f"!{data}.pending && !{data}.busy"  # live.js: no change waiting, none computing
    for _ in range(3):
        touched = 0
        for f in fields:
            control = root.locator(f'.pysim-control[data-field="{f["name"]}"]')
            if not control.count() or not control.is_visible():
                continue  # drawn by the widget itself (presets, data), or shown only for another choice
            if f["kind"] in ("int", "float"):
                box = control.locator('input[type="number"]')
                try:
                    same = float(box.input_value()) == float(f["default"])
                except ValueError:
                    same = False
                if not same:
                    box.fill(str(f["default"]))
                    box.press("Enter")
                    touched += 1
            elif f["kind"] == "bool":
                switch = control.get_by_role("switch")
                if switch.is_checked() != f["default"]:
                    switch.set_checked(f["default"])
                    touched += 1
            elif f["kind"] == "choice" and control.locator("select").count():
                select = control.locator("select")
                if select.input_value() != str(f["default"]):
                    select.select_option(str(f["default"]))
                    touched += 1
        if not touched and root.get_attribute("data-error") is not None:
            # Every control shows its default, but pysim refused the last draft before
            # it did: the reader's Enter in a box sends the draft again.
            box = root.locator('.pysim-control input[type="number"]').first
            box.press("Enter")
            touched += 1
        if not touched:
            break
        until(page, f"{data}.live === 'ready' && {idle}")
    assert root.get_attribute("data-error") is None, root.get_attribute("data-error")

def race_answers(page):
    """Set the race's four controls and read the finished table: pysim's numbers."""
    from test_naive_batching_page import ORDER, table_steps

    root = page.locator(root_of("naive_batching"))
    page.get_by_label("Schedulers to show").select_option("all")
    for name, value in (("num_requests", 60), ("num_gpu_blocks", 160), ("max_num_seqs", 16), ("seed", 3)):
        box = root.locator(f'.pysim-control[data-field="{name}"] input[type="number"]')
        box.fill(str(value))
        box.press("Enter")
    until(page, "document.querySelector('.race-table caption').textContent.includes("
                "'60 requests, pool of 160 blocks (159 usable), at most 16 running (seed 3)')")
    page.emulate_media(reduced_motion="reduce")  # Run jumps to the end
    root.get_by_role("button", name="Pause").click()
    root.get_by_role("button", name="Run").click()
    until(page, "document.querySelectorAll('.race-table tr[data-finished=\"true\"]').length === 3")
    want = call("naive_batching", {"seed": 3})
    assert table_steps(page) == {n: want["schedulers"][n]["steps_to_finish"] for n in ORDER}


def kvcache_answers(page):
    root = page.locator(root_of("paged_kv_cache"))
    restore_defaults(page, "paged_kv_cache")
    reset = root.get_by_role("button", name="Reset", exact=True)
    if reset.is_enabled():  # disabled when there is nothing to undo
        reset.click()
        page.wait_for_function(f"() => !document.querySelector('{root_of('paged_kv_cache')}').dataset.busy")
    for _ in range(2):
        root.get_by_role("button", name="Admit next", exact=True).click()
        until(page, f"!document.querySelector('{root_of('paged_kv_cache')}').dataset.busy")
    answer = json.loads(bridge.call("paged_kv_cache", json.dumps({"config": {}, "actions": ["admit", "admit"]})))
    want = [b["state"] for b in answer["result"]["blocks"]]
    until(page, f"JSON.stringify([...document.querySelectorAll('.kv-block')].map(b => b.dataset.state))"
                f" === {json.dumps(json.dumps(want, separators=(',', ':')))}")


def budget_answers(page):
    from test_chunked_prefill_page import ROOT, choose, expected, expected_summary, run_all, summary

    restore_defaults(page, "chunked_prefill")
    page.locator(ROOT).get_by_label("Pace").select_option("1")
    choose(page, "long_document", 2048)
    run_all(page)
    assert summary(page) == expected_summary(expected("long_document", 2048))


def batch_size_answers(page):
    root = page.locator(root_of("batch_size"))
    root.get_by_label("GPU", exact=True).select_option("H100")
    root.get_by_label("Model", exact=True).select_option("llama-3.1-8b")
    for name in ("FP8 KV cache", "FP8 weights"):
        switch = root.get_by_role("switch", name=name)
        if switch.is_checked():
            switch.uncheck()
    root.get_by_role("button", name="Chatbot").click()
    want = call("batch_size", {})["answer"]
    until(page, f"document.querySelector('.bs-answer').textContent.trim() === {json.dumps(want)}")


def toy_answers(page):
    root = page.locator(root_of("toy_scheduler"))
    restore_defaults(page, "toy_scheduler")
    root.get_by_role("button", name="Run again").click()
    iterations = f"{call('toy_scheduler', {})['results']['iterations']:,}"
    until(page, f"document.querySelector('{root_of('toy_scheduler')} .toy-card[data-metric=\"iterations\"] dd')"
                f".textContent === {json.dumps(iterations)}")
    assert root.locator('.toy-card[data-metric="finished"] dd').inner_text() == "200 of 200"


def exercise_answers(page):
    from test_exercises_page import paste, press

    root = page.locator(root_of("exercises"))
    paste(page, exercises.solution_code())
    press(page, "Check")
    assert root.get_attribute("data-result") == "pass"


def lab_answers(page):
    from test_lab_page import card, computed

    root = page.locator(root_of("lab"))
    root.get_by_role("button", name="Clear the paste").click()
    restore_defaults(page, "lab")
    want = f"{computed()['summary']['request_goodput']:.2f}"
    until(page, f"document.querySelector('{root_of('lab')} .lab-card dd').firstChild.textContent === {json.dumps(want)}")
    assert card(page, "Goodput") == want


NORMAL = {"naive_batching": race_answers, "paged_kv_cache": kvcache_answers, "chunked_prefill": budget_answers,
          "batch_size": batch_size_answers, "toy_scheduler": toy_answers, "exercises": exercise_answers,
          "lab": lab_answers}


def default_answers(page, widget: str):
    """Every widget's check, for one with none of its own: its controls set back to their
    defaults with none refused, and Python in the page answers those settings (under the
    page's own config) as pysim in CPython does."""
    restore_defaults(page, widget)
    model = prerendered(page.locator(root_of(widget)))
    config = {**{f["name"]: f["default"] for f in model["fields"]}, **model["config"]}
    answer = page.evaluate("([name, config, files]) => PySim.runtime.call(name, {config, actions: []}, {files})",
                           [widget, config, model.get("files")])
    assert answer["ok"] and answer["result"] == call(widget, config), widget


def normal_check(widget: str):
    """The check that a normal action in `widget` still gives pysim's own answer: NORMAL's,
    else `normal_answers(page)` in its own page's tests (tests/browser/test_NAME_page.py),
    else default_answers. So a new widget is checked with no line added here."""
    if widget in NORMAL:
        return NORMAL[widget]
    try:
        own = importlib.import_module(f"test_{widget}_page")
    except ModuleNotFoundError as missing:
        if missing.name != f"test_{widget}_page":
            raise
        own = None
    return getattr(own, "normal_answers", None) or functools.partial(default_answers, widget=widget)


@pytest.mark.long
@pytest.mark.parametrize("page_name", sorted(PAGES))
def test_random_actions_break_nothing(live_page, page_name):
    # On the page the other tests share (live_page: its widgets mounted afresh, Python
    # already running), so the actions cost no start of their own; what they leave
    # behind, the next test's remount must clear, which is one more thing checked.
    page = live_page(page_name)
    with dialogs_dismissed(page):
        random_actions(page, page_name)


@contextlib.contextmanager
def dialogs_dismissed(page):
    """Every dialog the page opens in the block dismissed (one would block the page), its
    message kept in the list yielded; the listener goes with the block, the page stays."""
    messages = []

    def seen(dialog):
        messages.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", seen)
    try:
        yield messages
    finally:
        page.remove_listener("dialog", seen)


def random_actions(page, page_name: str):
    rng = random.Random(f"robustness-{page_name}")  # the same actions on every run
    for widget in PAGES[page_name]:
        page.locator(root_of(widget)).scroll_into_view_if_needed()
        done = act_randomly(page, widget, rng, ACTIONS)
        assert sum(done.values()) >= ACTIONS * 0.6, done  # most attempts were real actions
    # The last changes come back: no widget has one waiting or computing (live.js).
    until(page, "[...document.querySelectorAll('.pysim-widget')].every(w => !w.dataset.pending"
                " && [undefined, 'false'].includes(w.dataset.busy))")
    assert page.url.split("#")[0].endswith(f"{page_name}.html"), "a random action left the page"
    for widget in PAGES[page_name]:
        state = page.locator(root_of(widget)).get_attribute("data-runtime")
        assert state in ("ready", "loading"), state
    wait_for_python(page)
    for widget in PAGES[page_name]:
        normal_check(widget)(page)
    # (No console error and no uncaught exception: checked by the fixture.)


# ===================================================================== a dead worker

def test_killed_worker_is_restarted_and_the_widget_recovers(live_page):
    page = live_page("naive-batching")  # the Python the page's tests share: it is the one killed
    assert page.evaluate("!!PySim.runtime.worker")
    # Killed behind the runtime's back: no error event, no message, just silence.
    page.evaluate("PySim.runtime.worker.terminate()")
    outcome = page.evaluate("""PySim.runtime.call('naive_batching', {config: {seed: 3}}, {timeoutMs: 3000})
                               .then(a => 'answered', e => String(e && e.message))""")
    assert outcome == "timeout"  # nobody answered: the runtime gives up on that worker...
    wait_for_python(page, timeout=120000)  # ...and starts a fresh one
    answer = page.evaluate("PySim.runtime.call('naive_batching', {config: {seed: 3}})")
    assert answer["ok"] and answer["result"] == call("naive_batching", {"seed": 3})
    race_answers(page)


def test_broken_interpreter_is_replaced(live_page, watch):
    # Parsing JSON nested 200,000 deep, with the recursion limit lifted, overflows the
    # WebAssembly stack: Pyodide reports a fatal error and answers nothing more. (pysim's
    # bridge refuses such JSON; a reader's program can still do it.) The worker says so
    # and the runtime starts a new Python.
    watch.allow_error("fatal error")
    watch.allow_error("Maximum call stack size exceeded")
    watch.allow_error("Pyodide")
    page = live_page("exercises")
    code = 'import json, sys\nsys.setrecursionlimit(10**7)\njson.loads("[" * 200000 + "]" * 200000)\n'
    answer = run_code(page, code)
    assert answer.get("ok") is False and answer["error"]["message"].startswith("Python failed"), answer
    until(page, "PySim.runtime.state !== 'ready'", timeout=10)  # it is being replaced
    wait_for_python(page, timeout=120000)
    answer = page.evaluate("PySim.runtime.call('naive_batching', {config: {}})")
    assert answer["ok"] and answer["result"] == call("naive_batching", {})
    exercise_answers(page)


# ===================================================================== a failed download

def open_and_fail(page, site_url):
    """Open the race's page (its widget near the screen, so Python starts) and wait until
    Python could not start: the widget's root and its status line."""
    page.goto(page_url(site_url, "naive-batching"))
    root = page.locator(root_of("naive_batching"))
    root.scroll_into_view_if_needed()
    until(page, f"document.querySelector('{root_of('naive_batching')}').dataset.runtime === 'failed'", timeout=120)
    return root, root.locator(".pysim-status-text").inner_text()


def test_failed_download_shows_the_reason_and_retry_works(make_page, site_url, watch):
    watch.allow_error("Failed to load resource")  # the aborted .wasm request
    page = make_page()
    blocked = {"on": True}

    def wasm(route, request):
        if blocked["on"]:
            route.abort("failed")
        else:
            route.fallback()

    page.context.route("**/*.wasm", wasm)
    root, status = open_and_fail(page, site_url)
    assert "could not start" in status and len(status) > len("Python could not start: ")
    retry = root.get_by_role("button", name="Retry")
    assert retry.is_visible()
    # The pre-rendered picture is still there meanwhile.
    assert page.locator('.race-table tr[data-finished="true"]').count() == 3
    blocked["on"] = False
    retry.click()
    wait_for_python(page, timeout=120000)
    assert retry.is_hidden()
    race_answers(page)


def test_a_wheel_other_than_the_lock_names_is_refused(make_page, site_url, watch):
    """The worker fetches the wheel with the lock file's sha256 as the request's
    integrity: other bytes under the same name (a stale cache, a broken proxy) never run;
    the boot fails, saying which file, and Retry works once the right bytes come."""
    watch.allow_error("Failed to load resource")
    watch.allow_error("integrity")  # the browser's own console line for the refused bytes
    page = make_page()
    tampered = {"on": True}

    def wheel(route, request):
        if tampered["on"]:
            body = route.fetch().body()
            route.fulfill(status=200, body=body[:-1] + bytes([body[-1] ^ 1]), content_type="application/octet-stream")
        else:
            route.fallback()

    page.context.route("**/pysim-*.whl", wheel)
    root, status = open_and_fail(page, site_url)
    assert "could not download pysim-" in status and ".whl" in status, status
    tampered["on"] = False
    root.get_by_role("button", name="Retry").click()
    wait_for_python(page, timeout=120000)
    race_answers(page)


# ===================================================================== the reader's code

def run_code(page, code: str, timeout_ms: int = 30000):
    return page.evaluate("""([code, t]) => PySim.runtime.call('exercises', {config: {code}, actions: ['run']},
                                                             {timeoutMs: t})
                            .then(a => a, e => ({rejected: String(e && e.message)}))""", [code, timeout_ms])


def test_readers_code_cannot_reach_the_page(live_page):
    page = live_page("exercises")
    with dialogs_dismissed(page) as dialogs:
        readers_code_stays_in_the_worker(page, dialogs)


def readers_code_stays_in_the_worker(page, dialogs: list):
    title = page.title()
    # The code runs in the worker: there is no document to change.
    answer = run_code(page, "import js\njs.document.title = 'x'\n")
    assert answer["ok"] and "AttributeError" in answer["result"]["error"]
    answer = run_code(page, "import js\nprint(hasattr(js, 'document'), hasattr(js, 'window'))\n"
                            "raise SystemExit\n")
    assert answer["ok"], answer
    assert answer["result"]["output"].strip() == "False False"
    assert page.title() == title
    # Messages it forges to the page (even with the id of a pending call) are data: the
    # widget shows them as text at most, and nothing in them becomes markup or runs.
    forged = json.dumps({"ok": True, "result": {
        "action": "run", "ok": False, "summary": None, "output": "<script>window.__pwned=1</script>",
        "error": '<img src=x onerror="window.__pwned=1">', "run_settings": {}}})
    code = ("import js, json\nfrom pyodide.ffi import to_js\n"
            f"text = {forged!r}\n"
            "for i in range(1, 200):\n"
            "    js.postMessage(to_js({'type': 'result', 'id': i, 'ms': 0, 'text': text},"
            " dict_converter=js.Object.fromEntries))\n")
    root = page.locator(root_of("exercises"))
    page.evaluate("code => document.querySelector('%s').pysimEditor.set(code)" % root_of("exercises"), code)
    root.get_by_role("button", name="Run", exact=True).click()
    until(page, f"document.querySelector('{root_of('exercises')}').dataset.busy === 'false'")
    page.wait_for_timeout(500)
    assert page.evaluate("window.__pwned") is None
    assert root.locator("img").count() == 0
    assert root.locator("script").count() == 0
    assert dialogs == []
    # Closing its own worker stops nothing but that worker: the next call gets no answer,
    # times out (the exercise's limit), and the runtime starts a fresh Python.
    run_code(page, "import js\njs.close()\n")
    answer = run_code(page, "x = 1\n", timeout_ms=exercises.TIME_LIMIT_S * 1000)
    assert answer == {"rejected": "timeout"}
    wait_for_python(page, timeout=120000)
    exercise_answers(page)
