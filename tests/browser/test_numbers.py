"""How the widgets print numbers (widgets/dom.js: fmt, fmtUpTo, compact).

They print what Intl.NumberFormat("en-US") prints, digit for digit, without calling it:
a page's first Intl formatter loads ICU's data (13-64 ms of the main thread here), and
that came before any widget could draw its pre-rendered picture. So the two are compared
here, in the browser the reader has, on many numbers: ties (1.005, 2.675), negatives that
round to zero, spellings of 17 digits, and seeded random ones of every size.
"""

from __future__ import annotations

import pytest
from conftest import SITE, page_url

# The pages whose pre-rendered pictures need no Intl at all (uPlot, on the lab and the
# batch-size pages, makes its own formatter as it loads).
PAGES = {p.stem: p.read_text() for p in sorted(SITE.glob("*.html"))}
PLAIN_PAGES = [name for name, html in PAGES.items() if 'class="pysim-widget"' in html and "uPlot" not in html]

COMPARE = """() => {
  const { fmt, fmtUpTo, compact } = window.PySim;
  const values = [0, -0, 1, -1, 0.5, -0.5, 1.005, -1.005, 2.675, 1.125, 0.001, -0.001, -0.004, -0.005,
    0.005, 0.015, 0.035, 1234.5678, 999.995, 999999.995, 12345678.9, 123456789.123, 999999999.99, 1e9,
    1e-7, 5e-7, 4.9999e-7, 1.5e-300, 220.04999999999998, 5738906.8549999995, -0.024999999999999998,
    999950, 999949, 999960, 9999, 99999, 999999, 999.95, 999.94, 1e12 - 1, 1e12, 950, 1500, -1500,
    2e6, 1e21, NaN, Infinity, -Infinity, Number.MAX_SAFE_INTEGER, Number.MIN_VALUE];
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let i = 0; i < 40000; i++) {
    let v = (next() - 0.3) * 10 ** (Math.floor(next() * 16) - 5);
    if (i % 3 === 0) v = Math.round(v * 1000) / 1000 + (i % 2 ? 0.0005 : 0.005); // near a tie
    if (i % 5 === 0) v = Math.round(v);
    values.push(v);
  }
  const wrong = [];
  for (const digits of [0, 1, 2, 6]) {
    const intl = new Intl.NumberFormat("en-US", { maximumFractionDigits: digits });
    for (const v of values) {
      if (fmtUpTo(v, digits) !== intl.format(v)) wrong.push(["fmtUpTo", digits, v, fmtUpTo(v, digits), intl.format(v)]);
    }
  }
  const short = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });
  for (const v of values) if (compact(v) !== short.format(v)) wrong.push(["compact", 1, v, compact(v), short.format(v)]);
  return { checked: values.length * 5, wrong: wrong.slice(0, 20), fmtDefault: fmt(1234.5678), text: fmt("n/a"), mapped: [1.234, 5.678].map(fmt) };
}"""


def test_numbers_print_as_intl_prints_them(page, site_url):
    page.goto(page_url(site_url, PLAIN_PAGES[0]))
    result = page.evaluate(COMPARE)
    assert result["checked"] > 200_000
    assert result["wrong"] == []
    assert result["fmtDefault"] == "1,234.57" and result["text"] == "n/a"
    assert result["mapped"] == ["1.23", "5.68"]  # fmt takes one argument: map's index is not a digit count


# When every Intl number formatter was made, and when the widgets had been drawn (a
# mutation observer's callback runs once the task that mounted them is over).
COUNT = """
window.__intl = [];
const RealFormat = Intl.NumberFormat;
Intl.NumberFormat = function (...args) {
  __intl.push(performance.now());
  return new RealFormat(...args);
};
Intl.NumberFormat.prototype = RealFormat.prototype;
Intl.NumberFormat.supportedLocalesOf = RealFormat.supportedLocalesOf;
new MutationObserver(() => {
  const widgets = [...document.querySelectorAll('.pysim-widget')];
  if (!window.__drawn && widgets.length && widgets.every((w) => w.dataset.mounted)) window.__drawn = performance.now();
}).observe(document, {subtree: true, childList: true, attributes: true});
"""


@pytest.mark.parametrize("name", PLAIN_PAGES)
def test_no_intl_formatter_before_the_pictures(make_page, site_url, name):
    page = make_page()
    page.add_init_script(COUNT)
    page.goto(page_url(site_url, name))
    page.wait_for_function("() => window.__drawn")
    made = page.evaluate("__intl")
    drawn = page.evaluate("__drawn")
    before = [t for t in made if t < drawn]
    assert before == [], f"{len(before)} Intl.NumberFormat made before {name}'s widgets were drawn ({drawn:.0f} ms)"
