// Widget for page 9, the scheduling-policy lab (pysim/sims/policies.py, bridge name
// "policies"), with its graded puzzles (pysim/sims/puzzles.py, the companion "puzzle").
//
// pysim replays two tenants' traffic (Azure's conversation and coding services, or
// Mooncake's Kimi trace) through vLLM's V1 engine with the waiting queue ordered by a
// policy; this file lays out its controls (from pysim's description, grouped), draws the
// view model (a table per tenant and tier; the tiers' waits over time, charted in
// widgets/policies.charts.js and written out as tables), and runs what a reader does
// beyond changing a setting:
// - Run: the reader's policy from the editor (widgets/editor.js) on the same
//   traffic, sent as `policy_code` in a call of the widget's own; its result joins the
//   built-ins' in the table and the charts. pysim runs it under a budget (10 s, a line
//   count: pysim/policy/reader.py) and names the line of an error; the call waits
//   longer than that budget before the runtime would think Python stuck.
// - Grade: the same code graded on a puzzle's held-out windows (the "puzzle"
//   simulation); a pass is remembered in this browser only (localStorage).
// The puzzles' list and statements come pre-rendered with the page (the widget's
// data-companions, sitebuild/prerender.py); the reader's code never enters the link.
(function () {
  "use strict";
  const { h, fmt, tableBox } = window.PySim;
  const NAME = "policies";
  const CODE_KEY = "pysim.policies.code"; // the reader's policy survives a reload
  const PASS_KEY = "pysim.policies.passed"; // puzzles passed: {name: true}
  // What the reader's result depends on besides the code: everything but the policies.
  const NOT_TRAFFIC = ["policy", "compare", "policy_code"];
  // How long a call may run before the runtime thinks Python stuck and restarts it: a
  // recompute of the built-ins (a link made by hand may hold policy_code too, which
  // pysim stops after 10 s of it; the page's own states take a few seconds); the
  // reader's run (10 s of their code, and the replay); a grading (a fresh 10 s budget
  // for each held-out window, and the baselines' runs). The largest traffic pysim takes
  // (a whole hour of both traces squeezed into 10 minutes) runs past the first: the
  // runtime then says Python stopped, and the picture stays the last one computed.
  const RECOMPUTE_MS = 30000;
  const RUN_MS = 90000;
  const GRADE_MS = 180000;
  const TABLE_ROWS = 12; // rows of the waits' tables

  const pct = (x) => (x * 100).toFixed(1) + "%";
  const rate = (x) => x.toFixed(2);

  function stored(key) {
    try { return window.localStorage.getItem(key); } catch (err) { return null; }
  }
  function store(key, value) {
    try {
      if (value === null) window.localStorage.removeItem(key);
      else window.localStorage.setItem(key, value);
    } catch (err) { /* private mode: fine */ }
  }
  function passes() {
    try { return JSON.parse(stored(PASS_KEY) || "{}") || {}; } catch (err) { return {}; }
  }

  function mount(w) {
    const charts = window.PySim.policyCharts;
    const ms = window.PySim.charts("pol").ms;
    const secs = charts.secs;
    const template = w.root.querySelector("template.pysim-prerender");
    const companion = (template && JSON.parse(template.content.textContent).companions || {}).puzzle || null;
    let mine = null; // the reader's last run: {key, result, output}
    let busy = false;
    let saveTimer = null;

    // ---------------------------------------------------------------- controls
    const controls = w.controls({
      fieldsets: "pol", // pysim's PoliciesConfig.GROUPS
      onChange(name, value, delay) {
        // Mooncake's trace is one tenant: nobody can flood it, so the flood goes with the
        // switch. (The two tenants' rates stay in view, unused there: a control hidden by
        // a choice could hold a value the reader can no longer see nor fix.)
        if (name === "services" && value !== "azure") w.set({ services: value, flood_tenant: "none" }, delay);
        else w.set({ [name]: value }, delay);
      },
    });

    // ---------------------------------------------------------------- the run
    const describeLine = h("ul", { class: "pol-desc" });
    const status = h("p", { class: "pol-status", "aria-live": "polite" });
    const traffic = h("p", { class: "pol-traffic" });
    const credit = h("p", { class: "pol-credit" });
    const machine = h("p", { class: "pol-machine" });
    const note = h("p", { class: "pol-note" });
    const results = h("table", { class: "pol-results" });
    const cache = h("p", { class: "pol-cache" });
    const tableNote = h("p", { class: "pol-table-note" });
    const chartInteractive = h("div", { class: "pol-chart" });
    const chartBatch = h("div", { class: "pol-chart" });
    const waitTables = h("div", { class: "pol-wait-tables" });
    const mineNote = h("p", { class: "pol-mine-note", "aria-live": "polite" });

    // ---------------------------------------------------------------- the editor
    const editorId = w.id("pol-code");
    const saved = stored(CODE_KEY);
    const editor = window.PySim.codeEditor(w, {
      code: saved || w.view.starter_code,
      onChange: (code) => {
        clearTimeout(saveTimer);
        saveTimer = w.timeout(() => store(CODE_KEY, code), 400);
      },
      label: "Python code of your scheduling policy", prefix: "pol", later: "policies",
    });
    editor.element.id = editorId;
    w.root.pysimEditor = editor; // for the browser tests (and the curious)
    const runBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: runMine, "data-needs-python": true }, "Run my policy");
    const starterBtn = h("button", { type: "button", class: "md-button", onclick: startOver });
    const runNote = h("p", { class: "pol-help" },
      "Run replays the traffic above with your order() (and victim(), if you write one) in this page's Python worker; " +
      "pysim stops code that runs more than 10 s. From the keyboard: Tab to the editor, Enter to type in it, Escape to leave it.");
    const verdict = h("p", { class: "pol-verdict", role: "status", "aria-live": "polite" });
    const details = h("div", { class: "pol-details" });

    // ---------------------------------------------------------------- puzzles
    const puzzleId = w.id("pol-puzzle");
    const puzzleSelect = h("select", { id: puzzleId, class: "pol-puzzle-select" });
    const statement = h("p", { class: "pol-statement" });
    const puzzleFacts = h("p", { class: "pol-puzzle-facts" });
    const tryBtn = h("button", { type: "button", class: "md-button", onclick: tryPuzzle, "data-needs-python": true }, "Load its visible window into the lab");
    const gradeBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: grade, "data-needs-python": true }, "Grade on held-out traffic");
    const forgetBtn = h("button", { type: "button", class: "md-button", onclick: forgetPasses }, "Forget my passes");
    const passLine = h("p", { class: "pol-passes", "aria-live": "polite" });
    const gradeVerdict = h("p", { class: "pol-verdict pol-grade-verdict", role: "status", "aria-live": "polite" });
    const gradeDetails = h("div", { class: "pol-grade-details" });
    const puzzles = companion ? companion.views : {};
    const titles = companion ? (companion.fields.find((f) => f.name === companion.field) || {}).option_labels || {} : {};
    function fillPuzzles() {
      const done = passes();
      const chosen = puzzleSelect.value;
      puzzleSelect.replaceChildren(...Object.keys(puzzles).map((n) =>
        h("option", { value: n }, (titles[n] || n) + (done[n] ? " (passed)" : ""))));
      if (chosen) puzzleSelect.value = chosen;
      const names = Object.keys(puzzles);
      const passed = names.filter((n) => done[n]).length;
      passLine.textContent = `You have passed ${passed} of ${names.length} puzzles. Your passes are kept in this browser ` +
        "only (its local storage), never sent anywhere; clearing the site's data forgets them.";
      forgetBtn.disabled = !passed;
    }
    function showPuzzle() {
      const v = puzzles[puzzleSelect.value];
      if (!v) return;
      const p = v.puzzle;
      statement.textContent = p.statement; // pysim's words
      puzzleFacts.textContent = `Graded on ${p.num_held_out} windows of ${p.settings.window_minutes} minutes you are not shown; ` +
        `try your ideas on the window from minute ${p.settings.window_start_min}. A pass needs every window to pass.`;
      gradeVerdict.textContent = "";
      gradeDetails.replaceChildren();
      delete w.root.dataset.grade;
    }
    w.listen(puzzleSelect, "change", showPuzzle);

    const section = (title, ...kids) => h("section", { class: "pol-section" }, h("h3", { class: "pol-title" }, title), ...kids);
    w.body.append(
      controls.root, w.messages, describeLine, status,
      section("Per tenant and per tier", traffic, credit, machine, mineNote, tableNote, tableBox(results, { class: "pol-scroll" }), cache, note),
      section("Who waits, over time",
        h("div", { class: "pol-pair" }, chartInteractive, chartBatch),
        h("details", { class: "pol-more" }, h("summary", {}, "The waits as tables"), waitTables)),
      section("Your policy",
        h("label", { for: editorId, class: "pol-label" }, "The code: order(request, engine) returns a sort key, the smallest admitted first; victim(running, engine) is optional"),
        editor.element, runNote,
        h("div", { class: "pol-buttons" }, runBtn, starterBtn), verdict, details),
      section("Puzzles",
        h("div", { class: "pol-puzzle-pick" }, h("label", { for: puzzleId }, "Puzzle"), puzzleSelect),
        statement, puzzleFacts,
        h("div", { class: "pol-buttons" }, gradeBtn, tryBtn), gradeVerdict, gradeDetails,
        passLine, h("div", { class: "pol-buttons" }, forgetBtn)),
    );
    w.whenLive.then(() => editor.upgrade());
    w.onRuntime((state) => { if (state === "failed" || state === "unavailable") editor.upgrade(); });
    fillPuzzles();
    showPuzzle();

    // ---------------------------------------------------------------- what is shown
    const keyOf = (config) => JSON.stringify(Object.keys(config).sort().filter((k) => !NOT_TRAFFIC.includes(k)).map((k) => [k, config[k]]));
    // The runs shown: the policy, the one compared, and the reader's if it ran on this traffic.
    function runs() {
      const out = w.view.results.map((r, i) => ({ label: r.label, result: r, color: i ? "second" : "now", dash: i ? [7, 4] : undefined }));
      if (mine && mine.key === keyOf(w.state.config)) out.push({ label: "Your policy", result: mine.result, color: "pin", dash: [2, 3], mine: true });
      return out;
    }

    const COLUMNS = [
      ["Requests", (f) => fmt(f.num_requests)],
      ["TTFT p50", (f) => ms(f.ttft_ms.p50)],
      ["TTFT p90", (f) => ms(f.ttft_ms.p90)],
      ["TTFT p99", (f) => ms(f.ttft_ms.p99)],
      ["Longest wait", (f) => secs(f.wait_max_s)],
      ["Preemptions", (f) => fmt(f.num_preemptions)],
      ["Throughput (req/s)", (f) => rate(f.request_throughput)],
      ["Output (tok/s)", (f) => fmt(Math.round(f.output_throughput))],
      ["Goodput (req/s)", (f) => rate(f.request_goodput)],
      ["SLO attainment", (f) => pct(f.slo_attainment)],
    ];

    function drawTable(shown) {
      const v = w.view;
      const groups = [["All requests", (r) => r.summary]];
      for (const [t, info] of Object.entries(v.traffic.tenants)) groups.push([`Tenant ${t} (${info.label})`, (r) => r.tenants[t]]);
      for (const t of v.traffic.tiers) groups.push([`${t[0].toUpperCase()}${t.slice(1)} tier`, (r) => r.tiers[t]]);
      const bodies = groups.map(([label, pick], g) => h("tbody", { "data-group": String(g) }, ...shown.map((run, i) => h("tr",
        { "data-run": run.mine ? "mine" : run.result.name },
        i === 0 ? h("th", { scope: "rowgroup", rowspan: String(shown.length) }, label) : "",
        h("th", { scope: "row" }, run.label),
        ...COLUMNS.map(([, f]) => h("td", {}, f(pick(run.result))))))));
      results.replaceChildren(
        h("caption", {}, "Each tenant and tier under each policy"),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Group"), h("th", { scope: "col" }, "Policy"),
          ...COLUMNS.map(([label]) => h("th", { scope: "col" }, label)))),
        ...bodies);
      tableNote.textContent = "Time to first token (TTFT) at p50, p90 and p99; the longest wait for a first admission; " +
        `preemptions; throughput; and goodput, the requests that met both targets (TTFT ≤ ${ms(v.slo.ttft_ms)}, TPOT ≤ ${ms(v.slo.tpot_ms)}).`;
      const cached = shown.filter((r) => r.result.prefix_cache);
      cache.textContent = cached.length ? "Prefix-cache hit rate (vllm:prefix_cache_hits / vllm:prefix_cache_queries): " +
        cached.map((r) => `${r.label} ${pct(r.result.prefix_cache.hit_rate)}`).join("; ") + "." : "";
    }

    function drawWaitTables(shown) {
      waitTables.replaceChildren(...shown.map((run) => {
        const s = run.result.series;
        const every = Math.max(1, Math.round(s.t_s.length / TABLE_ROWS));
        const rows = [];
        for (let i = every - 1; i < s.t_s.length; i += every) {
          rows.push(h("tr", {}, h("th", { scope: "row" }, fmt(Math.round(s.t_s[i])) + " s"),
            ...w.view.traffic.tiers.map((t) => h("td", {}, secs(s.wait_s[t][i])))));
        }
        return tableBox(h("table", { class: "pol-wait-table" },
          h("caption", {}, `${run.label}: how long each tier's oldest waiting request had waited, every ${fmt(Math.round(every * s.bin_s))} s`),
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Time"), ...w.view.traffic.tiers.map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, ...rows)), { class: "pol-scroll" });
      }));
    }

    const drawn = [];
    function drawCharts() {
      while (drawn.length) drawn.pop().destroy();
      const shown = runs();
      for (const [host, tier] of [[chartInteractive, "interactive"], [chartBatch, "batch"]]) {
        drawn.push(charts.waits(host, {
          title: `${tier[0].toUpperCase()}${tier.slice(1)} tier: longest wait`,
          lines: shown.map((run) => ({ label: run.label, t: run.result.series.t_s, values: run.result.series.wait_s[tier], color: run.color, dash: run.dash })),
        }));
      }
    }

    function draw() {
      const v = w.view;
      const c = v.config;
      const shown = runs();
      describeLine.replaceChildren(...v.results.map((r) => h("li", {}, h("strong", {}, r.label), ": ", r.description, ".")));
      traffic.textContent = v.traffic.sentence;
      credit.textContent = `Traffic: ${v.traffic.credit}.`;
      machine.textContent = `${v.hardware.model} on one ${v.hardware.gpu}: ${fmt(v.hardware.num_gpu_blocks)} KV blocks of ${v.hardware.block_size} tokens.`;
      note.textContent = v.note;
      if (mine && mine.key !== keyOf(w.state.config)) {
        mineNote.textContent = "Your policy ran on other settings; press Run my policy again to see it on these.";
      } else {
        mineNote.textContent = mine ? "Your policy's row is the last in each group; its lines are dotted." : "";
      }
      starterBtn.textContent = `Start from ${v.policies[c.policy].label}`;
      w.root.dataset.shown = shown.map((r) => (r.mine ? "mine" : r.result.name)).join(",");
      drawTable(shown);
      drawWaitTables(shown);
      drawCharts();
    }

    // ---------------------------------------------------------------- the reader's code
    function setBusy(on) {
      busy = on;
      runBtn.disabled = gradeBtn.disabled = on;
      w.root.dataset.running = on ? "true" : "false";
    }

    function startOver() {
      editor.set(w.view.starter_code); // the chosen built-in, as a file in the interface
      store(CODE_KEY, null);
      verdict.textContent = "";
      details.replaceChildren();
      editor.unmark();
    }

    const pre = (cls, text, label) => h("pre", { class: cls, tabindex: "0", role: "region", "aria-label": label }, text);
    const printed = (output) => (output ? [h("p", { class: "pol-label" }, "What your policy printed:"),
      pre("pol-output", output, "what your policy printed")] : []);

    function failed(err, target, targetDetails, what) {
      if (err && err.message === "timeout") {
        target.textContent = `${what} took too long and was stopped; Python was restarted.`;
        targetDetails.replaceChildren(h("p", {}, "Look for a loop that never ends, then press the button again."));
        return "timeout";
      }
      target.textContent = "Python is not available in this page right now, so your policy could not run.";
      targetDetails.replaceChildren();
      return "unavailable";
    }

    async function runMine() {
      if (busy) return;
      const code = editor.get();
      editor.unmark();
      const config = Object.assign({}, w.state.config, { policy_code: code, compare: "none" });
      setBusy(true);
      verdict.dataset.kind = "";
      verdict.textContent = "Running your policy on the traffic above…";
      details.replaceChildren();
      let answer;
      try {
        answer = await w.call({ config, actions: [] }, { timeoutMs: RUN_MS });
      } catch (err) {
        setBusy(false);
        verdict.dataset.kind = "error";
        w.root.dataset.result = failed(err, verdict, details, "Your policy");
        return;
      }
      setBusy(false);
      if (!answer.ok) {
        verdict.dataset.kind = "error";
        verdict.textContent = answer.error.message;
        w.root.dataset.result = "error";
        return;
      }
      const v = answer.result;
      if (v.error) {
        verdict.dataset.kind = "error";
        verdict.textContent = v.error_line ? `Your policy stopped with an error at line ${v.error_line}.` : "Your policy stopped with an error.";
        details.replaceChildren(pre("pol-error", v.error, "the error"), ...printed(v.output));
        if (v.error_line) editor.mark(v.error_line, v.error);
        w.root.dataset.result = "error";
        return;
      }
      mine = { key: keyOf(config), result: v.results[0], output: v.output };
      verdict.dataset.kind = "pass";
      verdict.textContent = "Your policy ran on the same traffic: it is the row \"Your policy\" in each group of the table, and the dotted line in the charts.";
      details.replaceChildren(...printed(v.output));
      w.root.dataset.result = "ran";
      draw();
    }

    // ---------------------------------------------------------------- grading
    const WORDS = { ttft: "TTFT", fcfs: "FCFS's", p90: "p90", ms: "", s: "" };
    function figureLabel(key) {
      if (key === "ratio") return "ratio";
      return key.split("_").map((part) => (part in WORDS ? WORDS[part] : part)).filter(Boolean).join(" ");
    }
    function figureValue(key, x) {
      if (key.endsWith("_ms")) return ms(x);
      if (key.endsWith("_s")) return secs(x);
      return x.toFixed(2) + "x";
    }

    async function grade() {
      if (busy) return;
      const name = puzzleSelect.value;
      const code = editor.get();
      editor.unmark();
      setBusy(true);
      gradeVerdict.dataset.kind = "";
      gradeVerdict.textContent = "Grading your policy on the held-out windows…";
      gradeDetails.replaceChildren();
      delete w.root.dataset.grade;
      let answer;
      try {
        answer = await w.call({ config: { puzzle: name, policy_code: code } }, { simulation: "puzzle", timeoutMs: GRADE_MS });
      } catch (err) {
        setBusy(false);
        gradeVerdict.dataset.kind = "error";
        w.root.dataset.grade = failed(err, gradeVerdict, gradeDetails, "Grading");
        return;
      }
      setBusy(false);
      if (!answer.ok) {
        gradeVerdict.dataset.kind = "error";
        gradeVerdict.textContent = answer.error.message;
        w.root.dataset.grade = "error";
        return;
      }
      const v = answer.result;
      if (v.error) {
        gradeVerdict.dataset.kind = "error";
        gradeVerdict.textContent = "Your policy could not be graded: it stopped with an error.";
        gradeDetails.replaceChildren(pre("pol-error", v.error, "the error"));
        if (v.error_line) editor.mark(v.error_line, v.error);
        w.root.dataset.grade = "error";
        return;
      }
      const windows = v.windows.map((win) => h("li", { "data-passed": String(win.passed) },
        h("strong", {}, `Minutes ${win.window_start_min} to ${win.window_start_min + win.window_minutes}: ${win.passed ? "pass" : "fail"}`),
        h("ul", {}, ...win.goals.map((g) => h("li", { "data-met": String(g.met) },
          h("span", { class: "pol-mark", "aria-hidden": "true" }, g.met ? "✓ " : "✗ "), `${g.goal}: ${g.met ? "met" : "missed"}`))),
        h("p", { class: "pol-figures" }, Object.entries(win.figures).map(([k, x]) => `${figureLabel(k)} ${figureValue(k, x)}`).join("; "))));
      gradeVerdict.dataset.kind = v.passed ? "pass" : "error";
      gradeVerdict.textContent = v.passed ? `Passed: your policy meets the goals on all ${v.windows.length} held-out windows.`
        : `Not yet: your policy misses a goal on ${v.windows.filter((x) => !x.passed).length} of ${v.windows.length} held-out windows.`;
      gradeDetails.replaceChildren(h("ul", { class: "pol-windows" }, ...windows));
      w.root.dataset.grade = v.passed ? "pass" : "fail";
      if (v.passed) {
        store(PASS_KEY, JSON.stringify(Object.assign(passes(), { [name]: true })));
        fillPuzzles();
      }
    }

    function tryPuzzle() {
      const p = puzzles[puzzleSelect.value].puzzle;
      const patch = {};
      for (const f of w.fields) if (f.kind !== "data" && !NOT_TRAFFIC.includes(f.name)) patch[f.name] = f.default;
      w.set(Object.assign(patch, p.settings));
    }

    function forgetPasses() {
      store(PASS_KEY, null);
      fillPuzzles();
    }

    // A link in the prose opens a state of the lab: bring the lab into view.
    w.listen(window, "hashchange", () => {
      if (!window.PySim.readLink(NAME).length) return;
      const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
      w.root.scrollIntoView({ block: "start", behavior: still ? "auto" : "smooth" });
    });

    return {
      draw,
      redraw: drawCharts,
      busy(on) { status.textContent = on ? "Replaying the traffic…" : ""; },
      unmount() {
        while (drawn.length) drawn.pop().destroy();
        editor.destroy();
      },
    };
  }

  window.PySim.widget(NAME, { mount, unlinked: ["policy_code"], timeoutMs: RECOMPUTE_MS });
})();
