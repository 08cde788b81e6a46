// A sweep beyond one run, as the lab's capacity sweep and the cluster's GPU sweep run it:
// one pysim call at a time (a companion simulation, `w.call`), so the page says how far
// it got and Cancel stops it between two calls; a progress line, pysim's answer in a
// sentence, and the points so far in a table (the chart is the widget's). A sweep stops
// when the reader changes a setting it depends on, and a finished one is dropped once
// the settings shown are no longer the ones it swept. The build ships this file to the
// pages of the widgets that use it (sitebuild/assets.py, KITS).
//
//   const sweep = PySim.sweepPanel(w, {
//     prefix: "lab",                  // classes: PREFIX-progress, PREFIX-sweep-chart, PREFIX-sweep-table
//     button: "Run the capacity sweep",
//     answer: "PREFIX-capacity",      // the answer line's class
//     size: () => 8, unit: "rates",   // the most points: "Cancelled after 3 of 8 rates."
//     signature: (config) => "...",   // what the points depend on (PySim.signatureExcept)
//     config: (config) => config,     // optional: the settings a sweep starts from
//     next(s) { ... },                // the next call, {progress, payload, options}, or null
//     took(s, result, secs) { ... },  // a call's answer into s.points (and s.answer); may
//                                     // return the progress line until the next call
//     async finished(s) { ... },      // optional: after the last call (s.complete is true)
//     done: (s, secs) => "Swept ...", // the progress line at the end
//     async stopped(s) { ... },       // optional: after a stop, before the widget redraws
//     sentence: (s) => "...",         // the answer line
//     caption: () => "...", columns: ["GPUs", ...], row: (point) => [head, ...cells],
//     draw() { ... },                 // the widget's whole drawing, once the sweep ends
//   });
//   sweep.buttons, sweep.progress, sweep.answer, sweep.chart, sweep.table  // to place
//   sweep.current      // {config, signature, points, answer, complete} or null
//   sweep.done()       // the current sweep if it finished on the settings shown, else null
//   sweep.draw()       // after a change: the answer, the table, data-sweep
//   sweep.follow(config) // stop a running sweep that these settings no longer match
//   sweep.unmount()
//
// A cell of `row` is text (a td is made for it) or an element. data-sweep on the widget's
// root says "none", "running", "partial" (stopped) or "done".
(function () {
  "use strict";
  const { h } = window.PySim;

  function sweepPanel(w, spec) {
    const { prefix } = spec;
    let current = null; // the sweep shown: {config, signature, points, answer, complete}
    let running = null; // the sweep in progress: a token compared after every call
    const runBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: start, "data-needs-python": true }, spec.button);
    const cancelBtn = h("button", { type: "button", class: "md-button", onclick: () => stop("Cancelled"), disabled: true }, "Cancel");
    const buttons = h("div", { class: "pysim-buttons" }, runBtn, cancelBtn);
    const progress = h("p", { class: `pysim-sweep-line ${prefix}-progress`, "aria-live": "polite" });
    const answer = h("p", { class: `pysim-sweep-line pysim-sweep-answer ${spec.answer}`, "aria-live": "polite" });
    const chart = h("div", { class: `pysim-chart pysim-sweep-chart ${prefix}-chart ${prefix}-sweep-chart` });
    const table = h("table", { class: `${prefix}-sweep-table` });

    const fresh = () => current && current.signature === spec.signature(w.state.config);
    function state() {
      w.root.dataset.sweep = running ? "running" : current ? (current.complete ? "done" : "partial") : "none";
    }
    function sweeping(on) {
      if (!on) running = null;
      runBtn.disabled = on;
      cancelBtn.disabled = !on;
      state();
    }

    function drawTable() {
      if (current && !fresh() && !running) {
        current = null;
        progress.textContent = "The settings changed since the last sweep: run it again for these.";
      }
      if (!current) { answer.textContent = ""; table.replaceChildren(); return; }
      answer.textContent = spec.sentence(current); // pysim's words
      const cell = (c) => (c instanceof Node ? c : h("td", {}, c));
      table.replaceChildren(h("caption", {}, spec.caption()),
        h("thead", {}, h("tr", {}, ...spec.columns.map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, ...current.points.map((p) => {
          const [head, ...cells] = spec.row(p);
          return h("tr", {}, h("th", { scope: "row" }, head), ...cells.map(cell));
        })));
    }

    async function start() {
      const config = spec.config ? spec.config({ ...w.state.config }) : { ...w.state.config };
      const token = {};
      running = token;
      current = { config, signature: spec.signature(config), points: [], answer: null, complete: false };
      sweeping(true);
      answer.textContent = "";
      const started = performance.now();
      const secs = () => ((performance.now() - started) / 1000).toFixed(1);
      for (let call = spec.next(current); call; call = spec.next(current)) {
        progress.textContent = call.progress;
        let reply;
        try {
          reply = await w.call(call.payload, call.options);
        } catch (err) {
          if (running === token) stop("Python stopped answering; the sweep stopped");
          return;
        }
        if (running !== token) return; // cancelled, or a newer sweep started
        if (!reply.ok) { stop(`pysim refused: ${reply.error.message}; the sweep stopped`); return; }
        const said = spec.took(current, reply.result, secs());
        if (said) progress.textContent = said;
        drawTable();
      }
      current.complete = true;
      if (spec.finished) await spec.finished(current);
      if (running !== token) return;
      progress.textContent = spec.done(current, secs());
      sweeping(false);
      spec.draw();
    }

    async function stop(why) {
      if (!running) return;
      const stopped = current;
      sweeping(false);
      progress.textContent = `${why} after ${stopped.points.length} of ${spec.size()} ${spec.unit}.`;
      if (spec.stopped) await spec.stopped(stopped);
      if (current === stopped) spec.draw();
    }

    return {
      buttons, progress, answer, chart, table,
      get current() { return current; },
      done: () => (current && current.complete && fresh() ? current : null),
      draw() { drawTable(); state(); },
      follow(config) {
        if (running && current && current.signature !== spec.signature(config)) stop("The settings changed; the sweep stopped");
      },
      unmount() { running = null; },
    };
  }

  window.PySim.sweepPanel = sweepPanel;
})();
