// The cluster widget's charts (widgets/cluster.js lays the widget out and runs it), on
// the chart kit the uPlot widgets share (widgets/charts.js: palette, axes, markers, the
// latency CDF). Every chart is also written out as text (its aria-label) and as a table
// beside it (cluster.js): a canvas says nothing to a screen reader.
//
//   cdf(host, {title, series: [{label, cdf, pinned}], target})   a latency CDF, the SLO marked
//   replicas(host, {title, t, lines: [{label, values, role}], percent, yLabel})  a line per replica
//   sweep(host, {points, target})                                attainment against GPUs, both layouts
//   latency([ttftHost, tpotHost], view, pinnedView)           the run's TTFT and TPOT CDFs (the kit's)
//
// Each returns {destroy()} (latency, a list of them). Colours come from cluster.css and
// widgets.css (light and dark).
(function () {
  "use strict";
  const { fmt } = window.PySim;
  const { palette, axis, marker, make, sizeOf, cdf, latency, ms, still } = window.PySim.charts("cluster");
  const DASHES = [undefined, [6, 3], [2, 3], [10, 3, 2, 3]]; // past the palette's line colours

  // ------------------------------------------------------------------ one line per replica
  function replicas(host, { title, t, lines, yLabel, percent = false }) {
    const pal = palette(host);
    const { width, height, narrow } = sizeOf(host, false);
    const show = (y) => (y == null ? "–" : percent ? y.toFixed(1) + "%" : fmt(Math.round(y)));
    const series = [{ label: "Time", value: (u, x) => (x == null ? "–" : fmt(Math.round(x)) + " s") },
      ...lines.map((l, i) => ({ label: l.label, stroke: pal.lines[i % pal.lines.length], width: 2,
        dash: DASHES[Math.floor(i / pal.lines.length) % DASHES.length], points: { show: false }, value: (u, y) => show(y) }))];
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
    // A layout not run at a count (it met the target at fewer GPUs), or a run stopped once
    // it was sure to miss, has no measured attainment: a gap in its line, its bound in words.
    const value = (q) => (q && q.slo_attainment != null ? q.slo_attainment * 100 : null);
    const said = (q) => (!q ? "not run" : q.slo_attainment != null ? pctOf(q.slo_attainment * 100)
      : `below the target (at most ${(Math.floor(q.attainment_at_most * 1000 + 1e-9) / 10).toFixed(1)}%)`);
    const data = [gpus, points.map((p) => value(p.colocated)), points.map((p) => value(p.disaggregated))];
    const words = points.map((p) => `${p.gpus} GPUs: colocated ${said(p.colocated)}, disaggregated ${said(p.disaggregated)}`).join("; ");
    return make(host, opts, data, `SLO attainment against the number of GPUs. ${words}.`);
  }

  window.PySim.clusterCharts = { cdf, latency, replicas, sweep, ms };
})();
