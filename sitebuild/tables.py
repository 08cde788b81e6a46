"""The prose's tables, reachable by the keyboard when they scroll sideways.

Material's script puts every Markdown table (`table:not([class])`) in a box that scrolls
sideways when the table is wider than the screen, as most of ours are at phone width. A
reader without a mouse scrolls a box with the arrow keys once the box itself has the focus
(WCAG 2.1.1: focusing the table inside is not enough, Chromium then scrolls nothing), and
many tables hold no link to tab to. Material's box only exists once its script has run,
so the build puts each table in a box of its own, a named region with tabindex="0", which
does the scrolling instead (widgets/theme.css: `.pysim-scroll`, its focus ring too). The
table keeps its own markup, so Material still styles it. The widgets' tables are drawn by
their scripts, in boxes of their own (`PySim.tableBox`, widgets/dom.js).
"""

from __future__ import annotations

import re

# Python-Markdown's `tables` extension writes a bare <table> (tables never nest); a table
# written as HTML in a page, with attributes of its own, is left as its author wrote it.
TABLE = re.compile(r"<table>.*?</table>", re.S)
BOX = '<div class="pysim-scroll" tabindex="0" role="region" aria-label="table, scrolls sideways">'


def focusable(page_html: str) -> str:
    """The page's HTML with every bare <table> in a box the keyboard can scroll."""
    return TABLE.sub(lambda m: BOX + m.group(0) + "</div>", page_html)
