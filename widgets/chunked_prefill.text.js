// The chunked-prefill widget's text views and the helpers both its files use
// (widgets/chunked_prefill.js draws the timelines): the time axis, the step-time model, the legend of requests, one step's details, the
// summary table of the live and the pinned run, and every step as a table, the
// timeline's text alternative. Each is redrawn only when what it shows changed (its
// element's data-key).
(function () {
  "use strict";
  const { h, fmt } = window.PySim;
  const MANY_PROMPTS = 6; // more new prompts than this: their rows fold behind a button

  const ms = (x) => fmt(x) + " ms";
  const tokens = (n) => fmt(n) + (n === 1 ? " token" : " tokens");

  const stepEnd = (s) => s.start_ms + s.duration_ms;

  // Round ticks for a time axis: 1, 2 or 5 times a power of ten, about every 70 px.
  function tickStep(totalMs, width) {
    const raw = totalMs / Math.max(1, width / 70);
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (raw <= m * p) return m * p;
    return 10 * p;
  }

  // The time axis under both timelines: a line, round ticks and their labels in ms.
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

  function drawModel(c) {
    const { view } = c, { model } = c.els;
    const m = view.model;
    const key = JSON.stringify(m);
    if (model.dataset.key === key) return;
    model.dataset.key = key;
    model.replaceChildren(h("strong", {}, "Step time"), ` (${m.label}, the serving lab's clock): `,
      h("code", {}, m.formula));
  }

  // Requests that share a colour, named together: "chat 1–3" for neighbours with one
  // name and consecutive numbers, else their names in a list.
  function groupName(members) {
    const parts = members.map((r) => /^(.*) (\d+)$/.exec(r.label));
    const run = parts.every((m, i) => m && m[1] === parts[0][1] && (i === 0 || Number(m[2]) === Number(parts[i - 1][2]) + 1));
    return run && members.length > 1 ? `${parts[0][1]} ${parts[0][2]}–${parts[parts.length - 1][2]}` : members.map((r) => r.label).join(", ");
  }

  function drawLegend(c, colors, size) {
    const { view, dark } = c, { legend } = c.els;
    const key = `${view.config.scenario}|${dark}|${size}`;
    if (legend.dataset.key === key) return;
    legend.dataset.key = key;
    const swatch = (id) => {
      const sw = h("span", { class: "budget-sw", "aria-hidden": "true" },
        h("span", { class: "budget-sw-decode" }), h("span", { class: "budget-sw-prefill" }));
      sw.style.setProperty("--c", colors[id]);
      return sw;
    };
    const list = (xs) => xs.map(fmt).join(", ");
    const groups = [];
    for (let i = 0; i < view.requests.length; i += size) groups.push(view.requests.slice(i, i + size));
    const items = groups.map((members) => {
      const r = members[0];
      if (members.length === 1) {
        const what = r.streaming_at_start
          ? `streaming from 0 ms; prompt ${fmt(r.num_prompt_tokens)}, answer ${fmt(r.max_tokens)}`
          : `arrives ${ms(r.arrival_ms)}; prompt ${fmt(r.num_prompt_tokens)}, answer ${fmt(r.max_tokens)}`;
        return h("li", { "data-request": r.id }, swatch(r.id), h("strong", {}, r.label), " ", h("span", { class: "budget-muted" }, what));
      }
      const arrivals = [...new Set(members.map((m) => m.arrival_ms))];
      const what = `${arrivals.length === 1 ? "arrive" : "arrive at"} ${list(arrivals)} ms; ` +
        `prompts ${list(members.map((m) => m.num_prompt_tokens))}; answers ${list(members.map((m) => m.max_tokens))}`;
      return h("li", { "data-request": members.map((m) => m.id).join(" ") }, swatch(r.id),
        h("strong", {}, groupName(members)), " ", h("span", { class: "budget-muted" }, what));
    });
    legend.replaceChildren(
      h("p", { class: "budget-key" },
        h("span", {}, h("span", { class: "budget-sw budget-sw-key", "aria-hidden": "true" }, h("span", { class: "budget-sw-decode" })),
          "solid slice: one decode token"),
        h("span", {}, h("span", { class: "budget-sw budget-sw-key", "aria-hidden": "true" }, h("span", { class: "budget-sw-prefill" })),
          "striped: a prompt chunk, as tall as its share of the budget"),
        h("span", {}, h("span", { class: "budget-arrow", "aria-hidden": "true" }, "▲ "), "a new prompt arrives")),
      size > 1 ? h("p", { class: "budget-group-note" },
        `${fmt(view.requests.length)} requests, more than there are colours that tell apart: each colour is a group of ${size} neighbours.`) : "",
      h("ul", { class: "budget-requests", "aria-label": "Requests" }, items));
  }

  function drawDetails(c, index, colors) {
    const { view, dark } = c, { details } = c.els;
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
        h("span", { class: "budget-muted" }, ` (overheads ${ms(s.overhead_ms)}, plus the larger of reading ${ms(s.memory_ms)} ` +
          `and computing ${ms(s.compute_ms)})`), "."),
      h("p", {}, h("strong", {}, `Decode: ${tokens(s.decode_tokens)}`),
        decodes.length ? " — " : "", decodes.map((p) => chip(p[0], label(p[0])))),
      h("p", {}, h("strong", {}, `Prefill: ${tokens(s.prefill_tokens)}`),
        chunks.length ? " — " : "",
        chunks.map((p) => chip(p[0], `${label(p[0])} ${fmt(p[2])}${firstToken(p[0]) ? " (last chunk: first token)" : ""}`))),
      h("p", { class: "budget-muted" },
        `Budget used: ${fmt(s.decode_tokens + s.prefill_tokens)} of ${fmt(view.config.max_num_batched_tokens)}. ` +
        `Running ${s.num_requests_running}, waiting ${s.num_requests_waiting}.` +
        (s.arrived.length ? ` Arrived: ${list(s.arrived)}.` : "") +
        (s.admitted.length ? ` Admitted: ${list(s.admitted)}.` : "") +
        (s.preempted.length ? ` Preempted: ${list(s.preempted)}.` : "") +
        (s.finished.length ? ` Finished: ${list(s.finished)}.` : "")));
  }

  // The summary: the live run (filled in as playback passes each first token; whole-run
  // figures once it ends) beside the pinned run.
  function drawTable(c) {
    const { view, pin, cursor, showAllPrompts } = c, { table, moreBtn, summaryText } = c.els;
    const n = view.steps.length;
    const finished = cursor >= n;
    const nowMs = cursor > 0 ? stepEnd(view.steps[cursor - 1]) : -1;
    const runs = [{ key: "live", v: view, partial: !finished }];
    if (pin) runs.push({ key: "pin", v: pin.view, partial: false });
    let reached = 0;
    for (const q of view.requests) if (!q.streaming_at_start && q.token_ms.length && q.token_ms[0] <= nowMs + 1e-9) reached += 1;
    const key = JSON.stringify([view.config.max_num_batched_tokens, view.config.scenario, view.summary.total_ms, finished,
      reached, pin && pin.config.scenario, pin && pin.config.max_num_batched_tokens, !!(pin && pin.view), showAllPrompts]);
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
        (run.v ? runName(run.v) : `${pin.config.scenario}, budget ${fmt(pin.config.max_num_batched_tokens)}`))));
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

  function tableKey(view) {
    return `${view.config.scenario}|${view.config.max_num_batched_tokens}|${view.summary.total_ms}`;
  }

  // The text alternative to the timeline: every step, built only when opened.
  function drawStepsTable(view, stepsTable) {
    stepsTable.dataset.key = tableKey(view);
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

  window.PySim.chunkedPrefill = { ms, tokens, stepEnd, stepAt, tickStep, drawAxis, longestStep, runName, tableKey,
    drawModel, drawLegend, drawDetails, drawTable, drawStepsTable };
})();
