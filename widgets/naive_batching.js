// Widget for simulation 1, the scheduler race (pysim/naive_batching.py, bridge name "naive_batching").
//
// pysim computes every frame of all three schedulers at once; this file only plays
// them back and draws them. Playback (Run / Pause / Step / Reset) moves a cursor over
// the precomputed steps, so it never waits for Python; changing a slider asks pysim
// for a new view model.
(function () {
  "use strict";
  const { h, fmt, readHash, writeHash, numberControl, reducedMotion, sizeCanvas, stripePattern } = window.PySim;

  const NAMES = {
    static: "Static batching",
    continuous_reserved: "Continuous, reserved",
    continuous_paged: "Continuous, paged",
  };
  const ORDER = ["static", "continuous_reserved", "continuous_paged"];
  const CONTROLS = [
    // name, label, slider maximum (typed values may go up to pysim's own bound)
    ["requests", "Requests", 200],
    ["num_gpu_blocks", "Pool blocks", 640],
    ["max_num_seqs", "Max running", 64],
    ["seed", "Seed", 999],
  ];
  const ROW = 9; // px per slot row in the timeline
  const CELL_MAX = 6; // widest a step column gets, px

  function colors(el) {
    const css = getComputedStyle(el);
    const v = (name) => css.getPropertyValue(name).trim();
    return {
      prompt: v("--pysim-prompt"), generated: v("--pysim-generated"),
      reserved: v("--pysim-reserved"), idle: v("--pysim-idle"), text: v("--pysim-text"),
      preempt: v("--pysim-preempt"), grid: v("--pysim-grid"),
    };
  }

  // Request colours: the golden angle spreads neighbouring ids far apart in hue.
  function requestColor(id, dark) {
    const hue = (id * 137.508) % 360;
    return `hsl(${hue.toFixed(1)} 62% ${dark ? 58 : 48}%)`;
  }

  function mount(body, { prerendered, runtime, root }) {
    let view = prerendered.view;
    let config = Object.assign({}, view.config);
    const fields = Object.fromEntries((prerendered.fields || []).map((f) => [f.name, f]));
    let show = "all";
    let cursor = lastStep(); // the pre-rendered picture shows the finished race
    let timer = null;
    let speed = 12; // steps per second
    let requestSeq = 0;

    // ---------------------------------------------------------------- state from the link
    const fromHash = readHash("naive_batching");
    const hashProblems = [];
    for (const [key, value] of Object.entries(fromHash)) {
      if (key === "view") {
        if (value === "all" || ORDER.includes(value)) show = value;
        else hashProblems.push(`view "${value}" is not a scheduler`);
      } else if (key === "step") {
        if (/^\d{1,5}$/.test(value)) cursor = Number(value);
        else hashProblems.push("step must be a whole number");
      } else if (CONTROLS.some(([name]) => name === key)) {
        if (/^\d{1,10}$/.test(value)) config[key] = Number(value);
        else hashProblems.push(`${key} must be a whole number`);
      } else hashProblems.push(`unknown setting "${key}"`);
    }

    // ---------------------------------------------------------------- controls
    const select = h("select", { id: "race-view-" + Math.random().toString(36).slice(2, 7), "aria-label": "Schedulers to show" },
      h("option", { value: "all" }, "All three, same requests"),
      ORDER.map((name) => h("option", { value: name }, NAMES[name])));
    select.value = show;
    select.addEventListener("change", () => { show = select.value; saveHash(); draw(); });

    const runBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: run }, "Run");
    const pauseBtn = h("button", { type: "button", class: "md-button", onclick: pause }, "Pause");
    const stepBtn = h("button", { type: "button", class: "md-button", onclick: () => { pause(); advance(); } }, "Step");
    const resetBtn = h("button", { type: "button", class: "md-button", onclick: () => { pause(); cursor = 0; saveHash(); draw(); } }, "Reset");
    const speedInput = h("input", { type: "range", min: 1, max: 60, value: speed, id: "race-speed-" + Math.random().toString(36).slice(2, 7) });
    const speedOut = h("output", {}, speed + " steps/s");
    speedInput.addEventListener("input", () => {
      speed = Number(speedInput.value);
      speedOut.textContent = speed + " steps/s";
      if (timer) { pause(); run(); }
    });
    const stepLabel = h("span", { class: "pysim-step-label", "aria-live": "off" });

    const controls = {};
    for (const [name, label, uiMax] of CONTROLS) {
      const f = fields[name] || { lo: 0, hi: uiMax };
      controls[name] = numberControl({
        name, label, min: f.lo, max: Math.min(f.hi, uiMax), value: config[name],
        onChange: (value) => changeSetting(name, value),
      });
    }
    const hashMessage = h("p", { class: "pysim-error", role: "alert" }, hashProblems.length ? "Ignored part of the link: " + hashProblems.join("; ") + "." : "");

    const item = (cls, text) => h("span", { class: "pysim-legend-item" }, h("span", { class: "sw " + cls }), text);
    const legend = h("div", { class: "pysim-legend", "aria-label": "Legend" },
      item("sw-prompt", "prompt blocks"), item("sw-generated", "generated blocks"),
      item("sw-reserved", "reserved but unused"), item("sw-preempt", "preempted"),
      h("span", { class: "pysim-legend-note" }, "Timeline: one colour per request, one column per step."));

    const panelsEl = h("div", { class: "race-panels" });
    const table = h("table", { class: "race-table" });
    const summary = h("p", { class: "pysim-summary", "aria-live": "polite" });

    body.append(
      h("div", { class: "pysim-toolbar" },
        h("label", { for: select.id }, "Show "), select,
        runBtn, pauseBtn, stepBtn, resetBtn,
        h("span", { class: "pysim-speed" }, h("label", { for: speedInput.id }, "Speed "), speedInput, speedOut),
        stepLabel),
      h("div", { class: "pysim-controls" }, Object.values(controls).map((c) => c.root)),
      hashMessage, legend, panelsEl,
      h("div", { class: "pysim-table-wrap" }, table), summary);

    const panels = {};
    for (const name of ORDER) {
      const title = h("h4", { class: "race-title" }, NAMES[name]);
      const status = h("span", { class: "race-status" });
      const timeline = h("canvas", { class: "race-timeline", role: "img" });
      const bars = h("canvas", { class: "race-bars", role: "img" });
      const panel = h("section", { class: "race-panel", "data-scheduler": name, "aria-label": NAMES[name] },
        h("div", { class: "race-head" }, title, status),
        h("div", { class: "race-canvases" }, timeline, bars));
      panels[name] = { panel, status, timeline, bars };
      panelsEl.append(panel);
    }

    // ---------------------------------------------------------------- playback
    function lastStep() {
      return Math.max(...Object.values(view.schedulers).map((s) => s.steps_to_finish)) ;
    }
    function advance() {
      if (cursor < lastStep()) cursor += 1;
      draw();
      if (cursor >= lastStep()) { pause(); saveHash(); }
    }
    function run() {
      if (timer) return;
      if (cursor >= lastStep()) cursor = 0;
      if (reducedMotion()) { cursor = lastStep(); saveHash(); draw(); return; }
      timer = setInterval(advance, 1000 / speed);
      root.dataset.playing = "true";
    }
    function pause() {
      if (timer) clearInterval(timer);
      timer = null;
      root.dataset.playing = "false";
      saveHash();
    }

    function saveHash() {
      const state = {};
      for (const [name] of CONTROLS) state[name] = config[name];
      state.view = show;
      state.step = cursor;
      writeHash("naive_batching", state);
    }

    // ---------------------------------------------------------------- recompute
    let debounce = null;
    let draft = null; // every change since the last recompute: quick edits to two boxes both count
    function changeSetting(name, raw) {
      const value = raw === "" ? raw : Number(raw);
      draft = Object.assign({}, draft || config, { [name]: Number.isFinite(value) && raw !== "" ? value : raw });
      clearTimeout(debounce);
      debounce = setTimeout(() => { const next = draft; draft = null; recompute(next); }, 120);
    }

    async function recompute(next) {
      const seq = ++requestSeq;
      for (const c of Object.values(controls)) c.showError("");
      let answer;
      try {
        answer = await runtime.call("naive_batching", { config: payloadConfig(next) });
      } catch (err) {
        controls.requests.showError("");
        summary.textContent = "Python is not available, so the picture shows the last computed race.";
        return;
      }
      if (seq !== requestSeq) return; // a newer change superseded this one
      if (!answer.ok) {
        const control = controls[answer.error.field];
        const label = control ? control.root.querySelector("label").textContent : "Settings";
        (control || controls.requests).showError(`${label}: ${answer.error.message}`);
        root.dataset.error = answer.error.field || "input";
        return; // keep the last good picture
      }
      delete root.dataset.error;
      config = next;
      view = answer.result;
      root.dataset.computeMs = answer.ms.toFixed(2);
      const wasPlaying = !!timer;
      pause();
      cursor = 0;
      saveHash();
      draw();
      if (wasPlaying) run();
    }

    function payloadConfig(cfg) {
      const out = {};
      for (const [name] of CONTROLS) out[name] = cfg[name];
      return out;
    }

    // When Python is ready, recompute the current settings there. The result must equal
    // the pre-rendered model whenever the settings are the defaults: pysim is deterministic.
    runtime.subscribe(async (state) => {
      if (state !== "ready" || root.dataset.live) return;
      root.dataset.live = "pending";
      const answer = await runtime.call("naive_batching", { config: payloadConfig(config) }).catch(() => null);
      if (!answer || !answer.ok) { root.dataset.live = "failed"; return; }
      const same = JSON.stringify(answer.result) === JSON.stringify(view);
      if (!same && hashProblems.length === 0 && !Object.keys(fromHash).some((k) => k !== "view" && k !== "step")) {
        console.error("pysim: the pre-rendered race differs from what Pyodide computed");
      }
      view = answer.result;
      root.dataset.live = same ? "same" : "updated";
      root.dataset.computeMs = answer.ms.toFixed(2);
      cursor = Math.min(cursor, lastStep());
      draw();
    });

    // ---------------------------------------------------------------- drawing
    function shown() {
      return ORDER.filter((name) => view.schedulers[name] && (show === "all" || show === name));
    }

    function draw() {
      const dark = document.body.getAttribute("data-md-color-scheme") === "slate";
      const palette = colors(root);
      const total = lastStep();
      cursor = Math.min(cursor, total);
      stepLabel.textContent = `Step ${cursor} of ${total}`;
      for (const name of ORDER) {
        const visible = shown().includes(name);
        panels[name].panel.hidden = !visible;
        if (visible) drawPanel(name, palette, dark, total);
      }
      drawTable();
    }

    function drawPanel(name, palette, dark, total) {
      const result = view.schedulers[name];
      const { status, timeline, bars } = panels[name];
      const slots = view.config.max_num_seqs;
      const step = Math.min(cursor, result.steps_to_finish);
      const frame = step > 0 ? result.frames[step - 1] : [];
      const running = frame.filter((s) => s && (s[4] === "run" || s[4] === "new")).length;
      const kv = step > 0 ? result.kv[step - 1] : [0, 0, 0];
      const done = cursor >= result.steps_to_finish;
      status.textContent = done
        ? `finished in ${result.steps_to_finish} steps`
        : `step ${step}: ${running} running, KV ${kv[0] + kv[1]} written + ${kv[2]} reserved of ${view.config.num_gpu_blocks}`;

      // Timeline: one row per slot, one column per step, drawn up to the cursor.
      const width = Math.max(120, timeline.parentElement.clientWidth - 150);
      const cell = Math.min(CELL_MAX, width / Math.max(1, total));
      const ctx = sizeCanvas(timeline, width, slots * ROW + 2);
      const reservedPattern = stripePattern(ctx, palette.reserved);
      ctx.fillStyle = palette.idle;
      ctx.fillRect(0, 0, total * cell, slots * ROW);
      for (let t = 0; t < step; t++) {
        const f = result.frames[t];
        for (let s = 0; s < f.length; s++) {
          const slot = f[s];
          if (!slot) continue;
          const state = slot[4];
          ctx.fillStyle = state === "done" ? reservedPattern : state === "pre" ? palette.preempt : requestColor(slot[0], dark);
          ctx.fillRect(t * cell, s * ROW + 1, Math.max(cell, 1), ROW - 2);
        }
      }
      ctx.fillStyle = palette.text;
      ctx.fillRect(step * cell, 0, 1, slots * ROW);
      timeline.setAttribute("aria-label", `${NAMES[name]} slot timeline, ${slots} slots by ${total} steps; see the table below for the figures.`);

      // KV bars: what each slot holds at the cursor, scaled to the longest request.
      const barWidth = 140;
      const bctx = sizeCanvas(bars, barWidth, slots * ROW + 2);
      const longest = view.config.longest_blocks || 30;
      const scale = (barWidth - 4) / longest;
      const pattern = stripePattern(bctx, palette.reserved);
      bctx.fillStyle = palette.idle;
      bctx.fillRect(0, 0, barWidth, slots * ROW);
      for (let s = 0; s < frame.length; s++) {
        const slot = frame[s];
        if (!slot) continue;
        const [, prompt, generated, reserved, state] = slot;
        let x = 0;
        const y = s * ROW + 1;
        const part = (n, style) => { bctx.fillStyle = style; bctx.fillRect(x, y, n * scale, ROW - 2); x += n * scale; };
        part(prompt, state === "pre" ? palette.preempt : palette.prompt);
        part(generated, state === "pre" ? palette.preempt : palette.generated);
        part(reserved, pattern);
      }
      bars.setAttribute("aria-label", `${NAMES[name]} KV blocks held per slot at step ${step}: ${kv[0]} prompt, ${kv[1]} generated, ${kv[2]} reserved but unused.`);
    }

    function drawTable() {
      const head = h("tr", {}, ["Scheduler", "Steps to finish", "Mean wait (steps)", "p90 wait", "Mean running", "Mean KV: prompt / answer / reserved", "Preemptions"]
        .map((text) => h("th", { scope: "col" }, text)));
      const rows = shown().map((name) => {
        const r = view.schedulers[name];
        const finished = cursor >= r.steps_to_finish;
        const cells = finished
          ? [r.steps_to_finish, fmt(r.mean_wait_steps), r.p90_wait_steps, fmt(r.mean_running),
             `${fmt(r.mean_kv.prompt)} / ${fmt(r.mean_kv.answer)} / ${fmt(r.mean_kv.reserved_unused)}`, r.preemptions]
          : ["running…", "", "", "", "", ""];
        return h("tr", { "data-scheduler": name, "data-finished": finished ? "true" : "false" },
          h("th", { scope: "row" }, NAMES[name]), cells.map((c) => h("td", {}, String(c))));
      });
      table.replaceChildren(h("caption", {}, `${view.config.requests} requests, pool of ${view.config.num_gpu_blocks} blocks (${view.usable_blocks} usable), at most ${view.config.max_num_seqs} running (seed ${view.config.seed})`),
        h("thead", {}, head), h("tbody", {}, rows));
      const finished = shown().filter((n) => cursor >= view.schedulers[n].steps_to_finish);
      summary.textContent = finished.length
        ? finished.map((n) => `${NAMES[n]}: ${view.schedulers[n].steps_to_finish} steps`).join("; ") + "."
        : "";
    }

    for (const [name] of CONTROLS) controls[name].set(config[name]);
    if (Object.keys(fromHash).some((k) => CONTROLS.some(([n]) => n === k))) recompute(config).catch(() => {});
    new ResizeObserver(() => draw()).observe(panelsEl);
    // Redraw when the reader switches light/dark: the palette comes from CSS.
    new MutationObserver(() => draw()).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
    draw();
  }

  window.PySim.register("naive_batching", mount);
})();
