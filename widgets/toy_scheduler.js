// Widget for the toy scheduler (pysim/toy_scheduler.py, bridge name "toy_scheduler"), on page 4.
//
// pysim runs the toy's driver (about 200 bursty requests) under the chosen policy and
// constants and returns the summary, the same summary for all three policies, and a
// short series of batch sizes. This file draws the result, a small line of batch size
// over the iterations, and a table that keeps one row per run the reader made, so runs
// with different policies and constants can be compared side by side.
(function () {
  "use strict";
  const { h, fmt, readHash, writeHash, numberControl } = window.PySim;
  const NAME = "toy_scheduler";

  const POLICIES = { fcfs: "First come, first served", priority: "Priority", shortest: "Shortest prompt first" };
  const SHORT = { fcfs: "FCFS", priority: "priority", shortest: "shortest" };
  // name, label, slider maximum (typed values may go up to pysim's own bound)
  const CONTROLS = [
    ["block_size", "Block size (tokens)", 64],
    ["num_gpu_blocks", "Total blocks", 2000],
    ["max_num_batched_tokens", "Token budget", 4096],
    ["max_num_seqs", "Max sequences", 128],
    ["requests", "Requests", 300],
    ["seed", "Seed", 999],
  ];
  const METRICS = [
    ["finished", "finished", (v, c) => `${fmt(v)} of ${fmt(c.requests)}`],
    ["iterations", "iterations", fmt],
    ["tokens_per_iteration", "tokens / iteration", fmt],
    ["mean_batch", "mean batch", fmt],
    ["mean_ttft", "mean TTFT (iterations)", fmt],
    ["max_ttft", "max TTFT (iterations)", fmt],
    ["mean_ttft_urgent", "urgent requests' mean TTFT", fmt],
    ["preemptions", "preemptions", fmt],
  ];
  const MAX_ROWS = 12;
  const INT_RE = /^\d{1,7}$/;
  const uid = () => Math.random().toString(36).slice(2, 8);
  const SVG = "http://www.w3.org/2000/svg";

  function svg(tag, attrs) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    return el;
  }

  function keyOf(config) {
    return ["policy", ...CONTROLS.map(([n]) => n)].map((n) => config[n]).join("|");
  }

  function mount(body, { prerendered, runtime, root }) {
    let view = prerendered.view;
    let config = Object.assign({}, view.config);
    const fields = Object.fromEntries((prerendered.fields || []).map((f) => [f.name, f]));
    let requestSeq = 0;
    // One row per run the reader made (the pre-rendered defaults count as the first).
    let runs = [{ config: Object.assign({}, view.config), results: view.results, source: "pre-computed" }];

    // ---------------------------------------------------------------- state from the link
    const fromHash = readHash(NAME);
    const hashProblems = [];
    for (const [key, value] of Object.entries(fromHash)) {
      if (key === "policy") {
        if (Object.prototype.hasOwnProperty.call(POLICIES, value)) config.policy = value;
        else hashProblems.push(`policy "${value.slice(0, 20)}" is not one of fcfs, priority, shortest`);
      } else if (CONTROLS.some(([name]) => name === key)) {
        if (INT_RE.test(value)) config[key] = Number(value);
        else hashProblems.push(`${key} must be a whole number`);
      } else hashProblems.push(`unknown setting "${key.slice(0, 30)}"`);
    }

    // ---------------------------------------------------------------- controls
    const policyId = "toy-policy-" + uid();
    const policy = h("select", { id: policyId, name: "policy" },
      Object.entries(POLICIES).map(([value, label]) => h("option", { value }, label)));
    policy.value = config.policy;
    policy.addEventListener("change", () => changeSetting("policy", policy.value));
    const policyError = h("span", { class: "pysim-error", role: "alert" });
    const runBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: () => recompute(config, true) }, "Run the driver");
    const clearBtn = h("button", { type: "button", class: "md-button", onclick: clearRuns }, "Clear the table");

    const controls = {};
    for (const [name, label, uiMax] of CONTROLS) {
      const f = fields[name] || { lo: 1, hi: uiMax };
      controls[name] = numberControl({
        name, label, min: f.lo, max: Math.min(f.hi, uiMax), value: config[name],
        onChange: (value) => changeSetting(name, value),
      });
      // Typed values may go beyond the slider, up to pysim's bound.
      controls[name].box.max = f.hi;
    }
    const hashMessage = h("p", { class: "pysim-error toy-hash-error", role: "alert" },
      hashProblems.length ? "Ignored part of the link: " + hashProblems.join("; ") + "." : "");

    const cards = h("dl", { class: "toy-cards", "aria-live": "polite" });
    const chartTitle = h("p", { class: "toy-chart-title" });
    const chart = svg("svg", { class: "toy-chart", role: "img", preserveAspectRatio: "none" });
    const seriesTable = h("table", { class: "toy-series-table" });
    const seriesWrap = h("div", { class: "pysim-table-wrap toy-series-wrap", id: "toy-series-" + uid(), hidden: true }, seriesTable);
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

    body.append(
      h("div", { class: "pysim-toolbar" },
        h("label", { for: policyId }, "Policy "), policy, runBtn, clearBtn, policyError),
      h("div", { class: "pysim-controls" }, Object.values(controls).map((c) => c.root)),
      hashMessage,
      cards,
      h("div", { class: "toy-figure" }, chartTitle, chart, seriesDetails),
      h("div", { class: "pysim-table-wrap" }, runsTable),
      status);

    // ---------------------------------------------------------------- recompute
    let debounce = null;
    let draft = null;
    function changeSetting(name, raw) {
      let value = raw;
      if (name !== "policy") value = raw === "" || !Number.isFinite(Number(raw)) ? raw : Number(raw);
      // Every change since the last recompute: quick edits to two boxes both count.
      draft = Object.assign({}, draft || config, { [name]: value });
      clearTimeout(debounce);
      debounce = setTimeout(() => { const next = draft; draft = null; recompute(next, true); }, 250);
    }

    function payloadConfig(cfg) {
      const out = { policy: cfg.policy };
      for (const [name] of CONTROLS) out[name] = cfg[name];
      return out;
    }

    function clearErrors() {
      for (const c of Object.values(controls)) c.showError("");
      policyError.textContent = "";
    }

    async function recompute(next, addRow) {
      const seq = ++requestSeq;
      clearErrors();
      root.dataset.busy = "true";
      status.textContent = "Running the driver in Python…";
      let answer;
      try {
        answer = await runtime.call(NAME, { config: payloadConfig(next) });
      } catch (err) {
        if (seq === requestSeq) {
          delete root.dataset.busy;
          status.textContent = "Python is not available, so the page shows the last computed run.";
        }
        return;
      }
      if (seq !== requestSeq) return; // a newer change superseded this one
      delete root.dataset.busy;
      if (!answer.ok) {
        const field = answer.error.field;
        const control = controls[field];
        if (control) control.showError(`${control.root.querySelector("label").textContent}: ${answer.error.message}`);
        else policyError.textContent = (field === "policy" ? "Policy: " : "") + answer.error.message;
        root.dataset.error = field || "input";
        status.textContent = "Nothing was run: fix the setting marked in red.";
        return; // keep the last good picture
      }
      delete root.dataset.error;
      config = Object.assign({}, next);
      view = answer.result;
      root.dataset.computeMs = answer.ms.toFixed(2);
      if (addRow) addRun(view, "your run");
      saveHash();
      draw();
      status.textContent = `Ran ${fmt(view.config.requests)} requests under ${POLICIES[view.config.policy]} in ${fmt(Math.round(answer.ms))} ms.`;
    }

    function addRun(v, source) {
      const key = keyOf(v.config);
      runs = runs.filter((r) => keyOf(r.config) !== key);
      runs.push({ config: Object.assign({}, v.config), results: v.results, source });
      if (runs.length > MAX_ROWS) runs = runs.slice(runs.length - MAX_ROWS);
    }

    function clearRuns() {
      runs = [{ config: Object.assign({}, view.config), results: view.results, source: "current" }];
      draw();
    }

    function saveHash() {
      const state = { policy: config.policy };
      for (const [name] of CONTROLS) state[name] = config[name];
      writeHash(NAME, state);
    }

    // When Python is ready, recompute the current settings there. With the defaults the
    // answer must equal the pre-rendered model: pysim is deterministic.
    runtime.subscribe(async (state) => {
      if (state !== "ready" || root.dataset.live) return;
      root.dataset.live = "pending";
      const answer = await runtime.call(NAME, { config: payloadConfig(config) }).catch(() => null);
      if (!answer || !answer.ok) { root.dataset.live = "failed"; return; }
      const same = JSON.stringify(answer.result) === JSON.stringify(prerendered.view);
      const fromLink = keyOf(config) !== keyOf(prerendered.view.config);
      if (!same && !fromLink) console.error("pysim: the pre-rendered toy run differs from what Pyodide computed");
      root.dataset.live = same ? "same" : "updated";
      root.dataset.computeMs = answer.ms.toFixed(2);
      if (!same) {
        view = answer.result;
        addRun(view, "from the link");
        draw();
      }
    });

    // ---------------------------------------------------------------- drawing
    function draw() {
      drawCards();
      drawChart();
      drawRuns();
    }

    function drawCards() {
      const r = view.results;
      cards.replaceChildren(...METRICS.map(([key, label, show]) =>
        h("div", { class: "toy-card", "data-metric": key },
          h("dt", {}, label), h("dd", {}, show(r[key], view.config)))));
    }

    function drawChart() {
      const s = view.series;
      const c = view.config;
      const n = s.batch.length;
      const iterations = view.results.iterations;
      const width = Math.max(200, Math.min(720, chart.parentElement.clientWidth || 600));
      const height = 90;
      const pad = { l: 30, r: 6, t: 8, b: 18 };
      const w = width - pad.l - pad.r;
      const hgt = height - pad.t - pad.b;
      const top = Math.max(c.max_num_seqs, ...s.batch, 1);
      const x = (i) => pad.l + (n <= 1 ? 0 : (i / (n - 1)) * w);
      const y = (v) => pad.t + hgt - (v / top) * hgt;
      chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
      chart.setAttribute("width", width);
      chart.setAttribute("height", height);
      const parts = [];
      parts.push(svg("line", { x1: pad.l, x2: pad.l + w, y1: y(0), y2: y(0), class: "toy-axis" }));
      parts.push(svg("line", { x1: pad.l, x2: pad.l + w, y1: y(c.max_num_seqs), y2: y(c.max_num_seqs), class: "toy-limit" }));
      const label = (text, attrs) => { const t = svg("text", attrs); t.textContent = text; return t; };
      parts.push(label(String(c.max_num_seqs), { x: pad.l - 4, y: y(c.max_num_seqs) + 3, "text-anchor": "end", class: "toy-tick" }));
      parts.push(label("0", { x: pad.l - 4, y: y(0) + 3, "text-anchor": "end", class: "toy-tick" }));
      parts.push(label("iteration 1", { x: pad.l, y: height - 4, class: "toy-tick" }));
      parts.push(label(`${fmt(iterations)}`, { x: pad.l + w, y: height - 4, "text-anchor": "end", class: "toy-tick" }));
      const points = s.batch.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
      parts.push(svg("polyline", { points, class: "toy-line" }));
      chart.replaceChildren(...parts);
      const peak = Math.max(...s.batch, 0);
      const bucket = s.bucket > 1 ? ` (each point averages ${s.bucket} iterations)` : "";
      chartTitle.textContent = `Batch size over the run${bucket}; the dashed line is max sequences (${c.max_num_seqs}).`;
      chart.setAttribute("aria-label", `Batch size over ${fmt(iterations)} iterations under ${POLICIES[c.policy]}: ` +
        `mean ${fmt(view.results.mean_batch)}, highest ${fmt(peak)}, limit ${c.max_num_seqs} sequences. The table below lists the values.`);
      seriesTable.replaceChildren(
        h("thead", {}, h("tr", {}, ["Iterations", "Mean batch", "Mean tokens"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, s.start.map((start, i) => {
          const end = Math.min(iterations, start + s.bucket);
          const span = s.bucket > 1 ? `${start + 1}–${end}` : `${start + 1}`;
          return h("tr", {}, h("th", { scope: "row" }, span), h("td", {}, fmt(s.batch[i])), h("td", {}, fmt(s.tokens[i])));
        })));
    }

    function drawRuns() {
      const current = keyOf(view.config);
      const head = h("tr", {}, ["Run", "Policy", "Block", "Blocks", "Budget", "Max seqs", "Requests", "Seed",
        "Finished", "Iterations", "Tokens/iter", "Mean batch", "Mean TTFT", "Max TTFT", "Urgent TTFT", "Preempted"]
        .map((t) => h("th", { scope: "col" }, t)));
      const rows = runs.map((run, i) => {
        const c = run.config, r = run.results;
        return h("tr", { "data-policy": c.policy, "data-current": keyOf(c) === current ? "true" : "false", "data-run": String(i + 1) },
          h("th", { scope: "row" }, `${i + 1}`),
          [SHORT[c.policy], c.block_size, c.num_gpu_blocks, c.max_num_batched_tokens, c.max_num_seqs, c.requests, c.seed,
            r.finished, r.iterations, fmt(r.tokens_per_iteration), fmt(r.mean_batch), fmt(r.mean_ttft), r.max_ttft,
            fmt(r.mean_ttft_urgent), r.preemptions].map((v, k) => h("td", { "data-col": String(k) }, String(typeof v === "number" ? fmt(v) : v))));
      });
      runsTable.replaceChildren(
        h("caption", {}, "Your runs, oldest first (TTFT in iterations; the highlighted row is the one drawn above)"),
        h("thead", {}, head), h("tbody", {}, rows));
    }

    for (const [name] of CONTROLS) controls[name].set(config[name]);
    // A link with settings: run them (Python starts for it).
    if (keyOf(config) !== keyOf(view.config)) recompute(config, true).catch(() => {});
    new ResizeObserver(() => drawChart()).observe(body);
    new MutationObserver(() => draw()).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
    draw();
  }

  window.PySim.register(NAME, mount);
})();
