"""Math rendered by KaTeX under Node at build time (node_modules/katex, as the build uses)."""

import re

import pytest

from sitebuild import BuildError, katex


def test_formulas_become_katex_html_and_mathml():
    page = ('<p>Inline <span class="arithmatex">\\(t_0 + \\beta B\\)</span> and</p>'
            '<div class="arithmatex">\\[\\frac{B}{t(B)} &lt; 1\\]</div>')
    out, has_math = katex.render_math(page)
    assert has_math
    assert "\\(" not in out and "\\[" not in out
    assert out.count('<span class="arithmatex"><span class="katex">') == 1
    # A display formula may scroll sideways: the keyboard reaches it, and it is named.
    assert out.count('<div class="arithmatex" tabindex="0" role="region" aria-label="formula, scrolls sideways">'
                     '<span class="katex-display">') == 1
    # The HTML entity was unescaped before KaTeX read it: "<" is an operator, in MathML too.
    assert "<mo>&lt;</mo>" in out
    assert out.startswith("<p>Inline ")


def test_a_page_without_math_is_returned_as_it_is():
    assert katex.render_math("<p>$5 and \\(not math\\)</p>") == ("<p>$5 and \\(not math\\)</p>", False)


def test_bad_math_names_the_page_and_the_formula():
    with pytest.raises(BuildError, match=r"bad math on docs/x\.md: '\\\\frac\{1\}'"):
        katex.render_math('<span class="arithmatex">\\(\\frac{1}\\)</span>', "docs/x.md")


def test_the_stylesheet_and_its_fonts_are_served_under_the_version():
    files = katex.katex_files()
    folder = katex.site_dir()
    assert folder.startswith("assets/vendor/katex/") and folder.count("/") == 4  # .../0.19.1/
    assert katex.stylesheet() in files
    fonts = [p for p in files if p.startswith(folder + "fonts/")]
    assert any(p.endswith(".woff2") for p in fonts)
    # Every font the stylesheet names is shipped.
    css = files[katex.stylesheet()].read_text()
    for font in set(re.findall(r"url\(fonts/([^)]+)\)", css)):
        assert folder + "fonts/" + font in files, font
