// Widget for simulation 1, the scheduler race (pysim/naive_batching.py, bridge name
// "naive_batching").
//
// pysim computes every frame of all three schedulers at once; this file only plays
// them back and draws them. Playback (Run / Pause / Step / Reset) moves a cursor over
// the precomputed steps, so it never waits for Python; changing a setting asks pysim
// (through live.js, which draws the controls from pysim's describe) for a new view.
(function () {
  "use strict";
  const { h, tableBox, fmt, reducedMotion, sizeCanvas, stripePattern } = window.PySim;

  const NAMES = {
    static: "Static batching",
    continuous_reserved: "Continuous, reserved",
    continuous_paged: "Continuous, paged",
  };
  const ORDER = ["static", "continuous_reserved", "continuous_paged"];
  // Settings the page keeps at their defaults: the workload's shape, and which
  // schedulers run (always all three here; "Show" only hides panels).
  const FIXED = ["prompt_blocks_min", "prompt_blocks_max", "answer_blocks_min", "answer_blocks_max", "scheduler"];
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

  function mount(w) {
    const root = w.root;
    let view = w.view;
    // The reader's own state, kept in the link beside the config: the panels shown and
    // the playback position. Anything else there is ignored.
    let show = w.link.view === "all" || ORDER.includes(w.link.view) ? w.link.view : "all";
    const linkStep = (otherwise) => {
      const n = w.link.step ? Number(w.link.step) : NaN;
      return Number.isInteger(n) && n >= 0 ? Math.min(n, lastStep()) : otherwise;
    };
    let cursor = linkStep(lastStep()); // the pre-rendered picture: the finished race
    let timer = null;
    let speed = 12; // steps per second

    // ---------------------------------------------------------------- controls
    const select = h("select", { id: "race-view-" + Math.random().toString(36).slice(2, 7), "aria-label": "Schedulers to show" },
      h("option", { value: "all" }, "All three, same requests"),
      ORDER.map((name) => h("option", { value: name }, NAMES[name])));
    select.value = show;
    select.addEventListener("change", () => { show = select.value; w.saveLink(); draw(); });

    const runBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: run }, "Run");
    const pauseBtn = h("button", { type: "button", class: "md-button", onclick: pause }, "Pause");
    const stepBtn = h("button", { type: "button", class: "md-button", onclick: () => { pause(); advance(); } }, "Step");
    const resetBtn = h("button", { type: "button", class: "md-button", onclick: () => { pause(); cursor = 0; w.saveLink(); draw(); } }, "Reset");
    const speedInput = h("input", { type: "range", min: 1, max: 60, value: speed, id: "race-speed-" + Math.random().toString(36).slice(2, 7) });
    const speedOut = h("output", {}, speed + " steps/s");
    speedInput.addEventListener("input", () => {
      speed = Number(speedInput.value);
      speedOut.textContent = speed + " steps/s";
      if (timer) { pause(); run(); }
    });
    const stepLabel = h("span", { class: "pysim-step-label", "aria-live": "off" });

    // Every described setting but FIXED, debounced a little so typing two boxes in a
    // row computes once.
    const controls = w.controls({ skip: FIXED, onChange: (name, value) => w.set({ [name]: value }, 120) });

    const item = (cls, text) => h("span", { class: "pysim-legend-item" }, h("span", { class: "sw " + cls }), text);
    const legend = h("div", { class: "pysim-legend", "aria-label": "Legend" },
      item("sw-prompt", "prompt blocks"), item("sw-generated", "generated blocks"),
      item("sw-reserved", "reserved but unused"), item("sw-preempt", "preempted"),
      h("span", { class: "pysim-legend-note" }, "Timeline: one colour per request, one column per step."));

    const panelsEl = h("div", { class: "race-panels" });
    const table = h("table", { class: "race-table" });
    const summary = h("p", { class: "pysim-summary", "aria-live": "polite" });

    w.body.append(
      h("div", { class: "pysim-toolbar" },
        h("label", { for: select.id }, "Show "), select,
        runBtn, pauseBtn, stepBtn, resetBtn,
        h("span", { class: "pysim-speed" }, h("label", { for: speedInput.id }, "Speed "), speedInput, speedOut),
        stepLabel),
      controls.root, w.messages, legend, panelsEl,
      tableBox(table), summary);

    const panels = {};
    for (const name of ORDER) {
      const title = h("h4", { class: "race-title" }, NAMES[name]);
      const status = h("span", { class: "race-status" });
      const timeline = w.canvas({ class: "race-timeline", role: "img" });
      const bars = w.canvas({ class: "race-bars", role: "img" });
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
      if (cursor >= lastStep()) { pause(); w.saveLink(); }
    }
    function run() {
      if (timer) return;
      if (cursor >= lastStep()) { cursor = 0; draw(); } // a replay starts from step 0 at once
      if (reducedMotion()) { cursor = lastStep(); w.saveLink(); draw(); return; }
      timer = w.interval(advance, 1000 / speed);
      root.dataset.playing = "true";
    }
    function pause() {
      if (timer) clearInterval(timer);
      timer = null;
      root.dataset.playing = "false";
      w.saveLink();
    }

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

    w.observe(new ResizeObserver(() => draw())).observe(panelsEl);
    // Redraw when the reader switches light/dark: the palette comes from CSS.
    w.observe(new MutationObserver(() => draw()))
      .observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });

    return {
      // A new race is shown finished at once (a link's at the step it names): pysim has
      // every frame already, so nothing should wait for Run, which replays it. If it
      // was playing, the new race plays from step 0. The first picture, and the live
      // check's, keep the cursor.
      draw(next, state, why) {
        view = next;
        if (why !== "change" && why !== "link") return draw();
        const wasPlaying = !!timer;
        pause();
        cursor = why === "link" ? linkStep(lastStep()) : wasPlaying ? 0 : lastStep();
        draw();
        if (wasPlaying) run();
      },
      linkState: () => ({ view: show, step: cursor }),
    };
  }

  window.PySim.widget("naive_batching", { link: ["view", "step"], mount });
})();
