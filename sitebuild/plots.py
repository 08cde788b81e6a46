"""Static plots for the chapter's pages, drawn at build time from pysim's numbers.

A page line `{{ plot.NAME }}` (on its own) is replaced at build time (sitebuild/figures.py)
with `NAME()` from this file: an inline SVG string. Every number plotted comes from
`pysim.figures`, the same functions that fill the `{{ group.key }}` placeholders, so a
plot cannot disagree with the sentence beside it. This is build-time code: it is not in
the wheel, and no page runs it.

The drawing is deliberately plain: axes with ticks, lines, a few labels written straight
onto the chart instead of a legend. Text and axes use `currentColor`, so they follow
Material's light and dark schemes; the two data colours switch with the scheme through a
small style sheet scoped to `.pysim-plot`. Each SVG carries a <title> and a <desc> for
screen readers, and the page gives a caption in words next to it.
"""

from __future__ import annotations

import html
import math

from pysim import figures

from . import narrow

WIDTH, HEIGHT = 600, 340
# Plot area inside the SVG: left, top, right, bottom margins.
LEFT, TOP, RIGHT, BOTTOM = 64, 18, 20, 52

STYLE = """
.pysim-plot .pp-a { stroke: #3f6ad8; }
.pysim-plot .pp-b { stroke: #d9480f; }
.pysim-plot .pp-a-fill { fill: #3f6ad8; }
.pysim-plot .pp-b-fill { fill: #d9480f; }
[data-md-color-scheme="slate"] .pysim-plot .pp-a { stroke: #8aa8f5; }
[data-md-color-scheme="slate"] .pysim-plot .pp-b { stroke: #ff9a62; }
[data-md-color-scheme="slate"] .pysim-plot .pp-a-fill { fill: #8aa8f5; }
[data-md-color-scheme="slate"] .pysim-plot .pp-b-fill { fill: #ff9a62; }
""".strip().replace("\n", " ")


# ---------------------------------------------------------------- scales and ticks


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten) covering [lo, hi]."""
    raw = (hi - lo) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step) * step
    ticks, v = [], first
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    return ticks


class Axes:
    """Maps data coordinates to SVG coordinates; x may be logarithmic."""

    def __init__(self, x0, x1, y0, y1, log_x=False):
        self.x0, self.x1, self.y0, self.y1, self.log_x = x0, x1, y0, y1, log_x
        self.left, self.top = LEFT, TOP
        self.right, self.bottom = WIDTH - RIGHT, HEIGHT - BOTTOM

    def x(self, v: float) -> float:
        if self.log_x:
            f = (math.log10(v) - math.log10(self.x0)) / (math.log10(self.x1) - math.log10(self.x0))
        else:
            f = (v - self.x0) / (self.x1 - self.x0)
        return self.left + f * (self.right - self.left)

    def y(self, v: float) -> float:
        return self.bottom - (v - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1 or v == 0 else f"{v:g}"


def _pt(x: float, y: float) -> str:
    return f"{x:.1f},{y:.1f}"


def _text(x, y, s, anchor="start", size=12, weight=None, cls=None) -> str:
    extra = f' font-weight="{weight}"' if weight else ""
    extra += f' class="{cls}"' if cls else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
            f'fill="currentColor"{extra}>{html.escape(s)}</text>')


def _frame(ax: Axes, x_ticks, y_ticks, x_label: str, y_label: str, x_fmt=_num, y_fmt=_num) -> list[str]:
    """Grid lines, axes, tick labels and axis titles."""
    out = []
    for v in y_ticks:
        y = ax.y(v)
        out.append(f'<line x1="{ax.left}" y1="{y:.1f}" x2="{ax.right}" y2="{y:.1f}" '
                   f'stroke="currentColor" stroke-opacity="0.15"/>')
        out.append(_text(ax.left - 8, y + 4, y_fmt(v), anchor="end", size=11))
    for v in x_ticks:
        x = ax.x(v)
        out.append(f'<line x1="{x:.1f}" y1="{ax.bottom}" x2="{x:.1f}" y2="{ax.bottom + 5}" stroke="currentColor"/>')
        out.append(_text(x, ax.bottom + 18, x_fmt(v), anchor="middle", size=11))
    out.append(f'<line x1="{ax.left}" y1="{ax.bottom}" x2="{ax.right}" y2="{ax.bottom}" stroke="currentColor"/>')
    out.append(f'<line x1="{ax.left}" y1="{ax.top}" x2="{ax.left}" y2="{ax.bottom}" stroke="currentColor"/>')
    out.append(_text((ax.left + ax.right) / 2, HEIGHT - 10, x_label, anchor="middle", size=12))
    cy = (ax.top + ax.bottom) / 2
    out.append(f'<text x="16" y="{cy:.1f}" text-anchor="middle" font-size="12" fill="currentColor" '
               f'transform="rotate(-90 16 {cy:.1f})">{html.escape(y_label)}</text>')
    return out


def _svg(name: str, title: str, desc: str, body: list[str]) -> str:
    """The finished SVG: responsive, labelled for screen readers, one line per element."""
    tid, did = f"plot-{name}-title", f"plot-{name}-desc"
    # Never narrower than the width at which its smallest label is 10 px on the screen
    # (its box on the page scrolls sideways instead, sitebuild/figures.py).
    min_width = narrow.min_width(f'<svg viewBox="0 0 {WIDTH} {HEIGHT}">' + "".join(body), f"plot {name}")
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-labelledby="{tid} {did}" font-family="inherit" '
            f'style="width:100%;height:auto;min-width:{min_width}px;display:block">')
    return "\n".join([head, f"<title id=\"{tid}\">{html.escape(title)}</title>",
                      f"<desc id=\"{did}\">{html.escape(desc)}</desc>",
                      f"<style>{STYLE}</style>", *body, "</svg>"])


# ---------------------------------------------------------------- the plots


def throughput() -> str:
    """Page 2: B / t(B) against B (log scale), the roofline 1 / beta, and B_max."""
    t0 = figures.figure("little.t0_ms")
    beta = figures.figure("little.beta_ms")
    b_max = figures.figure("little.b_max")
    roof = figures.roofline_tok_s(beta)
    x1 = 1000
    ax = Axes(1, x1, 0, roof * 1.1, log_x=True)
    body = _frame(ax, [1, 10, 100, 1000], nice_ticks(0, roof * 1.1, 6),
                  "requests in the batch, B (log scale)", "tokens per second, whole batch")
    # Minor ticks at 2 and 5 times each power of ten.
    for p in (1, 10, 100):
        for m in (2, 5):
            x = ax.x(p * m)
            body.append(f'<line x1="{x:.1f}" y1="{ax.bottom}" x2="{x:.1f}" y2="{ax.bottom + 3}" stroke="currentColor"/>')

    # The roofline, 1 / beta.
    y_roof = ax.y(roof)
    body.append(f'<line x1="{ax.left}" y1="{y_roof:.1f}" x2="{ax.right}" y2="{y_roof:.1f}" class="pp-b" '
                f'stroke-width="2" stroke-dasharray="7 5"/>')
    body.append(_text(ax.x(1.15), y_roof - 7, f"roofline 1/β = {roof:,.0f} tokens/s", size=12))

    # The throughput curve, sampled evenly in log B.
    pts = []
    n = 120
    for i in range(n + 1):
        b = 10 ** (i / n * math.log10(x1))
        pts.append(_pt(ax.x(b), ax.y(figures.throughput_tok_s(t0, beta, b))))
    body.append(f'<polyline points="{" ".join(pts)}" fill="none" class="pp-a" stroke-width="2.5"/>')
    label_b = 300
    body.append(_text(ax.x(label_b), ax.y(figures.throughput_tok_s(t0, beta, label_b)) + 22,
                      "B / (t₀ + βB)", anchor="middle", size=12, weight="600"))

    # The KV-cache limit, and the two ways a batch uses the curve.
    x_max = ax.x(b_max)
    body.append(f'<line x1="{x_max:.1f}" y1="{ax.top}" x2="{x_max:.1f}" y2="{ax.bottom}" '
                f'stroke="currentColor" stroke-opacity="0.6" stroke-dasharray="2 4"/>')
    body.append(_text(x_max + 5, ax.top + 12, f"B_max = {b_max}: KV cache full", size=11))
    y64 = figures.throughput_tok_s(t0, beta, b_max)
    body.append(f'<circle cx="{x_max:.1f}" cy="{ax.y(y64):.1f}" r="5" class="pp-a-fill"/>')
    body.append(_text(x_max + 9, ax.y(y64) + 18, "continuous batching", size=11, weight="600"))
    body.append(_text(x_max + 9, ax.y(y64) + 32, f"stays here: {y64:,.0f} tokens/s", size=11))
    y1 = figures.throughput_tok_s(t0, beta, 1)
    body.append(f'<circle cx="{ax.x(1):.1f}" cy="{ax.y(y1):.1f}" r="5" fill="none" class="pp-a" stroke-width="2"/>')
    body.append(_text(ax.x(1) + 8, ax.y(y1) - 8, f"B = 1: {y1:,.0f} tokens/s", size=11))
    # An arrow down the curve from B_max toward B = 1: a static batch's tail.
    arrow = [_pt(ax.x(b) - 2, ax.y(figures.throughput_tok_s(t0, beta, b)) - 12) for b in (40, 20, 12, 7)]
    body.append(f'<polyline points="{" ".join(arrow)}" fill="none" stroke="currentColor" stroke-width="1.3" '
                f'marker-end="url(#plot-throughput-arrow)"/>')
    body.insert(0, '<defs><marker id="plot-throughput-arrow" viewBox="0 0 10 10" refX="8" refY="5" '
                   'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                   '<path d="M0,0 L10,5 L0,10 z" fill="currentColor"/></marker></defs>')
    body.append(_text(ax.x(40), ax.y(figures.throughput_tok_s(t0, beta, 40)) - 40,
                      "static batching: as members finish,", anchor="end", size=11, weight="600"))
    body.append(_text(ax.x(40), ax.y(figures.throughput_tok_s(t0, beta, 40)) - 26,
                      "B slides down toward 1", anchor="end", size=11))

    return _svg("throughput", "Decode throughput against batch size", body=body, desc=(
        f"Throughput B/(t0 + beta B) with t0 = {t0:g} ms and beta = {beta:g} ms rises from "
        f"{y1:,.0f} tokens/s at B = 1 to {y64:,.0f} at B = {b_max} and flattens toward the "
        f"roofline 1/beta = {roof:,.0f} tokens/s. A dotted line marks B = {b_max}, where the KV "
        f"cache is full: continuous batching keeps the batch there, while a static batch "
        f"slides down the curve toward B = 1 as its members finish."))


def _steps_to_points(ax: Axes, busy: list[int], durations_ms: list[float]) -> list[str]:
    """A step line: one level per run of equal batch sizes, in seconds."""
    pts, t, i = [], 0.0, 0
    while i < len(busy):
        j = i
        t_end = t
        while j < len(busy) and busy[j] == busy[i]:
            t_end += durations_ms[j] / 1000
            j += 1
        pts.append(_pt(ax.x(t), ax.y(busy[i])))
        pts.append(_pt(ax.x(t_end), ax.y(busy[i])))
        t, i = t_end, j
    pts.append(_pt(ax.x(t), ax.y(0)))
    return pts


def occupancy() -> str:
    """Page 2: requests producing a token in each step, static vs continuous, over time."""
    m = {k: figures.figure(f"multiplier.{k}") for k in (
        "requests", "batch", "t0_ms", "beta_ms", "seed", "static_s", "continuous_s",
        "static_mean_batch", "continuous_mean_batch", "multiplier")}
    lengths = figures.output_lengths(m["requests"], m["seed"])
    trace = figures.static_trace(lengths, m["batch"])
    static = [busy for _, busy in trace]
    continuous = figures.continuous_trace(lengths, m["batch"])
    # Static pays for every row its batch holds, finished or not; continuous only for
    # the slots in use.
    static_ms = [figures.step_ms(m["t0_ms"], m["beta_ms"], rows) for rows, _ in trace]
    continuous_ms = [figures.step_ms(m["t0_ms"], m["beta_ms"], b) for b in continuous]
    assert abs(sum(static_ms) / 1000 - m["static_s"]) < 1e-6
    assert abs(sum(continuous_ms) / 1000 - m["continuous_s"]) < 1e-6

    x1 = math.ceil(m["static_s"] / 20) * 20
    ax = Axes(0, x1, 0, m["batch"] * 1.3)
    body = _frame(ax, nice_ticks(0, x1, 7), nice_ticks(0, m["batch"], 4),
                  "time (s)", "requests producing a token")
    body.append(f'<polyline points="{" ".join(_steps_to_points(ax, static, static_ms))}" fill="none" '
                f'class="pp-b" stroke-width="1.4"/>')
    body.append(f'<polyline points="{" ".join(_steps_to_points(ax, continuous, continuous_ms))}" fill="none" '
                f'class="pp-a" stroke-width="2.5"/>')
    # Direct labels in the free band above the full batch, each with a swatch of its line.
    y_label = ax.y(m["batch"] * 1.17)
    for x, cls, text in (
        (ax.left + 8, "pp-a", f"continuous: {m['continuous_s']:.0f} s, mean {m['continuous_mean_batch']:.0f} per step"),
        (ax.x(x1 * 0.52), "pp-b", f"static: {m['static_s']:.0f} s, mean {m['static_mean_batch']:.0f} per step"),
    ):
        body.append(f'<line x1="{x:.1f}" y1="{y_label - 4:.1f}" x2="{x + 18:.1f}" y2="{y_label - 4:.1f}" '
                    f'class="{cls}" stroke-width="3"/>')
        body.append(_text(x + 24, y_label, text, size=11, weight="600"))
    desc = (f"{m['requests']} requests with {m['batch']} slots. Continuous batching keeps all "
            f"{m['batch']} slots producing until the queue runs dry and finishes in "
            f"{m['continuous_s']:.0f} s. Static batching starts each batch at {m['batch']}, drops "
            f"quickly as short answers finish, then runs its long answers alone for several "
            f"seconds before the next batch starts; it finishes in {m['static_s']:.0f} s.")
    return _svg("occupancy", "Requests producing a token per step, static vs continuous batching", desc, body)
