"""What a page needs to stay readable on a phone (375 px): its SVG diagrams and tables.

An <img> of an SVG (docs/images/*.svg) scales the whole picture to the text column. At 375 px a diagram
drawn 830 units wide shrinks its 12-unit labels to about 5 px, too small to read. So
each such image gets a minimum width at which its smallest label is MIN_LABEL_PX on the
screen, inside a box that scrolls sideways when the column is narrower: a region a
keyboard can reach (tabindex=0), named by the diagram's own <title>. On a wide screen
nothing changes, the picture still fills the column.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

from . import BuildError

MIN_LABEL_PX = 10  # the smallest label a reader should have to read, in CSS px
IMG = re.compile(r'<img\b(?P<attrs>[^>]*?\bsrc="(?P<src>[^"/][^"]*\.svg)"[^>]*?)\s*/?>')
VIEW_BOX = re.compile(r'<svg\b[^>]*\bviewBox="\s*[-\d.]+[\s,]+[-\d.]+[\s,]+(?P<width>[\d.]+)')
FONT_SIZE = re.compile(r'\bfont-size="(?P<size>[\d.]+)(?:px)?"')
TITLE = re.compile(r"<title\b[^>]*>(?P<text>.*?)</title>", re.S)


def min_width(svg: str, where: str = "a diagram") -> int:
    """The width in CSS px at which the SVG's smallest font-size is MIN_LABEL_PX."""
    box = VIEW_BOX.search(svg)
    sizes = [float(m.group("size")) for m in FONT_SIZE.finditer(svg)]
    if not box or not sizes:
        raise BuildError(f"{where}: an SVG diagram needs a viewBox and font-size attributes")
    return math.ceil(float(box.group("width")) * MIN_LABEL_PX / min(sizes))


def title(svg: str) -> str:
    found = TITLE.search(svg)
    return html.unescape(found.group("text").strip()) if found else "Diagram"


def diagrams(page_html: str, page_dir: Path, where: str = "a page") -> str:
    """Wrap every <img> of a local SVG in a sideways scroller at the diagram's minimum
    width. `page_dir` is the folder of the page's Markdown file: image paths are
    relative to it (use_directory_urls is off, so the built page sits in the same place)."""

    def wrap(match: re.Match) -> str:
        path = page_dir / match.group("src")
        if not path.is_file():
            return match.group(0)  # MkDocs itself reports a missing image
        if "style=" in match.group("attrs"):
            raise BuildError(f"{where}: {match.group('src')} has a style of its own; its width is set here")
        svg = path.read_text(encoding="utf-8")
        width = min_width(svg, f"{where}: {match.group('src')}")
        label = html.escape(f"{title(svg)} (scrolls sideways on a narrow screen)")
        return (f'<span class="pysim-diagram" role="region" tabindex="0" aria-label="{label}" '
                f'style="display:block;max-width:100%;overflow-x:auto">'
                f'<img{match.group("attrs")} style="min-width:{width}px" /></span>')

    return IMG.sub(wrap, page_html)

