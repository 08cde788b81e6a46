"""Exercise 5's editor in a real browser: the reader's code runs in the Python worker,
Check says "all checks pass" for a correct solution and names the first differing step
for a wrong one, and an endless loop is stopped, Python restarted, the page still usable."""

from __future__ import annotations

import time

from conftest import page_url, until

from pysim.sims import exercises

PAGE = "exercises"
ROOT = ".pysim-widget[data-widget='exercises']"


def wait_for_python(page):
    """Python starts when the widget comes near the screen: bring it there, then wait."""
    page.locator(ROOT).scroll_into_view_if_needed()
    until(page, f"['ready', 'failed'].includes(document.querySelector(\"{ROOT}\").dataset.runtime)")
    assert page.locator(ROOT).get_attribute("data-runtime") == "ready"


def prefill_before_decodes() -> str:
    code = exercises.solution_code()
    cls = code.index("class ChunkedScheduler")
    a = code.index("        # 1. Decodes first", cls)
    b = code.index("        # 2. Running requests", cls)
    c = code.index("        return batch, preempted", b)
    return code[:a] + code[b:c] + code[a:b] + code[c:]


def paste(page, code):
    page.evaluate("code => document.querySelector(\"" + ROOT + "\").pysimEditor.set(code)", code)


def press(page, name):
    page.locator(ROOT).get_by_role("button", name=name, exact=True).click()
    until(page, f"document.querySelector(\"{ROOT}\").dataset.busy === 'false'", timeout=30)
    return page.locator(f"{ROOT} .exercise-verdict").inner_text()


def test_editor_holds_the_toy_and_python_agrees(make_page, site_url, watch):
    """The code is readable and editable at once in a text area; Ace, which would compete
    with Python's start, is fetched only once Python is ready, and then takes over."""
    page = make_page()
    page.goto(page_url(site_url, PAGE))
    root = page.locator(ROOT)
    assert root.get_attribute("data-editor") == "textarea"
    assert page.locator(f"{ROOT} textarea").input_value() == exercises.starter_code()
    page.wait_for_timeout(500)
    assert not [u for u in watch.requests if "/vendor/ace." in u]
    wait_for_python(page)
    until(page, f"document.querySelector(\"{ROOT}\").dataset.editor === 'ace'")
    assert page.evaluate(f"document.querySelector(\"{ROOT}\").pysimEditor.get()") == exercises.starter_code()
    assert page.locator(f"{ROOT} textarea.exercise-fallback").count() == 0
    # Python highlighting and line numbers are Ace's.
    assert page.locator(f"{ROOT} .ace_gutter-cell").count() > 5
    # (The first screen is the module's docstring, long lines wrapped: a string token.)
    assert page.locator(f"{ROOT} .ace_string, {ROOT} .ace_keyword").count() > 0
    assert root.get_attribute("data-live") == "ready"


def test_touching_the_text_area_brings_ace_keeping_text_caret_and_focus(make_page, site_url, watch):
    page = make_page()
    page.goto(page_url(site_url, PAGE))
    area = page.locator(f"{ROOT} textarea")
    area.evaluate("a => { a.value = a.value.replace('MAX_NUM_BATCHED_TOKENS = 1024', 'MAX_NUM_BATCHED_TOKENS = 2048'); }")
    area.dispatch_event("input")
    caret = area.evaluate("a => a.value.indexOf('MAX_NUM_BATCHED_TOKENS = 2048') + 'MAX_NUM_BATCHED_TOKENS = '.length")
    area.evaluate("(a, at) => a.setSelectionRange(at, at)", caret)
    area.focus()  # the reader clicks or tabs into it, long before Python is ready
    until(page, f"document.querySelector(\"{ROOT}\").dataset.editor === 'ace'", timeout=20)
    assert page.evaluate(f"document.querySelector(\"{ROOT}\").dataset.runtime") != "ready"
    page.keyboard.type("9")  # lands where the caret was, in Ace, which has the focus
    code = page.evaluate(f"document.querySelector(\"{ROOT}\").pysimEditor.get()")
    assert "MAX_NUM_BATCHED_TOKENS = 92048" in code
    assert code.replace("MAX_NUM_BATCHED_TOKENS = 92048", "MAX_NUM_BATCHED_TOKENS = 1024") == exercises.starter_code()


def test_correct_solution_passes_and_wrong_one_names_the_step(live_page):
    page = live_page(PAGE)
    paste(page, exercises.solution_code())
    verdict = press(page, "Check")
    assert "all checks pass" in verdict.lower()
    assert page.locator(ROOT).get_attribute("data-result") == "pass"
    assert page.locator(f"{ROOT} .exercise-checks li[data-passed='true']").count() == len(exercises.CHECKS)
    paste(page, prefill_before_decodes())
    verdict = press(page, "Check")
    assert page.locator(ROOT).get_attribute("data-result") == "fail"
    assert "step 1: request 0 expected a decode (1 token), got nothing" in verdict
    assert "request 2 expected 62 prefill tokens, got 64" in verdict
    # Under the verdict, request 0 step by step: its caption is the check's message, the
    # first differing step is marked, pysim's decode beside the reader's nothing.
    table = page.locator(f"{ROOT} .exercise-steps")
    assert table.is_visible()
    caption = table.locator("caption").inner_text()
    assert caption.startswith("Request 0, step by step: step 1: request 0 expected a decode")
    failing = table.locator("tbody tr[data-failing='true']")
    assert failing.count() == 1
    assert [c.strip() for c in failing.locator("th, td").all_inner_texts()] == [
        "1 ≠ first", "decode", "1", "2", "not in the batch", "–", "–"]
    assert table.locator("tbody tr").count() == 4
    # The table scrolls inside its own box, which the keyboard reaches.
    assert page.locator(f"{ROOT} .exercise-mismatch .pysim-table-wrap").get_attribute("tabindex") == "0"
    # A passing solution takes the table away again.
    paste(page, exercises.solution_code())
    press(page, "Check")
    assert page.locator(f"{ROOT} .exercise-steps").count() == 0


def test_run_shows_results_and_errors_name_the_line(live_page):
    page = live_page(PAGE)
    paste(page, exercises.solution_code() + "\nprint('hello')\n")
    press(page, "Run")
    assert page.locator(ROOT).get_attribute("data-result") == "ran"
    assert page.locator(f"{ROOT} .exercise-summary tr[data-key='finished'] td").inner_text() == "200"
    assert page.locator(f"{ROOT} .exercise-output").inner_text().strip() == "hello"
    paste(page, "def broken(:\n    pass\n")
    press(page, "Check")
    assert "Line 1: SyntaxError" in page.locator(f"{ROOT} .exercise-error").inner_text()


def test_endless_loop_is_stopped_and_the_page_stays_usable(page, site_url, watch):
    page.goto(page_url(site_url, PAGE))
    wait_for_python(page)
    paste(page, "while True:\n    pass\n")
    t0 = time.monotonic()
    verdict = press(page, "Run")
    assert verdict == "Your code ran for more than 5 s and was stopped; Python was restarted."
    assert 4.5 < time.monotonic() - t0 < 15
    assert page.locator(ROOT).get_attribute("data-result") == "timeout"
    # The page thread was never blocked: it still answers at once.
    assert page.evaluate("1 + 1") == 2
    # Python comes back and Run works again.
    paste(page, exercises.solution_code())
    press(page, "Run")
    assert page.locator(ROOT).get_attribute("data-result") == "ran"
    wait_for_python(page)


def ace(page, expression):
    """Ask the page's Ace editor (ace.edit on its element returns the editor it holds)."""
    return page.evaluate(f"(() => {{ const e = ace.edit(document.querySelector(\"{ROOT} .exercise-editor\")); return {expression}; }})()")


def click_line(page, text):
    """Click, as a reader would, the middle of the editor's line that reads `text`, until
    the cursor is on that line.

    Ace draws on animation frames and may still be scrolling the line into view, and the
    page itself may still be scrolling to the message: so this waits until the line sits
    still for three frames inside the window (scrolling it in, as a reader would, when the
    page has scrolled it out: a click below the window lands on no line), clicks that
    point, and, if the page moved under the pointer anyway, clicks again. (CI once typed
    on the row above the line.) The click goes to the point, not the element: Ace's
    text layer takes no pointer events."""
    for _ in range(5):
        x, y = page.evaluate("""async ([root, text]) => {
          const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
          let last = "", still = 0;
          for (let i = 0; i < 240; i += 1) {
            await frame();
            const line = [...document.querySelectorAll(`${root} .ace_line`)].find((l) => l.textContent === text);
            if (!line) continue;
            const r = line.getBoundingClientRect();
            // Below or above the window (the page scrolled to the message): bring it in.
            if (r.top < 0 || r.bottom > innerHeight) { line.scrollIntoView({ block: "center" }); still = 0; continue; }
            const here = `${r.x},${r.y},${scrollY}`;
            still = here === last ? still + 1 : 0;
            if (still === 3) return [r.x + Math.min(r.width, 40) / 2, r.y + r.height / 2];
            last = here;
          }
          throw new Error(`no still line reads ${text}`);
        }""", [ROOT, text])
        page.mouse.click(x, y)
        if ace(page, "e.session.getLine(e.getCursorPosition().row)") == text:
            return
    raise AssertionError(f"five clicks on the line {text!r} did not put the cursor on it")


def test_a_syntax_error_is_marked_on_its_line_and_long_lines_wrap(live_page):
    """Issue 16: a syntax error's line was named in the message but not marked in the
    editor, and long starter lines ran out of sight at 1280 px."""
    page = live_page(PAGE)
    until(page, f"document.querySelector(\"{ROOT}\").dataset.editor === 'ace'")
    # Every line of the starter is within the editor's width: long ones wrap.
    scroller, widest = ace(page, "[e.renderer.scroller.clientWidth, e.session.getScreenWidth() * e.renderer.characterWidth]")
    assert max(len(line) for line in exercises.starter_code().splitlines()) * ace(page, "e.renderer.characterWidth") > scroller
    assert widest <= scroller, (widest, scroller)
    # And on the screen: the text of every line drawn ends inside the editor (give or
    # take the space a row was broken at, which may hang past the edge, unseen).
    space = ace(page, "e.renderer.characterWidth")
    assert page.evaluate(f"""() => {{
      const box = document.querySelector("{ROOT} .ace_scroller").getBoundingClientRect();
      return [...document.querySelectorAll("{ROOT} .ace_line")].every((line) => {{
        const r = document.createRange(); r.selectNodeContents(line);
        return r.getBoundingClientRect().right <= box.right + {space} + 1; }});
    }}""")
    # As a reader: click into the code, go to its end, type a broken line, press Check.
    page.locator(f"{ROOT} .ace_content").click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("x = = 1\n")
    line = len(exercises.starter_code().splitlines()) + 1
    press(page, "Check")
    assert f"Line {line}: SyntaxError" in page.locator(f"{ROOT} .exercise-error").inner_text()
    # The line is marked in the gutter and tinted, and the cursor sits on it, in view.
    # (Ace draws its gutter on its next animation frame, after scrolling the line into view.)
    until(page, f"document.querySelectorAll(\"{ROOT} .ace_gutter-cell.ace_error\").length === 1", timeout=5)
    mark = page.locator(f"{ROOT} .ace_gutter-cell.ace_error")
    assert mark.inner_text().strip() == str(line)
    assert page.locator(f"{ROOT} .exercise-error-line").is_visible()
    assert ace(page, "e.getCursorPosition().row") == line - 1
    # Editing the code takes the mark away (the line it names may have moved).
    click_line(page, "x = = 1")
    page.keyboard.press("Home")
    page.keyboard.insert_text("# ")
    until(page, f"document.querySelectorAll(\"{ROOT} .ace_gutter-cell.ace_error, {ROOT} .exercise-error-line\").length === 0",
          timeout=5)
    assert ace(page, f"e.session.getLine({line - 1})") == "# x = = 1", ace(page, "e.getValue()")
