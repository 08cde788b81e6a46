// Widget for simulation 3, the token budget and chunked prefill (pysim/sims/chunked_prefill.py,
// bridge name "chunked_prefill").
//
// pysim runs the whole scenario at once and returns every step (its start, its duration
// and whose tokens filled it) and the summary. This file draws those steps on a time
// axis, as long as each one lasted, so a long prompt's prefill shows as a wide step that
// the decodes around it wait for; w.playback plays them in (scaled) real time, and w.pin
// keeps one run beside the live one so two budgets can be compared on the same axis.
// chunked_prefill.text.js writes the details and the tables, and live.js the controls
// (from pysim's describe), the link and the recomputation.
(function () {
  "use strict";
  const { h, tableBox, fmt, palette, dark, sizeCanvas, stripePattern } = window.PySim;
  const { ms, stepEnd, stepAt, drawAxis, longestStep, runName, tableKey, drawModel, drawLegend, drawDetails, drawTable,
    drawStepsTable } = window.PySim.chunkedPrefill;
  const { drawCloseup } = window.PySim.chunkedPrefillCloseup;
  const NAME = "chunked_prefill";

  const BAR_H = 132; // px of the live timeline given to bars
  const DECODE_BAND = 36; // at most this many px of a bar for its decode slices
  const DECODE_SLICE = 3; // px per decode token when they fit
  const AXIS_H = 22; // px under the bars for the time axis
  const PIN_BAR_H = 34; // px of bars in the pinned run's thin timeline
  const PACES = [["0.25", "¼× real time"], ["1", "real time"], ["0.1", "⅒× real time"]];
  // Request colours: eight hues far apart, each at 3:1 or more against the page in its
  // scheme (chunked_prefill.css). A scenario with more requests than hues colours them in
  // groups of neighbours (the burst's 24 chats: eight groups of three, admitted together
  // under FCFS), and the legend lists each group under its one swatch.
  const HUES = 8;
  const COLOURS = { text: "--pysim-text", grid: "--pysim-grid", idle: "--pysim-idle" };
  for (let i = 0; i < HUES; i++) COLOURS[`c${i}`] = `--budget-c${i}`;
  const groupSize = (n) => Math.max(1, Math.ceil(n / HUES));

  // ---------------------------------------------------------------- the widget

  function mount(w) {
    const root = w.root;
    const steps = () => w.view.steps;
    let hover = null; // index of a step under the mouse
    let runAfterCompute = false; // Run was pressed while a new run was being computed
    let busy = false;
    const patternCache = new Map();
    // Colours and the chart's width, read once per light/dark switch or new width (not
    // on every frame of the playback).
    let pal = null;
    let isDark = false;
    let chartWidth = 0;
    function readTheme() {
      isDark = dark();
      pal = palette(root, COLOURS);
    }

    // Playback on the run's own clock, at the pace chosen (a quarter of real time to
    // start): a step is reached when its simulated time has passed, and every frame in
    // between draws the step in progress, so a long prefill step fills slowly while the
    // decodes wait for it. The pre-rendered picture shows the finished run.
    const play = w.playback({
      steps: () => steps().length,
      at: (n) => (n > 0 ? stepEnd(steps()[n - 1]) : 0),
      rate: Number(PACES[0][0]),
      smooth: true,
      draw,
      playing(on) {
        runBtn.textContent = on ? "Pause" : "Run all steps";
        details.setAttribute("aria-live", on ? "off" : "polite"); // a screen reader hears where it stopped, not every step
      },
    });
    const moveTo = (n) => { hover = null; play.moveTo(n); };
    function run() {
      if (busy) { runAfterCompute = true; return; } // play the run being computed
      hover = null;
      play.run();
    }
    const pin = w.pin({
      labels: ["Pin this run", "Clear pin"],
      link: ["scenario", "max_num_batched_tokens"],
      changed: draw,
      refused(why) { note.textContent = `Ignored the link's pinned run: ${why}.`; },
    });

    // ---------------------------------------------------------------- controls
    const change = (part, delay = 0) => { showChoices(Object.assign({}, w.draft.config, part)); w.set(part, delay); };
    const scenarioButtons = w.view.scenarios.map((s) => h("button", {
      type: "button", class: "md-button budget-choice", "data-scenario": s.id, "data-needs-python": true,
      onclick: () => change({ scenario: s.id }),
    }, s.label));
    const scenarioText = h("p", { class: "budget-scenario-text" });

    const presetButtons = w.view.max_num_batched_tokens_presets.map((b) => h("button", {
      type: "button", class: "md-button budget-choice", "data-budget": String(b), "data-needs-python": true,
      "aria-label": `Budget ${fmt(b)} tokens`,
      onclick: () => change({ max_num_batched_tokens: b }),
    }, fmt(b)));
    // The scenario is the buttons above; the budget and every other setting pysim
    // describes get controls (the slider walks the budget on a log scale).
    const controls = w.controls({ skip: ["scenario"], onChange: (name, value, delay) => change({ [name]: value }, delay) });

    const runBtn = h("button", { type: "button", class: "md-button md-button--primary",
      onclick: () => (play.playing ? play.pause() : run()) }, "Run all steps");
    const stepBtn = h("button", { type: "button", class: "md-button", onclick: () => moveTo(play.cursor + 1) }, "Step");
    const resetBtn = h("button", { type: "button", class: "md-button", onclick: () => moveTo(0) }, "Reset");
    const paceId = w.id("budget-pace");
    const paceSelect = h("select", { id: paceId }, PACES.map(([v, text]) => h("option", { value: v }, text)));
    paceSelect.addEventListener("change", () => { play.rate = Number(paceSelect.value); });
    const stepLabel = h("span", { class: "pysim-step-label" });

    const note = h("p", { class: "budget-note", role: "status" });
    const model = h("p", { class: "budget-model" });

    const legend = h("div", { class: "budget-legend" });
    const canvas = w.canvas({ class: "budget-timeline", tabindex: "0", role: "slider",
      "aria-label": "Timeline of steps; arrow keys move the cursor one step, Home and End jump to the ends",
      "aria-valuemin": "0" });
    const chartText = h("p", { class: "budget-chart-text" });
    // The close-up of the steps around the cursor (chunked_prefill.closeup.js); a click
    // on a column moves there. The step's details below say the same in words.
    const closeupHead = h("p", { class: "budget-closeup-head" });
    const closeup = h("div", { class: "budget-closeup pysim-picture", "aria-hidden": "true" });
    w.listen(closeup, "click", (event) => {
      const col = event.target.closest("[data-step]");
      if (col) moveTo(Number(col.dataset.step));
    });
    const details = h("div", { class: "budget-details", "aria-live": "polite" });
    const pinHead = h("p", { class: "budget-pin-head" });
    const pinCanvas = w.canvas({ class: "budget-pin-timeline", role: "img" });
    const pinBox = h("div", { class: "budget-pin", hidden: true }, pinHead, pinCanvas);
    const chartWrap = h("div", { class: "budget-chart" }, canvas, closeupHead, closeup, pinBox);
    const table = h("table", { class: "budget-table" });
    const summaryText = h("p", { class: "pysim-summary", "aria-live": "polite" });
    let showAllPrompts = false;
    const moreBtn = h("button", { type: "button", class: "budget-more", hidden: true,
      onclick: () => { showAllPrompts = !showAllPrompts; draw(); } });
    const stepsTable = h("table", { class: "budget-steps-table" });
    const stepsDetails = h("details", { class: "budget-steps" },
      h("summary", {}, "Every step as a table"), tableBox(stepsTable));
    stepsDetails.addEventListener("toggle", () => { if (stepsDetails.open) drawStepsTable(w.view, stepsTable); });

    w.body.append(
      h("div", { class: "pysim-toolbar budget-row", role: "group", "aria-label": "Scenario" },
        h("span", { class: "budget-row-label" }, "Scenario"), scenarioButtons),
      scenarioText,
      h("div", { class: "pysim-toolbar budget-row", role: "group", "aria-label": "Budget presets" },
        h("span", { class: "budget-row-label" }, "Budget"), presetButtons),
      controls.root,
      h("div", { class: "pysim-toolbar" }, runBtn, stepBtn, resetBtn,
        h("span", { class: "pysim-speed" }, h("label", { for: paceId }, "Pace "), paceSelect),
        pin.buttons, stepLabel),
      w.messages, note, model, legend, chartWrap, chartText, details,
      tableBox(table), moreBtn, summaryText, stepsDetails);

    // The buttons show what is drawn or being computed.
    function showChoices(cfg) {
      for (const b of scenarioButtons) b.setAttribute("aria-pressed", String(b.dataset.scenario === cfg.scenario));
      for (const b of presetButtons) b.setAttribute("aria-pressed", String(Number(b.dataset.budget) === cfg.max_num_batched_tokens));
      const s = w.view.scenarios.find((x) => x.id === cfg.scenario);
      scenarioText.textContent = s ? s.description : "";
    }

    // ---------------------------------------------------------------- drawing
    function patternFor(ctx, color) {
      let entry = patternCache.get(ctx);
      if (!entry) { entry = new Map(); patternCache.set(ctx, entry); }
      if (!entry.has(color)) entry.set(color, stripePattern(ctx, color, { wash: 0.3, lineWidth: 1.6 }));
      return entry.get(color);
    }

    function colorsFor(v) {
      const out = {};
      const size = groupSize(v.requests.length);
      v.requests.forEach((r, i) => { out[r.id] = pal[`c${Math.floor(i / size) % HUES}`]; });
      return out;
    }

    // One bar per step, from its start to its end on the time axis; stacked bottom up:
    // one thin solid slice per decode token, then prompt chunks, striped, with height in
    // proportion to the run's budget.
    function drawBars(ctx, v, { x, top, height, band, upto, partialTo, colors }) {
      const prefillH = height - band;
      const budget = v.config.max_num_batched_tokens;
      for (let i = 0; i < upto; i++) drawStep(v.steps[i], stepEnd(v.steps[i]));
      if (partialTo !== null && upto < v.steps.length && partialTo > v.steps[upto].start_ms) {
        drawStep(v.steps[upto], Math.min(partialTo, stepEnd(v.steps[upto])));
      }
      function drawStep(step, endMs) {
        const x0 = x(step.start_ms);
        let barWidth = x(endMs) - x0;
        if (barWidth > 2.5) barWidth -= 0.6; // a hairline between neighbouring steps
        barWidth = Math.max(barWidth, 0.8);
        const parts = step.parts;
        let decodes = 0;
        for (const p of parts) if (p[1] === "decode") decodes += 1;
        const slice = decodes ? Math.min(DECODE_SLICE, band / decodes) : 0;
        let y = top + height;
        for (const p of parts) {
          if (p[1] !== "decode") continue;
          ctx.fillStyle = colors[p[0]];
          ctx.fillRect(x0, y - slice, barWidth, slice > 1.6 ? slice - 0.5 : slice);
          y -= slice;
        }
        for (const p of parts) {
          if (p[1] === "decode") continue;
          const ph = Math.max(1, (p[2] / budget) * prefillH);
          ctx.fillStyle = patternFor(ctx, colors[p[0]]);
          ctx.fillRect(x0, y - ph, barWidth, ph > 3 ? ph - 1 : ph); // a gap: neighbours may share a colour
          y -= ph;
        }
      }
    }

    // One time scale for the live run and the pinned one, so widths compare.
    function axisMs() {
      const pinned = pin.pinned && pin.pinned.view;
      return Math.max(w.view.summary.total_ms, pinned ? pinned.summary.total_ms : 0, 1);
    }

    function draw() {
      const t0 = performance.now();
      const view = w.view;
      const colors = colorsFor(view);
      const cursor = play.cursor;
      const n = view.steps.length;
      const shown = hover !== null ? hover : cursor - 1;

      const width = Math.max(200, chartWidth);
      const totalMs = axisMs();
      const pad = 4;
      const x = (t) => pad + (t / totalMs) * (width - 2 * pad);

      const ctx = sizeCanvas(canvas, width, BAR_H + AXIS_H + 6);
      const top = 4;
      ctx.fillStyle = pal.idle;
      ctx.fillRect(0, top, width, BAR_H);
      drawBars(ctx, view, { x, top, height: BAR_H, band: DECODE_BAND, upto: cursor,
        partialTo: play.playing ? play.clock : null, colors });
      // Arrivals of new prompts: small marks under the axis line.
      for (const r of view.requests) {
        if (r.streaming_at_start) continue;
        ctx.fillStyle = colors[r.id];
        const ax = x(r.arrival_ms);
        ctx.beginPath();
        ctx.moveTo(ax, top + BAR_H + 1); ctx.lineTo(ax - 3, top + BAR_H + 6); ctx.lineTo(ax + 3, top + BAR_H + 6);
        ctx.fill();
      }
      drawAxis(ctx, x, { y: top + BAR_H, width, totalMs, pal });
      // The close-up's steps: a shaded span (at least 4 px) that ties the two together.
      const span = drawCloseup({ view, shown, cursor, colors, width, dark: isDark, el: closeup, head: closeupHead });
      if (span.last > span.first) {
        const x0 = x(view.steps[span.first].start_ms);
        ctx.globalAlpha = 0.14;
        ctx.fillStyle = pal.text;
        ctx.fillRect(x0, top, Math.max(4, x(stepEnd(view.steps[span.last - 1])) - x0), BAR_H);
        ctx.globalAlpha = 1;
      }
      // The highlighted step (hovered or just run) and the cursor line.
      if (shown >= 0 && shown < n) {
        const s = view.steps[shown];
        ctx.strokeStyle = pal.text;
        ctx.lineWidth = 1;
        ctx.strokeRect(x(s.start_ms) - 0.5, top + 0.5, Math.max(1, x(stepEnd(s)) - x(s.start_ms)) + 1, BAR_H - 1);
      }
      const cursorMs = play.playing ? play.clock : cursor > 0 ? stepEnd(view.steps[cursor - 1]) : 0;
      ctx.fillStyle = pal.text;
      ctx.fillRect(Math.round(x(cursorMs)) - 1, top - 4, 2, BAR_H + 6);

      const longest = longestStep(view);
      canvas.setAttribute("aria-valuemax", String(n));
      canvas.setAttribute("aria-valuenow", String(cursor));
      canvas.setAttribute("aria-valuetext", cursor === 0 ? `before the first of ${n} steps`
        : `after step ${cursor} of ${n}, at ${ms(cursorMs)}`);
      chartText.textContent = `${runName(view)}: ${fmt(n)} steps over ${ms(view.summary.total_ms)}; ` +
        `the longest step is step ${longest + 1} (${ms(view.steps[longest].duration_ms)}). ` +
        "Bar width is the step's duration; the table below has the figures.";
      stepLabel.textContent = `Step ${cursor} of ${n}`;
      root.dataset.step = String(cursor);
      root.dataset.scenario = view.config.scenario;
      root.dataset.budget = String(view.config.max_num_batched_tokens);

      drawPin(x, width, totalMs);
      const c = { view, pin: pin.pinned, cursor, dark: isDark, showAllPrompts, els: { model, legend, details, table, moreBtn, summaryText } };
      drawModel(c);
      drawLegend(c, colors, groupSize(view.requests.length));
      drawDetails(c, shown, colors);
      drawTable(c);
      if (stepsDetails.open && stepsTable.dataset.key !== tableKey(view)) drawStepsTable(view, stepsTable);
      root.dataset.drawMs = (performance.now() - t0).toFixed(2);
    }

    function drawPin(x, width, totalMs) {
      const pinned = pin.pinned;
      pinBox.hidden = !pinned;
      if (!pinned) return;
      if (!pinned.view) {
        const { scenario, max_num_batched_tokens: budget } = pinned.config;
        const named = w.view.scenarios.find((s) => s.id === scenario);
        pinHead.textContent = `Pinned: ${named ? named.label : scenario}, budget ${fmt(budget)} (computing…)`;
        sizeCanvas(pinCanvas, width, 1);
        return;
      }
      const v = pinned.view;
      pinHead.textContent = `Pinned: ${runName(v)} (same time axis)`;
      const ctx = sizeCanvas(pinCanvas, width, PIN_BAR_H + AXIS_H);
      ctx.fillStyle = pal.idle;
      ctx.fillRect(0, 0, width, PIN_BAR_H);
      drawBars(ctx, v, { x, top: 0, height: PIN_BAR_H, band: 10, upto: v.steps.length, partialTo: null,
        colors: colorsFor(v) });
      drawAxis(ctx, x, { y: PIN_BAR_H, width, totalMs, pal });
      const longest = longestStep(v);
      pinCanvas.setAttribute("aria-label", `Pinned run timeline, ${runName(v)}: ${fmt(v.steps.length)} steps over ` +
        `${ms(v.summary.total_ms)}; the longest step lasts ${ms(v.steps[longest].duration_ms)}.`);
    }

    // ---------------------------------------------------------------- pointer and keys
    function stepUnder(event) {
      const rect = canvas.getBoundingClientRect();
      const t = ((event.clientX - rect.left - 4) / (rect.width - 8)) * axisMs();
      if (!steps().length || t > w.view.summary.total_ms + 1) return null;
      return stepAt(steps(), Math.max(0, t));
    }
    canvas.addEventListener("mousemove", (event) => {
      const i = stepUnder(event);
      if (i !== hover) { hover = i; draw(); }
    });
    canvas.addEventListener("mouseleave", () => { if (hover !== null) { hover = null; draw(); } });
    canvas.addEventListener("click", (event) => {
      const i = stepUnder(event);
      if (i !== null) moveTo(i + 1);
    });
    canvas.addEventListener("keydown", (event) => {
      const moves = { ArrowRight: 1, ArrowUp: 1, ArrowLeft: -1, ArrowDown: -1, PageUp: 10, PageDown: -10 };
      let next = null;
      if (event.key in moves) next = play.cursor + moves[event.key];
      else if (event.key === "Home") next = 0;
      else if (event.key === "End") next = steps().length;
      if (next === null) return;
      event.preventDefault();
      moveTo(next);
    });

    // ---------------------------------------------------------------- start
    readTheme();
    chartWidth = chartWrap.clientWidth;

    return {
      // A new run shows its end (a link's: the step it names), and plays if Run was
      // pressed while it was computed.
      draw(next, state, why) {
        showChoices(state.config);
        if (why === "change" || why === "link") {
          hover = null;
          if (why === "link") play.fromLink(); else play.moveTo(Infinity);
        } else draw();
        if (runAfterCompute) { runAfterCompute = false; run(); }
      },
      redraw() {
        readTheme();
        chartWidth = chartWrap.clientWidth;
        draw();
      },
      busy(on) { busy = on; },
      refused() { runAfterCompute = false; showChoices(w.state.config); },
    };
  }

  // Keys a link may hold that pysim dropped: the page's step costs were three made-up
  // coefficients, and the serving lab's clock times the steps instead.
  const clock = "steps are now timed by the serving lab's clock for the GPU and model chosen";
  window.PySim.widget(NAME, {
    link: ["step", "pin_scenario", "pin_max_num_batched_tokens"], mount,
    retired: { base_ms: clock, per_decode_ms: clock, per_prefill_token_ms: clock },
  });
})();
