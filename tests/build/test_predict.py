"""The checkpoints (docs/predict.toml, sitebuild/predict.py): every row is sound and used,
and the answer each page embeds is pysim's figure, never a number typed by hand.

Build-side only (CPython). The pages are rendered here as the hook renders them (facts,
checkpoints, figures); when the site has been built, its pages are checked too.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest

from pysim.figures import figure
from sitebuild import facts, figures, predict

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TABLE = DOCS / "predict.toml"
PAGES = {p.name: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}
SITES = [Path(os.environ.get("PYSIM_SITE_DIR", ROOT / "site")),
         Path(os.environ.get("PYSIM_OFFLINE_SITE_DIR", ROOT / "site-offline"))]
# The pages that hold a simulation, each of which asks at least one question.
SIMULATION_PAGES = ("naive-batching.md", "paged-kv-cache.md", "toy-scheduler.md", "chunked-prefill.md",
                    "batch-size.md", "lab.md", "cluster.md", "priority-and-preemption.md", "exercises.md")
BLOCK = re.compile(r'<div class="predict" (?P<attrs>[^>]*)>')
ATTR = re.compile(r'(?P<name>[a-z-]+)="(?P<value>[^"]*)"')
ITEM = re.compile(r'<li data-value="(?P<value>[^"]+)" data-figure="(?P<figure>[^"]+)"')


def rendered(name: str) -> str:
    """A page's Markdown after the hook's steps that write text: facts, checkpoints, figures."""
    text = facts.render(PAGES[name], facts.load(DOCS / "facts.toml"), name)
    text = predict.render(text, predict.load(TABLE), figure, name)
    return figures.fill_figures(text, figure, name)


def blocks(page_html: str) -> list[dict]:
    return [{m["name"]: html.unescape(m["value"]) for m in ATTR.finditer(b["attrs"])} for b in BLOCK.finditer(page_html)]


def expected(row: dict) -> str:
    """The answer as the block must carry it, worked out here from the figures."""
    if "answer" in row:
        return repr(figure(row["answer"]))
    values = {c["figure"]: figure(c["figure"]) for c in row["choices"]}
    return (min if row["pick"] == "min" else max)(values, key=values.get)


def test_the_table_loads_and_every_row_is_sound():
    table = predict.load(TABLE)
    assert len(table) >= len(SIMULATION_PAGES)
    for key, row in table.items():
        assert predict.problems_of(key, row) == [], key


def test_every_row_is_asked_on_some_page_and_every_tag_has_a_row():
    table = predict.load(TABLE)
    used = {name: predict.keys_used(text) for name, text in PAGES.items()}
    assert set(table) - set().union(*used.values()) == set()
    assert {k for keys in used.values() for k in keys} <= set(table)


@pytest.mark.parametrize("name", SIMULATION_PAGES)
def test_every_simulation_page_asks_and_embeds_pysims_answer(name):
    table = predict.load(TABLE)
    found = blocks(rendered(name))
    assert found, f"{name} has no checkpoint"
    for b in found:
        row = table[b["data-predict"]]
        assert b["data-answer"] == expected(row), b["data-predict"]
        if "answer" in row:
            assert b["data-answer-text"] == format(figure(row["answer"]), row.get("format", "")) + row.get("unit", "")
            assert float(b["data-min"]) <= float(b["data-answer"]) <= float(b["data-max"])


def test_each_choice_carries_its_own_figure():
    for name in SIMULATION_PAGES:
        for item in ITEM.finditer(rendered(name)):
            assert float(html.unescape(item["figure"])) == figure(item["value"])


def test_the_block_reads_without_javascript():
    """The question, then the answer inside a <details>, with the why; no figure left over."""
    page = rendered("naive-batching.md")
    block = page[page.index('<div class="predict"'):]
    block = block[:block.index("</details></div>") + len("</details></div>")]
    assert "\n" not in block  # one raw HTML line: Markdown leaves it alone
    assert "{{" not in block
    question = block.index('class="predict-question"')
    details = block.index("<details")
    assert question < details
    assert f'>{format(figure("naive_batching.static_over_paged"), ".1f")}×</strong>' in block[details:]
    assert 'href="#widget-naive_batching"' in block


def test_a_widget_state_in_show_may_take_a_figure():
    page = rendered("lab.md")
    assert f'href="#lab.rate_scale={figure("lab.rate_4"):g}"' in page
    assert predict.problems_of("k", {"question": "q", "why": "w", "answer": "a.b", "scale": [0, 5, 1],
                                     "show": "lab.rate_scale={{ lab.rate_4:g }}&lab.seed=2"}) == []


@pytest.mark.parametrize("row, message", [
    ({"question": "q", "why": "w"}, "either scale"),
    ({"question": "q", "why": "w", "answer": "a.b", "scale": [5, 1, 1]}, "min < max"),
    ({"question": "q", "why": "w", "answer": "3.2", "scale": [0, 5, 1]}, "name a figure"),
    ({"question": "q", "why": "w", "choices": [{"label": "x", "figure": "a.b"}], "pick": "min"}, "2 to 4"),
    ({"question": "q", "why": "w", "choices": [{"label": "x", "figure": "a.b"}, {"label": "y", "figure": "a.c"}],
      "pick": "most"}, "pick must be"),
    ({"question": "", "why": "w", "answer": "a.b", "scale": [0, 5, 1]}, "no question"),
    ({"question": "q", "why": "w", "answer": "a.b", "scale": [0, 5, 1], "show": "x\" onclick=\"y"}, "show"),
])
def test_an_unsound_row_is_refused(row, message):
    problems = predict.problems_of("k", row)
    assert problems and message in " ".join(problems)


def test_an_answer_off_the_scale_or_a_tie_stops_the_build():
    values = {"g.a": 12.0, "g.b": 3.0, "g.c": 3.0}
    row = {"question": "q", "why": "w", "answer": "g.a", "scale": [0, 10, 1]}
    with pytest.raises(predict.PredictError, match="outside the scale"):
        predict.block("k", row, values.__getitem__)
    tie = {"question": "q", "why": "w", "pick": "min",
           "choices": [{"label": "B", "figure": "g.b"}, {"label": "C", "figure": "g.c"}]}
    with pytest.raises(predict.PredictError, match="tie"):
        predict.block("k", tie, values.__getitem__)
    with pytest.raises(predict.PredictError, match="unknown checkpoint"):
        predict.render('<div class="pysim-predict" data-predict="nope"></div>', {}, values.__getitem__)


@pytest.mark.parametrize("site", SITES, ids=["site", "site-offline"])
def test_the_built_pages_embed_pysims_answers(site):
    if not (site / "index.html").exists():
        pytest.skip(f"{site} is not built")
    table = predict.load(TABLE)
    for name in SIMULATION_PAGES:
        found = blocks((site / name.replace(".md", ".html")).read_text(encoding="utf-8"))
        assert found, name
        for b in found:
            assert b["data-answer"] == expected(table[b["data-predict"]]), (name, b["data-predict"])
