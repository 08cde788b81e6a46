// The chunked-prefill widget's close-up (widgets/chunked_prefill.js draws the timeline):
// a window of steps around the current one, one equal-width column per step.
//
// On the time axis a step is as wide as it is long, so the first steps of the long
// document (a few milliseconds each, in a run over a second long) are about one pixel
// wide and pressing Step changes nothing a reader can see. Here every step is a column
// of the same width, built from the same parts as its bar (solid decode slices at the
// bottom, striped prompt chunks above, as tall as their share of the budget), and the
// current step is outlined and labelled.
// Only the parts have height and colour: a column's empty room above them stays blank
// (over a baseline), and every column's number row is as tall whether it holds a number
// or not, so a column is never taller for its label.
// The step's details below the chart are the text alternative.
(function () {
  "use strict";
  const { h, fmt } = window.PySim;
  const COLUMN = 24; // px per step, the gap between columns included
  const HEIGHT = 64; // px of a column holding a whole budget
  const DECODE_BAND = 20; // at most this many px of a column for its decode slices
  const DECODE_SLICE = 4; // px per decode token when they fit

  // The steps [first, last) the close-up shows: as many columns as fit, the current step
  // near the middle once the run is long enough to scroll.
  function closeupWindow(n, shown, width) {
    const cols = Math.max(5, Math.floor(width / COLUMN));
    const first = Math.max(0, Math.min(n - cols, Math.max(0, shown) - Math.floor(cols / 2)));
    return { first, last: Math.min(n, first + cols) };
  }

  function column(view, i, colors, current, ahead) {
    const step = view.steps[i];
    const budget = view.config.max_num_batched_tokens;
    const decodes = step.parts.filter((p) => p[1] === "decode");
    const slice = decodes.length ? Math.min(DECODE_SLICE, DECODE_BAND / decodes.length) : 0;
    const piece = (p, height, kind) => {
      const el = h("span", { class: `budget-closeup-part budget-closeup-${kind}` });
      el.style.setProperty("--c", colors[p[0]]);
      el.style.height = `${height}px`;
      return el;
    };
    const bar = h("span", { class: "budget-closeup-bar" },
      decodes.map((p) => piece(p, slice, "decode")),
      step.parts.filter((p) => p[1] !== "decode")
        .map((p) => piece(p, Math.max(1, (p[2] / budget) * (HEIGHT - DECODE_BAND)), "prefill")));
    // Every fifth step is numbered, and the current one, so a reader can count.
    const number = current || (i + 1) % 5 === 0 ? String(i + 1) : "";
    return h("span", { class: "budget-closeup-step", "data-step": String(i + 1), "data-current": current ? "true" : null, "data-ahead": ahead ? "true" : null },
      bar, h("span", { class: "budget-closeup-number" }, number));
  }

  // Redrawn only when the window, the current step, the run or the theme changed.
  // Steps not run yet (at or after the cursor) are drawn faint: what is coming.
  function drawCloseup({ view, shown, cursor, colors, width, dark, el, head }) {
    const n = view.steps.length;
    const { first, last } = closeupWindow(n, shown, width);
    const key = `${first}|${last}|${shown}|${cursor}|${view.config.scenario}|${view.config.max_num_batched_tokens}|${view.summary.total_ms}|${dark}`;
    if (el.dataset.key === key) return { first, last };
    el.dataset.key = key;
    const columns = [];
    for (let i = first; i < last; i++) columns.push(column(view, i, colors, i === shown, i >= cursor));
    el.replaceChildren(...columns);
    el.style.setProperty("--column", `${COLUMN}px`);
    el.style.setProperty("--height", `${HEIGHT}px`);
    head.textContent = n ? `Close-up of steps ${fmt(first + 1)}–${fmt(last)} of ${fmt(n)}: one column per step, ` +
      "whatever its duration (the shaded span on the timeline above), steps not run yet faint" + (shown >= 0 ? `; step ${fmt(shown + 1)} outlined` : "") : "";
    return { first, last };
  }

  window.PySim.chunkedPrefillCloseup = { closeupWindow, drawCloseup };
})();
