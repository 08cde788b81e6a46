// Widget for simulation 3, the token budget and chunked prefill (pysim/chunked_prefill.py, bridge
// name "chunked_prefill").
//
// pysim runs the whole scenario at once and returns every step (its start, its duration
// and whose tokens filled it) and the summary. This file only plays those steps back on a
// time axis, shows one step's details, and keeps one run pinned beside the live one so two
// budgets can be compared. Changing the budget or the scenario asks pysim again.
(function () {
  "use strict";
  const { h, fmt, readHash, writeHash, reducedMotion, sizeCanvas, stripePattern } = window.PySim;
  const NAME = "chunked_prefill";

  const BAR_H = 132; // px of the live timeline given to bars
  const DECODE_BAND = 36; // at most this many px of a bar for its decode slices
  const DECODE_SLICE = 3; // px per decode token when they fit
  const AXIS_H = 22; // px under the bars for the time axis
  const PIN_BAR_H = 34; // px of bars in the pinned run's thin timeline
  const MANY_PROMPTS = 6; // more new prompts than this: their rows fold behind a button
  const PACES = [["0.25", "¼× real time"], ["1", "real time"], ["0.1", "⅒× real time"]];
  const SCENARIO_RE = /^[a-z_]{1,40}$/;
  const INT_RE = /^\d{1,9}$/;

  // ---------------------------------------------------------------- small helpers

  const ms = (x) => fmt(x) + " ms";
  const coefFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 6 });
  const coef = (x) => coefFormat.format(x); // 0.035 must not print as 0.04
  const tokens = (n) => fmt(n) + (n === 1 ? " token" : " tokens");
  const uid = () => Math.random().toString(36).slice(2, 8);

  function palette(el) {
    const css = getComputedStyle(el);
    const v = (name) => css.getPropertyValue(name).trim();
    return { text: v("--pysim-text"), grid: v("--pysim-grid"), idle: v("--pysim-idle") };
  }

  // Request colours: the golden angle spreads neighbouring requests far apart in hue.
  function requestColor(i, dark) {
    const hue = (200 + i * 137.508) % 360;
    return `hsl(${hue.toFixed(1)} 65% ${dark ? 62 : 44}%)`;
  }

  // Round ticks for a time axis: 1, 2 or 5 times a power of ten, about every 70 px.
  function tickStep(totalMs, width) {
    const raw = totalMs / Math.max(1, width / 70);
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (raw <= m * p) return m * p;
    return 10 * p;
  }

  const stepEnd = (s) => s.start_ms + s.duration_ms;

  // The step whose time span holds t, or the nearest one.
  function stepAt(steps, t) {
    let lo = 0, hi = steps.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (steps[mid].start_ms <= t) lo = mid; else hi = mid - 1;
    }
    const next = steps[lo + 1];
    if (t >= stepEnd(steps[lo]) && next && next.start_ms - t < t - stepEnd(steps[lo])) return lo + 1;
    return lo;
  }

  function longestStep(view) {
    let best = 0;
    view.steps.forEach((s, i) => { if (s.duration_ms > view.steps[best].duration_ms) best = i; });
    return best;
  }

  function runName(view) {
    return `${view.scenario.label}, budget ${fmt(view.config.max_num_batched_tokens)}`;
  }

  // ---------------------------------------------------------------- the widget

  function mount(body, { prerendered, runtime, root }) {
    const fields = Object.fromEntries((prerendered.fields || []).map((f) => [f.name, f]));
    const budgetField = fields.max_num_batched_tokens || { lo: 64, hi: 65536 };
    const scenarioIds = (fields.scenario && fields.scenario.options) || prerendered.view.scenarios.map((s) => s.id);
    const base = Object.assign({}, prerendered.config); // the page's own non-default settings
    let view = prerendered.view;
    let config = { scenario: view.config.scenario, max_num_batched_tokens: view.config.max_num_batched_tokens };
    let cursor = view.steps.length; // steps done; the pre-rendered picture shows the finished run
    let hover = null; // index of a step under the mouse
    let pin = null; // {scenario, budget, view|null}
    let playing = false;
    let clock = 0; // simulated ms during playback
    let raf = 0;
    let pace = Number(PACES[0][0]);
    let requestSeq = 0;
    let busy = false;
    let runAfterCompute = false;
    let pendingStep = null;
    let dark = false;
    const patternCache = new Map();
    const theme = { pal: null };
    let chartWidth = 0;
    // Colours come from CSS custom properties; read them once per light/dark switch.
    function readTheme() {
      dark = document.body.getAttribute("data-md-color-scheme") === "slate";
      theme.pal = palette(root);
    }

    // ---------------------------------------------------------------- state from the link
    const fromHash = readHash(NAME);
    const problems = [];
    const wanted = Object.assign({}, config);
    let wantedPin = null;
    const pinParts = {};
    for (const [key, value] of Object.entries(fromHash)) {
      if (key === "scenario" || key === "pin_scenario") {
        if (SCENARIO_RE.test(value) && scenarioIds.includes(value)) {
          if (key === "scenario") wanted.scenario = value; else pinParts.scenario = value;
        } else problems.push(`${key} is not one of the scenarios`);
      } else if (key === "max_num_batched_tokens" || key === "pin_max_num_batched_tokens") {
        if (INT_RE.test(value)) {
          if (key === "max_num_batched_tokens") wanted.max_num_batched_tokens = Number(value); else pinParts.max_num_batched_tokens = Number(value);
        } else problems.push(`${key} must be a whole number`);
      } else if (key === "step") {
        if (/^\d{1,5}$/.test(value)) pendingStep = Number(value);
        else problems.push("step must be a whole number");
      } else problems.push(`unknown setting "${key}"`);
    }
    if ("scenario" in pinParts || "max_num_batched_tokens" in pinParts) {
      if ("scenario" in pinParts && "max_num_batched_tokens" in pinParts) wantedPin = pinParts;
      else problems.push("a pinned run needs both pin_scenario and pin_max_num_batched_tokens");
    }

    // ---------------------------------------------------------------- controls
    const scenarioButtons = view.scenarios.map((s) => h("button", {
      type: "button", class: "md-button budget-choice", "data-scenario": s.id,
      onclick: () => change({ scenario: s.id }),
    }, s.label));
    const scenarioText = h("p", { class: "budget-scenario-text" });

    const presetButtons = view.max_num_batched_tokens_presets.map((b) => h("button", {
      type: "button", class: "md-button budget-choice", "data-budget": String(b),
      "aria-label": `Budget ${fmt(b)} tokens`,
      onclick: () => change({ max_num_batched_tokens: b }),
    }, fmt(b)));

    // The slider walks the budget on a log scale (eight positions per doubling); the box
    // takes any whole number and pysim checks it.
    const lo = budgetField.lo, hi = budgetField.hi;
    const positions = Math.round(8 * Math.log2(hi / lo));
    const fromPosition = (p) => (p >= positions ? hi : p % 8 === 0 ? Math.round(lo * 2 ** (p / 8))
      : Number((lo * 2 ** (p / 8)).toPrecision(2)));
    const toPosition = (v) => Math.max(0, Math.min(positions, Math.round(8 * Math.log2(v / lo))));
    const sliderId = `budget-slider-${uid()}`;
    const errorEl = h("span", { class: "pysim-error", id: sliderId + "-err", role: "alert" });
    const slider = h("input", { type: "range", id: sliderId, name: "budget", min: 0, max: positions, step: 1,
      "aria-describedby": sliderId + "-err" });
    const box = h("input", { type: "number", name: "budget-value", min: lo, max: hi, step: 1,
      "aria-label": "Budget, tokens per step (typed value)", "aria-describedby": sliderId + "-err" });
    const budgetLabel = "Budget";
    const budgetControl = h("div", { class: "pysim-control budget-control", "data-field": "max_num_batched_tokens" },
      h("label", { for: sliderId }, "Any budget (tokens per step)"), slider, box, errorEl);
    let sliderTimer = null;
    slider.addEventListener("input", () => {
      const v = fromPosition(Number(slider.value));
      box.value = v;
      slider.setAttribute("aria-valuetext", tokens(v));
      clearTimeout(sliderTimer);
      sliderTimer = setTimeout(() => change({ max_num_batched_tokens: v }), 120);
    });
    box.addEventListener("change", () => {
      const raw = box.value.trim();
      const v = /^\d+$/.test(raw) ? Number(raw) : raw;
      if (typeof v === "number" && v >= lo && v <= hi) slider.value = toPosition(v);
      change({ max_num_batched_tokens: v });
    });
    function showError(message) {
      errorEl.textContent = message ? `${budgetLabel}: ${message}` : "";
      budgetControl.classList.toggle("has-error", !!message);
    }

    const runBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: toggleRun }, "Run all steps");
    const stepBtn = h("button", { type: "button", class: "md-button", onclick: () => { pause(); moveTo(cursor + 1); } }, "Step");
    const resetBtn = h("button", { type: "button", class: "md-button", onclick: () => { pause(); moveTo(0); } }, "Reset");
    const paceId = `budget-pace-${uid()}`;
    const paceSelect = h("select", { id: paceId }, PACES.map(([v, text]) => h("option", { value: v }, text)));
    paceSelect.addEventListener("change", () => { pace = Number(paceSelect.value); });
    const stepLabel = h("span", { class: "pysim-step-label" });
    const pinBtn = h("button", { type: "button", class: "md-button", onclick: pinRun }, "Pin this run");
    const clearBtn = h("button", { type: "button", class: "md-button", onclick: clearPin }, "Clear pin");

    const hashMessage = h("p", { class: "pysim-error budget-link-error", role: "alert" },
      problems.length ? "Ignored part of the link: " + problems.join("; ") + "." : "");
    const note = h("p", { class: "budget-note", role: "status" });
    const model = h("p", { class: "budget-model" });

    const legend = h("div", { class: "budget-legend" });
    const canvas = h("canvas", { class: "budget-timeline", tabindex: "0", role: "slider",
      "aria-label": "Timeline of steps; arrow keys move the cursor one step, Home and End jump to the ends",
      "aria-valuemin": "0" });
    const chartText = h("p", { class: "budget-chart-text" });
    const details = h("div", { class: "budget-details", "aria-live": "polite" });
    const pinHead = h("p", { class: "budget-pin-head" });
    const pinCanvas = h("canvas", { class: "budget-pin-timeline", role: "img" });
    const pinBox = h("div", { class: "budget-pin", hidden: true }, pinHead, pinCanvas);
    const chartWrap = h("div", { class: "budget-chart" }, canvas, pinBox);
    const table = h("table", { class: "budget-table" });
    const summaryText = h("p", { class: "pysim-summary", "aria-live": "polite" });
    let showAllPrompts = false;
    const moreBtn = h("button", { type: "button", class: "budget-more", hidden: true,
      onclick: () => { showAllPrompts = !showAllPrompts; drawTable(); } });
    const stepsTable = h("table", { class: "budget-steps-table" });
    const stepsDetails = h("details", { class: "budget-steps" },
      h("summary", {}, "Every step as a table"), h("div", { class: "pysim-table-wrap" }, stepsTable));
    stepsDetails.addEventListener("toggle", () => { if (stepsDetails.open) drawStepsTable(); });

    body.append(
      h("div", { class: "pysim-toolbar budget-row", role: "group", "aria-label": "Scenario" },
        h("span", { class: "budget-row-label" }, "Scenario"), scenarioButtons),
      scenarioText,
      h("div", { class: "pysim-toolbar budget-row", role: "group", "aria-label": "Budget presets" },
        h("span", { class: "budget-row-label" }, "Budget"), presetButtons),
      h("div", { class: "pysim-controls" }, budgetControl),
      h("div", { class: "pysim-toolbar" }, runBtn, stepBtn, resetBtn,
        h("span", { class: "pysim-speed" }, h("label", { for: paceId }, "Pace "), paceSelect),
        pinBtn, clearBtn, stepLabel),
      hashMessage, note, model, legend, chartWrap, chartText, details,
      h("div", { class: "pysim-table-wrap" }, table), moreBtn, summaryText, stepsDetails);

    // ---------------------------------------------------------------- playback
    const total = () => view.steps.length;

    function moveTo(n) {
      cursor = Math.max(0, Math.min(total(), n));
      hover = null;
      saveHash();
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
        raf = requestAnimationFrame(frame);
      };
      raf = requestAnimationFrame(frame);
    }

    function pause() {
      if (!playing) return;
      playing = false;
      cancelAnimationFrame(raf);
      root.dataset.playing = "false";
      runBtn.textContent = "Run all steps";
      details.setAttribute("aria-live", "polite");
      saveHash();
    }

    function saveHash() {
      const state = { scenario: config.scenario, max_num_batched_tokens: config.max_num_batched_tokens, step: cursor };
      if (pin) { state.pin_scenario = pin.scenario; state.pin_max_num_batched_tokens = pin.max_num_batched_tokens; }
      writeHash(NAME, state);
    }

    // ---------------------------------------------------------------- pinning
    function pinRun() {
      pin = { scenario: view.config.scenario, max_num_batched_tokens: view.config.max_num_batched_tokens, view };
      saveHash();
      draw();
    }

    function clearPin() {
      pin = null;
      saveHash();
      draw();
    }

    async function computePin(wantedPin) {
      const same = (v) => v.config.scenario === wantedPin.scenario && v.config.max_num_batched_tokens === wantedPin.max_num_batched_tokens;
      pin = { scenario: wantedPin.scenario, max_num_batched_tokens: wantedPin.max_num_batched_tokens, view: null };
      if (same(prerendered.view)) { pin.view = prerendered.view; return; }
      let answer = null;
      try {
        answer = await runtime.call(NAME, { config: payload(wantedPin) });
      } catch (err) {
        answer = null;
      }
      if (!pin || pin.scenario !== wantedPin.scenario || pin.max_num_batched_tokens !== wantedPin.max_num_batched_tokens) return;
      if (!answer || !answer.ok) {
        const why = answer ? answer.error.message : "Python is not available";
        hashMessage.textContent = `Ignored part of the link: the pinned run could not be computed (${why}).`;
        pin = null;
        saveHash();
      } else pin.view = answer.result;
      draw();
    }

    // ---------------------------------------------------------------- recompute
    function payload(cfg) {
      return Object.assign({}, base, { scenario: cfg.scenario, max_num_batched_tokens: cfg.max_num_batched_tokens });
    }

    function change(part) {
      const next = Object.assign({}, config, part);
      showControls(next);
      recompute(next);
    }

    async function recompute(next) {
      const seq = ++requestSeq;
      busy = true;
      root.dataset.busy = "true";
      let answer;
      try {
        answer = await runtime.call(NAME, { config: payload(next) });
      } catch (err) {
        if (seq !== requestSeq) return;
        busy = false;
        delete root.dataset.busy;
        runAfterCompute = false;
        pendingStep = null;
        note.textContent = "Python is not available, so the picture shows the last computed run.";
        showControls(config);
        return;
      }
      if (seq !== requestSeq) return; // a newer change superseded this one
      busy = false;
      delete root.dataset.busy;
      if (!answer.ok) {
        runAfterCompute = false;
        note.textContent = "";
        const field = answer.error.field;
        if (field === "max_num_batched_tokens" || !field) showError(answer.error.message);
        else hashMessage.textContent = `${field}: ${answer.error.message}`;
        root.dataset.error = field || "input";
        pendingStep = null;
        showControls(config, { keepTyped: true });
        return; // keep the last good picture
      }
      showError("");
      note.textContent = "";
      delete root.dataset.error;
      root.dataset.computeMs = answer.ms.toFixed(2);
      config = { scenario: next.scenario, max_num_batched_tokens: next.max_num_batched_tokens };
      view = answer.result;
      pause();
      cursor = pendingStep !== null ? Math.min(pendingStep, total()) : total();
      pendingStep = null;
      hover = null;
      saveHash();
      showControls(config);
      draw();
      if (runAfterCompute) { runAfterCompute = false; run(); }
    }

    // When Python is ready, recompute the pre-rendered settings there: pysim is
    // deterministic, so the answer must equal the model embedded in the page.
    runtime.subscribe(async (state) => {
      if (state !== "ready" || root.dataset.live) return;
      root.dataset.live = "pending";
      const answer = await runtime.call(NAME, { config: payload(prerendered.view.config) }).catch(() => null);
      if (!answer || !answer.ok) { root.dataset.live = "failed"; return; }
      const same = JSON.stringify(answer.result) === JSON.stringify(prerendered.view);
      if (!same) console.error("pysim: the pre-rendered token-budget run differs from what Pyodide computed");
      root.dataset.live = same ? "same" : "updated";
      if (!root.dataset.computeMs) root.dataset.computeMs = answer.ms.toFixed(2);
    });

    // ---------------------------------------------------------------- controls' state
    // The buttons show what is drawn or being computed; after a refused value the typed
    // box keeps what the reader typed, beside its message.
    function showControls(cfg, { keepTyped = false } = {}) {
      for (const b of scenarioButtons) b.setAttribute("aria-pressed", String(b.dataset.scenario === cfg.scenario));
      for (const b of presetButtons) b.setAttribute("aria-pressed", String(Number(b.dataset.budget) === cfg.max_num_batched_tokens));
      const s = view.scenarios.find((x) => x.id === cfg.scenario);
      scenarioText.textContent = s ? s.description : "";
      if (keepTyped) return;
      if (typeof cfg.max_num_batched_tokens === "number" && cfg.max_num_batched_tokens >= lo && cfg.max_num_batched_tokens <= hi) {
        slider.value = toPosition(cfg.max_num_batched_tokens);
        slider.setAttribute("aria-valuetext", tokens(cfg.max_num_batched_tokens));
      }
      if (document.activeElement !== box) box.value = cfg.max_num_batched_tokens;
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

    function drawAxis(ctx, x, { y, width, totalMs, pal }) {
      const step = tickStep(totalMs, width);
      ctx.fillStyle = pal.grid;
      ctx.fillRect(0, y, width, 1);
      ctx.fillStyle = pal.text;
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "top";
      for (let t = 0; t <= totalMs + 1e-9; t += step) {
        const px = x(t);
        ctx.fillRect(px, y, 1, 4);
        const label = fmt(t) + (t === 0 ? " ms" : "");
        ctx.textAlign = px < 20 ? "left" : px > width - 30 ? "right" : "center";
        ctx.fillText(label, px, y + 6);
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
      drawModel();
      drawLegend(colors);
      drawDetails(shown, colors);
      drawTable();
      pinBtn.disabled = false;
      clearBtn.disabled = !pin;
      if (stepsDetails.open && stepsTable.dataset.key !== tableKey()) drawStepsTable();
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

    function drawModel() {
      const m = view.model;
      const key = JSON.stringify(m);
      if (model.dataset.key === key) return;
      model.dataset.key = key;
      model.replaceChildren(h("strong", {}, "Step time"), ` (${m.label}): `,
        h("code", {}, `t_step = ${coef(m.base_ms)} ms + ${coef(m.per_decode_ms)} ms × decoding requests + ` +
          `${coef(m.per_prefill_token_ms)} ms × prompt tokens`));
    }

    function drawLegend(colors) {
      const key = `${view.config.scenario}|${dark}`;
      if (legend.dataset.key === key) return;
      legend.dataset.key = key;
      const items = view.requests.map((r) => {
        const sw = h("span", { class: "budget-sw", "aria-hidden": "true" },
          h("span", { class: "budget-sw-decode" }), h("span", { class: "budget-sw-prefill" }));
        sw.style.setProperty("--c", colors[r.id]);
        const what = r.streaming_at_start
          ? `streaming from 0 ms; prompt ${fmt(r.num_prompt_tokens)}, answer ${fmt(r.max_tokens)}`
          : `arrives ${ms(r.arrival_ms)}; prompt ${fmt(r.num_prompt_tokens)}, answer ${fmt(r.max_tokens)}`;
        return h("li", { "data-request": r.id }, sw, h("strong", {}, r.label), " ", h("span", { class: "budget-muted" }, what));
      });
      legend.replaceChildren(
        h("p", { class: "budget-key" },
          h("span", {}, h("span", { class: "budget-sw budget-sw-key", "aria-hidden": "true" }, h("span", { class: "budget-sw-decode" })),
            "solid slice: one decode token"),
          h("span", {}, h("span", { class: "budget-sw budget-sw-key", "aria-hidden": "true" }, h("span", { class: "budget-sw-prefill" })),
            "striped: a prompt chunk, as tall as its share of the budget"),
          h("span", {}, h("span", { class: "budget-arrow", "aria-hidden": "true" }, "▲ "), "a new prompt arrives")),
        h("ul", { class: "budget-requests", "aria-label": "Requests" }, items));
    }

    function drawDetails(index, colors) {
      const key = `${index}|${view.config.scenario}|${view.config.max_num_batched_tokens}|${dark}`;
      if (details.dataset.key === key) return;
      details.dataset.key = key;
      if (index < 0) {
        details.replaceChildren(h("p", {}, h("strong", {}, "Before the first step. "),
          "Press Step, or move along the timeline with the arrow keys, to see what each step holds."));
        return;
      }
      const s = view.steps[index];
      const label = (id) => { const r = view.requests.find((q) => q.id === id); return r ? r.label : id; };
      const decodes = s.parts.filter((p) => p[1] === "decode");
      const chunks = s.parts.filter((p) => p[1] !== "decode");
      const m = view.model;
      const firstToken = (id) => {
        const r = view.requests.find((q) => q.id === id);
        return r && !r.streaming_at_start && r.token_ms.length && Math.abs(r.token_ms[0] - stepEnd(s)) < 1e-6;
      };
      const chip = (id, text) => {
        const el = h("span", { class: "budget-chip" }, h("span", { class: "budget-dot", "aria-hidden": "true" }), text);
        el.style.setProperty("--c", colors[id]);
        return el;
      };
      const list = (ids) => ids.map(label).join(", ");
      details.replaceChildren(
        h("p", { class: "budget-details-head" },
          h("strong", {}, `Step ${index + 1} of ${view.steps.length}`),
          ` starts at ${ms(s.start_ms)} and lasts ${ms(s.duration_ms)}`,
          h("span", { class: "budget-muted" }, ` (${coef(m.base_ms)} + ${coef(m.per_decode_ms)} × ${s.decode_tokens} + ` +
            `${coef(m.per_prefill_token_ms)} × ${fmt(s.prefill_tokens)})`), "."),
        h("p", {}, h("strong", {}, `Decode: ${tokens(s.decode_tokens)}`),
          decodes.length ? " — " : "", decodes.map((p) => chip(p[0], label(p[0])))),
        h("p", {}, h("strong", {}, `Prefill: ${tokens(s.prefill_tokens)}`),
          chunks.length ? " — " : "",
          chunks.map((p) => chip(p[0], `${label(p[0])} ${fmt(p[2])}${firstToken(p[0]) ? " (last chunk: first token)" : ""}`))),
        h("p", { class: "budget-muted" },
          `Budget used: ${fmt(s.decode_tokens + s.prefill_tokens)} of ${fmt(view.config.max_num_batched_tokens)}. ` +
          `Running ${s.running}, waiting ${s.waiting}.` +
          (s.arrived.length ? ` Arrived: ${list(s.arrived)}.` : "") +
          (s.admitted.length ? ` Admitted: ${list(s.admitted)}.` : "") +
          (s.preempted.length ? ` Preempted: ${list(s.preempted)}.` : "") +
          (s.finished.length ? ` Finished: ${list(s.finished)}.` : "")));
    }

    // The summary: the live run (filled in as playback passes each first token; whole-run
    // figures once it ends) beside the pinned run.
    function drawTable() {
      const n = total();
      const finished = cursor >= n;
      const nowMs = cursor > 0 ? stepEnd(view.steps[cursor - 1]) : -1;
      const runs = [{ key: "live", v: view, partial: !finished }];
      if (pin) runs.push({ key: "pin", v: pin.view, partial: false });
      let reached = 0;
      for (const q of view.requests) if (!q.streaming_at_start && q.token_ms.length && q.token_ms[0] <= nowMs + 1e-9) reached += 1;
      const key = JSON.stringify([view.config.max_num_batched_tokens, view.config.scenario, view.summary.total_ms, finished,
        reached, pin && pin.scenario, pin && pin.max_num_batched_tokens, !!(pin && pin.view), showAllPrompts]);
      if (table.dataset.key === key) return;
      table.dataset.key = key;
      table.dataset.finished = String(finished);

      const newPrompts = [];
      for (const r of runs) {
        if (!r.v) continue;
        for (const q of r.v.requests) {
          if (!q.streaming_at_start && !newPrompts.some((p) => p.id === q.id)) newPrompts.push({ id: q.id, label: q.label });
        }
      }
      const cell = (run, value, reached) => {
        if (!run.v) return h("td", { "data-run": run.key }, "…");
        if (value === null || value === undefined) return h("td", { "data-run": run.key }, "–");
        if (!reached) return h("td", { "data-run": run.key, title: "not reached yet" }, "…");
        return h("td", { "data-run": run.key, "data-value": String(value) }, typeof value === "number" ? fmt(value) : value);
      };
      const reachedBy = (run, req) => !run.partial || (req.token_ms.length > 0 && req.token_ms[0] <= nowMs + 1e-9);
      const rows = [];
      // Many new prompts: the fastest and the slowest first, each prompt behind a toggle.
      const many = newPrompts.length > MANY_PROMPTS;
      if (many) {
        for (const [metric, text, pick] of [["ttft_fastest", "Time to first token, fastest new prompt", (a, b) => a < b],
          ["ttft_slowest", "Time to first token, slowest new prompt", (a, b) => a > b]]) {
          rows.push(h("tr", { "data-metric": metric }, h("th", { scope: "row" }, text), runs.map((run) => {
            if (!run.v) return cell(run, null, false);
            let best = null;
            for (const q of run.v.requests) {
              const t = run.v.summary.ttft_ms[q.id];
              if (t !== undefined && (best === null || pick(t, run.v.summary.ttft_ms[best.id]))) best = q;
            }
            if (!best) return cell(run, null, true);
            const all = run.v.requests.every((q) => q.streaming_at_start || reachedBy(run, q));
            const reached = metric === "ttft_fastest" ? reachedBy(run, best) : all;
            const td = cell(run, run.v.summary.ttft_ms[best.id], reached);
            if (reached) td.append(h("span", { class: "budget-muted" }, ` (${best.label})`));
            return td;
          })));
        }
      }
      for (const p of newPrompts) {
        rows.push(h("tr", { "data-metric": "ttft:" + p.id, hidden: many && !showAllPrompts },
          h("th", { scope: "row" }, `Time to first token, ${p.label}`),
          runs.map((run) => {
            const req = run.v && run.v.requests.find((q) => q.id === p.id);
            if (run.v && !req) return h("td", { "data-run": run.key }, "–");
            return cell(run, run.v ? run.v.summary.ttft_ms[p.id] : null, !run.v || reachedBy(run, req));
          })));
      }
      moreBtn.hidden = !many;
      moreBtn.setAttribute("aria-expanded", String(showAllPrompts));
      moreBtn.textContent = showAllPrompts ? "Hide each prompt's time to first token"
        : `Show the time to first token of each of the ${newPrompts.length} new prompts`;
      const whole = [["itl_p50", "Inter-token latency, p50", (v) => v.summary.itl_p50_ms],
        ["itl_max", "Inter-token latency, max", (v) => v.summary.itl_max_ms],
        ["total", "Total time", (v) => v.summary.total_ms],
        ["steps", "Steps", (v) => v.summary.steps]];
      for (const [metric, text, get] of whole) {
        rows.push(h("tr", { "data-metric": metric }, h("th", { scope: "row" }, text + (metric === "steps" ? "" : " (ms)")),
          runs.map((run) => cell(run, run.v ? get(run.v) : null, !run.partial))));
      }
      const head = h("tr", {}, h("th", { scope: "col" }, "Figure (ms unless stated)"),
        runs.map((run) => h("th", { scope: "col", "data-run": run.key },
          (run.key === "live" ? "This run: " : "Pinned: ") +
          (run.v ? runName(run.v) : `${pin.scenario}, budget ${fmt(pin.max_num_batched_tokens)}`))));
      table.replaceChildren(h("caption", {}, finished ? "Summary of the run" + (pin ? "s" : "")
        : "Summary so far: whole-run figures appear after the last step"),
      h("thead", {}, head), h("tbody", {}, rows));

      const line = (v) => {
        const ttfts = Object.values(v.summary.ttft_ms);
        const worst = ttfts.length ? Math.max(...ttfts) : null;
        return `${runName(v)}: ` + (worst === null ? "" : (ttfts.length === 1 ? `first token after ${ms(worst)}` : `slowest first token after ${ms(worst)}`) + "; ") +
          `longest pause between two tokens ${ms(v.summary.itl_max_ms)}.`;
      };
      summaryText.textContent = finished ? [line(view), pin && pin.view ? "Pinned " + line(pin.view) : ""].join(" ") : "";
    }

    function tableKey() {
      return `${view.config.scenario}|${view.config.max_num_batched_tokens}|${view.summary.total_ms}`;
    }

    // The text alternative to the timeline: every step, built only when opened.
    function drawStepsTable() {
      stepsTable.dataset.key = tableKey();
      const label = Object.fromEntries(view.requests.map((r) => [r.id, r.label]));
      const rows = view.steps.map((s, i) => h("tr", {},
        h("th", { scope: "row" }, String(i + 1)), h("td", {}, fmt(s.start_ms)), h("td", {}, fmt(s.duration_ms)),
        h("td", {}, String(s.decode_tokens)), h("td", {}, fmt(s.prefill_tokens)),
        h("td", { class: "budget-left" }, s.parts.filter((p) => p[1] !== "decode")
          .map((p) => `${label[p[0]] || p[0]} ${fmt(p[2])}`).join(", "))));
      stepsTable.replaceChildren(h("caption", {}, runName(view)),
        h("thead", {}, h("tr", {}, ["Step", "Start (ms)", "Duration (ms)", "Decode tokens", "Prefill tokens", "Prefill by request"]
          .map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows));
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
    showControls(wanted);
    if (wanted.scenario !== config.scenario || wanted.max_num_batched_tokens !== config.max_num_batched_tokens) {
      note.textContent = "Computing the run from the link; until Python starts, the picture shows the default run.";
      recompute(wanted);
    } else if (pendingStep !== null) {
      cursor = Math.min(pendingStep, total());
      pendingStep = null;
    }
    if (wantedPin) computePin(wantedPin); // draws when it has the run
    readTheme();
    chartWidth = chartWrap.clientWidth;
    new ResizeObserver(() => {
      if (chartWrap.clientWidth === chartWidth) return; // heights change as we draw
      chartWidth = chartWrap.clientWidth;
      draw();
    }).observe(chartWrap);
    new MutationObserver(() => { readTheme(); draw(); })
      .observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
    draw();
  }

  window.PySim.register(NAME, mount);
})();
