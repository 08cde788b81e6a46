// Widget for simulation 1, the scheduler race (pysim/sims/naive_batching.py, bridge name
// "naive_batching").
//
// pysim computes every frame of all three schedulers at once, on the same requests;
// this file draws them side by side, so the reader sees where each scheduler leaves KV
// memory idle. Playback (Run / Pause / Step / Reset, w.playback) moves a cursor over the
// precomputed steps, so it never waits for Python; changing a setting asks pysim
// (through live.js, which draws the controls from pysim's describe) for a new view.
(function () {
  "use strict";
  const { h, tableBox, fmt, palette, sizeCanvas, stripePattern } = window.PySim;

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

  const COLOURS = {
    prompt: "--pysim-prompt", generated: "--pysim-generated", reserved: "--pysim-reserved",
    idle: "--pysim-idle", text: "--pysim-text", preempt: "--pysim-preempt", grid: "--pysim-grid",
  };

  // A cell's colour says what the slot did in that step, never which request held it:
  // with one hue per request, some requests would be red or green, and read as
  // "preempted" or "generated". A request is the run of cells in its row from its first (prompt)
  // cell; the pointer names it.
  function cellStyle(state, colours, reservedPattern) {
    if (state === "new") return colours.prompt; // admitted (or resumed): its prompt is read
    if (state === "done") return reservedPattern; // finished, slot and reservation still held
    return colours.generated; // "run": wrote one answer block
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
    // The reader's own state, kept in the link beside the config: the panels shown and
    // the playback position. Anything else there is ignored.
    let show = w.link.view === "all" || ORDER.includes(w.link.view) ? w.link.view : "all";
    let speed = 12; // steps per second
    // One step a tick of the clock; each step reached is drawn, and a timeline wider
    // than its box scrolls to keep it in view. The pre-rendered picture: the finished race.
    const play = w.playback({ steps: lastStep, rate: speed / 1000, draw: () => { draw(); follow(); } });

    // ---------------------------------------------------------------- controls
    const select = h("select", { id: w.id("race-view"), "aria-label": "Schedulers to show" },
      h("option", { value: "all" }, "All three, same requests"),
      ORDER.map((name) => h("option", { value: name }, NAMES[name])));
    select.value = show;
    select.addEventListener("change", () => { show = select.value; w.saveLink(); draw(); });

    const runBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: play.run }, "Run");
    const pauseBtn = h("button", { type: "button", class: "md-button", onclick: play.pause }, "Pause");
    const stepBtn = h("button", { type: "button", class: "md-button", onclick: () => play.moveTo(play.cursor + 1) }, "Step");
    const resetBtn = h("button", { type: "button", class: "md-button", onclick: () => play.moveTo(0) }, "Reset");
    const speedInput = h("input", { type: "range", min: 1, max: 60, value: speed, id: w.id("race-speed") });
    const speedOut = h("output", {}, speed + " steps/s");
    // A screen reader says the speed in words, not a bare number.
    const speedWords = () => `${speed} ${speed === 1 ? "step" : "steps"} per second`;
    speedInput.setAttribute("aria-valuetext", speedWords());
    speedInput.addEventListener("input", () => {
      speed = Number(speedInput.value);
      speedOut.textContent = speed + " steps/s";
      speedInput.setAttribute("aria-valuetext", speedWords());
      play.rate = speed / 1000;
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
    const tableWrap = tableBox(table, { class: "race-table-wrap" }, "Race results (the table scrolls sideways on a narrow screen)");
    const tableCue = h("p", { class: "race-cue", hidden: true }, "↔ The table scrolls sideways: more columns to the right.");

    w.body.append(
      h("div", { class: "pysim-toolbar" },
        h("label", { for: select.id }, "Show "), select,
        runBtn, pauseBtn, stepBtn, resetBtn,
        h("span", { class: "pysim-speed" }, h("label", { for: speedInput.id }, "Speed "), speedInput, speedOut),
        stepLabel),
      controls.root, w.messages, legend, panelsEl,
      tableWrap, tableCue, summary);

    const panels = {};
    for (const name of ORDER) {
      const title = h("h4", { class: "race-title" }, NAMES[name]);
      const status = h("span", { class: "race-status" });
      const pointer = h("span", { class: "race-pointer" });
      const timeline = w.canvas({ class: "race-timeline", role: "img" });
      const scroller = h("div", { class: "race-scroll", tabindex: "0", role: "region",
        "aria-label": `${NAMES[name]} timeline (scrolls sideways when it is wider than the screen)` }, timeline);
      const bars = w.canvas({ class: "race-bars", role: "img" });
      // Said in words where a timeline is wider than its box (a phone): how much is in
      // view; a shade at the edge that has more (race-more-left/right) says it too.
      const cue = h("p", { class: "race-cue", hidden: true });
      const scrollBox = h("div", { class: "race-scroll-box" }, scroller);
      const barsTitle = h("p", { class: "race-bars-title" });
      const barsBox = h("div", { class: "race-bars-box" }, barsTitle, bars);
      const panel = h("section", { class: "race-panel", "data-scheduler": name, "aria-label": NAMES[name] },
        h("div", { class: "race-head" }, title, status, pointer),
        h("div", { class: "race-canvases" }, h("div", { class: "race-timeline-box" }, scrollBox, cue), barsBox));
      panels[name] = { panel, status, pointer, scroller, scrollBox, cue, timeline, bars, barsBox, barsTitle };
      w.listen(scroller, "scroll", () => edges(scrollBox, scroller));
      w.listen(timeline, "mousemove", (event) => point(name, event));
      w.listen(timeline, "mouseleave", () => { pointer.textContent = ""; });
      panelsEl.append(panel);
    }

    // ---------------------------------------------------------------- playback
    // The race is over when the slowest scheduler finishes.
    function lastStep() {
      return Math.max(...Object.values(w.view.schedulers).map((s) => s.steps_to_finish));
    }

    // The cell under the pointer, named in the panel's head (drawn cells only).
    function point(name, event) {
      const { timeline, pointer } = panels[name];
      const result = w.view.schedulers[name];
      const rect = timeline.getBoundingClientRect();
      const t = Math.floor((event.clientX - rect.left) / Number(timeline.dataset.cell));
      const s = Math.floor((event.clientY - rect.top) / ROW);
      const step = Math.min(play.cursor, result.steps_to_finish);
      pointer.textContent = t >= 0 && t < step && s >= 0 && s < w.view.config.max_num_seqs
        ? describeCell(w.view, t, s, result.frames[t][s]) : "";
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
        const x = Math.min(play.cursor, w.view.schedulers[name].steps_to_finish) * Number(timeline.dataset.cell);
        if (x < scroller.scrollLeft || x > scroller.scrollLeft + scroller.clientWidth - 8) {
          scroller.scrollLeft = Math.max(0, x - scroller.clientWidth * 0.75);
        }
      }
    }

    // A box that scrolls sideways: which of its edges hide more (a shade is drawn there).
    function edges(box, scroller) {
      const more = scroller.scrollWidth - scroller.clientWidth;
      box.toggleAttribute("data-more-left", more > 1 && scroller.scrollLeft > 1);
      box.toggleAttribute("data-more-right", more > 1 && scroller.scrollLeft < more - 1);
    }

    // ---------------------------------------------------------------- drawing
    function shown() {
      return ORDER.filter((name) => w.view.schedulers[name] && (show === "all" || show === name));
    }

    function draw() {
      const colours = palette(w.root, COLOURS);
      const total = lastStep();
      stepLabel.textContent = `Step ${play.cursor} of ${total}`;
      for (const name of ORDER) {
        const visible = shown().includes(name);
        panels[name].panel.hidden = !visible;
        if (visible) drawPanel(name, colours, total);
      }
      drawTable();
    }

    function drawPanel(name, colours, total) {
      const result = w.view.schedulers[name];
      const { panel, status, scroller, scrollBox, cue, timeline, bars, barsBox, barsTitle } = panels[name];
      const slots = w.view.config.max_num_seqs;
      const step = Math.min(play.cursor, result.steps_to_finish);
      const frame = step > 0 ? result.frames[step - 1] : [];
      const running = frame.filter((s) => s && (s[4] === "run" || s[4] === "new")).length;
      const kv = step > 0 ? result.kv[step - 1] : [0, 0, 0];
      const done = play.cursor >= result.steps_to_finish;
      const marks = preemptionsUpTo(result, step);
      const preempted = `${marks.length} ${marks.length === 1 ? "preemption" : "preemptions"}`;
      status.textContent = done
        ? `finished in ${result.steps_to_finish} steps, ${preempted}`
        : `step ${step}: ${running} running, KV ${kv[0] + kv[1]} written + ${kv[2]} reserved of ${w.view.config.num_gpu_blocks}, ${preempted} so far`;

      // Timeline: one row per slot, one column per step, drawn up to the cursor.
      // The bars sit beside the timeline if it keeps 320 px, else under it.
      const room = panel.clientWidth;
      const area = Math.max(120, room - BARS - 10 >= 320 ? room - BARS - 10 : room);
      const steps = Math.max(1, total);
      const cell = Math.min(CELL_MAX, Math.max(area / steps, Math.min(CELL_MIN, MAX_WIDTH / steps)));
      scroller.style.width = `${area}px`;
      const ctx = sizeCanvas(timeline, Math.max(area, Math.ceil(steps * cell)), slots * ROW + 2);
      const reservedPattern = stripePattern(ctx, colours.reserved);
      ctx.fillStyle = colours.idle;
      ctx.fillRect(0, 0, total * cell, slots * ROW);
      for (let t = 0; t < step; t++) {
        const f = result.frames[t];
        for (let s = 0; s < f.length; s++) {
          if (!f[s] || f[s][4] === "pre") continue;
          ctx.fillStyle = cellStyle(f[s][4], colours, reservedPattern);
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
        ctx.fillStyle = colours.preempt;
        ctx.fillRect(mx, s * ROW + 1, mw, ROW - 2);
        ctx.strokeStyle = colours.text;
        ctx.lineWidth = 1;
        ctx.strokeRect(mx + 0.5, s * ROW + 1.5, mw - 1, ROW - 3);
      }
      timeline.dataset.cell = String(cell);
      timeline.dataset.preemptions = String(marks.length);
      ctx.fillStyle = colours.text;
      ctx.fillRect(step * cell, 0, 1, slots * ROW);
      timeline.setAttribute("aria-label", `${NAMES[name]} slot timeline, ${slots} slots by ${total} steps, ` +
        `${preempted} marked; see the table below for the figures.`);
      const inView = Math.floor(area / cell);
      cue.hidden = inView >= steps;
      cue.textContent = cue.hidden ? "" : `↔ The timeline scrolls sideways: about ${inView} of its ${total} steps are in view.`;
      edges(scrollBox, scroller);

      // KV bars: what each slot holds at the cursor, scaled to the longest request;
      // titled, and left out when no slot holds anything (an empty box read as missing).
      const holding = frame.some((slot) => slot);
      barsBox.hidden = !holding;
      barsTitle.textContent = `KV blocks per slot at step ${step}`;
      const barWidth = BARS;
      const bctx = sizeCanvas(bars, barWidth, slots * ROW + 2);
      const longest = w.view.config.longest_blocks || 30;
      const scale = (barWidth - 4) / longest;
      const pattern = stripePattern(bctx, colours.reserved);
      bctx.fillStyle = colours.idle;
      bctx.fillRect(0, 0, barWidth, slots * ROW);
      for (let s = 0; s < frame.length; s++) {
        const slot = frame[s];
        if (!slot) continue;
        const [, prompt, generated, reserved, state] = slot;
        let x = 0;
        const y = s * ROW + 1;
        const part = (n, style) => { bctx.fillStyle = style; bctx.fillRect(x, y, n * scale, ROW - 2); x += n * scale; };
        part(prompt, state === "pre" ? colours.preempt : colours.prompt);
        part(generated, state === "pre" ? colours.preempt : colours.generated);
        part(reserved, pattern);
      }
      bars.setAttribute("aria-label", `${NAMES[name]} KV blocks held per slot at step ${step}: ${kv[0]} prompt, ${kv[1]} generated, ${kv[2]} reserved but unused.`);
    }

    function drawTable() {
      const head = h("tr", {}, ["Scheduler", "Steps to finish", "Mean wait (steps)", "p90 wait", "Mean running", "Mean KV: prompt / answer / reserved", "Preemptions"]
        .map((text) => h("th", { scope: "col" }, text)));
      const rows = shown().map((name) => {
        const r = w.view.schedulers[name];
        const finished = play.cursor >= r.steps_to_finish;
        const cells = finished
          ? [r.steps_to_finish, fmt(r.mean_wait_steps), r.p90_wait_steps, fmt(r.mean_running),
             `${fmt(r.mean_kv.prompt)} / ${fmt(r.mean_kv.answer)} / ${fmt(r.mean_kv.reserved_unused)}`, r.preemptions]
          : [play.cursor === 0 ? "not started: press Run or Step" : `running… (step ${play.cursor})`, "", "", "", "", ""];
        return h("tr", { "data-scheduler": name, "data-finished": finished ? "true" : "false" },
          h("th", { scope: "row" }, NAMES[name]), cells.map((c) => h("td", {}, String(c))));
      });
      table.replaceChildren(h("caption", {}, `${w.view.config.num_requests} requests, pool of ${w.view.config.num_gpu_blocks} blocks (${w.view.usable_blocks} usable), at most ${w.view.config.max_num_seqs} running (seed ${w.view.config.seed})`),
        h("thead", {}, head), h("tbody", {}, rows));
      tableCue.hidden = tableWrap.scrollWidth <= tableWrap.clientWidth + 1;
      const finished = shown().filter((n) => play.cursor >= w.view.schedulers[n].steps_to_finish);
      summary.textContent = finished.length
        ? finished.map((n) => `${NAMES[n]}: ${w.view.schedulers[n].steps_to_finish} steps`).join("; ") + "."
        : "";
    }

    return {
      // A new race is shown finished at once (a link's at the step it names): pysim has
      // every frame already, so nothing should wait for Run, which replays it. If it
      // was playing, the new race plays from step 0. The first picture keeps the cursor.
      draw(next, state, why) {
        if (why !== "change" && why !== "link") return draw();
        const again = play.playing;
        if (why === "link") play.fromLink(); else play.moveTo(again ? 0 : Infinity);
        if (again) play.run();
      },
      // The timeline's columns fit the width; the colours come from CSS.
      redraw: draw,
      linkState: () => ({ view: show }),
    };
  }

  window.PySim.widget("naive_batching", { link: ["view", "step"], renamed: { requests: "num_requests" }, mount });
})();
