// Widget for simulation 3, the token budget and chunked prefill (pysim/chunked_prefill.py,
// bridge name "chunked_prefill").
//
// pysim runs the whole scenario at once and returns every step (its start, its duration
// and whose tokens filled it) and the summary. This file only plays those steps back on a
// time axis and keeps one run pinned beside the live one so two budgets can be compared;
// chunked_prefill.text.js writes the details and the tables, and live.js the controls
// (from pysim's describe), the link and the recomputation.
(function () {
  "use strict";
  const { h, tableBox, fmt, reducedMotion, sizeCanvas, stripePattern } = window.PySim;
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
  const uid = () => Math.random().toString(36).slice(2, 8);

  function palette(el) {
    const v = (name) => getComputedStyle(el).getPropertyValue(name).trim();
    return { text: v("--pysim-text"), grid: v("--pysim-grid"), idle: v("--pysim-idle") };
  }

  // Request colours: the golden angle spreads neighbouring requests far apart in hue.
  function requestColor(i, dark) {
    const hue = (200 + i * 137.508) % 360;
    return `hsl(${hue.toFixed(1)} 65% ${dark ? 62 : 44}%)`;
  }

  // ---------------------------------------------------------------- the widget

  function mount(w) {
    const root = w.root;
    let view = w.view;
    let cursor = view.steps.length; // steps done; the pre-rendered picture shows the finished run
    let hover = null; // index of a step under the mouse
    let pin = null; // {scenario, max_num_batched_tokens, view|null}
    let playing = false;
    let clock = 0; // simulated ms during playback
    let raf = 0;
    let pace = Number(PACES[0][0]);
    let runAfterCompute = false;
    let busy = false;
    let dark = false;
    const patternCache = new Map();
    const theme = { pal: null };
    let chartWidth = 0;
    // Colours come from CSS custom properties; read them once per light/dark switch.
    function readTheme() {
      dark = document.body.getAttribute("data-md-color-scheme") === "slate";
      theme.pal = palette(root);
    }
    // The reader's own state in the link: the playback step and the pinned run.
    const linked = (key) => (w.link[key] === undefined ? null : w.link[key]);
    const linkStep = () => {
      const n = linked("step") === null ? NaN : Number(linked("step"));
      return Number.isInteger(n) && n >= 0 ? Math.min(n, total()) : null;
    };

    // ---------------------------------------------------------------- controls
    const change = (part, delay = 0) => { showChoices(Object.assign({}, w.draft.config, part)); w.set(part, delay); };
    const scenarioButtons = view.scenarios.map((s) => h("button", {
      type: "button", class: "md-button budget-choice", "data-scenario": s.id, "data-needs-python": true,
      onclick: () => change({ scenario: s.id }),
    }, s.label));
    const scenarioText = h("p", { class: "budget-scenario-text" });

    const presetButtons = view.max_num_batched_tokens_presets.map((b) => h("button", {
      type: "button", class: "md-button budget-choice", "data-budget": String(b), "data-needs-python": true,
      "aria-label": `Budget ${fmt(b)} tokens`,
      onclick: () => change({ max_num_batched_tokens: b }),
    }, fmt(b)));
    // The scenario is the buttons above; the budget and every other setting pysim
    // describes get controls (the slider walks the budget on a log scale).
    const controls = w.controls({ skip: ["scenario"], onChange: (name, value, delay) => change({ [name]: value }, delay) });

    const runBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: toggleRun }, "Run all steps");
    const stepBtn = h("button", { type: "button", class: "md-button", onclick: () => { pause(); moveTo(cursor + 1); } }, "Step");
    const resetBtn = h("button", { type: "button", class: "md-button", onclick: () => { pause(); moveTo(0); } }, "Reset");
    const paceId = `budget-pace-${uid()}`;
    const paceSelect = h("select", { id: paceId }, PACES.map(([v, text]) => h("option", { value: v }, text)));
    paceSelect.addEventListener("change", () => { pace = Number(paceSelect.value); });
    const stepLabel = h("span", { class: "pysim-step-label" });
    const pinBtn = h("button", { type: "button", class: "md-button", onclick: pinRun }, "Pin this run");
    const clearBtn = h("button", { type: "button", class: "md-button", onclick: clearPin }, "Clear pin");

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
    const closeup = h("div", { class: "budget-closeup", "aria-hidden": "true" });
    w.listen(closeup, "click", (event) => {
      const col = event.target.closest("[data-step]");
      if (col) { pause(); moveTo(Number(col.dataset.step)); }
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
    stepsDetails.addEventListener("toggle", () => { if (stepsDetails.open) drawStepsTable(view, stepsTable); });

    w.body.append(
      h("div", { class: "pysim-toolbar budget-row", role: "group", "aria-label": "Scenario" },
        h("span", { class: "budget-row-label" }, "Scenario"), scenarioButtons),
      scenarioText,
      h("div", { class: "pysim-toolbar budget-row", role: "group", "aria-label": "Budget presets" },
        h("span", { class: "budget-row-label" }, "Budget"), presetButtons),
      controls.root,
      h("div", { class: "pysim-toolbar" }, runBtn, stepBtn, resetBtn,
        h("span", { class: "pysim-speed" }, h("label", { for: paceId }, "Pace "), paceSelect),
        pinBtn, clearBtn, stepLabel),
      w.messages, note, model, legend, chartWrap, chartText, details,
      tableBox(table), moreBtn, summaryText, stepsDetails);

    // ---------------------------------------------------------------- playback
    const total = () => view.steps.length;

    function moveTo(n) {
      cursor = Math.max(0, Math.min(total(), n));
      hover = null;
      w.saveLink();
      draw();
    }

    function toggleRun() {
      if (playing) pause(); else run();
    }

    function run() {
      if (playing) return;
      if (busy) { runAfterCompute = true; return; } // play the run being computed
      if (cursor >= total()) cursor = 0;
      hover = null;
      if (reducedMotion()) { moveTo(total()); return; }
      playing = true;
      root.dataset.playing = "true";
      runBtn.textContent = "Pause";
      details.setAttribute("aria-live", "off");
      clock = cursor > 0 ? stepEnd(view.steps[cursor - 1]) : 0;
      let last = performance.now();
      const frame = (now) => {
        if (!playing) return;
        clock += (now - last) * pace;
        last = now;
        while (cursor < total() && stepEnd(view.steps[cursor]) <= clock) cursor += 1;
        if (cursor >= total()) { pause(); draw(); return; }
        draw();
        raf = w.frame(frame);
      };
      raf = w.frame(frame);
    }

    function pause() {
      if (!playing) return;
      playing = false;
      cancelAnimationFrame(raf);
      root.dataset.playing = "false";
      runBtn.textContent = "Run all steps";
      details.setAttribute("aria-live", "polite");
      w.saveLink();
    }

    // ---------------------------------------------------------------- pinning
    function pinRun() {
      pin = { scenario: view.config.scenario, max_num_batched_tokens: view.config.max_num_batched_tokens, view };
      w.saveLink();
      draw();
    }

    function clearPin() {
      pin = null;
      w.saveLink();
      draw();
    }

    // A link's pinned run: computed by pysim like the live one (so it is judged there too).
    async function computePin(wanted) {
      pin = { scenario: wanted.scenario, max_num_batched_tokens: wanted.max_num_batched_tokens, view: null };
      const mine = pin;
      draw();
      const answer = await w.call({ config: Object.assign({}, w.state.config, wanted) }).catch(() => null);
      if (pin !== mine) return;
      if (!answer || !answer.ok) {
        const why = answer ? `${answer.error.field}: ${answer.error.message}` : "Python is not available";
        note.textContent = `Ignored the link's pinned run: ${why}.`;
        pin = null;
        w.saveLink();
      } else pin.view = answer.result;
      draw();
    }

    // The buttons show what is drawn or being computed.
    function showChoices(cfg) {
      for (const b of scenarioButtons) b.setAttribute("aria-pressed", String(b.dataset.scenario === cfg.scenario));
      for (const b of presetButtons) b.setAttribute("aria-pressed", String(Number(b.dataset.budget) === cfg.max_num_batched_tokens));
      const s = view.scenarios.find((x) => x.id === cfg.scenario);
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
      v.requests.forEach((r, i) => { out[r.id] = requestColor(i, dark); });
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
        let w = x(endMs) - x0;
        if (w > 2.5) w -= 0.6; // a hairline between neighbouring steps
        w = Math.max(w, 0.8);
        const parts = step.parts;
        let decodes = 0;
        for (const p of parts) if (p[1] === "decode") decodes += 1;
        const slice = decodes ? Math.min(DECODE_SLICE, band / decodes) : 0;
        let y = top + height;
        for (const p of parts) {
          if (p[1] !== "decode") continue;
          ctx.fillStyle = colors[p[0]];
          ctx.fillRect(x0, y - slice, w, slice > 1.6 ? slice - 0.5 : slice);
          y -= slice;
        }
        for (const p of parts) {
          if (p[1] === "decode") continue;
          const ph = Math.max(1, (p[2] / budget) * prefillH);
          ctx.fillStyle = patternFor(ctx, colors[p[0]]);
          ctx.fillRect(x0, y - ph, w, ph);
          y -= ph;
        }
      }
    }

    function draw() {
      const t0 = performance.now();
      const pal = theme.pal;
      const colors = colorsFor(view);
      cursor = Math.min(cursor, total());
      const n = total();
      const shown = hover !== null ? hover : cursor - 1;

      // One time scale for the live run and the pinned one, so widths compare.
      const width = Math.max(200, chartWidth);
      let totalMs = view.summary.total_ms;
      if (pin && pin.view) totalMs = Math.max(totalMs, pin.view.summary.total_ms);
      totalMs = Math.max(totalMs, 1);
      const pad = 4;
      const x = (t) => pad + (t / totalMs) * (width - 2 * pad);

      const ctx = sizeCanvas(canvas, width, BAR_H + AXIS_H + 6);
      const top = 4;
      ctx.fillStyle = pal.idle;
      ctx.fillRect(0, top, width, BAR_H);
      drawBars(ctx, view, { x, top, height: BAR_H, band: DECODE_BAND, upto: cursor,
        partialTo: playing ? clock : null, colors });
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
      const span = drawCloseup({ view, shown, cursor, colors, width, dark, el: closeup, head: closeupHead });
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
      const cursorMs = playing ? clock : cursor > 0 ? stepEnd(view.steps[cursor - 1]) : 0;
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

      drawPin(pal, x, width, totalMs);
      const c = { view, pin, cursor, dark, showAllPrompts, els: { model, legend, details, table, moreBtn, summaryText } };
      drawModel(c);
      drawLegend(c, colors);
      drawDetails(c, shown, colors);
      drawTable(c);
      pinBtn.disabled = false;
      clearBtn.disabled = !pin;
      if (stepsDetails.open && stepsTable.dataset.key !== tableKey(view)) drawStepsTable(view, stepsTable);
      root.dataset.drawMs = (performance.now() - t0).toFixed(2);
    }

    function drawPin(pal, x, width, totalMs) {
      pinBox.hidden = !pin;
      if (!pin) return;
      if (!pin.view) {
        pinHead.textContent = `Pinned: ${view.scenarios.find((s) => s.id === pin.scenario).label}, budget ${fmt(pin.max_num_batched_tokens)} (computing…)`;
        sizeCanvas(pinCanvas, width, 1);
        return;
      }
      const v = pin.view;
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
      const width = rect.width;
      let totalMs = view.summary.total_ms;
      if (pin && pin.view) totalMs = Math.max(totalMs, pin.view.summary.total_ms);
      const t = ((event.clientX - rect.left - 4) / (width - 8)) * Math.max(totalMs, 1);
      if (!total() || t > view.summary.total_ms + 1) return null;
      return stepAt(view.steps, Math.max(0, t));
    }
    canvas.addEventListener("mousemove", (event) => {
      const i = stepUnder(event);
      if (i !== hover) { hover = i; draw(); }
    });
    canvas.addEventListener("mouseleave", () => { if (hover !== null) { hover = null; draw(); } });
    canvas.addEventListener("click", (event) => {
      const i = stepUnder(event);
      if (i !== null) { pause(); moveTo(i + 1); }
    });
    canvas.addEventListener("keydown", (event) => {
      const moves = { ArrowRight: 1, ArrowUp: 1, ArrowLeft: -1, ArrowDown: -1, PageUp: 10, PageDown: -10 };
      let next = null;
      if (event.key in moves) next = cursor + moves[event.key];
      else if (event.key === "Home") next = 0;
      else if (event.key === "End") next = total();
      if (next === null) return;
      event.preventDefault();
      pause();
      moveTo(next);
    });

    // ---------------------------------------------------------------- start
    readTheme();
    chartWidth = chartWrap.clientWidth;
    w.observe(new ResizeObserver(() => {
      if (chartWrap.clientWidth === chartWidth) return; // heights change as we draw
      chartWidth = chartWrap.clientWidth;
      draw();
    })).observe(chartWrap);
    w.onScheme(() => { readTheme(); draw(); });
    // A link's pinned run: what it gives of the two, the live run's value for the other.
    const pinScenario = linked("pin_scenario"), pinBudget = linked("pin_max_num_batched_tokens");
    if (pinScenario !== null || pinBudget !== null) {
      const budget = pinBudget === null ? null : Number.isFinite(Number(pinBudget)) ? Number(pinBudget) : pinBudget;
      w.whenLive.then(() => computePin({
        scenario: pinScenario === null ? w.state.config.scenario : pinScenario,
        max_num_batched_tokens: budget === null ? w.state.config.max_num_batched_tokens : budget,
      }));
    }
    const stepFromLink = linkStep();
    if (stepFromLink !== null) cursor = stepFromLink;

    return {
      // A new run shows its end (a link's: the step it names), and plays if Run was pressed meanwhile.
      draw(next, state, why) {
        view = next;
        showChoices(state.config);
        if (why === "change" || why === "link") {
          pause();
          const step = why === "link" ? linkStep() : null;
          cursor = step !== null ? step : total();
          hover = null;
          w.saveLink();
        }
        draw();
        if (runAfterCompute) { runAfterCompute = false; run(); }
      },
      linkState() {
        const own = { step: cursor };
        if (pin) { own.pin_scenario = pin.scenario; own.pin_max_num_batched_tokens = pin.max_num_batched_tokens; }
        return own;
      },
      busy(on) { busy = on; },
      refused() { runAfterCompute = false; showChoices(w.state.config); },
      unmount() { playing = false; },
    };
  }

  // Issue 34 replaced the page's made-up clock with the serving lab's: links made
  // before it may still hold its three coefficients.
  const clock = "steps are now timed by the serving lab's clock for the GPU and model chosen";
  window.PySim.widget(NAME, {
    link: ["step", "pin_scenario", "pin_max_num_batched_tokens"], mount,
    retired: { base_ms: clock, per_decode_ms: clock, per_prefill_token_ms: clock },
  });
})();
