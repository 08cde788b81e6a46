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
  // Narrowest: below 2 px a step, the hatching the page asks you to watch disappears,
  // so a long race scrolls sideways instead (a phone shows 246 steps in ~160 px).
  const CELL_MIN = 2;
  const MAX_WIDTH = 12000; // px of timeline at most: a canvas must stay drawable
  const BARS = 140; // px of the KV bars beside (or, on a narrow screen, under) the timeline
  const MARK = 4; // px: a preemption's mark is at least this wide, so each one can be counted

  function colors(el) {
    const css = getComputedStyle(el);
    const v = (name) => css.getPropertyValue(name).trim();
    return {
      prompt: v("--pysim-prompt"), generated: v("--pysim-generated"),
      reserved: v("--pysim-reserved"), idle: v("--pysim-idle"), text: v("--pysim-text"),
      preempt: v("--pysim-preempt"), grid: v("--pysim-grid"),
    };
  }

  // A cell's colour says what the slot did in that step, never which request held it:
  // with one hue per request, some requests were red and green and read as "preempted"
  // and "generated". A request is the run of cells in its row from its first (prompt)
  // cell; the pointer names it.
  function cellStyle(state, palette, reservedPattern) {
    if (state === "new") return palette.prompt; // admitted (or resumed): its prompt is read
    if (state === "done") return reservedPattern; // finished, slot and reservation still held
    return palette.generated; // "run": wrote one answer block
  }

  // What the reader points at, in words: frames[t][s] of one scheduler.
  function describeCell(view, t, s, slot) {
    const where = `slot ${s + 1}, step ${t + 1}: `;
    if (!slot) return where + "idle";
    const [id, , written, , state] = slot;
    const of = view.workload[id].answer_blocks;
    if (state === "pre") return where + `request ${id} preempted, its blocks freed (${written} of ${of} answer blocks kept to recompute)`;
    if (state === "done") return where + `request ${id} finished; its slot and reservation are still held`;
    return where + `request ${id} ${state === "new" ? "admitted, prompt read, " : ""}wrote answer block ${written} of ${of}`;
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
    const resetBtn = h("button", { type: "button", class: "md-button", onclick: () => { pause(); cursor = 0; w.saveLink(); draw(); follow(); } }, "Reset");
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
      item("sw-prompt", "prompt (timeline: the step it is read)"), item("sw-generated", "generated"),
      item("sw-reserved", "reserved but unused"), item("sw-preempt race-sw-preempt", "preempted (one mark each)"),
      h("span", { class: "pysim-legend-note" }, "Timeline: one row per slot, one column per step; colour is what the slot did, " +
        "not which request (point at a cell to see it)."));

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
      tableBox(table, { class: "race-table-wrap" }, "Race results (the table scrolls sideways on a narrow screen)"),
      summary);

    const panels = {};
    for (const name of ORDER) {
      const title = h("h4", { class: "race-title" }, NAMES[name]);
      const status = h("span", { class: "race-status" });
      const pointer = h("span", { class: "race-pointer" });
      const timeline = w.canvas({ class: "race-timeline", role: "img" });
      const scroller = h("div", { class: "race-scroll", tabindex: "0", role: "region",
        "aria-label": `${NAMES[name]} timeline (scrolls sideways when it is wider than the screen)` }, timeline);
      const bars = w.canvas({ class: "race-bars", role: "img" });
      const panel = h("section", { class: "race-panel", "data-scheduler": name, "aria-label": NAMES[name] },
        h("div", { class: "race-head" }, title, status, pointer),
        h("div", { class: "race-canvases" }, scroller, bars));
      panels[name] = { panel, status, pointer, scroller, timeline, bars };
      w.listen(timeline, "mousemove", (event) => point(name, event));
      w.listen(timeline, "mouseleave", () => { pointer.textContent = ""; });
      panelsEl.append(panel);
    }

    // ---------------------------------------------------------------- playback
    function lastStep() {
      return Math.max(...Object.values(view.schedulers).map((s) => s.steps_to_finish)) ;
    }
    function advance() {
      if (cursor < lastStep()) cursor += 1;
      draw();
      follow();
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

    // The cell under the pointer, named in the panel's head (drawn cells only).
    function point(name, event) {
      const { timeline, pointer } = panels[name];
      const result = view.schedulers[name];
      const rect = timeline.getBoundingClientRect();
      const t = Math.floor((event.clientX - rect.left) / Number(timeline.dataset.cell));
      const s = Math.floor((event.clientY - rect.top) / ROW);
      const step = Math.min(cursor, result.steps_to_finish);
      pointer.textContent = t >= 0 && t < step && s >= 0 && s < view.config.max_num_seqs
        ? describeCell(view, t, s, result.frames[t][s]) : "";
    }

    // Preemptions up to the cursor: [step, slot] of each, one mark apiece.
    function preemptionsUpTo(result, step) {
      const out = [];
      for (let t = 0; t < step; t++) result.frames[t].forEach((slot, s) => { if (slot && slot[4] === "pre") out.push([t, s]); });
      return out;
    }

    // While the race plays, a timeline wider than its box scrolls to keep the cursor in view.
    function follow() {
      for (const name of shown()) {
        const { scroller, timeline } = panels[name];
        const x = Math.min(cursor, view.schedulers[name].steps_to_finish) * Number(timeline.dataset.cell);
        if (x < scroller.scrollLeft || x > scroller.scrollLeft + scroller.clientWidth - 8) {
          scroller.scrollLeft = Math.max(0, x - scroller.clientWidth * 0.75);
        }
      }
    }

    // ---------------------------------------------------------------- drawing
    function shown() {
      return ORDER.filter((name) => view.schedulers[name] && (show === "all" || show === name));
    }

    let drawnWidth = null; // panelsEl's width at the last draw
    function draw() {
      const palette = colors(root);
      drawnWidth = panelsEl.clientWidth; // (colors() has just laid the page out)
      const total = lastStep();
      cursor = Math.min(cursor, total);
      stepLabel.textContent = `Step ${cursor} of ${total}`;
      for (const name of ORDER) {
        const visible = shown().includes(name);
        panels[name].panel.hidden = !visible;
        if (visible) drawPanel(name, palette, total);
      }
      drawTable();
    }

    function drawPanel(name, palette, total) {
      const result = view.schedulers[name];
      const { panel, status, scroller, timeline, bars } = panels[name];
      const slots = view.config.max_num_seqs;
      const step = Math.min(cursor, result.steps_to_finish);
      const frame = step > 0 ? result.frames[step - 1] : [];
      const running = frame.filter((s) => s && (s[4] === "run" || s[4] === "new")).length;
      const kv = step > 0 ? result.kv[step - 1] : [0, 0, 0];
      const done = cursor >= result.steps_to_finish;
      const marks = preemptionsUpTo(result, step);
      const preempted = `${marks.length} ${marks.length === 1 ? "preemption" : "preemptions"}`;
      status.textContent = done
        ? `finished in ${result.steps_to_finish} steps, ${preempted}`
        : `step ${step}: ${running} running, KV ${kv[0] + kv[1]} written + ${kv[2]} reserved of ${view.config.num_gpu_blocks}, ${preempted} so far`;

      // Timeline: one row per slot, one column per step, drawn up to the cursor.
      // The bars sit beside the timeline if it keeps 320 px, else under it.
      const room = panel.clientWidth;
      const area = Math.max(120, room - BARS - 10 >= 320 ? room - BARS - 10 : room);
      const steps = Math.max(1, total);
      const cell = Math.min(CELL_MAX, Math.max(area / steps, Math.min(CELL_MIN, MAX_WIDTH / steps)));
      scroller.style.width = `${area}px`;
      const ctx = sizeCanvas(timeline, Math.max(area, Math.ceil(steps * cell)), slots * ROW + 2);
      const reservedPattern = stripePattern(ctx, palette.reserved);
      ctx.fillStyle = palette.idle;
      ctx.fillRect(0, 0, total * cell, slots * ROW);
      for (let t = 0; t < step; t++) {
        const f = result.frames[t];
        for (let s = 0; s < f.length; s++) {
          if (!f[s] || f[s][4] === "pre") continue;
          ctx.fillStyle = cellStyle(f[s][4], palette, reservedPattern);
          ctx.fillRect(t * cell, s * ROW + 1, Math.max(cell, 1), ROW - 2);
        }
      }
      // Each preemption: a red box at least MARK px wide, outlined in the text colour;
      // one that would overlap the previous mark in its row moves right past it, so
      // every mark stays countable however narrow the columns.
      const rowEnd = {};
      for (const [t, s] of marks) {
        const mw = Math.max(Math.round(cell), MARK);
        const mx = Math.max(0, Math.round(t * cell + cell / 2 - mw / 2), (rowEnd[s] ?? -1) + 1);
        rowEnd[s] = mx + mw;
        ctx.fillStyle = palette.preempt;
        ctx.fillRect(mx, s * ROW + 1, mw, ROW - 2);
        ctx.strokeStyle = palette.text;
        ctx.lineWidth = 1;
        ctx.strokeRect(mx + 0.5, s * ROW + 1.5, mw - 1, ROW - 3);
      }
      timeline.dataset.cell = String(cell);
      timeline.dataset.preemptions = String(marks.length);
      ctx.fillStyle = palette.text;
      ctx.fillRect(step * cell, 0, 1, slots * ROW);
      timeline.setAttribute("aria-label", `${NAMES[name]} slot timeline, ${slots} slots by ${total} steps, ` +
        `${preempted} marked; see the table below for the figures.`);

      // KV bars: what each slot holds at the cursor, scaled to the longest request.
      const barWidth = BARS;
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
      table.replaceChildren(h("caption", {}, `${view.config.num_requests} requests, pool of ${view.config.num_gpu_blocks} blocks (${view.usable_blocks} usable), at most ${view.config.max_num_seqs} running (seed ${view.config.seed})`),
        h("thead", {}, head), h("tbody", {}, rows));
      const finished = shown().filter((n) => cursor >= view.schedulers[n].steps_to_finish);
      summary.textContent = finished.length
        ? finished.map((n) => `${NAMES[n]}: ${view.schedulers[n].steps_to_finish} steps`).join("; ") + "."
        : "";
    }

    // Only a new width changes the drawing. Heights change as it draws, and the first
    // report comes with the first frame, at the width just drawn at: redrawing then
    // delayed that frame, the pre-rendered picture's, by 14 ms (in a trace of a cold load).
    w.observe(new ResizeObserver(() => {
      if (panelsEl.clientWidth !== drawnWidth) draw();
    })).observe(panelsEl);
    // Redraw when the reader switches light/dark: the palette comes from CSS.
    w.onScheme(() => draw());

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

  window.PySim.widget("naive_batching", { link: ["view", "step"], renamed: { requests: "num_requests" }, mount });
})();
