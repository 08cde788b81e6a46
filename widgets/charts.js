// The chart kit the uPlot widgets draw with (the batch-size chart, the serving lab's
// charts, the cluster's): what every chart of theirs shares, written once. A lab or
// cluster chart is rebuilt whole from a view model, so a theme switch or a new width is
// one more rebuild; each is also given an aria-label that says in words what it draws (a
// canvas says nothing to a screen reader), and its widget puts a table beside it. The
// build ships this file to every page whose widgets load uPlot (sitebuild/assets.py,
// CHARTS).
//
//   const kit = PySim.charts("lab");  // colours from the widget's CSS: --lab-now, --lab-c0...
//   kit.palette(el, own)              // {text, grid, now, pin, second, bad, target, lines, font, ...own}
//                                     // (a widget without --lab-now... takes widgets.css's --pysim-now...)
//   kit.axis(pal, narrow, extra)      // a uPlot axis in the page's colours and font
//   kit.marker(u, {x | y, color, text, dash})  // a labelled reference line, in a draw hook
//   kit.make(host, opts, data, label) // the chart in `host`, its plot area a labelled image
//   kit.sizeOf(host, tall)            // {width, height, narrow} for the host's width
//   kit.cdf(host, {title, series: [{label, cdf, pinned}], target})  a latency CDF
//   kit.latency([ttftHost, tpotHost], view, pinnedView)  // a run's TTFT and TPOT CDFs: the charts
//   kit.ms(x), kit.still              // a latency in words; a cursor that zooms nothing
(function () {
  "use strict";
  const { fmt, labelBox } = window.PySim;
  const LINE_COLOURS = 6; // --PREFIX-c0 ... c5: one per replica, then dashes tell them apart
  const ROLES = ["now", "pin", "second", "bad", "target"]; // a chart's colours by what they mark

  const ms = (x) => (x >= 10000 ? fmt(Math.round(x / 100) / 10) + " s"
    : x >= 100 ? fmt(Math.round(x)) + " ms" : x >= 10 ? x.toFixed(1) + " ms" : x.toFixed(2) + " ms");
  const still = { drag: { x: false, y: false, setScale: false } };

  function axis(pal, narrow, extra) {
    return Object.assign({
      stroke: pal.text, font: `${narrow ? 11 : 12}px ${pal.font}`, labelFont: `600 ${narrow ? 11 : 12}px ${pal.font}`,
      grid: { stroke: pal.grid, width: 1 }, ticks: { stroke: pal.grid, width: 1, size: 4 },
    }, extra);
  }

  // A vertical (x) or horizontal (y) reference line with its label, drawn over the plot;
  // a vertical one outside the plot's range is not drawn. The label sits on a box of the
  // page's colour (dom.js's labelBox), beside its own line, never across it or another
  // (a p90 line ran through the target's label, which read as struck through).
  function marker(u, { x = null, y = null, color, text, dash = [6, 4] }) {
    const ctx = u.ctx;
    const r = uPlot.pxRatio;
    const { left, top, width, height } = u.bbox;
    const css = getComputedStyle(u.root);
    const font = `600 ${11 * r}px ${css.fontFamily}`;
    const bg = css.getPropertyValue("--md-default-bg-color").trim() || "#fff";
    ctx.save();
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5 * r;
    ctx.setLineDash(dash.map((d) => d * r));
    ctx.font = font;
    const textWidth = ctx.measureText(text).width;
    ctx.beginPath();
    if (x !== null) {
      const px = u.valToPos(x, "x", true);
      if (px >= left && px <= left + width) {
        ctx.moveTo(px, top); ctx.lineTo(px, top + height); ctx.stroke();
        ctx.restore();
        const right = px + textWidth + 10 * r < left + width;
        labelBox(ctx, text, px + (right ? 5 : -5) * r, top + height * 0.35, { color, bg, font, align: right ? "left" : "right", ratio: r });
        return;
      }
    } else {
      const py = u.valToPos(y, "y", true);
      ctx.moveTo(left, py); ctx.lineTo(left + width, py); ctx.stroke();
      ctx.restore();
      labelBox(ctx, text, left + 5 * r, py - 17 * r, { color, bg, font, align: "left", ratio: r });
      return;
    }
    ctx.restore();
  }

  // Away from the plot, the legend shows the last point that has a value, not dashes
  // (uPlot empties it when the pointer leaves).
  function lastPoint(u) {
    if (u.cursor.idx != null) return;
    const xs = u.data[0] || [];
    for (let i = xs.length - 1; i >= 0; i--) {
      if (u.data.slice(1).some((ys) => ys[i] != null)) { u.setLegend({ idx: i }, false); return; }
    }
  }

  function make(host, opts, data, label) {
    host.replaceChildren();
    const hooks = Object.assign({}, opts.hooks);
    for (const name of ["ready", "setCursor"]) hooks[name] = [...(hooks[name] || []), lastPoint];
    const plot = new uPlot(Object.assign({}, opts, { hooks }), data, host);
    const wrap = plot.root.querySelector(".u-wrap");
    if (wrap) { wrap.setAttribute("role", "img"); wrap.setAttribute("aria-label", label); }
    return { destroy() { plot.destroy(); } };
  }

  function sizeOf(host, tall) {
    const width = Math.max(260, host.clientWidth || 600);
    const height = tall ? Math.round(Math.min(300, Math.max(200, width * 0.45)))
      : Math.round(Math.min(220, Math.max(160, width * 0.34)));
    return { width, height, narrow: width < 520 };
  }

  function charts(prefix) {
    // The chart's colours (dom.js's palette): the shared text and grid colours, the
    // widget's --PREFIX-now, -pin, -second, -bad and -target (or, where the widget's sheet
    // sets none, widgets.css's --pysim-now...), its line colours --PREFIX-c0... as
    // `lines`; `own` names more of the widget's ({speed: "--bs-speed"}).
    function palette(el, own = {}) {
      const names = { text: "--pysim-text", grid: "--pysim-grid" };
      for (const key of ROLES) Object.assign(names, { [key]: `--${prefix}-${key}`, ["shared-" + key]: `--pysim-${key}` });
      for (let i = 0; i < LINE_COLOURS; i++) names["c" + i] = `--${prefix}-c${i}`;
      const pal = PySim.palette(el, { ...names, ...own });
      for (const key of ROLES) pal[key] = pal[key] || pal["shared-" + key];
      pal.lines = Array.from({ length: LINE_COLOURS }, (_, i) => pal["c" + i]);
      return pal;
    }

    // x: the latency, log scale (a queue makes the tail 100 times the median); y: the
    // share of requests at or under it, in %. The view gives the 0th to 100th
    // percentiles; a pinned run's fall on other x values, so the x values are merged and
    // each line skips the others' points (spanGaps). The target is always in view.
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
        width, height, title, cursor: still, legend: { live: true },
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
          axis(pal, narrow, { label: "latency (log scale)", values: (u, s) => s.map((x) => (x == null ? "" : ms(x))), space: narrow ? 56 : 70 }),
          axis(pal, narrow, { label: "% of requests", size: narrow ? 40 : 48, splits: () => [0, 25, 50, 75, 100] }),
        ],
        hooks: { draw: [(u) => {
          marker(u, { y: 90, color: pal.target, text: "p90", dash: [2, 3] });
          if (target) marker(u, { x: target, color: pal.bad, text: `target ${ms(target)}` });
        }] },
      };
      const words = series.map((s) => `${s.label}: p50 ${ms(s.cdf[50])}, p90 ${ms(s.cdf[90])}, p99 ${ms(s.cdf[99])}`).join("; ");
      return make(host, opts, [xs, ...ys], `${title}, cumulative distribution. ${words}. Target ${ms(target)}.`);
    }

    // A run's TTFT and TPOT (a view's ttft_ms, tpot_ms and slo, as the lab and the cluster
    // give them): a CDF each in `hosts`, the pinned run's dashed beside it; a host whose
    // run has no such latency is emptied. Returns the charts drawn.
    function latency(hosts, view, pinned) {
      return [["ttft_ms", "TTFT"], ["tpot_ms", "TPOT"]].flatMap(([key, title], i) => {
        if (!view[key].cdf.length) { hosts[i].replaceChildren(); return []; }
        const series = [{ label: "this run", cdf: view[key].cdf },
          ...(pinned ? [{ label: "pinned", cdf: pinned[key].cdf, pinned: true }] : [])].filter((s) => s.cdf.length);
        return [cdf(hosts[i], { title, series, target: view.slo[key] })];
      });
    }

    return { palette, axis, marker, make, sizeOf, cdf, latency, ms, still };
  }

  window.PySim.charts = charts;
})();
