// The serving lab's charts (widgets/lab.js lays the widget out and runs it), on the
// chart kit the uPlot widgets share (widgets/charts.js: palette, axes, markers, the
// latency CDF). Every chart is also written out as text (its aria-label) and as a table
// next to it (lab.js), because a canvas says nothing to a screen reader.
//
//   cdf(host, {series: [{label, cdf, pinned}], target, unit})   a latency CDF
//   timeline(host, {t, lines: [{label, values, color, dash, scale}], bars})  gauges over time
//   sweep(host, {points, target, capacity})                        the capacity sweep
//   latency([ttftHost, tpotHost], view, pinnedView)           the run's TTFT and TPOT CDFs (the kit's)
//
// Each returns {destroy()} (latency, a list of them). Colours come from lab.css and
// widgets.css (light and dark).
(function () {
  "use strict";
  const { fmt } = window.PySim;

  const { palette, axis, marker, make, sizeOf, cdf, latency, ms, still } = window.PySim.charts("lab");

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
      width, height, cursor: still, legend: { live: true },
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

  window.PySim.labCharts = { cdf, latency, timeline, sweep, ms };
})();
