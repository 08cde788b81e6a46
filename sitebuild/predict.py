"""Checkpoints: the reader guesses what a simulation will show before seeing it.

A page writes, on a line of its own, a tag shaped like a widget's,

    <div class="pysim-predict" data-predict="naive_batching_speedup"></div>

and `docs/predict.toml` holds the checkpoint under that key. Two kinds:

    [naive_batching_speedup]              # a guess on a scale
    question = "... {{ naive_batching.num_requests }} requests ..."   # figures allowed
    answer = "naive_batching.static_over_paged"   # the pysim figure the reader guesses
    scale = [1, 8, 0.1]                   # the slider's min, max and step
    format = ".1f"                        # the answer printed as format(value, format)
    unit = "×"                            # printed after it (and after the guess)
    why = "one sentence on why, figures allowed"
    show = "naive_batching"               # optional: the widget (or the widget state,
                                          # a link's `NAME.key=value`, where a value may
                                          # be a figure) that shows it

    [toy_scheduler_policy]                # one of 3-4 answers
    question = "..."
    choices = [{ label = "FCFS", figure = "toy_scheduler.fcfs_mean_ttft",
                 show = "toy_scheduler.policy=fcfs" }, ...]
    pick = "min"                          # the answer: the choice whose figure is least
    format = ".1f"                        # (or "max": greatest); each figure is printed
    unit = " iterations"                  # beside its choice when the answer is shown
    why = "..."

The answer is never typed: this step reads it from `pysim.figures.figure` at build time
and writes it into the block, with the number as the reader will see it, so a page
without JavaScript (or the offline copy) still asks the question and keeps the answer in
a <details>. widgets/predict.js turns the block into the slider or the radio buttons,
keeps the guess in localStorage and draws the answer over it. The text of a question
and of its `why` goes through the figures step afterwards (hooks.on_page_markdown), so
its `{{ group.key }}` numbers are pysim's too; backticks make <code>.

Like every step here it knows nothing of MkDocs: `load` once per build, `render` once
per page, `used` tells the hook whether the page needs widgets/predict.js.
tests/build/test_predict.py checks the table and that each embedded answer is pysim's.
"""

from __future__ import annotations

import html
import math
import re
import tomllib
from pathlib import Path
from typing import Callable

from . import BuildError

TAG = re.compile(r'^[ \t]*<div class="pysim-predict" data-predict="(?P<key>[a-z0-9_]+)"></div>[ \t]*$', re.M)
RENDERED = re.compile(r'<div class="predict" data-predict="(?P<key>[a-z0-9_]+)"')
FIGURE_NAME = re.compile(r"[a-z_][a-z0-9_]*\.[a-z0-9_]+")
# A widget's name, or a state of it as a link holds it (NAME.key=value&NAME.key=value),
# where a value may be a figure ({{ lab.rate_4:g }}), filled in with the page's figures.
_VALUE = r"(?:[^&\s\"'<>{}]+|\{\{ *[a-z_][a-z0-9_]*\.[a-z0-9_]+(?::[^}\s]*)? *\}\})"
SHOW = re.compile(rf"(?P<widget>[a-z_]+)(?:\.[a-z_]+={_VALUE}(?:&[a-z_]+\.[a-z_]+={_VALUE})*)?")


class PredictError(BuildError):
    """A checkpoint the build must refuse."""


def load(path: Path) -> dict[str, dict]:
    with open(path, "rb") as f:
        table = tomllib.load(f)
    problems = [p for key, row in table.items() for p in problems_of(key, row)]
    if problems:
        raise PredictError(f"{path}: " + "; ".join(problems))
    return table


def problems_of(key: str, row) -> list[str]:
    """What is wrong with one checkpoint's row, before any figure is computed."""
    if not isinstance(row, dict):
        return [f"{key}: not a table"]
    out = [f"{key}: no {f}" for f in ("question", "why") if not isinstance(row.get(f), str) or not row[f].strip()]
    scale, choices = "scale" in row, "choices" in row
    if scale == choices:
        return out + [f"{key}: give either scale (a guess on a slider) or choices (one of several)"]
    if scale:
        s = row["scale"]
        if not (isinstance(s, list) and len(s) == 3 and all(isinstance(v, (int, float)) for v in s)
                and s[0] < s[1] and 0 < s[2] <= s[1] - s[0]):
            out.append(f"{key}: scale must be [min, max, step] with min < max and 0 < step")
        if not FIGURE_NAME.fullmatch(str(row.get("answer", ""))):
            out.append(f"{key}: answer must name a figure (group.key)")
    else:
        c = row["choices"]
        if not (isinstance(c, list) and 2 <= len(c) <= 4 and all(isinstance(x, dict) for x in c)):
            return out + [f"{key}: choices must be a list of 2 to 4 tables"]
        for x in c:
            if not isinstance(x.get("label"), str) or not FIGURE_NAME.fullmatch(str(x.get("figure", ""))):
                out.append(f"{key}: each choice needs a label and a figure (group.key)")
            if "show" in x and not SHOW.fullmatch(str(x["show"])):
                out.append(f"{key}: a choice's show {x['show']!r} is not a widget or a link's NAME.key=value")
        if row.get("pick") not in ("min", "max"):
            out.append(f"{key}: pick must be min or max")
    if "show" in row and not SHOW.fullmatch(str(row["show"])):
        out.append(f"{key}: show {row['show']!r} is not a widget or a link's NAME.key=value")
    try:
        format(1.5, row.get("format", ""))
    except (TypeError, ValueError):
        out.append(f"{key}: format {row.get('format')!r} is no number format")
    return out


def printed(value, row: dict) -> str:
    """A value as the page prints it: the row's format, then its unit."""
    return format(value, row.get("format", "")) + row.get("unit", "")


def answer_of(row: dict, figure: Callable[[str], object]) -> tuple[object, str]:
    """The true answer, from pysim: (the value the block carries, the text it prints).
    For choices, the value is the winning choice's figure name."""
    if "scale" in row:
        value = figure(row["answer"])
        return value, printed(value, row)
    values = [figure(c["figure"]) for c in row["choices"]]
    best = (min if row["pick"] == "min" else max)(values)
    if values.count(best) > 1:
        raise PredictError(f"two choices tie at {best}: the question has no one answer")
    win = row["choices"][values.index(best)]
    return win["figure"], win["label"]


def text(source: str) -> str:
    """A question's or a why's words as HTML: escaped, `code` in backticks. Figure
    placeholders pass through for the figures step."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(source, quote=False))


def link(show: str) -> str:
    """The href of "Show me in the widget": a widget state in the link, or the widget."""
    return "#" + show if "=" in show else f"#widget-{show}"


def block(key: str, row: dict, figure: Callable[[str], object]) -> str:
    """The checkpoint's HTML: one raw block without blank lines, so Markdown leaves it
    alone. Read without JavaScript it is the question, the choices or the range, and the
    answer in a <details>."""
    value, shown = answer_of(row, figure)
    if isinstance(value, float) and not math.isfinite(value):
        raise PredictError(f"{key}: the answer {row.get('answer')} is {value}")
    ident = f"predict-{key.replace('_', '-')}"
    attrs = {"class": "predict", "data-predict": key, "id": ident, "data-unit": row.get("unit", "")}
    body = [f'<p class="predict-kicker">Predict first</p>',
            f'<p class="predict-question" id="{ident}-q">{text(row["question"])}</p>']
    show = row.get("show")
    if "scale" in row:
        lo, hi, step = row["scale"]
        if not lo <= value <= hi:
            raise PredictError(f"{key}: the answer {value} lies outside the scale [{lo}, {hi}]")
        attrs.update({"data-kind": "scale", "data-min": repr(lo), "data-max": repr(hi), "data-step": repr(step),
                      "data-answer": repr(value), "data-answer-text": shown})
        body.append(f'<p class="predict-range">Your guess: somewhere from {html.escape(printed(lo, row))} '
                    f'to {html.escape(printed(hi, row))}.</p>')
        answer = f'The simulation: <strong class="predict-value">{html.escape(shown)}</strong>.'
    else:
        attrs.update({"data-kind": "choice", "data-pick": row["pick"], "data-answer": value,
                      "data-answer-text": shown})
        items = []
        for c in row["choices"]:
            v = figure(c["figure"])
            extra = f' data-show="{html.escape(link(c["show"]), quote=True)}"' if "show" in c else ""
            items.append(f'<li data-value="{c["figure"]}" data-figure="{html.escape(repr(v), quote=True)}"'
                         f' data-figure-text="{html.escape(printed(v, row), quote=True)}"{extra}>'
                         f'{text(c["label"])}</li>')
            if c["figure"] == value and "show" in c:
                show = show or c["show"]
        body.append(f'<ul class="predict-choices">{"".join(items)}</ul>')
        values = "; ".join(f'{text(c["label"])}: {html.escape(printed(figure(c["figure"]), row))}'
                           for c in row["choices"])
        answer = (f'The simulation: <strong class="predict-value">{html.escape(shown)}</strong> '
                  f'<span class="predict-values">({values})</span>.')
    more = (f' <a class="predict-show" href="{html.escape(link(show), quote=True)}">Show me in the widget</a>'
            if show else "")
    body.append(f'<details class="predict-answer"><summary>Show the answer</summary>'
                f'<p>{answer} <span class="predict-why">{text(row["why"])}</span>{more}</p></details>')
    opening = " ".join(f'{k}="{html.escape(str(v), quote=True)}"' for k, v in attrs.items())
    return f"<div {opening}>" + "".join(body) + "</div>"


def render(markdown: str, table: dict[str, dict], figure: Callable[[str], object], where: str = "a page") -> str:
    """Every checkpoint tag of a page replaced by its block."""

    def fill(match: re.Match) -> str:
        key = match.group("key")
        if key not in table:
            raise PredictError(f"{where} names unknown checkpoint {key!r} (docs/predict.toml)")
        try:
            return block(key, table[key], figure)
        except KeyError as err:
            raise PredictError(f"checkpoint {key!r} on {where} names unknown figure {err}") from None
        except PredictError as err:
            raise PredictError(f"checkpoint {key!r} on {where}: {err}") from None

    return TAG.sub(fill, markdown)


def used(page_html: str) -> bool:
    """Whether a page holds a checkpoint (and so loads widgets/predict.js)."""
    return RENDERED.search(page_html) is not None


def keys_used(markdown: str) -> set[str]:
    return {m.group("key") for m in TAG.finditer(markdown)}
