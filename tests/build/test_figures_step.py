"""{{ group.key }} numbers and {{ plot.NAME }} lines in Markdown, with stand-in figures."""

import types

import pytest

from sitebuild import BuildError, figures

VALUES = {"little.w_s": 16.4, "little.offered_tok_s": 10000}
plots = types.SimpleNamespace(curve=lambda: "<svg><title>Curve</title>curve</svg>", _private=lambda: "<svg/>")
BLOCK = ('<div class="pysim-plot" role="region" tabindex="0" aria-label="Curve (scrolls sideways on a narrow screen)" '
         'style="overflow-x:auto"><svg><title>Curve</title>curve</svg></div>')


def figure(name):
    return VALUES[name]  # KeyError for an unknown name, as pysim.figures.figure does


def test_figures_are_formatted_with_their_spec():
    md = "W = {{ little.w_s }} s, offered {{little.offered_tok_s:,.0f}} tok/s, {{ little.w_s: .2f }}"
    assert figures.fill_figures(md, figure) == "W = 16.4 s, offered 10,000 tok/s, 16.40"


def test_an_unknown_figure_names_the_page():
    with pytest.raises(BuildError, match=r"docs/x\.md names unknown figure 'little\.nope'"):
        figures.fill_figures("{{ little.nope }}", figure, "docs/x.md")


def test_a_plot_line_becomes_a_scrolling_svg_block():
    md = "Text.\n\n  {{ plot.curve }}  \n\nMore {{ plot.curve }} inline stays."
    out = figures.draw_plots(md, plots)
    assert out == f"Text.\n\n{BLOCK}\n\nMore {{{{ plot.curve }}}} inline stays."


@pytest.mark.parametrize("name", ["nope", "_private"])
def test_unknown_or_private_plots_are_errors(name):
    with pytest.raises(BuildError, match=f"unknown plot '{name}'"):
        figures.draw_plots("{{ plot.%s }}" % name, plots)


def test_expand_draws_plots_before_it_fills_figures():
    # Filled first, "plot.curve" would be looked up (and fail) as a figure.
    out = figures.expand("{{ plot.curve }}\n\nW = {{ little.w_s:.0f }}", figure, plots)
    assert out == f"{BLOCK}\n\nW = 16"
