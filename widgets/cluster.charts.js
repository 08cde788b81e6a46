// The cluster widget's charts (widgets/cluster.js lays the widget out and runs it):
// uPlot pictures of what pysim computed, each rebuilt whole from a view model, so a theme
// switch or a new width is one more rebuild. Every chart is also written out as text
// (its aria-label) and as a table beside it (cluster.js): a canvas says nothing to a
// screen reader. The shapes follow the serving lab's charts (widgets/lab.charts.js),
// which this page does not load.
//
//   cdf(host, {title, series: [{label, cdf, pinned}], target})   a latency CDF, the SLO marked
//   replicas(host, {title, t, lines: [{label, values, role}], percent, yLabel})  a line per replica
//   sweep(host, {points, target})                                attainment against GPUs, both layouts
//
// Each returns {destroy()}. Colours come from cluster.css (light and dark).
(function () {
  "use strict";
  const { fmt } = window.PySim;
  const LINE_COLOURS = 6; // --cluster-c0 ... --cluster-c5, then dashes tell replicas apart
  const DASHES = [undefined, [6, 3], [2, 3], [10, 3, 2, 3]];

  function palette(el) {
    const css = getComputedStyle(el);
    const v = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
    const lines = [];
    for (let i = 0; i < LINE_COLOURS; i++) lines.push(v(`--cluster-c${i}`, "#2f5fcf"));
    return {
      text: v("--pysim-text", "#222"), grid: v("--pysim-grid", "#ccc"),
      now: v("--cluster-now", "#2f5fcf"), pin: v("--cluster-pin", "#7a3fb8"),
      second: v("--cluster-second", "#a64710"), bad: v("--cluster-bad", "#b8322f"),
      target: v("--cluster-target", "#55585f"), lines, font: css.fontFamily || "sans-serif",
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

  // A reference line with its label: vertical at x, or horizontal at y.
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
      if (px >= left && px <= left + width) {
        ctx.moveTo(px, top); ctx.lineTo(px, top + height); ctx.stroke();
        const right = px + ctx.measureText(text).width + 8 * r < left + width;
        ctx.textAlign = right ? "left" : "right";
        ctx.fillText(text, px + (right ? 4 : -4) * r, top + 12 * r);
      }
    } else {
      const py = u.valToPos(y, "y", true);
      ctx.moveTo(left, py); ctx.lineTo(left + width, py); ctx.stroke();
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

  function sizeOf(host, tall) {
    const width = Math.max(260, host.clientWidth || 600);
    const height = tall ? Math.round(Math.min(280, Math.max(200, width * 0.42)))
      : Math.round(Math.min(220, Math.max(160, width * 0.34)));
    return { width, height, narrow: width < 520 };
  }
  const still = { drag: { x: false, y: false, setScale: false } };

  // ------------------------------------------------------------------ latency CDF
  // x: the latency, log scale; y: the share of requests at or under it. A pinned run's
  // percentiles fall on other x values, so the x values are merged and each line skips
  // the others' points (spanGaps).
  function cdf(host, { title, series, target }) {
    const pal = palette(host);
    const { width, height, narrow } = sizeOf(host, false);
    const floor = 0.01;
    const xs = [...new Set(series.flatMap((s) => s.cdf.map((x) => Math.max(floor, x))))].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const ys = series.map((s) => {
      const out = new Array(xs.length).fill(null);
      s.cdf.forEach((x, q) => { out[index.get(Math.max(floor, x))] = q; });
      return out;
    });
    const opts = {
      width, height, title, cursor: still, legend: { live: true },
      scales: { x: { distr: 3, range: (u, lo, hi) => [Math.min(lo, target / 1.5), Math.max(hi, target * 1.5)] },
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
        axis(pal, narrow, { label: "latency (log scale)", values: (u, s) => s.map((x) => (x == null ? "" : ms(x))), space: narrow ? 56 : 70 }),
        axis(pal, narrow, { label: "% of requests", size: narrow ? 40 : 48, splits: () => [0, 25, 50, 75, 100] }),
      ],
      hooks: { draw: [(u) => {
        marker(u, { y: 90, color: pal.target, text: "p90", dash: [2, 3] });
        marker(u, { x: target, color: pal.bad, text: `SLO ${ms(target)}` });
      }] },
    };
    const words = series.map((s) => `${s.label}: p50 ${ms(s.cdf[50])}, p90 ${ms(s.cdf[90])}, p99 ${ms(s.cdf[99])}`).join("; ");
    return make(host, opts, [xs, ...ys], `${title}, cumulative distribution. ${words}. SLO ${ms(target)}.`);
  }

  // ------------------------------------------------------------------ one line per replica
  function replicas(host, { title, t, lines, yLabel, percent = false }) {
    const pal = palette(host);
    const { width, height, narrow } = sizeOf(host, false);
    const show = (y) => (y == null ? "–" : percent ? y.toFixed(1) + "%" : fmt(Math.round(y)));
    const series = [{ label: "Time", value: (u, x) => (x == null ? "–" : fmt(Math.round(x)) + " s") },
      ...lines.map((l, i) => ({ label: l.label, stroke: pal.lines[i % LINE_COLOURS], width: 2,
        dash: DASHES[Math.floor(i / LINE_COLOURS) % DASHES.length], points: { show: false }, value: (u, y) => show(y) }))];
    const opts = {
      width, height, title, cursor: still, legend: { live: true }, series,
      scales: { x: { time: false }, y: { range: (u, lo, hi) => [0, percent ? Math.max(5, Math.min(100, hi * 1.15)) : Math.max(1, hi * 1.1)] } },
      axes: [
        axis(pal, narrow, { label: "seconds since the first arrival", values: (u, s) => s.map((x) => fmt(x)) }),
        axis(pal, narrow, { label: yLabel, size: narrow ? 44 : 56, values: (u, s) => s.map((x) => (percent ? x + "%" : fmt(x))) }),
      ],
    };
    const peaks = lines.map((l) => `${l.label} ${percent ? "ends at " + show(l.values[l.values.length - 1]) : "peaks at " + show(Math.max(...l.values))}`);
    return make(host, opts, [t, ...lines.map((l) => l.values)],
      `${title} over ${fmt(Math.round(t[t.length - 1]))} s, one line per replica: ${peaks.join("; ")}.`);
  }

  // ------------------------------------------------------------------ the GPU sweep
  function sweep(host, { points, target }) {
    const pal = palette(host);
    const { width, height, narrow } = sizeOf(host, true);
    const gpus = points.map((p) => p.gpus);
    const pctOf = (y) => (y == null ? "–" : y.toFixed(1) + "%");
    const opts = {
      width, height, cursor: still, legend: { live: true },
      scales: { x: { time: false, range: (u, lo, hi) => [Math.max(0, lo - 0.5), hi + 0.5] }, y: { range: [0, 100] } },
      series: [
        { label: "GPUs", value: (u, x) => (x == null ? "–" : fmt(x)) },
        { label: "Colocated", stroke: pal.now, width: 2.5, points: { show: true, size: 7 }, value: (u, y) => pctOf(y) },
        { label: "Disaggregated", stroke: pal.second, width: 2, dash: [6, 3], points: { show: true, size: 7 }, value: (u, y) => pctOf(y) },
      ],
      axes: [
        axis(pal, narrow, { label: "GPUs", splits: () => gpus, values: (u, s) => s.map((x) => fmt(x)) }),
        axis(pal, narrow, { label: "requests meeting both SLOs", size: narrow ? 44 : 52, values: (u, s) => s.map((x) => x + "%") }),
      ],
      hooks: { draw: [(u) => marker(u, { y: target * 100, color: pal.bad, text: `${target * 100}% target` })] },
    };
    const data = [gpus, points.map((p) => p.colocated.slo_attainment * 100), points.map((p) => p.disaggregated.slo_attainment * 100)];
    const words = points.map((p) => `${p.gpus} GPUs: colocated ${pctOf(p.colocated.slo_attainment * 100)}, ` +
      `disaggregated ${pctOf(p.disaggregated.slo_attainment * 100)}`).join("; ");
    return make(host, opts, data, `SLO attainment against the number of GPUs. ${words}.`);
  }

  window.PySim.clusterCharts = { cdf, replicas, sweep, ms };
})();
