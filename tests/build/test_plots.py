"""The build-time SVG plots (moved here with sitebuild/plots.py from the unit tests)."""

import xml.etree.ElementTree as ET

import pytest

from sitebuild import plots


@pytest.mark.parametrize("name", ["throughput", "occupancy"])
def test_plots_are_labelled_svg_without_blank_lines(name):
    svg = getattr(plots, name)()
    # A blank line would end Markdown's raw HTML block in the middle of the SVG.
    assert "\n\n" not in svg and "{{" not in svg
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == ns + "svg" and root.get("role") == "img"
    assert root.find(ns + "title").text and root.find(ns + "desc").text
    assert "currentColor" in svg


def test_plot_ticks():
    # 5500 / 6 = 917 -> the next of 1, 2, 5, 10 x 100 is 1000; 64 / 4 = 16 -> 20.
    assert plots.nice_ticks(0, 5500, 6) == [0, 1000, 2000, 3000, 4000, 5000]
    assert plots.nice_ticks(0, 64, 4) == [0, 20, 40, 60]
