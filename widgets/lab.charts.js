// The serving lab's charts (widgets/lab.js lays the widget out and runs it): uPlot
// pictures of what pysim computed, each rebuilt whole from a view model, so a theme
// switch or a new width is one more rebuild. Every chart is also written out as text
// (its aria-label) and as a table next to it (lab.js), because a canvas says nothing to
// a screen reader.
//
//   cdf(host, {series: [{label, cdf, pinned}], target, unit})   a latency CDF
//   timeline(host, {t, lines: [{label, values, color, dash, scale}], bars})  gauges over time
//   sweep(host, {points, target, capacity})                        the capacity sweep
//
// Each returns {destroy()}. Colours come from lab.css (light and dark).
(function () {
  "use strict";
  const { fmt } = window.PySim;

  function palette(el) {
    const css = getComputedStyle(el);
    const v = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
    return {
      text: v("--pysim-text", "#222"), grid: v("--pysim-grid", "#ccc"),
      now: v("--lab-now", "#2f5fcf"), pin: v("--lab-pin", "#7a4cc2"),
      second: v("--lab-second", "#b4501a"), bad: v("--lab-bad", "#c0392b"),
      target: v("--lab-target", "#555"), font: css.fontFamily || "sans-serif",
    };
  }

  const ms = (x) => (x >= 10000 ? fmt(Math.round(x / 100) / 10) + " s"
    : x >= 100 ? fmt(Math.round(x)) + " ms" : x >= 10 ? x.toFixed(1) + " ms" : x.toFixed(2) + " ms");

  function axis(pal, narrow, extra) {
    return Object.assign({
      stroke: pal.text, font: `${narrow ? 11 : 12}px ${pal.font}`, labelFont: `600 ${narrow ? 11 : 12}px ${pal.font}`,
      grid: { stroke: pal.grid, width: 1 }, ticks: { stroke: pal.grid, width: 1, size: 4 },
    }, extra);
  }

  // A vertical or horizontal reference line with its label, drawn on top of the plot.
  function marker(u, { x = null, y = null, color, text, dash = [6, 4] }) {
    const ctx = u.ctx;
    const r = uPlot.pxRatio;
    const { left, top, width, height } = u.bbox;
    ctx.save();
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = 1.5 * r;
    ctx.setLineDash(dash.map((d) => d * r));
    ctx.font = `600 ${11 * r}px ${getComputedStyle(u.root).fontFamily}`;
    ctx.beginPath();
    if (x !== null) {
      const px = u.valToPos(x, "x", true);
      if (px < left || px > left + width) { ctx.restore(); return; }
      ctx.moveTo(px, top); ctx.lineTo(px, top + height);
      ctx.stroke();
      const right = px + ctx.measureText(text).width + 8 * r < left + width;
      ctx.textAlign = right ? "left" : "right";
      ctx.fillText(text, px + (right ? 4 : -4) * r, top + 12 * r);
    } else {
      const py = u.valToPos(y, "y", true);
      ctx.moveTo(left, py); ctx.lineTo(left + width, py);
      ctx.stroke();
      ctx.textAlign = "left";
      ctx.fillText(text, left + 4 * r, py - 4 * r);
    }
    ctx.restore();
  }

  function make(host, opts, data, label) {
    host.replaceChildren();
    const plot = new uPlot(opts, data, host);
    const wrap = plot.root.querySelector(".u-wrap");
    if (wrap) { wrap.setAttribute("role", "img"); wrap.setAttribute("aria-label", label); }
    return { destroy() { plot.destroy(); } };
  }

  const sizeOf = (host, tall) => {
    const width = Math.max(260, host.clientWidth || 600);
    return { width, height: tall ? Math.round(Math.min(300, Math.max(200, width * 0.45))) : Math.round(Math.min(220, Math.max(160, width * 0.34))), narrow: width < 520 };
  };

  // ------------------------------------------------------------------ latency CDF
  // x: the latency (log scale: a queue makes the tail 100 times the median); y: the
  // share of requests at or under it, in %. The view gives the 0th to 100th
  // percentiles; a pinned run's points differ, so the x values are merged and each
  // line skips the others' points (spanGaps).
  function cdf(host, { title, series, target }) {
    const pal = palette(host);
    const { width, height, narrow } = sizeOf(host, false);
    const floor = 0.01;
    const xs = [...new Set(series.flatMap((s) => s.cdf.map((x) => Math.max(floor, x))))].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const ys = series.map((s) => {
      const out = new Array(xs.length).fill(null);
      s.cdf.forEach((x, q) => { out[index.get(Math.max(floor, x))] = q; }); // the highest q at equal x
      return out;
    });
    const opts = {
      width, height, title,
      cursor: { drag: { x: false, y: false, setScale: false } },
      legend: { live: true },
      // The target is always in view, so a reader sees how far the run is from it.
      scales: { x: { distr: 3, range: (u, lo, hi) => [Math.min(lo, target ? target / 1.5 : lo), Math.max(hi, target ? target * 1.5 : hi)] },
        y: { range: [0, 100] } },
      series: [
        { label: "Latency", value: (u, x) => (x == null ? "–" : ms(x)) },
        ...series.map((s) => ({
          label: s.label, stroke: s.pinned ? pal.pin : pal.now, width: s.pinned ? 2 : 2.5,
          dash: s.pinned ? [7, 4] : undefined, spanGaps: true, points: { show: false },
          value: (u, y) => (y == null ? "–" : y + "%"),
        })),
      ],
      axes: [
        axis(pal, narrow, { label: "latency (log scale)", values: (u, splits) => splits.map((s) => (s == null ? "" : ms(s))), space: narrow ? 56 : 70 }),
        axis(pal, narrow, { label: "% of requests", size: narrow ? 40 : 48, splits: () => [0, 25, 50, 75, 100] }),
      ],
      hooks: {
        draw: [(u) => {
          marker(u, { y: 90, color: pal.target, text: "p90", dash: [2, 3] });
          if (target) marker(u, { x: target, color: pal.bad, text: `target ${ms(target)}` });
        }],
      },
    };
    const words = series.map((s) => `${s.label}: p50 ${ms(s.cdf[50])}, p90 ${ms(s.cdf[90])}, p99 ${ms(s.cdf[99])}`).join("; ");
    return make(host, opts, [xs, ...ys], `${title}, cumulative distribution. ${words}. Target ${ms(target)}.`);
  }

  // ------------------------------------------------------------------ gauges over time
  function timeline(host, { title, t, lines, bars = null, yLabel, y2Label = "", percent = false }) {
    const pal = palette(host);
    const { width, height, narrow } = sizeOf(host, false);
    const color = (c) => pal[c] || c;
    const series = [{ label: "Time", value: (u, x) => (x == null ? "–" : fmt(Math.round(x)) + " s") }];
    const data = [t];
    for (const l of lines) {
      series.push({ label: l.label, stroke: color(l.color), width: 2, dash: l.dash, points: { show: false },
        value: (u, y) => (y == null ? "–" : percent ? (y).toFixed(1) + "%" : fmt(Math.round(y))) });
      data.push(l.values);
    }
    const scales = { x: { time: false }, y: { range: (u, lo, hi) => [0, percent ? 100 : Math.max(1, hi * 1.1)] } };
    const axes = [
      axis(pal, narrow, { label: "seconds since the first arrival", values: (u, s) => s.map((x) => fmt(x)) }),
      axis(pal, narrow, { label: yLabel, size: narrow ? 44 : 56, values: (u, s) => s.map((x) => (percent ? x + "%" : fmt(x))) }),
    ];
    if (bars) {
      scales.b = { range: (u, lo, hi) => [0, Math.max(1, hi * 1.25)] };
      series.push({ label: bars.label, scale: "b", stroke: color(bars.color), fill: color(bars.color),
        paths: uPlot.paths.bars({ size: [0.8, 8] }), points: { show: false },
        value: (u, y) => (y == null ? "–" : fmt(y)) });
      data.push(bars.values);
      axes.push(axis(pal, narrow, { scale: "b", side: 1, label: y2Label, size: narrow ? 36 : 44, grid: { show: false },
        stroke: color(bars.color), values: (u, s) => s.map((x) => (Number.isInteger(x) ? fmt(x) : "")) }));
    }
    const opts = { width, height, title, cursor: { drag: { x: false, y: false, setScale: false } },
      legend: { live: true }, scales, series, axes };
    const peak = lines.map((l) => `${l.label} peaks at ${percent ? Math.max(...l.values).toFixed(1) + "%" : fmt(Math.max(...l.values))}`);
    if (bars) peak.push(`${fmt(bars.values.reduce((a, b) => a + b, 0))} ${bars.label.toLowerCase()} in all`);
    return make(host, opts, data, `${title} over ${fmt(Math.round(t[t.length - 1]))} s: ${peak.join("; ")}.`);
  }

  // ------------------------------------------------------------------ the capacity sweep
  function sweep(host, { points, pinned, target, capacity }) {
    const pal = palette(host);
    const { width, height, narrow } = sizeOf(host, true);
    const rates = [...new Set([...points, ...(pinned || [])].map((p) => p.rate_scale))].sort((a, b) => a - b);
    const col = (list) => rates.map((r) => { const p = (list || []).find((q) => q.rate_scale === r); return p ? p.slo_attainment * 100 : null; });
    const series = [{ label: "Rate scale", value: (u, x) => (x == null ? "–" : "x" + x) },
      { label: "SLO attainment", stroke: pal.now, width: 2.5, points: { show: true, size: 7 }, spanGaps: true,
        value: (u, y) => (y == null ? "–" : y.toFixed(1) + "%") }];
    const data = [rates, col(points)];
    if (pinned) {
      series.push({ label: "Pinned", stroke: pal.pin, width: 2, dash: [7, 4], points: { show: true, size: 6 }, spanGaps: true,
        value: (u, y) => (y == null ? "–" : y.toFixed(1) + "%") });
      data.push(col(pinned));
    }
    const opts = {
      width, height, cursor: { drag: { x: false, y: false, setScale: false } }, legend: { live: true },
      scales: { x: { time: false, distr: 3, log: 2 }, y: { range: [0, 100] } },
      series,
      axes: [
        axis(pal, narrow, { label: "rate scale (x the trace's real rate, log scale)", splits: () => rates, values: (u, s) => s.map((x) => "x" + x) }),
        axis(pal, narrow, { label: "requests meeting both targets", size: narrow ? 44 : 52, values: (u, s) => s.map((x) => x + "%") }),
      ],
      hooks: { draw: [(u) => {
        marker(u, { y: target * 100, color: pal.bad, text: `${target * 100}% attainment` });
        if (capacity && capacity.rate_scale) marker(u, { x: capacity.rate_scale, color: pal.now, text: `x${capacity.rate_scale.toFixed(2)}` });
      }] },
    };
    const words = points.map((p) => `x${p.rate_scale} ${(p.slo_attainment * 100).toFixed(1)}%`).join(", ");
    return make(host, opts, data, `SLO attainment against the rate scale: ${words}.`);
  }

  window.PySim.labCharts = { cdf, timeline, sweep, ms };
})();
