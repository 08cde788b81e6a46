// Widget for the toy scheduler (pysim/toy/scheduler.py, bridge name "toy_scheduler"), on page 4.
//
// pysim runs the toy's driver (about 200 bursty requests) under the chosen policy and
// constants and returns the summary, the same summary for all three policies, and a
// short series of batch sizes. This file draws the result, a small line of batch size
// over the iterations, and a table that keeps one row per run the reader made, so runs
// with different policies and constants can be compared side by side. The controls and
// the run's lifecycle are live.js's, from pysim's describe.
(function () {
  "use strict";
  const { h, tableBox, fmt } = window.PySim;
  const NAME = "toy_scheduler";
  const SHORT = { fcfs: "FCFS", priority: "priority", shortest: "shortest" };
  const METRICS = [
    ["finished", "finished", (v, c) => `${fmt(v)} of ${fmt(c.num_requests)}`],
    ["iterations", "iterations", fmt],
    ["tokens_per_iteration", "tokens / iteration", fmt],
    ["mean_batch", "mean batch", fmt],
    ["mean_ttft", "mean TTFT (iterations)", fmt],
    ["max_ttft", "max TTFT (iterations)", fmt],
    ["mean_ttft_urgent", "urgent requests' mean TTFT", fmt],
    ["preemptions", "preemptions", fmt],
  ];
  // The runs table: the figures the page asks you to compare first, then the rest; the
  // settings of a run are one cell naming what differs from the defaults, so the table
  // fits a desktop column.
  // (A header's "|" is where it breaks: two lines at most, never a word split.)
  const COLUMNS = [
    ["mean_ttft", "Mean|TTFT"], ["max_ttft", "Max|TTFT"], ["mean_ttft_urgent", "Urgent|TTFT"],
    ["preemptions", "Preempted"], ["iterations", "Iterations"], ["mean_batch", "Mean|batch"],
    ["tokens_per_iteration", "Tokens /|iteration"], ["finished", "Finished"],
  ];
  const MAX_ROWS = 12;
  const SVG = "http://www.w3.org/2000/svg";

  function svg(tag, attrs) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    return el;
  }

  function mount(w) {
    const names = w.fields.filter((f) => f.kind !== "data").map((f) => f.name);
    const keyOf = (config) => names.map((n) => config[n]).join("|");
    const policyName = (id) => (w.field("policy").option_labels || {})[id] || id;
    // One row per run the reader made (the pre-rendered defaults count as the first).
    // A run keeps its number for good, so "run 1" means the same row all along.
    let made = 0;
    const newRun = (v, source) => ({ n: ++made, config: Object.assign({}, v.config), results: v.results, source });
    let runs = [newRun(w.view, "pre-computed")];

    // ---------------------------------------------------------------- controls
    // Every change, typed or dragged, waits a quarter second: edits to two boxes in a
    // row run the driver once.
    const controls = w.controls({ onChange: (name, value) => w.set({ [name]: value }, 250) });
    // Every change already runs the driver; this button runs it once more on the same
    // settings, which (one seed, one workload) gives the same row, so it says so.
    let again = false;
    const runBtn = h("button", { type: "button", class: "md-button md-button--primary",
      onclick: () => { again = true; w.recompute(); }, "data-needs-python": true }, "Run again");
    const HINT = "Every change runs the driver at once and adds a row below.";
    const runHint = h("span", { class: "toy-run-hint", role: "status" }, HINT);
    const clearBtn = h("button", { type: "button", class: "md-button", onclick: clearRuns }, "Clear the table");
    const cards = h("dl", { class: "toy-cards", "aria-live": "polite" });
    const chartTitle = h("p", { class: "toy-chart-title" });
    const chart = svg("svg", { class: "toy-chart", role: "img", preserveAspectRatio: "none" });
    const seriesTable = h("table", { class: "toy-series-table" });
    const seriesWrap = tableBox(seriesTable, { class: "toy-series-wrap", id: w.id("toy-series"), hidden: true }, "table, scrolls");
    const seriesToggle = h("button", { type: "button", class: "toy-series-toggle", "aria-expanded": "false",
      "aria-controls": seriesWrap.id }, "Show the line's values as a table");
    seriesToggle.addEventListener("click", () => {
      const open = seriesWrap.hidden;
      seriesWrap.hidden = !open;
      seriesToggle.setAttribute("aria-expanded", open ? "true" : "false");
      seriesToggle.textContent = open ? "Hide the table of values" : "Show the line's values as a table";
    });
    const seriesDetails = h("div", { class: "toy-series" }, seriesToggle, seriesWrap);
    const runsTable = h("table", { class: "toy-runs" });
    const status = h("p", { class: "pysim-summary toy-status", "aria-live": "polite" });

    w.body.append(
      h("div", { class: "pysim-toolbar" }, controls.has("policy") ? controls.get("policy").root : null, runBtn, clearBtn, runHint),
      controls.root, w.messages,
      cards,
      h("div", { class: "toy-figure" }, chartTitle, chart, seriesDetails),
      tableBox(runsTable, { class: "toy-runs-wrap" }, "Your runs (the table scrolls sideways on a narrow screen)"),
      status);

    // Settings run before (back to FCFS) highlight their own row again: same number, same
    // place. Returns that run, or null for a new one.
    function addRun(v, source) {
      const key = keyOf(v.config);
      const before = runs.find((r) => keyOf(r.config) === key);
      if (before) return before;
      runs.push(newRun(v, source));
      if (runs.length > MAX_ROWS) runs = runs.slice(runs.length - MAX_ROWS);
      return null;
    }

    function clearRuns() {
      const key = keyOf(w.view.config);
      runs = runs.filter((r) => keyOf(r.config) === key);
      if (!runs.length) runs = [newRun(w.view, "current")];
      draw();
    }

    // "num_gpu_blocks 2,000; Seed 7": a run's settings that are not the defaults (policy has its own column).
    function changed(config) {
      const out = w.fields.filter((f) => f.kind !== "data" && f.name !== "policy" && config[f.name] !== f.default)
        .map((f) => `${f.label} ${fmt(config[f.name])}`);
      return out.length ? out.join("; ") : "defaults";
    }

    // ---------------------------------------------------------------- drawing
    function draw() {
      drawCards();
      drawChart();
      drawRuns();
    }

    function drawCards() {
      const { results, config } = w.view;
      cards.replaceChildren(...METRICS.map(([key, label, show]) =>
        h("div", { class: "toy-card", "data-metric": key },
          h("dt", {}, label), h("dd", {}, show(results[key], config)))));
    }

    // The chart is as wide as its box (up to 720 px): an SVG drawn in pixels, so its
    // text stays the page's size at any width.
    function drawChart() {
      const view = w.view;
      const s = view.series;
      const c = view.config;
      const n = s.batch.length;
      const iterations = view.results.iterations;
      const width = Math.max(200, Math.min(720, chart.parentElement.clientWidth || 600));
      const height = 200;
      const pad = { l: 34, r: 8, t: 14, b: 34 };
      const plotWidth = width - pad.l - pad.r;
      const hgt = height - pad.t - pad.b;
      const top = Math.max(c.max_num_seqs, ...s.batch, 1);
      // Points at the middle of the iterations each one averages, on an iteration axis.
      const last = Math.max(1, iterations);
      const X = (it) => pad.l + (it / last) * plotWidth;
      const y = (v) => pad.t + hgt - (v / top) * hgt;
      chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
      chart.setAttribute("width", width);
      chart.setAttribute("height", height);
      const parts = [];
      const label = (text, attrs) => { const t = svg("text", attrs); t.textContent = text; return t; };
      // Gridlines at round batch sizes (about four) and round iteration counts (one per
      // ~90 px), each labelled; the limit is a dashed line with its name above it.
      const nice = (raw) => { const p = Math.pow(10, Math.floor(Math.log10(raw))); return [1, 2, 5, 10].map((m) => m * p).find((v) => v >= raw); };
      const yStep = nice(top / 4);
      for (let v = 0; v <= top + 1e-9; v += yStep) {
        parts.push(svg("line", { x1: pad.l, x2: pad.l + plotWidth, y1: y(v), y2: y(v), class: v === 0 ? "toy-axis" : "toy-grid" }));
        parts.push(label(fmt(v), { x: pad.l - 5, y: y(v) + 3.5, "text-anchor": "end", class: "toy-tick" }));
      }
      const xStep = nice(last / Math.max(1, Math.floor(plotWidth / 90)));
      for (let it = 0; it <= last + 1e-9; it += xStep) {
        parts.push(svg("line", { x1: X(it), x2: X(it), y1: pad.t, y2: pad.t + hgt, class: "toy-grid" }));
        parts.push(label(fmt(it), { x: X(it), y: pad.t + hgt + 13, "text-anchor": it === 0 ? "start" : "middle", class: "toy-tick" }));
      }
      parts.push(label("iterations", { x: pad.l + plotWidth, y: height - 3, "text-anchor": "end", class: "toy-tick toy-axis-title" }));
      parts.push(label("requests in the batch", { x: pad.l, y: 9, class: "toy-tick toy-axis-title" }));
      parts.push(svg("line", { x1: pad.l, x2: pad.l + plotWidth, y1: y(c.max_num_seqs), y2: y(c.max_num_seqs), class: "toy-limit" }));
      parts.push(label(`max_num_seqs ${fmt(c.max_num_seqs)}`, { x: pad.l + plotWidth, y: y(c.max_num_seqs) - 4, "text-anchor": "end", class: "toy-tick toy-limit-label" }));
      const mid = (i) => Math.min(iterations, s.start[i] + Math.min(s.bucket, iterations - s.start[i]) / 2);
      const points = s.batch.map((v, i) => `${X(n <= 1 ? 0 : mid(i)).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
      parts.push(svg("polyline", { points, class: "toy-line" }));
      chart.replaceChildren(...parts);
      const peak = Math.max(...s.batch, 0);
      const bucket = s.bucket > 1 ? ` (each point averages ${s.bucket} iterations)` : "";
      chartTitle.textContent = `Batch size over the run${bucket}; the dashed line is the limit, max_num_seqs (${c.max_num_seqs}).`;
      chart.setAttribute("aria-label", `Batch size over ${fmt(iterations)} iterations under ${policyName(c.policy)}: ` +
        `mean ${fmt(view.results.mean_batch)}, highest ${fmt(peak)}, limit ${c.max_num_seqs} sequences. The table below lists the values.`);
      seriesTable.replaceChildren(
        h("thead", {}, h("tr", {}, ["Iterations", "Mean batch", "Mean tokens"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, s.start.map((start, i) => {
          const end = Math.min(iterations, start + s.bucket);
          const span = s.bucket > 1 ? `${start + 1}–${end}` : `${start + 1}`;
          return h("tr", {}, h("th", { scope: "row" }, span), h("td", {}, fmt(s.batch[i])), h("td", {}, fmt(s.tokens[i])));
        })));
    }

    // The row a repeated run points at, briefly outlined (no motion: an outline that goes).
    function flash(n) {
      const row = runsTable.querySelector(`tr[data-run="${n}"]`);
      if (!row) return;
      row.dataset.flash = "true";
      w.timeout(() => { delete row.dataset.flash; }, 1600);
    }

    function drawRuns() {
      const current = keyOf(w.view.config);
      const head = h("tr", {}, ["Run", "Policy", "Settings", ...COLUMNS.map((c) => c[1])]
        .map((t) => h("th", { scope: "col" }, ...t.split("|").flatMap((line, i) => (i ? [h("br"), line] : [line])))));
      const rows = runs.map((run) => {
        const c = run.config, r = run.results;
        return h("tr", { "data-policy": c.policy, "data-current": keyOf(c) === current ? "true" : "false", "data-run": String(run.n) },
          h("th", { scope: "row" }, `${run.n}`),
          h("td", { "data-col": "policy" }, SHORT[c.policy]),
          h("td", { "data-col": "settings", class: "toy-settings" }, changed(c)),
          COLUMNS.map(([key]) => h("td", { "data-col": key, "data-value": String(r[key]) }, fmt(r[key]))));
      });
      runsTable.replaceChildren(
        h("caption", {}, "Your runs, numbered in the order you made them (TTFT in iterations; the highlighted row is the one drawn above)"),
        h("thead", {}, head), h("tbody", {}, rows));
    }

    return {
      // Every run the reader asks for, and a link's, gets a row of the table.
      draw(view, state, why) {
        const before = why !== "mount" ? addRun(view, why === "change" ? "your run" : "from the link") : null;
        draw();
        if (why === "change" || why === "link") {
          const took = `${fmt(Math.round(Number(w.root.dataset.computeMs)))} ms`;
          status.textContent = again && before
            ? `Ran the driver again in ${took}: the same settings give the same results (one seed, one workload), ` +
              `so run ${before.n} stays the highlighted row. Change a setting to add a new one.`
            : `Ran ${fmt(view.config.num_requests)} requests under ${policyName(view.config.policy)} in ${took}.`;
          runHint.textContent = again && before ? `Ran again: same settings, same results as run ${before.n}, outlined below.` : HINT;
          if (again && before) flash(before.n);
        }
        again = false;
      },
      redraw: drawChart,
      busy(on) { if (on) status.textContent = "Running the driver in Python…"; },
      refused() { again = false; status.textContent = "Nothing was run: fix the setting marked in red."; },
    };
  }

  window.PySim.widget(NAME, { renamed: { requests: "num_requests" }, mount });
})();
