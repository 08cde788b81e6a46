// One job: a widget's status line, which says what Python is doing (a live region, so a
// screen reader hears it), with its download meter and Retry, and the note at the top of
// a copy opened from disk. mount.js puts one on every widget it mounts.
(function () {
  "use strict";
  const { h, runtime } = window.PySim; // dom.js, rpc.js

  // `root` gets data-runtime, the worker's state, for tests and styles. Returns the
  // elements to place and the subscription that unmount() ends.
  function statusLine(root) {
    const text = h("span", { class: "pysim-status-text" });
    const retry = h("button", { type: "button", class: "pysim-retry", hidden: true, onclick: () => runtime.retry().catch(() => {}) }, "Retry");
    // The note goes at the top of the widget, where a reader looks first, not below the
    // controls it explains.
    const note = h("p", { class: "pysim-offline-note", role: "note", hidden: true },
      "You are reading a downloaded copy. The picture below is pre-computed and its settings are switched off; " +
      "to run the simulation, serve this folder: ",
      h("code", {}, "python3 -m http.server 8000"), " in it, then open ", h("code", {}, "http://127.0.0.1:8000/"), ".");
    // Download progress in bytes (the status text says the same for screen readers).
    const meter = h("progress", { class: "pysim-progress", max: 1, value: 0, hidden: true, "aria-hidden": "true" });
    const bar = h("div", { class: "pysim-status", role: "status", "aria-live": "polite" }, text, meter, retry);
    const unsubscribe = runtime.subscribe((state, message) => {
      bar.dataset.state = state;
      root.dataset.runtime = state;
      text.textContent = message;
      const p = state === "loading" && runtime.progress;
      meter.hidden = !p;
      if (p) { meter.max = p.total; meter.value = p.loaded; }
      retry.hidden = state !== "failed";
      note.hidden = state !== "unavailable";
    });
    return { elements: [note, bar], note, bar, unsubscribe };
  }

  window.PySim.statusLine = statusLine;
})();
