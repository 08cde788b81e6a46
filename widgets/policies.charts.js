// The policy lab's chart (widgets/policies.js lays the widget out): how long the oldest
// waiting request of one tier has waited, over the run, one line per policy shown. On
// the chart kit (widgets/charts.js); colours from policies.css in both schemes. Each
// chart says in words what it draws (its aria-label), and policies.js puts the same
// series in a table beside it.
//
//   waits(host, {title, lines: [{label, t, values, color, dash}]}) -> {destroy()}
// Each policy's run ends at its own time, so each line has its own times (`t`): the
// x values are merged and each line skips the others' points (spanGaps).
(function () {
  "use strict";
  const { fmt } = window.PySim;
  const { palette, axis, make, sizeOf, still } = window.PySim.charts("pol");

  const secs = (x) => (x >= 100 ? fmt(Math.round(x)) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) + " s";

  function waits(host, { title, lines }) {
    const t = [...new Set(lines.flatMap((l) => l.t))].sort((a, b) => a - b);
    const index = new Map(t.map((x, i) => [x, i]));
    const ys = lines.map((l) => {
      const out = new Array(t.length).fill(null);
      l.t.forEach((x, i) => { out[index.get(x)] = l.values[i]; });
      return out;
    });
    const pal = palette(host);
    const { width, height, narrow } = sizeOf(host, false);
    const series = [{ label: "Time", value: (u, x) => (x == null ? "–" : fmt(Math.round(x)) + " s") }];
    for (const l of lines) {
      series.push({ label: l.label, stroke: pal[l.color], width: 2, dash: l.dash, points: { show: false }, spanGaps: true,
        value: (u, y) => (y == null ? "–" : secs(y)) });
    }
    const opts = {
      width, height, title, cursor: still, legend: { live: true },
      scales: { x: { time: false }, y: { range: (u, lo, hi) => [0, Math.max(1, hi * 1.1)] } },
      series,
      axes: [
        axis(pal, narrow, { label: "seconds since the first arrival", values: (u, s) => s.map((x) => fmt(x)) }),
        axis(pal, narrow, { label: "longest wait (s)", size: narrow ? 40 : 50, values: (u, s) => s.map((x) => fmt(x)) }),
      ],
    };
    const words = lines.map((l) => `${l.label} peaks at ${secs(Math.max(0, ...l.values))}`).join("; ");
    return make(host, opts, [t, ...ys],
      `${title} over ${fmt(Math.round(t[t.length - 1] || 0))} s: ${words}.`);
  }

  window.PySim.policyCharts = { waits, secs };
})();
