"""Numbers and plots in a page's Markdown, computed by pysim before Markdown runs.

`{{ little.w_s }}` or `{{ little.w_s:.1f }}` becomes `pysim.figures.figure("little.w_s")`,
formatted with the optional format spec; a line holding only `{{ plot.NAME }}` becomes
the SVG drawn by `NAME()` in sitebuild/plots.py. So a number in the prose and the
picture beside it come from the same function, and a test can check both.
"""

from __future__ import annotations

import html
import re
from types import ModuleType
from typing import Callable

from . import BuildError, narrow

FIGURE = re.compile(r"\{\{\s*(?P<name>[a-z_][a-z0-9_]*\.[a-z0-9_]+)\s*(?::(?P<spec>[^}]*))?\}\}")
PLOT = re.compile(r"^[ \t]*\{\{\s*plot\.(?P<name>[a-z_][a-z0-9_]*)\s*\}\}[ \t]*$", re.M)


def draw_plots(markdown: str, plots: ModuleType, where: str = "a page") -> str:
    """Replace each `{{ plot.NAME }}` line with the plot's SVG."""

    def draw(match: re.Match) -> str:
        name = match.group("name")
        if name.startswith("_") or not callable(getattr(plots, name, None)):
            raise BuildError(f"{where} names unknown plot {name!r} (sitebuild/plots.py)")
        # A raw HTML block without blank lines, so Markdown passes it through untouched.
        # It scrolls sideways on a narrow screen rather than shrinking its text, and a
        # keyboard can reach it to scroll (a region named by the plot's title).
        svg = getattr(plots, name)()
        label = html.escape(f"{narrow.title(svg)} (scrolls sideways on a narrow screen)")
        return (f'<div class="pysim-plot" role="region" tabindex="0" aria-label="{label}" '
                f'style="overflow-x:auto">{svg}</div>')

    return PLOT.sub(draw, markdown)


def fill_figures(markdown: str, figure: Callable[[str], object], where: str = "a page") -> str:
    """Replace each `{{ group.key[:spec] }}` with `format(figure("group.key"), spec)`."""

    def fill(match: re.Match) -> str:
        name, spec = match.group("name"), match.group("spec") or ""
        try:
            value = figure(name)
        except KeyError:
            raise BuildError(f"{where} names unknown figure {name!r}") from None
        return format(value, spec.strip())

    return FIGURE.sub(fill, markdown)


def expand(markdown: str, figure: Callable[[str], object], plots: ModuleType, where: str = "a page") -> str:
    """Plots first: a `{{ plot.NAME }}` line would otherwise read as a figure's name."""
    return fill_figures(draw_plots(markdown, plots, where), figure, where)
