// Widget for simulation 4, choosing the batch size (pysim/sims/batch_size.py, bridge name
// "batch_size").
//
// pysim computes every number: the KV pool, the two limits, the recommended
// --max-num-seqs, the answer sentence and the curve of per-user speed and total
// throughput against the batch size. The controls, their labels, ranges and help come
// from pysim's description of the config (live.js draws them); this file lays the widget
// out, applies the presets, and draws the view model with uPlot (the global `uPlot`,
// shipped on this page by the hook, with the chart kit, charts.js). The chart is a
// picture of the table below it.
(function () {
  "use strict";
  const { h, tableBox, fmtUpTo, compact, stripePattern, strokeLine, labelBox } = window.PySim;
  const NAME = "batch_size";
  const kit = window.PySim.charts("bs");

  // ---------------------------------------------------------------- formatting

  const int = (x) => fmtUpTo(x, 0);
  const speed = (x) => (x >= 100 ? int(x) : x.toFixed(x >= 10 ? 1 : 2));
  // Batch sizes on the log axis are powers of two: 1,024 and up read as 1K, 2K, ... 64K.
  const batchTick = (s) => (s == null ? "" : s >= 1024 && s % 1024 === 0 ? s / 1024 + "K" : int(s));
  const gb = (bytes) => (bytes / 1e9).toFixed(2).replace(/\.?0+$/, "") + " GB";
  const kib = (bytes) => (Number.isInteger(bytes / 1024) ? int(bytes / 1024) : (bytes / 1024).toFixed(1)) + " KiB";
  const compactTicks = (u, splits) => splits.map((s) => (s == null ? "" : compact(s)));

  // The chart's own colours (batch_size.css), beside the kit's text and grid; labels sit
  // on boxes of the page's background.
  const COLOURS = {
    bg: "--md-default-bg-color", speed: "--bs-speed", total: "--bs-total", memory: "--bs-memory",
    rec: "--bs-rec", compute: "--bs-compute", nofit: "--bs-nofit",
  };

  // ---------------------------------------------------------------- the widget

  function mount(w) {
    const modelInfo = (id) => w.view.catalog.models.find((m) => m.id === id) || w.view.catalog.models[0];

    // A model reads at most its own context: a new model keeps the request inside it.
    const contextNote = h("span", { class: "bs-control-note", "aria-live": "polite" });
    function onChange(name, value, delay) {
      if (name === "model") {
        const max = modelInfo(value).max_context_tokens;
        const ctx = w.draft.config.context_tokens;
        const lower = typeof ctx === "number" && ctx > max;
        contextNote.textContent = lower ? `Lowered to ${int(max)}, the longest context ${modelInfo(value).label} reads.` : "";
        w.set(lower ? { model: value, context_tokens: max } : { model: value }, delay);
        if (lower) controls.get("context_tokens").set(max);
        return;
      }
      if (name === "context_tokens") contextNote.textContent = "";
      w.set({ [name]: value }, delay);
    }
    const controls = w.controls({ onChange });
    controls.root.classList.add("bs-controls");
    if (controls.has("context_tokens")) controls.get("context_tokens").root.append(contextNote);

    function applyPreset(key) {
      const p = w.view.presets[key];
      const patch = {
        context_tokens: Math.min(p.context_tokens, modelInfo(w.draft.config.model).max_context_tokens),
        target_tok_s: p.target_tok_s,
      };
      contextNote.textContent = "";
      controls.set(patch);
      w.set(patch, 0);
    }

    const presetButtons = Object.entries(w.view.presets).map(([key, p]) =>
      h("button", {
        type: "button", class: "md-button bs-preset", "data-preset": key, "aria-pressed": "false", "data-needs-python": true,
        onclick: () => applyPreset(key),
      }, h("span", { class: "bs-preset-name" }, p.label),
      h("span", { class: "bs-preset-detail" }, `${int(p.context_tokens)} tokens, ${p.target_tok_s} tok/s`)));
    const presetWhy = h("p", { class: "bs-preset-why" });

    const answerEl = h("p", { class: "bs-answer", "aria-live": "polite" });
    const reasonEl = h("div", { class: "bs-reason", role: "note", "aria-live": "polite" });
    const figuresEl = h("dl", { class: "bs-figures" });
    const noteEl = h("p", { class: "bs-note" });
    const chartEl = h("div", { class: "bs-chart" });
    // The two vertical lines name their batch in the legend: by default both stand at the
    // same batch, one drawn over the other (renderText fills the values in).
    const legendValue = { memory: h("span", { class: "bs-legend-value" }), rec: h("span", { class: "bs-legend-value" }) };
    const legendEl = h("div", { class: "pysim-legend bs-legend", "aria-label": "Chart legend" },
      [["speed", "per-user speed (left axis)"], ["total", "total throughput (right axis)"],
        ["target", "target speed (diamond: where the curve meets it)"], ["rec", "recommended --max-num-seqs"],
        ["memory", "memory limit (dashed, over the recommendation where they meet)"], ["nofit", "does not fit in memory"],
        ["compute", "compute-bound region"], ["pt-memory", "memory-bound point"], ["pt-compute", "compute-bound point"]]
        .map(([key, text]) => h("span", { class: "bs-legend-item", "data-key": key }, h("span", { class: "bs-sw bs-sw-" + key }),
          h("span", {}, text, legendValue[key] || null))));
    const table = h("table", { class: "bs-table" });

    w.body.append(
      h("div", { class: "bs-presets", role: "group", "aria-label": "Presets" },
        h("span", { class: "bs-presets-label" }, "Presets:"), presetButtons),
      presetWhy, controls.root, w.messages,
      answerEl, reasonEl, figuresEl,
      h("h4", { class: "bs-chart-title" }, "Per-user speed and total throughput against the batch size"),
      noteEl, chartEl, legendEl,
      h("details", { class: "bs-details", open: true },
        h("summary", {}, "Table: every batch size on the chart"),
        tableBox(table, { class: "bs-table-wrap" },
          "Every batch size on the chart (the table scrolls sideways on a narrow screen)")));

    // ---------------------------------------------------------------- drawing: text
    function figure(key, label, value, detail) {
      return h("div", { class: "bs-figure", "data-key": key },
        h("dt", {}, label), h("dd", {}, h("span", { class: "bs-value" }, value),
          detail ? h("span", { class: "bs-detail" }, detail) : null));
    }

    function renderText() {
      const v = w.view;
      const c = v.config;
      for (const b of presetButtons) b.setAttribute("aria-pressed", String(b.dataset.preset === v.active_preset));
      const preset = v.active_preset && v.presets[v.active_preset];
      presetWhy.textContent = preset
        ? `${preset.label}: ${preset.why}.`
        : "Custom settings: neither preset's context and target.";

      answerEl.textContent = v.answer;
      answerEl.dataset.recommended = v.recommended_max_num_seqs === null ? "none" : String(v.recommended_max_num_seqs);
      w.root.dataset.reason = v.reason || "";
      // When nothing works, the answer is said once, in the warning box (it already
      // holds pysim's reason: said again below, it would read as two messages).
      answerEl.hidden = !!v.reason;
      reasonEl.hidden = !v.reason;
      reasonEl.textContent = v.reason ? v.answer : "";

      const rec = v.recommended_max_num_seqs;
      figuresEl.replaceChildren(...[
        figure("recommended", "Set --max-num-seqs to", rec === null ? "none" : int(rec),
          rec === null ? v.reason.replace(/_/g, " ") : `limited by ${v.limited_by}`),
        figure("max_batch_memory", "Memory allows", int(v.max_batch_memory),
          `requests of ${int(c.context_tokens)} tokens`),
        figure("max_batch_speed", "The speed target allows", int(v.max_batch_speed),
          `at ≥ ${c.target_tok_s} tok/s each`),
        figure("kv_bytes_per_token", "KV cache per token", `${int(v.kv_bytes_per_token)} B`,
          `${kib(v.kv_bytes_per_token)}, ${v.precision.kv_cache}`),
        figure("weight_bytes", "Weights", gb(v.weight_bytes), v.precision.weights),
        figure("kv_pool_bytes", "KV pool", gb(v.kv_pool_bytes),
          `${gb(v.usable_bytes)} usable − weights − ${gb(v.runtime_bytes)} for the runtime`),
        figure("kv_pool_tokens", "KV pool holds", int(v.kv_pool_tokens), "tokens"),
        rec === null ? null : figure("at_recommended", `At ${int(rec)} requests`,
          `${speed(v.per_user_tok_s)} tok/s`,
          `per user; ${int(v.total_tok_s)} tok/s in total; step ${v.t_step_ms.toFixed(2)} ms`),
        figure("crossover_batch", "Compute binds from batch",
          v.crossover_batch === null ? "never" : int(v.crossover_batch),
          v.crossover_batch === null ? "each request's KV read outweighs its FLOPs" : "below that, reading memory binds"),
      ].filter(Boolean));
      noteEl.replaceChildren(h("strong", {}, "Ideal ceiling. "), v.note);
      legendValue.rec.textContent = `: ${rec === null ? "none" : int(rec)}`;
      legendValue.memory.textContent = `: ${int(v.max_batch_memory)}` + (rec === v.max_batch_memory ? " (the same batch)" : "");
    }

    function renderTable() {
      const v = w.view;
      const rec = v.recommended_max_num_seqs;
      const head = h("tr", {}, ["Batch", "Step (ms)", "Per-user tok/s", "Total tok/s", "Bound", "Fits in memory", "Meets target"]
        .map((t) => h("th", { scope: "col" }, t)));
      const rows = v.curve.map((p) => {
        const isRec = p.batch === rec;
        return h("tr", {
          "data-batch": p.batch, "data-bound": p.bound, class: [isRec ? "bs-rec-row" : "", p.fits ? "" : "bs-nofit-row"].join(" ").trim() || null,
        },
        h("th", { scope: "row" }, int(p.batch), isRec ? h("span", { class: "bs-rec-tag" }, " recommended") : null),
        h("td", {}, p.t_step_ms.toFixed(2)), h("td", {}, speed(p.per_user_tok_s)), h("td", {}, int(p.total_tok_s)),
        h("td", { class: "bs-bound-" + p.bound }, p.bound), h("td", {}, p.fits ? "yes" : "no"),
        h("td", {}, p.meets_target ? "yes" : "no"));
      });
      table.replaceChildren(
        h("caption", {}, `${v.gpu.label}, ${v.model.label}, ${int(v.config.context_tokens)} tokens of context, target ${v.config.target_tok_s} tok/s per user (ideal ceilings)`),
        h("thead", {}, head), h("tbody", {}, rows));
    }

    // ---------------------------------------------------------------- drawing: chart
    let plot = null;
    let pal = null;

    function chartData() {
      const { curve } = w.view;
      return [curve.map((p) => p.batch), curve.map((p) => p.per_user_tok_s), curve.map((p) => p.total_tok_s)];
    }

    const LABEL_BAND = 38; // px above the plot for the labels of its vertical lines (two rows)
    function chartSize() {
      const width = Math.max(220, Math.floor(chartEl.clientWidth));
      return { width, height: width < 520 ? 270 : 320 };
    }

    function summary() {
      const v = w.view;
      const first = v.curve[0];
      const last = v.curve[v.curve.length - 1];
      const rec = v.recommended_max_num_seqs;
      return `Chart, ideal ceilings: as the batch grows from ${int(first.batch)} to ${int(last.batch)}, ` +
        `per-user speed falls from ${speed(first.per_user_tok_s)} to ${speed(last.per_user_tok_s)} tokens/s and ` +
        `total throughput rises from ${int(first.total_tok_s)} to ${int(last.total_tok_s)} tokens/s. ` +
        `Memory allows ${int(v.max_batch_memory)} requests; the ${v.config.target_tok_s} tokens/s target allows ` +
        `${int(v.max_batch_speed)}; recommended: ${rec === null ? "none" : int(rec)}. The table below lists every point.`;
    }

    // Under the curves: where compute binds (tinted) and where memory runs out (hatched).
    function drawRegions(u) {
      const ratio = uPlot.pxRatio;
      const { left, top, width, height } = u.bbox;
      const right = left + width;
      const ctx = u.ctx;
      const xMax = u.scales.x.max;
      ctx.save();
      ctx.beginPath();
      ctx.rect(left, top, width, height);
      ctx.clip();
      const cross = w.view.crossover_batch;
      if (cross !== null && cross <= xMax) {
        const x0 = u.valToPos(cross, "x", true);
        ctx.fillStyle = pal.compute;
        ctx.fillRect(x0, top, right - x0, height);
      }
      const m = w.view.max_batch_memory;
      const xm = m >= 1 ? u.valToPos(m, "x", true) : left;
      if (xm < right) {
        ctx.fillStyle = stripePattern(ctx, pal.nofit, { size: Math.round(7 * ratio), alpha: 0.55, lineWidth: Math.max(1, ratio) });
        ctx.fillRect(xm, top, right - xm, height);
      }
      ctx.restore();
    }

    // A text label on a box of the page colour, kept inside the canvas.
    function label(u, text, x, y, color, align) {
      const ratio = uPlot.pxRatio;
      labelBox(u.ctx, text, x, y, { color, bg: pal.bg, align, font: `600 ${Math.round(11 * ratio)}px ${pal.font}`, ratio });
    }

    // A label beside a vertical line at x, in the band above the plot (LABEL_BAND, kept
    // free by the chart's padding, so no label sits on a curve or the corner's ticks): to
    // its right, or to its left when it would run past the plot's right edge.
    function lineLabel(u, text, x, row, color) {
      const ratio = uPlot.pxRatio;
      const { top, left, width } = u.bbox;
      u.ctx.font = `600 ${Math.round(11 * ratio)}px ${pal.font}`;
      const textWidth = u.ctx.measureText(text).width;
      const y = top - (LABEL_BAND - 2 - row * 17) * ratio;
      if (x + 5 * ratio + textWidth <= left + width) label(u, text, x + 5 * ratio, y, color, "left");
      else label(u, text, x - 5 * ratio, y, color, "right");
    }

    function vline(ctx, x, u, color, width, dash) {
      strokeLine(ctx, x, u.bbox.top, x, u.bbox.top + u.bbox.height, { color, width, dash });
    }

    // Over the curves: target, memory limit, recommendation, and a marker per point
    // (hollow circle: memory-bound; filled square: compute-bound).
    function drawMarks(u) {
      const ratio = uPlot.pxRatio;
      const ctx = u.ctx;
      const { left, top, width, height } = u.bbox;
      const v = w.view;
      const small = u.width < 520;
      const m = v.max_batch_memory;
      const rec = v.recommended_max_num_seqs;
      ctx.save();
      ctx.beginPath();
      ctx.rect(left - 8 * ratio, top - 8 * ratio, width + 16 * ratio, height + 16 * ratio);
      ctx.clip();

      // Markers per point, on both curves.
      const r = (small ? 2.3 : 3) * ratio;
      for (const p of v.curve) {
        const x = u.valToPos(p.batch, "x", true);
        for (const [value, scale, color] of [[p.per_user_tok_s, "speed", pal.speed], [p.total_tok_s, "total", pal.total]]) {
          const y = u.valToPos(value, scale, true);
          ctx.lineWidth = 1.5 * ratio;
          ctx.strokeStyle = color;
          if (p.bound === "compute") {
            ctx.fillStyle = color;
            ctx.fillRect(x - r - ratio / 2, y - r - ratio / 2, 2 * r + ratio, 2 * r + ratio);
          } else {
            ctx.fillStyle = pal.bg;
            ctx.beginPath();
            ctx.arc(x, y, r, 0, 2 * Math.PI);
            ctx.fill();
            ctx.stroke();
          }
        }
      }

      // Target speed: a horizontal line on the per-user axis, and a diamond where the
      // per-user curve meets it (the largest batch the target allows).
      const ty = u.valToPos(v.config.target_tok_s, "speed", true);
      strokeLine(ctx, left, ty, left + width, ty, { color: pal.speed, width: 1.5 * ratio, dash: [2 * ratio, 4 * ratio] });
      let diamond = null;
      if (v.max_batch_speed >= 1 && v.max_batch_speed <= u.scales.x.max) {
        // Larger, on a ring of the page colour: it stays visible over the hatching of
        // batches that do not fit, where the target is often met.
        const sx = u.valToPos(v.max_batch_speed, "x", true);
        const s = 6.5 * ratio;
        ctx.beginPath();
        ctx.moveTo(sx, ty - s); ctx.lineTo(sx + s, ty); ctx.lineTo(sx, ty + s); ctx.lineTo(sx - s, ty);
        ctx.closePath();
        ctx.lineWidth = 3 * ratio;
        ctx.strokeStyle = pal.bg;
        ctx.stroke();
        ctx.fillStyle = pal.speed;
        ctx.fill();
        diamond = sx;
      }

      // Recommendation and memory limit: vertical lines, the memory one dashed and drawn
      // last, so where both stand at one batch the green shows between its red dashes;
      // rings on both curves at the recommendation.
      if (rec !== null) {
        const xr = u.valToPos(rec, "x", true);
        vline(ctx, xr, u, pal.rec, 2.5 * ratio, []);
        for (const [value, scale] of [[v.per_user_tok_s, "speed"], [v.total_tok_s, "total"]]) {
          const y = u.valToPos(value, scale, true);
          ctx.strokeStyle = pal.rec;
          ctx.lineWidth = 2.5 * ratio;
          ctx.beginPath();
          ctx.arc(xr, y, (small ? 5.5 : 7) * ratio, 0, 2 * Math.PI);
          ctx.stroke();
        }
      }
      if (m >= 1) vline(ctx, u.valToPos(m, "x", true), u, pal.memory, 2 * ratio, [6 * ratio, 6 * ratio]);
      ctx.restore();

      // Labels last, on top of everything, and never clipped by the plot area.
      label(u, `target ${v.config.target_tok_s} tok/s`, left + 6 * ratio, ty - 17 * ratio, pal.speed, "left");
      // The diamond's batch under it, where the target is met.
      if (diamond !== null) {
        const text = int(v.max_batch_speed);
        u.ctx.font = `600 ${Math.round(11 * ratio)}px ${pal.font}`;
        label(u, text, diamond - u.ctx.measureText(text).width / 2, ty + 9 * ratio, pal.speed, "left");
      }
      // Above the plot: one label per line, one row each; when the two lines are one
      // (memory sets the recommendation), one label says both.
      if (rec !== null && m >= 1 && Math.abs(u.valToPos(rec, "x", true) - u.valToPos(m, "x", true)) < 1) {
        lineLabel(u, `recommended = memory limit: ${int(rec)}`, u.valToPos(rec, "x", true), 1, pal.rec);
      } else {
        if (rec !== null) lineLabel(u, `recommended: ${int(rec)}`, u.valToPos(rec, "x", true), 1, pal.rec);
        if (m >= 1) lineLabel(u, `memory limit: ${int(m)}`, u.valToPos(m, "x", true), rec === null ? 1 : 0, pal.memory);
      }
      if (m < 1) label(u, "nothing fits in memory", left + 6 * ratio, top + 4 * ratio, pal.memory, "left");
    }

    function makeChart() {
      if (plot) { plot.destroy(); plot = null; }
      pal = kit.palette(w.root, COLOURS);
      const { width, height } = chartSize();
      const narrow = width < 520;
      const axis = (extra) => kit.axis(pal, narrow, extra);
      const opts = {
        width, height,
        padding: [LABEL_BAND, null, null, null], // room above the plot for the lines' labels
        cursor: { drag: { x: false, y: false, setScale: false }, points: { size: 8 } },
        legend: { live: true },
        scales: {
          x: { distr: 3, log: 2 },
          speed: { range: (u, lo, hi) => [0, Math.max(hi, w.view.config.target_tok_s) * 1.12] },
          total: { range: (u, lo, hi) => [0, hi * 1.12] },
        },
        series: [
          { label: "Batch", value: (u, x) => (x == null ? "–" : int(x)) },
          { label: "Per-user speed", scale: "speed", stroke: pal.speed, width: 2.5, points: { show: false },
            value: (u, y) => (y == null ? "–" : speed(y) + " tok/s") },
          { label: "Total throughput", scale: "total", stroke: pal.total, width: 2.5, dash: [8, 4], points: { show: false },
            value: (u, y) => (y == null ? "–" : int(y) + " tok/s") },
        ],
        axes: [
          axis({
            scale: "x", label: narrow ? "Batch size (log scale)" : "Batch size: requests running together (log scale)",
            space: narrow ? 34 : 40,
            values: (u, splits) => splits.map(batchTick),
          }),
          axis({
            scale: "speed", side: 3, label: narrow ? "Per-user tok/s" : "Per-user speed (tokens/s)",
            stroke: pal.speed, size: narrow ? 34 : 50, labelSize: narrow ? 20 : 26,
            values: compactTicks,
          }),
          axis({
            scale: "total", side: 1, label: narrow ? "Total tok/s" : "Total throughput (tokens/s)",
            stroke: pal.total, size: narrow ? 34 : 52, labelSize: narrow ? 20 : 26, grid: { show: false },
            values: compactTicks,
          }),
        ],
        hooks: {
          drawAxes: [drawRegions], draw: [drawMarks, showLegendAtRecommendation],
          setCursor: [showLegendAtRecommendation],
        },
      };
      plot = new uPlot(opts, chartData(), chartEl);
      const wrap = plot.root.querySelector(".u-wrap");
      if (wrap) wrap.setAttribute("role", "img");
      updateChartLabel();
    }

    // Before the reader hovers, the uPlot legend reads the values at the recommendation.
    // (uPlot clears the legend after each redraw and when the pointer leaves.)
    function showLegendAtRecommendation(u) {
      if (!u || u.cursor.idx != null) return;
      const rec = w.view.recommended_max_num_seqs;
      const idx = Math.max(0, w.view.curve.findIndex((p) => p.batch === rec));
      u.setLegend({ idx }, false);
    }

    function updateChartLabel() {
      const wrap = plot && plot.root.querySelector(".u-wrap");
      if (wrap) wrap.setAttribute("aria-label", summary());
    }

    function render() {
      renderText();
      renderTable();
      if (!plot) makeChart();
      else {
        plot.setData(chartData());
        updateChartLabel();
      }
    }

    // ---------------------------------------------------------------- start
    return {
      draw() {
        // The context slider reaches the model's own maximum.
        const ctx = controls.has("context_tokens") && controls.get("context_tokens");
        const lo = w.field("context_tokens").lo;
        if (ctx) { ctx.setRange(lo, w.view.model.max_context_tokens); ctx.set(w.draft.config.context_tokens); }
        render();
      },
      // uPlot draws on a canvas: a light/dark switch rebuilds it in the new colours. A new
      // width resizes it, or rebuilds it where it crosses 520 px: narrow and wide charts
      // have different axis labels and fonts.
      redraw(why) {
        if (!plot) return;
        const size = chartSize();
        if (why === "scheme" || (size.width < 520) !== (plot.width < 520)) makeChart();
        else plot.setSize(size);
      },
      unmount() {
        if (plot) plot.destroy();
        plot = null;
      },
    };
  }

  window.PySim.widget(NAME, { mount });
})();
