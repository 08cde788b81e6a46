// Small helpers every widget uses: build elements, give them ids, format numbers, read
// a drawing's colours from CSS, size a canvas for the screen's pixel ratio, hatch a
// fill. Nothing here knows about Python.
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

  // fmtUpTo(x, digits): x as en-US prints it ("12,345.68"), at most `digits` decimals,
  // rounded half away from zero - what Intl.NumberFormat("en-US") prints, digit for
  // digit (tests/browser/test_numbers.py compares the two). Not Intl itself: a page's
  // first Intl formatter loads ICU's data, which holds up the main thread before any
  // widget could draw. Rare numbers (not finite, or a billion and up) still go to Intl,
  // made when first needed.
  const formats = {};
  function intl(digits, options = {}) {
    const key = digits + JSON.stringify(options);
    formats[key] = formats[key] || new Intl.NumberFormat("en-US", { maximumFractionDigits: digits, ...options });
    return formats[key];
  }
  function fmtUpTo(x, digits) {
    if (typeof x !== "number") return String(x);
    const abs = Math.abs(x);
    if (!(abs < 1e9)) return intl(digits).format(x);
    // Round the number's shortest decimal spelling, digit by digit, not the double:
    // 1.005 is the double 1.00499999..., yet it is spelled "1.005", and Intl rounds the
    // spelling (to 1.01). BigInt, as a spelling can hold 17 digits.
    const [mantissa, exponent] = abs.toExponential().split("e");
    const spelled = mantissa.replace(".", "");
    const keep = Number(exponent) + 1 + digits; // how many of those digits stay
    let kept = keep > 0 ? BigInt(spelled.slice(0, keep).padEnd(keep, "0")) : 0n;
    if (keep >= 0 && spelled[keep] >= "5") kept += 1n;
    const digitsOf = kept.toString().padStart(digits + 1, "0");
    const whole = digitsOf.slice(0, digitsOf.length - digits).replace(/\B(?=(\d{3})+$)/g, ",");
    const fraction = digitsOf.slice(digitsOf.length - digits).replace(/0+$/, "");
    return (x < 0 || Object.is(x, -0) ? "-" : "") + whole + (fraction ? "." + fraction : "");
  }
  // Two decimals at most, one argument: safe to hand to map() or as a callback.
  const fmt = (x) => fmtUpTo(x, 2);

  // A short en-US count for an axis ("950", "1.5K", "12.3M"; one decimal at most), as
  // Intl's compact notation prints it; from a trillion up, Intl itself.
  const UNITS = [[1, ""], [1e3, "K"], [1e6, "M"], [1e9, "B"]];
  function compact(x) {
    const abs = Math.abs(x);
    let i = UNITS.length - 1;
    while (i > 0 && abs < UNITS[i][0]) i--;
    // Rounding can carry a count into the next unit: 999,960 is "1M", not "1,000K".
    const reaches1000 = (k) => fmtUpTo(abs / UNITS[k][0], 1).replace(/,/g, "") >= 1000;
    if (i < UNITS.length - 1 && reaches1000(i)) i++;
    if (!(abs < 1e12) || reaches1000(i)) return intl(1, { notation: "compact" }).format(x);
    return fmtUpTo(x / UNITS[i][0], 1) + UNITS[i][1];
  }

  // An id no other element of the page has (uniqueId("pysim-speed") -> "pysim-speed-7"), for a
  // <label for> or an aria reference. One counter for the whole visit: with instant
  // navigation the widgets of several pages are mounted in one document, one after another.
  let ids = 0;
  const uniqueId = (stem) => `${stem}-${++ids}`;

  // A drawing's colours, read from CSS custom properties where `el` sits:
  //   palette(root, { text: "--pysim-text", speed: "--bs-speed" }) -> { text, speed, font }
  // The stylesheets set each colour once for the light scheme and once for the dark one
  // (widgets.css for the shared --pysim-*, NAME.css for the widget's own), so a canvas
  // takes the same colours as the page's elements, and a contrast fix is one variable.
  function palette(el, names) {
    const css = getComputedStyle(el);
    const out = { font: css.fontFamily || "sans-serif" };
    for (const [key, name] of Object.entries(names)) out[key] = css.getPropertyValue(name).trim();
    return out;
  }

  // Material's dark scheme ("slate") is on: for colours a stylesheet cannot give a canvas
  // (one hue per request, a lightness for each scheme).
  const dark = () => document.body.getAttribute("data-md-color-scheme") === "slate";

  // `fn(scheme)` when the reader switches light/dark: Material's palette sets
  // data-md-color-scheme on <body>. Its bundle also sets it, to the value it already had,
  // as it starts (while Python boots); only a new value calls `fn`, so no widget redraws
  // for nothing then. Returns what stops watching.
  function onSchemeChange(fn) {
    const now = () => document.body.getAttribute("data-md-color-scheme");
    let last = now();
    const observer = new MutationObserver(() => {
      const scheme = now();
      if (scheme === last) return;
      last = scheme;
      fn(scheme);
    });
    observer.observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
    return () => observer.disconnect();
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

  window.PySim = Object.assign(window.PySim || {}, { h, tableBox, fmt, fmtUpTo, compact, uniqueId, palette, dark, onSchemeChange, sizeCanvas, stripePattern, strokeLine, labelBox });
})();
