// Widget for simulation 2, the KV-cache block manager with prefix caching
// (pysim/sims/paged_kv_cache.py, bridge name "paged_kv_cache").
//
// The state is (config, actions). Every button appends an action and asks pysim to
// replay the whole list from scratch (a few dozen small actions, quick to replay), so
// Undo drops the last action, Reset empties the list, and a link in the URL hash
// (paged_kv_cache.enable_prefix_caching=true&paged_kv_cache.actions=admit,admit,gen)
// restores any state; live.js keeps that state, the link and the caching switch. This
// file only draws what pysim returns: the pool, the block tables, the log and the
// counters, and the block inspector.
(function () {
  "use strict";
  const { h, tableBox, fmt, encodeActions } = window.PySim;
  const NAME = "paged_kv_cache";

  const LAST_LINES = 5; // lines of the latest action repeated under the buttons
  const MAX_LINK_CHARS = 1900; // live.js keeps longer histories out of the link
  const COUNTERS = [
    ["blocks_saved_by_caching", "blocks saved by caching"],
    ["prefill_tokens_skipped", "prefill tokens skipped"],
    ["preemptions", "preemptions"],
    ["evictions", "evictions"],
  ];
  const STATE_WORDS = { used: "in use", cached: "free but cached", free: "free", null: "reserved, vLLM's null block" };

  const plural = (n, word) => `${fmt(n)} ${word}${n === 1 ? "" : "s"}`;
  const ordinal = (n) => {
    const s = ["th", "st", "nd", "rd"], v = n % 100;
    return n + (s[(v - 20) % 10] || s[v] || s[0]);
  };

  function actionName(action) {
    if (action.startsWith("admit:")) return "admit " + action.slice(6);
    return { admit: "admit next", gen: "generate one token", run: "run to completion" }[action] || action;
  }

  // ---------------------------------------------------------------- colours

  // One hue per request (in config order); the golden angle keeps neighbours apart.
  // The lightness and saturation come from CSS (--kv-s, --kv-l), so both themes read.
  function hueOf(index) {
    return Math.round((215 + index * 137.508) % 360);
  }
  const tint = (hue) => `hsl(${hue} var(--kv-s) var(--kv-l))`;

  // A block held by several requests shows diagonal stripes of their colours.
  function ownerBackground(hues) {
    if (!hues.length) return null;
    if (hues.length === 1) return `background: ${tint(hues[0])}`;
    const w = 7;
    const stops = hues.map((hue, i) => `${tint(hue)} ${i * w}px ${(i + 1) * w}px`).join(", ");
    return `background: repeating-linear-gradient(135deg, ${stops})`;
  }

  // ---------------------------------------------------------------- the widget

  function mount(w) {
    const names = w.view.requests.map((r) => r.name);
    const hues = Object.fromEntries(names.map((n, i) => [n, hueOf(i)]));

    let selected = null; // block id shown in the inspector
    let previous = null; // the view before the latest action, to mark changed blocks

    // ------------------------------------------------------------ controls
    const button = (text, onclick, extra = {}) =>
      h("button", Object.assign({ type: "button", class: "md-button", onclick, "data-needs-python": true }, extra), text);
    const admitBtn = button("Admit next", () => w.act("admit"), { class: "md-button md-button--primary" });
    const genBtn = button("Generate one token", () => w.act("gen"));
    const runBtn = button("Run to completion", () => w.act("run"));
    const undoBtn = button("Undo", () => { if (w.draft.actions.length) w.replay(w.draft.actions.slice(0, -1)); });
    const resetBtn = button("Reset", () => w.replay([]));
    const selectId = w.id("kv-admit");
    const admitSelect = h("select", { id: selectId, name: "paged_kv_cache-admit", "data-needs-python": true });
    const admitNamedBtn = button("Admit this one", () => {
      if (admitSelect.value) w.act("admit:" + admitSelect.value);
    });
    // The page's walk-through fixes the pool and the requests; the caching switch (and
    // any setting the config gains) comes from pysim's describe. Switching caching
    // starts over: the same actions mean something else with it.
    const controls = w.controls({
      skip: ["num_gpu_blocks", "block_size"],
      onChange: (name, value) => w.set({ [name]: value }, 0, []),
    });
    const caching = controls.get("enable_prefix_caching");
    caching.root.classList.add("kv-caching");
    caching.help.textContent = "changing it starts over";
    const actionButtons = [admitBtn, admitNamedBtn, genBtn, runBtn, undoBtn, resetBtn];

    const hint = h("p", { class: "kv-hint" });
    const summary = h("p", { class: "kv-summary" });
    const lastAction = h("div", { class: "kv-last", "aria-live": "polite" });

    const counterEls = {};
    const counters = h("div", { class: "kv-counters" }, COUNTERS.map(([key, label]) => {
      const value = h("span", { class: "kv-counter-value" });
      counterEls[key] = value;
      return h("div", { class: "kv-counter", "data-counter": key }, value, h("span", { class: "kv-counter-label" }, label));
    }));
    const countersMore = h("p", { class: "kv-counters-more" });

    const swatch = (style, cls = "") => h("span", { class: "kv-sw " + cls, style });
    const legend = h("div", { class: "pysim-legend kv-legend", role: "group", "aria-label": "Legend" },
      names.slice(0, 12).map((n) => h("span", { class: "pysim-legend-item" }, swatch(ownerBackground([hues[n]])), "request " + n)),
      h("span", { class: "pysim-legend-item" },
        swatch(ownerBackground(names.slice(0, 2).map((n) => hues[n]))), "shared (stripes: one per holder)"),
      h("span", { class: "pysim-legend-item" }, swatch(null, "kv-sw-cached"), "free but cached (keeps its hash)"),
      h("span", { class: "pysim-legend-item" }, swatch(null, "kv-sw-free"), "free"),
      h("span", { class: "pysim-legend-note" },
        "ref = how many block tables hold the block; q = place in the free queue (q0 is handed out next, the highest is evicted last); #… = the block's hash."));

    const poolTitle = h("p", { class: "kv-pool-title", id: w.id("kv-pool") });
    const grid = h("div", { class: "kv-grid pysim-picture", role: "group", "aria-labelledby": poolTitle.id });
    const blockText = w.id("kv-block"); // + "-" + block id: each tile's description
    const queueLine = h("p", { class: "kv-queue" });
    const inspector = h("section", { class: "kv-inspector", "aria-label": "Block inspector" });
    const table = h("table", { class: "kv-table" });
    const logTitle = h("p", { class: "kv-log-title", id: w.id("kv-log") }, "Event log (newest at the bottom; the latest action is marked)");
    const log = h("ol", { class: "kv-log", tabindex: "0", "aria-labelledby": logTitle.id });

    w.body.append(
      h("div", { class: "pysim-toolbar kv-toolbar" }, admitBtn, genBtn, runBtn, undoBtn, resetBtn),
      h("div", { class: "pysim-toolbar kv-toolbar" },
        h("span", { class: "kv-admit-named" },
          h("label", { for: selectId }, "Waiting request"), admitSelect, admitNamedBtn), controls.root),
      w.messages, hint, lastAction, counters, countersMore, legend,
      poolTitle, grid, queueLine, inspector,
      h("p", { class: "kv-table-title" }, "Requests and their block tables"),
      tableBox(table, { class: "kv-table-wrap" }),
      logTitle, log, summary);

    // ------------------------------------------------------------ drawing
    function draw() {
      const started = performance.now();
      const view = w.view;
      const actions = w.state.actions;
      const next = view.next_actions;
      const acted = actions.length;
      const hadFocus = document.activeElement;
      const off = w.offline; // opened from disk: no Python to take an action
      admitBtn.disabled = off || !next.can_admit;
      genBtn.disabled = off || !next.can_gen;
      runBtn.disabled = off || !next.can_run;
      undoBtn.disabled = off || acted === 0;
      resetBtn.disabled = off || acted === 0;
      const keep = admitSelect.value;
      admitSelect.replaceChildren(...next.admittable.map((n) => h("option", { value: n }, n)));
      if (next.admittable.includes(keep)) admitSelect.value = keep;
      admitSelect.disabled = admitNamedBtn.disabled = off || next.admittable.length === 0;
      // A button that just became disabled would drop keyboard focus on the page body.
      if (hadFocus && hadFocus.disabled && (actionButtons.includes(hadFocus) || hadFocus === admitSelect)) {
        (actionButtons.find((b) => !b.disabled) || caching.input).focus();
      }

      const p = view.pool;
      if (next.head) {
        hint.textContent = `Next in line: ${next.head}, needs ${plural(next.head_needs_blocks, "block")}; ` +
          `${plural(p.num_free_blocks, "block")} free${next.head_fits ? "." : ", so admitting it now would fail."}`;
      } else {
        hint.textContent = next.done ? "Every request has finished." : "Nothing is waiting; generate to let the running requests finish.";
      }
      // The latest action's lines; a long "Run to completion" shows its last few here.
      let lines = acted ? view.log.slice(view.last_action_log_start) : [];
      if (lines.length > LAST_LINES) {
        lines = [`(${lines.length - LAST_LINES + 1} earlier lines of this action are in the log below)`,
          ...lines.slice(-(LAST_LINES - 1))];
      }
      lastAction.replaceChildren(
        h("span", { class: "kv-last-label" }, acted ? `Action ${acted}, ${actionName(actions[acted - 1])}:` : "No action yet: every request is waiting."),
        ...lines.map((line) => h("span", { class: "kv-last-line" }, line)));

      const c = view.counters;
      for (const [key] of COUNTERS) counterEls[key].textContent = fmt(c[key]);
      countersMore.textContent = `Prefill computed ${plural(c.prefill_tokens, "token")}; ` +
        `${plural(c.tokens_generated, "token")} generated; ${plural(c.allocations, "block")} handed out; ` +
        `${plural(c.did_not_fit, "admission")} that did not fit.`;

      poolTitle.textContent = `Block pool: ${p.num_gpu_blocks} blocks of ${p.block_size} tokens, prefix caching ${p.enable_prefix_caching ? "on" : "off"}. ` +
        `Block ${p.null_block} is vLLM's null block, so ${p.usable} are usable: ` +
        `${p.used} in use, ${p.cached} free but cached, ${p.free} free.`;
      drawGrid();
      queueLine.textContent = view.free_queue.length
        ? `Free queue, head (handed out next) to tail (evicted last): ${view.free_queue.join(" ")}`
        : "Free queue: empty, every block is in use.";
      drawInspector();
      drawTable();
      drawLog();
      summary.textContent = `After ${plural(acted, "action")} (${plural(view.step, "generate step")}), ` +
        `caching ${p.enable_prefix_caching ? "on" : "off"}: ${p.used} blocks in use, ${p.cached} free but cached, ${p.free} free.` +
        (encodeActions(actions).length > MAX_LINK_CHARS ? " This history is too long for the page link, which keeps only the caching setting." : "");
      w.root.dataset.actions = String(acted);
      w.root.dataset.drawMs = (performance.now() - started).toFixed(2); // for the benchmark
    }

    // Request name -> its pending token (sampled last step, KV written next step).
    function pendingTokens() {
      return Object.fromEntries(w.view.requests.filter((r) => r.pending_token).map((r) => [r.name, r.pending_token]));
    }

    function describeBlock(b) {
      if (b.state === "null") return `Block ${b.id}: ${STATE_WORDS.null}. ${w.view.pool.null_block_why}`;
      const who = b.owners.length ? " by " + b.owners.join(" and ") : "";
      let text = `Block ${b.id}: ${STATE_WORDS[b.state]}${who}, ref count ${b.ref_count}`;
      if (b.hash) text += `, hash ${b.hash}`;
      if (b.tokens.length) text += `, tokens: ${b.tokens.join(" ")}`;
      const pend = pendingTokens();
      if (b.pending.length) text += `, pending (KV written next step): ${b.pending.map((n) => pend[n]).join(" ")}`;
      if (b.free_queue_position !== null) text += `, free-queue position ${b.free_queue_position}`;
      return text;
    }

    function changed(b) {
      if (!previous || !previous.blocks[b.id]) return false;
      const a = previous.blocks[b.id];
      return a.state !== b.state || a.ref_count !== b.ref_count || a.hash !== b.hash ||
        a.owners.join() !== b.owners.join() || a.tokens.join() !== b.tokens.join();
    }

    function drawGrid() {
      const focused = document.activeElement && grid.contains(document.activeElement)
        ? Number(document.activeElement.dataset.block) : null;
      if (selected !== null && selected >= w.view.blocks.length) selected = null;
      const tabStop = selected !== null ? selected : 0;
      const pend = pendingTokens();
      const cells = w.view.blocks.map((b) => {
        const cls = ["kv-block", "kv-" + b.state];
        if (b.owners.length > 1) cls.push("kv-shared");
        if (changed(b)) cls.push("kv-changed");
        return h("button", {
          type: "button", class: cls.join(" "), "data-block": b.id, "data-state": b.state,
          "data-owners": b.owners.join(" "), tabindex: b.id === tabStop ? "0" : "-1",
          // Its name is what the tile shows (a speech user says what they see, WCAG
          // 2.5.3); the sentence saying it in words is its description.
          "aria-current": b.id === selected ? "true" : null, "aria-describedby": `${blockText}-${b.id}`,
          style: ownerBackground(b.owners.map((n) => hues[n])),
        },
        h("span", { class: "kv-block-head" },
          h("span", { class: "kv-id" }, String(b.id)),
          h("span", { class: "kv-ref" }, `ref ${b.ref_count}`)),
        h("span", { class: "kv-owners" }, b.owners.length ? b.owners.join("+") : b.state === "null" ? "null block" : b.state),
        h("span", { class: "kv-words" }, b.state === "null" ? "reserved, never handed out" : b.tokens.join(" "),
          // A pending token's slot is in this block; its KV is written at the next step.
          b.pending.map((n) => h("span", { class: "kv-w-pending", title: `${n} sampled it; KV written next step` }, pend[n]))),
        h("span", { class: "kv-block-foot" },
          h("span", { class: "kv-hash" }, b.hash ? "#" + b.hash : ""),
          h("span", { class: "kv-q" }, b.free_queue_position !== null ? "q" + b.free_queue_position : "")),
        h("span", { id: `${blockText}-${b.id}`, hidden: true }, describeBlock(b)));
      });
      grid.replaceChildren(...cells);
      if (focused !== null && cells[focused]) cells[focused].focus();
    }

    function cellAt(id) {
      return grid.querySelector(`.kv-block[data-block="${id}"]`);
    }

    function select(id, { focus = false } = {}) {
      if (id === null || !w.view.blocks[id]) return;
      selected = id;
      for (const cell of grid.children) {
        const mine = Number(cell.dataset.block) === id;
        cell.tabIndex = mine ? 0 : -1;
        if (mine) cell.setAttribute("aria-current", "true");
        else cell.removeAttribute("aria-current");
      }
      if (focus) cellAt(id).focus();
      drawInspector();
    }

    grid.addEventListener("focusin", (e) => {
      const cell = e.target.closest(".kv-block");
      if (cell) select(Number(cell.dataset.block));
    });
    grid.addEventListener("click", (e) => {
      const cell = e.target.closest(".kv-block");
      if (cell) select(Number(cell.dataset.block), { focus: true });
    });
    // Arrow keys move through the grid (a roving tab stop: Tab enters and leaves it).
    grid.addEventListener("keydown", (e) => {
      const cell = e.target.closest(".kv-block");
      if (!cell) return;
      const id = Number(cell.dataset.block);
      const n = w.view.blocks.length;
      const columns = Math.max(1, getComputedStyle(grid).gridTemplateColumns.split(" ").filter(Boolean).length);
      const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: columns, ArrowUp: -columns };
      let target = null;
      if (e.key in moves) target = id + moves[e.key];
      else if (e.key === "Home") target = 0;
      else if (e.key === "End") target = n - 1;
      else return;
      e.preventDefault();
      if (target >= 0 && target < n) select(target, { focus: true });
    });

    function drawInspector() {
      if (selected === null) {
        inspector.replaceChildren(h("p", { class: "kv-inspector-empty" },
          "Block inspector: click a block, or Tab into the pool and use the arrow keys, to see its details here."));
        return;
      }
      const b = w.view.blocks[selected];
      if (b.state === "null") {
        inspector.replaceChildren(h("h4", { class: "kv-inspector-title" }, `Block ${b.id}: ${STATE_WORDS.null}`),
          h("p", { class: "kv-null-why" }, w.view.pool.null_block_why + " So a pool of " +
            `${w.view.pool.num_gpu_blocks} blocks (vLLM's num_gpu_blocks) has ${w.view.pool.usable} usable.`));
        return;
      }
      const pend = pendingTokens();
      const tables = w.view.requests.filter((r) => r.block_table.includes(b.id))
        .map((r) => `${r.name} (entry ${r.block_table.indexOf(b.id)})`);
      const row = (term, value) => [h("dt", {}, term), h("dd", {}, value)];
      const q = b.free_queue_position;
      inspector.replaceChildren(
        h("h4", { class: "kv-inspector-title" }, `Block ${b.id}: ${STATE_WORDS[b.state]}`),
        h("dl", {},
          row("Owners", b.owners.length ? b.owners.join(", ") : "none"),
          row("Ref count", String(b.ref_count)),
          row("In block tables", tables.length ? tables.join(", ") : "none"),
          row("Hash", b.hash ? b.hash : "none (only full blocks get one, and only with caching on)"),
          row("Parent hash", b.parent_hash ? b.parent_hash : "none"),
          row("Tokens", b.tokens.length ? b.tokens.join(" ") : "none"),
          row("Pending", b.pending.length ? b.pending.map((n) => `${pend[n]} (${n}): sampled, KV written here next step`).join("; ") : "none"),
          row("Free-queue position", q === null ? "not in the free queue (in use)"
            : `${q} of ${w.view.free_queue.length} (${q === 0 ? "handed out next" : q === w.view.free_queue.length - 1 ? "evicted last" : "0 is handed out next"})`)));
    }

    function statusText(r) {
      if (r.queue_position === null) return r.status;
      const place = `${ordinal(r.queue_position + 1)} in line`;
      return r.status === "preempted" ? `preempted, waiting (${place})` : `waiting (${place})`;
    }

    function drawTable() {
      const bs = w.view.pool.block_size;
      const owners = Object.fromEntries(w.view.blocks.map((b) => [b.id, b.owners]));
      const head = h("tr", {}, ["Request", "Status", "Block table", "Tokens (grouped by block)", "Prefilled", "From cache", "Preempted"]
        .map((text) => h("th", { scope: "col" }, text)));
      const rows = w.view.requests.map((r) => {
        const chips = r.block_table.length
          ? r.block_table.map((id) => h("span", {
            class: "kv-chip" + (owners[id].length > 1 ? " kv-chip-shared" : ""), "data-block": id,
            title: `block ${id}, ref ${w.view.blocks[id].ref_count}`,
            style: ownerBackground(owners[id].map((n) => hues[n])),
          }, String(id)))
          : h("span", { class: "kv-none" }, "none");
        // The tokens the cache covered are highlighted when there was one admission;
        // after a preemption the count spans several admissions, so only the number shows.
        const skipped = r.preemptions === 0 ? r.skipped_by_cache : 0;
        const words = [...r.prompt, ...r.generated];
        // The pending token (sampled, KV not written yet) sits at position num_computed_tokens.
        const pendingAt = r.pending_token ? r.num_computed_tokens : -1;
        const groups = [];
        for (let i = 0; i < words.length; i += bs) {
          // A cache hit is always whole blocks, so a group is either skipped or not.
          let cls = "kv-tokgroup" + (i + bs <= skipped ? " kv-skip" : "");
          if (i === pendingAt) cls += " kv-tokgroup-next"; // a block it does not hold yet
          groups.push(h("span", { class: cls, title: i === pendingAt ? "needs a new block at the next step" : null },
            words.slice(i, i + bs).map((w, k) => i + k === pendingAt
              ? h("span", { class: "kv-w kv-w-gen kv-w-pending", title: "sampled; KV written next step" }, w)
              : h("span", { class: i + k < r.prompt.length ? "kv-w" : "kv-w kv-w-gen" }, w))));
        }
        // data-label names each cell where a narrow screen stacks the table.
        return h("tr", { "data-request": r.name, "data-status": r.status },
          h("th", { scope: "row" }, h("span", { class: "kv-sw", style: ownerBackground([hues[r.name]]) }), r.name),
          h("td", { class: "kv-status", "data-label": "Status" }, statusText(r)),
          h("td", { class: "kv-chips", "data-label": "Block table" }, chips),
          h("td", { class: "kv-tokens", "data-label": "Tokens" }, groups,
            h("span", { class: "kv-progress" }, ` ${r.generated.length}/${r.max_tokens} generated`)),
          h("td", { class: "kv-prefilled", "data-label": "Prefilled" }, fmt(r.prefilled)),
          h("td", { class: "kv-skipped", "data-label": "From cache" }, fmt(r.skipped_by_cache)),
          h("td", { class: "kv-preemptions", "data-label": "Preempted" }, fmt(r.preemptions)));
      });
      table.replaceChildren(
        h("caption", {}, "Prefilled and From cache count prompt tokens over every admission. Green token " +
          "groups came from the cache (shown for requests never preempted); italic words were generated. " +
          "A word in a dashed box is pending: sampled by the last step, its KV is written by the next one " +
          "(a dashed group is a block it will take then)."),
        h("thead", {}, head), h("tbody", {}, rows));
    }
    table.addEventListener("click", (e) => {
      const chip = e.target.closest(".kv-chip");
      if (chip) select(Number(chip.dataset.block));
    });

    function drawLog() {
      const items = [];
      if (w.view.log_dropped) items.push(h("li", { class: "kv-log-dropped" }, `(${plural(w.view.log_dropped, "older line")} not shown)`));
      w.view.log.forEach((line, i) => {
        const isNew = w.state.actions.length > 0 && i >= w.view.last_action_log_start;
        items.push(h("li", { class: isNew ? "kv-log-new" : null }, line));
      });
      if (!w.view.log.length) items.push(h("li", { class: "kv-log-empty" }, "Nothing has happened yet."));
      log.replaceChildren(...items);
      log.scrollTop = log.scrollHeight;
    }

    // The blocks changed by the latest action are marked: against the view drawn before
    // it, unless caching was switched (a new start: nothing to compare).
    let drawn = { view: w.view, caching: w.state.config.enable_prefix_caching };
    return {
      draw(view, state) {
        const caching = state.config.enable_prefix_caching;
        previous = caching === drawn.caching && view !== drawn.view ? drawn.view : null;
        drawn = { view, caching };
        draw();
      },
    };
  }

  window.PySim.widget(NAME, { mount });
})();
