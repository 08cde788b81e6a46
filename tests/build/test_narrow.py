"""A page on a phone (sitebuild/narrow.py): SVG diagrams keep a minimum width at which their
smallest label is 10 px, in a box a keyboard can scroll."""

import pytest

from sitebuild import ROOT, BuildError, narrow

SVG = ('<svg viewBox="0 0 800 400" font-size="13"><title>Two &amp; three</title>'
       '<text font-size="12">label</text><text font-size="15">head</text></svg>')


def test_min_width_puts_the_smallest_label_at_10_px():
    # 800 units wide, smallest label 12 units: at 800 * 10 / 12 = 666.7 px it is 10 px.
    assert narrow.min_width(SVG) == 667
    assert narrow.title(SVG) == "Two & three"


def test_an_svg_without_sizes_is_an_error():
    with pytest.raises(BuildError, match="x.svg: an SVG diagram needs a viewBox"):
        narrow.min_width("<svg><text>a</text></svg>", "x.svg")


def test_a_local_svg_image_scrolls_sideways_at_its_minimum_width(tmp_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "d.svg").write_text(SVG)
    page = '<p><img alt="A diagram" src="images/d.svg" /></p><img src="images/photo.png" />'
    out = narrow.diagrams(page, tmp_path)
    assert out == ('<p><span class="pysim-diagram" role="region" tabindex="0" '
                   'aria-label="Two &amp; three (scrolls sideways on a narrow screen)" '
                   'style="display:block;max-width:100%;overflow-x:auto">'
                   '<img alt="A diagram" src="images/d.svg" style="min-width:667px" /></span></p>'
                   '<img src="images/photo.png" />')


def test_the_chapter_diagrams_fit_a_desktop_column():
    # The text column is about 688 px at 1280 px: a diagram wider than that would
    # scroll there too, for the sake of a few tenths of a pixel of label.
    for path in sorted((ROOT / "docs" / "images").glob("*.svg")):
        assert narrow.min_width(path.read_text(), path.name) <= 680, path.name

