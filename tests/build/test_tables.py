"""The prose's tables in a box the keyboard can reach and scroll (sitebuild/tables.py)."""

from sitebuild import tables


def test_a_markdown_table_gets_a_named_focusable_box():
    page = "<p>x</p><table>\n<thead><tr><th>a</th></tr></thead>\n</table><table><tr><td>b</td></tr></table>"
    out = tables.focusable(page)
    box = '<div class="pysim-scroll" tabindex="0" role="region" aria-label="table, scrolls sideways">'
    assert out == (f"<p>x</p>{box}<table>\n<thead><tr><th>a</th></tr></thead>\n</table></div>"
                   f"{box}<table><tr><td>b</td></tr></table></div>")


def test_a_table_written_as_html_with_attributes_is_left_alone():
    page = '<table class="mine"><tr><td>1</td></tr></table>'
    assert tables.focusable(page) == page
