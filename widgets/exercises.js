// Widget for exercise 5 (pysim/sims/exercises.py, bridge name "exercises"): an editor holding
// the toy scheduler's code, a Run button and a Check button.
//
// The reader's code never runs on this page's thread: it travels as text to the page's
// Python worker, where pysim executes it and compares it with its own chunked-prefill
// scheduler. A call that takes longer than the time limit is abandoned; the runtime
// then terminates the worker and starts a fresh Python (rpc.js, Runtime.crashed),
// so an endless loop costs the reader a few seconds, not the page.
//
// The editor is widgets/editor.js's: Ace (npm ace-builds, shipped with the site), loaded
// after the page's start; until then, or without it, a plain text area.
// The lifecycle is live.js's; the reader's code never goes into the page's link.
(function () {
  "use strict";
  const { h, tableBox, fmt } = window.PySim;
  const NAME = "exercises";
  const STORE = "pysim.exercises.code"; // the reader's code survives a reload
  const LABELS = {
    finished: "finished", iterations: "iterations", tokens: "tokens computed",
    tokens_per_iteration: "tokens / iteration", mean_batch: "mean batch",
    mean_ttft: "mean TTFT (iterations)", max_ttft: "max TTFT (iterations)",
    mean_ttft_urgent: "urgent requests' mean TTFT", preemptions: "preemptions",
  };

  function loadSaved() {
    try { return window.localStorage.getItem(STORE); } catch (err) { return null; }
  }
  function save(code) {
    try { window.localStorage.setItem(STORE, code); } catch (err) { /* private mode: fine */ }
  }
  function forget() {
    try { window.localStorage.removeItem(STORE); } catch (err) { /* fine */ }
  }

  function mount(w) {
    const root = w.root;
    const start = w.view;
    const starter = start.starter_code;
    const limit = start.time_limit_s;
    let busy = false;
    let saveTimer = null;
    // Run and Check are the buttons below (the call's action) and the code is the
    // editor; any other setting the exercise's config gains gets a control of its own.
    const controls = w.controls();

    const runBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: () => go("run"), "data-needs-python": true }, "Run");
    const checkBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: () => go("check"), "data-needs-python": true }, "Check");
    const resetBtn = h("button", { type: "button", class: "md-button", onclick: reset }, "Back to the starter code");
    const note = h("span", { class: "exercise-note" },
      `Run and Check execute your code in this page's Python worker; after ${limit} s it is stopped.`);
    const help = h("p", { class: "exercise-help" },
      "In the editor, Tab indents. From the keyboard: Tab to the editor, Enter to start typing, Escape to leave it.");
    const verdict = h("p", { class: "exercise-verdict", role: "status", "aria-live": "polite" });
    const details = h("div", { class: "exercise-details" });

    const editor = window.PySim.codeEditor(w, {
      code: loadSaved() || starter,
      onChange: (code) => {
        clearTimeout(saveTimer);
        saveTimer = w.timeout(() => (code === starter ? forget() : save(code)), 400);
      },
      label: "Python code of your toy scheduler", prefix: "exercise", later: NAME,
      rows: 32, minLines: 18, maxLines: 32,
    });
    root.pysimEditor = editor; // for the browser tests (and the curious)
    w.body.append(
      h("div", { class: "pysim-toolbar" }, runBtn, checkBtn, resetBtn, note),
      controls.root, w.messages, editor.element, help, verdict, details);
    // live.js checks that Python's starter view equals the pre-rendered one (the same
    // pysim, the same toy scheduler), or the editor would start from stale code. Ace
    // comes after that first answer, or at once if Python will not start.
    w.whenLive.then(() => editor.upgrade());
    w.onRuntime((state) => { if (state === "failed" || state === "unavailable") editor.upgrade(); });

    function reset() {
      editor.set(starter);
      forget();
      show("", []);
      delete root.dataset.result;
    }

    function setBusy(value, text) {
      busy = value;
      runBtn.disabled = checkBtn.disabled = value;
      root.dataset.busy = value ? "true" : "false";
      if (value) show(text, []);
    }

    function show(text, nodes, kind) {
      verdict.textContent = text;
      verdict.dataset.kind = kind || "";
      details.replaceChildren(...nodes);
    }

    // What the reader's code printed, or its error: a box that scrolls past 14 rem, so
    // the keyboard can reach it (tabindex 0, then the arrow keys).
    function scrollingPre(cls, text, label) {
      return h("pre", { class: cls, tabindex: "0", role: "region", "aria-label": label }, text);
    }

    function printed(output) {
      if (!output) return [];
      return [h("p", { class: "exercise-label" }, "What your code printed:"),
        scrollingPre("exercise-output", output, "what your code printed")];
    }

    async function go(action) {
      if (busy) return;
      const code = editor.get();
      editor.unmark();
      setBusy(true, action === "run" ? "Running your scheduler…" : "Checking your scheduler…");
      let answer;
      try {
        answer = await w.call({ config: Object.assign({}, w.draft.config, { code }), actions: [action] }, { timeoutMs: limit * 1000 });
      } catch (err) {
        setBusy(false);
        if (err && err.message === "timeout") {
          root.dataset.result = "timeout";
          show(`Your code ran for more than ${limit} s and was stopped; Python was restarted.`, [
            h("p", {}, "Look for a loop that never ends: a request that is never finished, or a " +
              "while loop whose condition never changes. Then press Run or Check again.")], "error");
        } else {
          root.dataset.result = "unavailable";
          show("Python is not available in this page right now, so your code could not run.", [], "error");
        }
        return;
      }
      setBusy(false);
      root.dataset.computeMs = answer.ms.toFixed(2);
      if (!answer.ok) {
        root.dataset.result = "error";
        show(answer.error.message, [], "error");
        return;
      }
      const v = answer.result;
      if (v.action === "run") showRun(v);
      else showCheck(v);
      if (v.error_line) editor.mark(v.error_line, v.error || v.message);
    }

    function showRun(v) {
      const s = v.run_settings;
      const what = `${fmt(s.num_requests)} requests of the driver (seed ${s.seed}), token budget ${fmt(s.max_num_batched_tokens)}`;
      if (!v.ok) {
        root.dataset.result = "error";
        show("Your code stopped with an error.", [
          scrollingPre("exercise-error", v.error, "the error"), ...printed(v.output)], "error");
        return;
      }
      root.dataset.result = "ran";
      const rows = Object.entries(v.summary).map(([k, value]) =>
        h("tr", { "data-key": k }, h("th", { scope: "row" }, LABELS[k] || k), h("td", {}, fmt(value))));
      show(`Your scheduler ran ${what}.`, [
        tableBox(h("table", { class: "exercise-summary" },
          h("caption", {}, "Results of your scheduler"), h("tbody", {}, rows))),
        ...printed(v.output)], "info");
    }

    // The first mismatch, step by step: what pysim's scheduler and the reader's gave the
    // request the checker names, a few steps either side of the one that differs.
    function mismatchTable(t) {
      const side = (x, cls) => [
        h("td", { class: cls }, x.kind),
        h("td", { class: "exercise-num" }, x.tokens === null ? "–" : fmt(x.tokens)),
        h("td", { class: "exercise-num" }, x.sampled === null ? "–" : fmt(x.sampled))];
      const rows = t.rows.map((r) => h("tr", {
        "data-failing": r.failing ? "true" : "false", "data-differs": r.differs ? "true" : "false" },
        h("th", { scope: "row" }, r.step === null ? "–" : fmt(r.step),
          r.differs ? h("span", { class: "exercise-differs" }, " ≠") : "",
          r.failing ? h("span", { class: "exercise-first" }, " first") : ""),
        ...side(r.expected, "exercise-side-start"), ...side(r.actual, "exercise-side-start")));
      const sub = (text) => h("th", { scope: "col" }, text);
      return h("div", { class: "exercise-mismatch" },
        tableBox(h("table", { class: "exercise-steps" },
          h("caption", {}, `Request ${fmt(t.request)}, step by step: ${t.caption}`),
          h("thead", {},
            h("tr", {}, h("td", {}), h("th", { scope: "colgroup", colspan: 3, class: "exercise-side-start" }, "pysim's scheduler"),
              h("th", { scope: "colgroup", colspan: 3, class: "exercise-side-start" }, "yours")),
            h("tr", {}, sub("step"), sub("kind"), sub("tokens"), sub("sampled so far"),
              sub("kind"), sub("tokens"), sub("sampled so far"))),
          h("tbody", {}, rows)), {}, `request ${t.request}, step by step, scrolls sideways`),
        h("p", { class: "exercise-help" }, "Tokens: what the step computed for this request. " +
          "Sampled so far: the tokens it has generated once the step ran. ≠: the two differ; first: the step the check stopped at."));
    }

    function showCheck(v) {
      root.dataset.result = v.passed ? "pass" : "fail";
      const items = v.checks.map((c) => h("li", { "data-passed": c.passed ? "true" : "false" },
        h("span", { class: "exercise-mark", "aria-hidden": "true" }, c.passed ? "✓ " : "✗ "),
        h("strong", {}, c.passed ? "Pass: " : "Differs: "), c.name, ": ", c.message, "."));
      const nodes = [];
      if (v.error) nodes.push(scrollingPre("exercise-error", v.error, "the error"));
      if (v.mismatch) nodes.push(mismatchTable(v.mismatch));
      if (items.length) nodes.push(h("ul", { class: "exercise-checks" }, items));
      show(v.passed ? "All checks pass: your scheduler makes the same decisions as pysim's on every workload." :
        (v.error ? "Your code could not be checked." : v.message), [...nodes, ...printed(v.output)],
        v.passed ? "pass" : "error");
    }

    return {
      draw() {}, // the starter view is the editor's text, set above
      unmount() { editor.destroy(); },
    };
  }

  window.PySim.widget(NAME, { link: false, mount });
})();
