// Small drawing helpers every widget uses: build elements, format numbers, size a
// canvas for the screen's pixel ratio, hatch a fill. Nothing here knows about Python.
//
// A classic script (not a module), like every widget file: browsers refuse module
// scripts from file://, where a downloaded copy must still draw its pictures. It runs
// first and starts the one global the widget files share, window.PySim.
(function () {
  "use strict";

  // h("p", {class: "x", onclick: f}, "text", child): an element, never markup parsing,
  // so text from a link or from pysim can only ever become text.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  // A box around a table (or a list) that scrolls when it is wider or taller than its
  // room: the keyboard reaches it (tabindex 0, then the arrow keys scroll it) and a
  // screen reader hears what it is (WCAG 2.1.1; its focus ring is widgets.css's).
  // `attrs` adds classes and attributes, as h's do; class "pysim-table-wrap" stays.
  function tableBox(child, attrs = {}, label = "table, scrolls sideways") {
    const { class: extra, ...rest } = attrs;
    return h("div", { tabindex: "0", role: "region", "aria-label": label, ...rest,
      class: "pysim-table-wrap" + (extra ? " " + extra : "") }, child);
  }

  const numberFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });
  function fmt(x) {
    return typeof x === "number" ? numberFormat.format(x) : String(x);
  }

  function reducedMotion() {
    return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  // Size a canvas for the screen's pixel ratio and return a cleared context in CSS px.
  // The backing store is only reallocated when its size really changes.
  function sizeCanvas(canvas, width, height) {
    const ratio = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(width * ratio));
    const hgt = Math.max(1, Math.round(height * ratio));
    if (canvas.width !== w) canvas.width = w;
    if (canvas.height !== hgt) canvas.height = hgt;
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    return ctx;
  }

  // A repeating diagonal-stripe fill in `color`, optionally over a pale wash of it
  // (hatched "reserved" space in the race, prompt chunks in the budget timeline, the
  // memory the batch-size chart says is full). `size` and `lineWidth` in canvas pixels.
  function stripePattern(ctx, color, { wash = 0, lineWidth = 1.5, size = 6, alpha = 1 } = {}) {
    const c = document.createElement("canvas");
    c.width = c.height = size;
    const g = c.getContext("2d");
    if (wash) {
      g.fillStyle = color;
      g.globalAlpha = wash;
      g.fillRect(0, 0, size, size);
    }
    g.globalAlpha = alpha;
    g.strokeStyle = color;
    g.lineWidth = lineWidth;
    g.beginPath();
    g.moveTo(0, size); g.lineTo(size, 0);
    g.moveTo(-1, 1); g.lineTo(1, -1);
    g.moveTo(size - 1, size + 1); g.lineTo(size + 1, size - 1);
    g.stroke();
    return ctx.createPattern(c, "repeat");
  }

  // A straight line from (x0, y0) to (x1, y1), dashed if `dash` is given.
  function strokeLine(ctx, x0, y0, x1, y1, { color, width = 1, dash = [] }) {
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.setLineDash(dash);
    ctx.beginPath();
    ctx.moveTo(x0, y0);
    ctx.lineTo(x1, y1);
    ctx.stroke();
    ctx.setLineDash([]);
  }

  // Text on a box of `bg` at (x, y) (its top; its left, or its right for align
  // "right"), moved inside the canvas if it would run past an edge. Canvas pixels;
  // `ratio` scales the padding.
  function labelBox(ctx, text, x, y, { color, bg, font, align = "left", ratio = 1 }) {
    ctx.font = font;
    const w = ctx.measureText(text).width;
    const pad = 3 * ratio;
    let x0 = align === "right" ? x - w : x;
    x0 = Math.max(pad, Math.min(x0, ctx.canvas.width - w - pad));
    ctx.globalAlpha = 0.88;
    ctx.fillStyle = bg;
    ctx.fillRect(x0 - pad, y, w + 2 * pad, 15 * ratio);
    ctx.globalAlpha = 1;
    ctx.fillStyle = color;
    ctx.textBaseline = "top";
    ctx.textAlign = "left";
    ctx.fillText(text, x0, y + 2 * ratio);
  }

  window.PySim = Object.assign(window.PySim || {}, { h, tableBox, fmt, reducedMotion, sizeCanvas, stripePattern, strokeLine, labelBox });
})();
