"""The "predict first" checkpoints (widgets/predict.js) in a real browser: a guess made
with the keyboard, then pysim's answer drawn over it with the sentence on why; skipping;
the guess kept across a reload in this browser only; the choice kind; the page without
JavaScript, from disk and entered by instant navigation; and a checkpoint on every
simulation page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import OFFLINE_SITE, SITE, page_url, settle, until, widget_pages
from pysim.figures import figure

SCALE_PAGE = "batch-size"            # docs/predict.toml: batch_size_coding
SCALE_KEY = "batch_size_coding"
CHOICE_PAGE = "toy-scheduler"        # toy_scheduler_policy
CHOICE_KEY = "toy_scheduler_policy"
BOX = ".predict[data-predict='{key}']"
# Every page that holds a simulation (a widget), and page 9, whose widget is on its way.
SIMULATION_PAGES = sorted({*widget_pages(), "priority-and-preemption"})


def box(page, key):
    return page.locator(BOX.format(key=key))


def mounted(page, key):
    page.wait_for_selector(BOX.format(key=key) + "[data-predict-mounted]")
    return box(page, key)


def stored(page, key):
    return page.evaluate("(k) => localStorage.getItem('pysim.predict.' + k)", key)


def left_pct(locator) -> float:
    return float(locator.evaluate("m => m.style.left").rstrip("%"))


def test_a_keyboard_guess_is_revealed_with_the_answer_over_it_and_kept_here_only(make_page, site_url, watch):
    page = make_page(reduced_motion="reduce")
    page.goto(page_url(site_url, SCALE_PAGE))
    cp = mounted(page, SCALE_KEY)
    slider = cp.locator("input[type=range]")
    # The slider is named, and says its value with the unit.
    assert cp.get_by_label("Your guess").count() == 1
    low, high, step = (float(slider.get_attribute(a)) for a in ("min", "max", "step"))
    slider.focus()
    page.keyboard.press("Home")
    for _ in range(40):
        page.keyboard.press("ArrowRight")
    guess = low + 40 * step
    assert float(slider.input_value()) == guess
    assert slider.get_attribute("aria-valuetext") == f"{guess:.0f} requests"
    before = len(watch.requests)
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method != "GET" else None)
    page.keyboard.press("Tab")  # to "Lock in my guess"
    assert page.evaluate("document.activeElement.textContent") == "Lock in my guess"
    page.keyboard.press("Enter")
    until(page, f"document.querySelector(\"{BOX.format(key=SCALE_KEY)}\").dataset.predictState === 'revealed'")
    answer = figure("batch_size.coding_max_batch_memory")
    result = cp.locator(".predict-result")
    assert result.get_attribute("aria-live") == "polite"
    verdict = result.locator(".predict-verdict").inner_text()
    assert f"You guessed {guess:.0f} requests" in verdict and f"shows {answer} requests" in verdict
    assert f"{guess - answer:.0f} requests too high" in verdict
    # The answer's mark is drawn on the guess's line, where pysim's figure lies.
    assert left_pct(result.locator(".predict-mark-answer")) == pytest.approx(100 * (answer - low) / (high - low), abs=0.01)
    assert left_pct(result.locator(".predict-mark-guess")) == pytest.approx(100 * (guess - low) / (high - low), abs=0.01)
    assert "grows in proportion to its context" in result.locator(".predict-why").inner_text()
    # Keyboard focus stays in the checkpoint, on what comes next.
    assert page.evaluate("document.activeElement.textContent") == "Guess again"
    assert json.loads(stored(page, SCALE_KEY)) == {"guess": guess}
    # Nothing was sent: no request carried the guess, none was a POST.
    assert posts == []
    assert not [u for u in watch.requests[before:] if str(int(guess)) in u.split("/")[-1] and "predict" in u]
    assert "kept in this browser only" in cp.locator(".predict-fine").inner_text()

    # After a reload the guess is still there, and drawn with the answer.
    page.reload()
    cp = mounted(page, SCALE_KEY)
    assert cp.get_attribute("data-predict-state") == "revealed"
    assert f"You guessed {guess:.0f} requests" in cp.locator(".predict-verdict").inner_text()
    assert float(cp.locator("input[type=range]").input_value()) == guess

    # "Guess again" forgets it and asks once more.
    cp.get_by_role("button", name="Guess again").click()
    assert stored(page, SCALE_KEY) is None
    assert cp.locator("input[type=range]").is_enabled()
    assert page.evaluate("document.activeElement.type") == "range"


def test_skip_shows_the_answer_without_a_guess(make_page, site_url):
    page = make_page()
    page.goto(page_url(site_url, SCALE_PAGE))
    cp = mounted(page, SCALE_KEY)
    cp.get_by_role("button", name="Skip: show the answer").focus()
    page.keyboard.press("Enter")
    until(page, f"document.querySelector(\"{BOX.format(key=SCALE_KEY)}\").dataset.predictState === 'skipped'")
    assert cp.locator(".predict-mark-guess").count() == 0
    assert cp.locator(".predict-mark-answer").count() == 1
    assert "You skipped the guess" in cp.locator(".predict-verdict").inner_text()
    assert json.loads(stored(page, SCALE_KEY)) == {"skipped": True}
    page.reload()
    assert mounted(page, SCALE_KEY).get_attribute("data-predict-state") == "skipped"


def test_one_of_several_answers_picked_with_the_arrow_keys(make_page, site_url):
    page = make_page()
    page.goto(page_url(site_url, CHOICE_PAGE))
    cp = mounted(page, CHOICE_KEY)
    # Without a pick, locking in asks for one.
    cp.get_by_role("button", name="Lock in my guess").click()
    assert "Pick one" in cp.locator(".predict-hint").inner_text()
    radios = cp.locator("input[type=radio]")
    assert radios.count() == 3
    radios.first.focus()
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")  # the second: Priority
    assert cp.get_by_label("Priority").is_checked()
    cp.get_by_role("button", name="Lock in my guess").click()
    result = cp.locator(".predict-result")
    assert "You picked Priority." in result.locator(".predict-verdict").inner_text()
    # pysim's answer: the policy with the least mean TTFT.
    means = {p: figure(f"toy_scheduler.{p}_mean_ttft") for p in ("fcfs", "priority", "shortest")}
    best = min(means, key=means.get)
    answer_row = result.locator(".predict-is-answer")
    assert answer_row.count() == 1
    assert f"{means[best]:.1f} iterations" in answer_row.inner_text()
    assert "simulation's answer" in answer_row.inner_text()
    assert "your pick" in result.locator(".predict-is-guess").inner_text()
    show = result.locator("a.predict-show")
    assert show.get_attribute("href") == f"#toy_scheduler.policy={best}"


def test_show_me_sets_the_widget_to_that_state(make_page, site_url):
    page = make_page()
    page.goto(page_url(site_url, SCALE_PAGE))
    cp = mounted(page, SCALE_KEY)
    cp.get_by_role("button", name="Skip: show the answer").click()
    link = cp.get_by_role("link", name="Show me in the widget")
    link.wait_for(state="visible")
    settle(page)  # the reveal has been drawn and its transition is over: the link stays put
    link.click()
    # The address holds the widget's state: first the link's one setting; once pysim has
    # computed it, the widget writes back its whole state (live.js, saveLink), which a
    # loaded machine can do before the first poll. Either way it names 32768.
    until(page, "location.hash.startsWith('#batch_size.') && "
                "location.hash.split('&').includes('batch_size.context_tokens=32768') || "
                "location.hash.split('&').includes('#batch_size.context_tokens=32768')", timeout=60)
    widget = ".pysim-widget[data-widget='batch_size']"
    until(page, f"document.querySelector(\"{widget}\").dataset.live === 'ready'", timeout=90)
    until(page, f"document.querySelector(\"{widget} .bs-figure[data-key='max_batch_memory'] .bs-value\")"
                f".textContent.trim().startsWith('{figure('batch_size.coding_max_batch_memory')}')")


def test_without_javascript_the_question_and_the_answer_are_in_the_page(make_page, site_url):
    page = make_page(java_script_enabled=False)
    page.goto(page_url(site_url, SCALE_PAGE))
    cp = box(page, SCALE_KEY)
    assert "how many fit now?" in cp.locator(".predict-question").inner_text()
    details = cp.locator("details.predict-answer")
    assert not details.evaluate("d => d.open")
    details.locator("summary").click()
    assert f"{figure('batch_size.coding_max_batch_memory')} requests" in details.inner_text()


def test_from_disk_the_checkpoint_works(make_page):
    page = make_page()
    page.goto(page_url(OFFLINE_SITE.as_uri() + "/", CHOICE_PAGE))
    cp = mounted(page, CHOICE_KEY)
    cp.get_by_role("button", name="Skip: show the answer").click()
    assert cp.get_attribute("data-predict-state") == "skipped"


def test_entered_by_instant_navigation_the_checkpoint_mounts(make_page, site_url):
    page = make_page()
    page.goto(page_url(site_url, "index"))
    link = page.locator(f'nav.md-nav--primary a.md-nav__link[href$="/{CHOICE_PAGE}.html"]').first
    link.click()
    page.wait_for_url(f"**/{CHOICE_PAGE}.html*")
    cp = mounted(page, CHOICE_KEY)
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1  # no reload
    assert page.evaluate("performance.getEntriesByType('navigation')[0].name").endswith("index.html")
    cp.get_by_role("button", name="Skip: show the answer").click()
    assert cp.get_attribute("data-predict-state") == "skipped"


@pytest.mark.parametrize("site", [SITE, OFFLINE_SITE], ids=["site", "site-offline"])
def test_every_simulation_page_has_a_checkpoint(site):
    assert len(SIMULATION_PAGES) >= 9
    for name in SIMULATION_PAGES:
        text = (site / f"{name}.html").read_text(encoding="utf-8")
        assert re.search(r'<div class="predict" data-predict="[a-z0-9_]+"', text), name
        assert re.search(r'src="[^"]*assets/widgets/predict\.[0-9a-f]+\.js"', text), name


AXE_ON = """async ([selector, tags]) => {
  const r = await axe.run({include: [[selector]]}, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary || ''}))}));
}"""


@pytest.mark.long
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_asked_and_answered_the_checkpoints_pass_axe(make_page, site_url, scheme):
    """The whole pages are test_accessibility.py's (with the checkpoints asking); here
    each kind once answered, in both schemes, at both widths."""
    from a11y import FAILING, TAGS, describe, inject_axe
    failures = []
    for name, key, pick in [(SCALE_PAGE, SCALE_KEY, None), (CHOICE_PAGE, CHOICE_KEY, "Priority")]:
        page = make_page(color_scheme=scheme)
        page.goto(page_url(site_url, name))
        cp = mounted(page, key)
        inject_axe(page)
        selector = BOX.format(key=key)
        for state in ("asking", "answered"):
            if state == "answered":
                if pick:
                    cp.get_by_label(pick).check()
                cp.get_by_role("button", name="Lock in my guess").click()
            for width in (1280, 375):
                page.set_viewport_size({"width": width, "height": 900})
                bad = [v for v in page.evaluate(AXE_ON, [selector, TAGS]) if v["impact"] in FAILING]
                if bad:
                    failures.append(describe(bad, f"{name} {state} at {width} px, {scheme}"))
    assert not failures, "\n".join(failures)
