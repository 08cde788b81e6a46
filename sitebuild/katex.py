"""Math rendered to HTML at build time by KaTeX, so pages ship no math script.

pymdownx.arithmatex in its generic mode leaves `\\( ... \\)` (inline) and `\\[ ... \\]`
(display) in a span or div of class `arithmatex`; each becomes KaTeX's HTML and MathML
(`katex.renderToString`, output "htmlAndMathml", so screen readers get the MathML). A
page then needs only KaTeX's stylesheet and fonts, served by the site from npm's copy,
in a folder named by KaTeX's version.

A display formula scrolls sideways when it is wider than the screen (Material's
`div.arithmatex` style), so the keyboard can reach it: it is a named region with
tabindex="0" (WCAG 2.1.1; its focus ring is in widgets/theme.css).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

from . import NODE_MODULES, ROOT, BuildError, Files

KATEX_NPM = NODE_MODULES / "katex"
RENDER = Path(__file__).with_name("render_math.mjs")
MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<display>.*?)\\\])</(?P=tag)>',
    re.S,
)
DISPLAY_ATTRS = ' tabindex="0" role="region" aria-label="formula, scrolls sideways"'


def site_dir(katex_npm: Path = KATEX_NPM) -> str:
    """e.g. `assets/vendor/katex/0.19.1/`."""
    return f"assets/vendor/katex/{json.loads((katex_npm / 'package.json').read_text())['version']}/"


def stylesheet(katex_npm: Path = KATEX_NPM) -> str:
    """The path in the site of the stylesheet a page with math links."""
    return site_dir(katex_npm) + "katex.min.css"


def katex_files(katex_npm: Path = KATEX_NPM) -> Files:
    """KaTeX's stylesheet and every font it names, by their path in the site."""
    out = {stylesheet(katex_npm): katex_npm / "dist" / "katex.min.css"}
    for font in sorted((katex_npm / "dist" / "fonts").iterdir()):
        out[site_dir(katex_npm) + "fonts/" + font.name] = font
    return out


def render_math(page_html: str, where: str = "a page") -> tuple[str, bool]:
    """The page's HTML with every formula rendered (one node call), and whether it had any."""
    found = list(MATH.finditer(page_html))
    if not found:
        return page_html, False
    items = [{"tex": html.unescape(m.group("inline") if m.group("inline") is not None else m.group("display")).strip(),
              "display": m.group("display") is not None} for m in found]
    result = subprocess.run(["node", str(RENDER)], input=json.dumps(items),
                            capture_output=True, text=True, check=True, cwd=ROOT)
    out, last = [], 0
    for m, item, rendered in zip(found, items, json.loads(result.stdout), strict=True):
        if "error" in rendered:
            raise BuildError(f"bad math on {where}: {item['tex']!r}: {rendered['error']}")
        tag = m.group("tag")
        attrs = DISPLAY_ATTRS if item["display"] else ""
        out += [page_html[last:m.start()], f'<{tag} class="arithmatex"{attrs}>{rendered["html"]}</{tag}>']
        last = m.end()
    out.append(page_html[last:])
    return "".join(out), True
