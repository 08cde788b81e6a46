// "Predict first" checkpoints (sitebuild/predict.py writes them; docs/predict.toml lists
// them). The build leaves a block that reads well without JavaScript: the question, the
// choices or the range, and pysim's answer in a <details>. This script turns it into a
// guess the reader commits to (a slider, or one of a few radio buttons), then draws
// pysim's answer over the guess with the sentence on why.
//
// The guess stays in this browser: localStorage, under "pysim.predict.KEY", and nothing
// is ever sent. The answer is not computed here: the block carries it, as the build read
// it from pysim's figures.
//
// It needs neither Python nor the widget kit (a page may hold a checkpoint and no
// widget), so it has its own small helpers. A classic script, like every widget file, so
// a copy opened from disk runs it. With Material's instant navigation it mounts the
// checkpoints of every page entered: it follows Material's `document$`, as
// navigation.js does; a checkpoint that leaves the page holds nothing global to release.
(function () {
  "use strict";
  if (window.PySimPredict) return; // loaded twice (a look ahead, then the page): once is enough
  const STORE = "pysim.predict.";
  const reduceMotion = () => window.matchMedia && matchMedia("(prefers-reduced-motion: reduce)").matches;

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined) el.append(child instanceof Node ? child : String(child));
    }
    return el;
  }

  // (Storage may be refused: a private window, a page opened from disk in some browsers.
  // The checkpoint then works for this visit and forgets.)
  function load(key) {
    try {
      const saved = JSON.parse(localStorage.getItem(STORE + key));
      return saved && typeof saved === "object" ? saved : null;
    } catch (err) {
      return null;
    }
  }
  function save(key, value) {
    try {
      if (value === null) localStorage.removeItem(STORE + key);
      else localStorage.setItem(STORE + key, JSON.stringify(value));
    } catch (err) { /* kept for this visit only */ }
  }

  // A number as the page prints pysim's: `digits` decimals, thousands grouped by commas.
  function fmt(x, digits) {
    const [whole, frac] = Math.abs(x).toFixed(digits).split(".");
    const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return (x < 0 && Number(x.toFixed(digits)) !== 0 ? "\u2212" : "") + grouped + (frac ? "." + frac : "");
  }
  function decimalsOf(text) {
    const dot = String(text).indexOf(".");
    return dot < 0 ? 0 : String(text).length - dot - 1;
  }

  let count = 0;
  function mount(root) {
    const key = root.dataset.predict;
    const kind = root.dataset.kind;
    const unit = root.dataset.unit || "";
    const answerText = root.dataset.answerText;
    const id = `predict-${++count}`;
    const question = root.querySelector(".predict-question");
    const details = root.querySelector(".predict-answer");
    const why = details && details.querySelector(".predict-why");
    const showLink = details && details.querySelector(".predict-show");
    const list = root.querySelector(".predict-choices");
    if (!question || !details || !why) return;

    // The question becomes the legend of the group that asks it.
    const legend = h("legend", { class: "predict-question", id: question.id });
    legend.append(...question.childNodes);
    question.remove();
    const fieldset = h("fieldset", { class: "predict-fieldset" }, legend);

    let input = null; // the slider, or the radio buttons
    let radios = [];
    let asking = null; // what asks for the guess; the answer's picture takes its place
    let scale = null;
    let options = [];
    if (kind === "scale") {
      const min = Number(root.dataset.min), max = Number(root.dataset.max), step = Number(root.dataset.step);
      const digits = decimalsOf(root.dataset.step);
      const text = (v) => fmt(v, digits) + unit;
      const middle = min + Math.round((max - min) / 2 / step) * step;
      const out = h("output", { class: "predict-guess-out", for: id, "aria-hidden": "true" });
      input = h("input", { type: "range", id, min, max, step, value: middle, class: "predict-slider" });
      const show = () => {
        out.textContent = text(Number(input.value));
        input.setAttribute("aria-valuetext", text(Number(input.value)));
      };
      input.addEventListener("input", show);
      show();
      asking = h("div", { class: "predict-scale" },
        h("label", { for: id, class: "predict-label" }, "Your guess"), input, out,
        h("span", { class: "predict-end", "aria-hidden": "true" }, text(min)),
        h("span", { class: "predict-end predict-end-max", "aria-hidden": "true" }, text(max)));
      fieldset.append(asking);
      scale = { min, max, text, answer: Number(root.dataset.answer) };
    } else {
      options = [...list.querySelectorAll("li")].map((li) => ({
        value: li.dataset.value, label: li.textContent, figure: Number(li.dataset.figure),
        figureText: li.dataset.figureText,
      }));
      const group = asking = h("div", { class: "predict-options" });
      options.forEach((o, i) => {
        const radio = h("input", { type: "radio", name: id, id: `${id}-${i}`, value: o.value });
        radios.push(radio);
        group.append(h("label", { class: "predict-option", for: `${id}-${i}` }, radio, " ", o.label));
      });
      fieldset.append(group);
    }
    list && list.remove();
    const range = root.querySelector(".predict-range");
    if (range) range.remove();

    const hint = h("p", { class: "predict-hint", role: "status" });
    const commit = h("button", { type: "button", class: "md-button md-button--primary predict-commit" }, "Lock in my guess");
    const skip = h("button", { type: "button", class: "md-button predict-skip" }, "Skip: show the answer");
    const actions = h("div", { class: "predict-actions" }, commit, skip);
    fieldset.append(actions, hint);
    const result = h("div", { class: "predict-result", "aria-live": "polite" });
    const fine = h("p", { class: "predict-fine" },
      "Your guess is kept in this browser only (its localStorage); it is never sent anywhere.");
    details.replaceWith(fieldset, result, fine);

    function chosen() {
      const r = radios.find((x) => x.checked);
      return r ? r.value : null;
    }

    function setOpen(open) {
      for (const el of [input, ...radios, commit, skip]) if (el) el.disabled = !open;
      actions.hidden = !open;
      asking.hidden = !open;
    }

    // The answer drawn over the guess: for a scale, two marks on one line (the answer's
    // slides over from the guess, unless the reader asked for less motion); for choices,
    // every choice's figure as a bar, the guess and the answer named.
    function reveal(state, byReader) {
      const skipped = Boolean(state.skipped);
      root.dataset.predictState = skipped ? "skipped" : "revealed";
      setOpen(false);
      hint.textContent = "";
      const verdict = h("p", { class: "predict-verdict" });
      const parts = [];
      let picture = null;
      if (scale) {
        const share = (v) => (Math.min(scale.max, Math.max(scale.min, v)) - scale.min) / (scale.max - scale.min);
        const pos = (v) => `${(100 * share(v)).toFixed(2)}%`;
        // A label near an end of the line is aligned to it, so it stays in the box.
        const edge = (v) => (share(v) < 0.15 ? " predict-at-start" : share(v) > 0.85 ? " predict-at-end" : "");
        const answerMark = h("span", { class: "predict-mark predict-mark-answer" + edge(scale.answer) }, h("span", { class: "predict-dot" }),
          h("span", { class: "predict-mark-label" }, "simulation: " + answerText));
        picture = h("div", { class: "predict-track", "aria-hidden": "true" }, h("span", { class: "predict-line" }),
          h("span", { class: "predict-end" }, scale.text(scale.min)),
          h("span", { class: "predict-end predict-end-max" }, scale.text(scale.max)));
        if (!skipped) {
          const guess = Number(state.guess);
          if (input) input.value = guess;
          input && input.dispatchEvent(new Event("input"));
          picture.append(h("span", { class: "predict-mark predict-mark-guess" + edge(guess), style: `left:${pos(guess)}` },
            h("span", { class: "predict-dot" }), h("span", { class: "predict-mark-label" }, "you: " + scale.text(guess))));
          const diff = guess - scale.answer;
          const digits = decimalsOf(root.dataset.step);
          const off = Math.abs(diff) < Math.pow(10, -digits) / 2 ? "right on it"
            : `${fmt(Math.abs(diff), digits)}${unit.trim() === "%" ? " points" : unit} too ${diff < 0 ? "low" : "high"}`;
          parts.push(`You guessed ${scale.text(guess)} (${off}). `);
          answerMark.style.left = byReader && !reduceMotion() ? pos(guess) : pos(scale.answer);
          if (byReader && !reduceMotion()) {
            requestAnimationFrame(() => requestAnimationFrame(() => { answerMark.style.left = pos(scale.answer); }));
          }
        } else {
          answerMark.style.left = pos(scale.answer);
          parts.push("You skipped the guess. ");
        }
        picture.append(answerMark);
        parts.push(`The simulation shows ${answerText}.`);
      } else {
        const answer = root.dataset.answer;
        const top = Math.max(...options.map((o) => Math.abs(o.figure))) || 1;
        if (!skipped) for (const r of radios) r.checked = r.value === state.guess;
        picture = h("ul", { class: "predict-bars" }, options.map((o) => h("li", {
          class: "predict-bar-row" + (o.value === answer ? " predict-is-answer" : "") +
            (!skipped && o.value === state.guess ? " predict-is-guess" : ""),
        }, h("span", { class: "predict-bar-label" }, o.label,
          o.value === answer ? h("strong", { class: "predict-tag predict-tag-answer" }, "simulation's answer") : null,
          !skipped && o.value === state.guess ? h("span", { class: "predict-tag predict-tag-guess" }, "your pick") : null),
        h("span", { class: "predict-bar" }, h("span", {
          class: "predict-bar-fill", style: `width:${(100 * Math.abs(o.figure) / top).toFixed(1)}%` })),
        h("span", { class: "predict-bar-value" }, o.figureText))));
        const guessed = options.find((o) => o.value === state.guess);
        if (skipped || !guessed) parts.push("You skipped the guess. ");
        else if (guessed.value === answer) parts.push(`You picked ${guessed.label}: right. `);
        else parts.push(`You picked ${guessed.label}. `);
        parts.push(`The simulation's answer: ${answerText}.`);
      }
      verdict.textContent = parts.join("");
      const again = h("button", { type: "button", class: "md-button predict-again" }, skipped ? "Guess after all" : "Guess again");
      again.addEventListener("click", () => {
        save(key, null);
        result.replaceChildren();
        delete root.dataset.predictState;
        setOpen(true);
        (input || radios.find((r) => r.checked) || radios[0]).focus();
      });
      const links = h("p", { class: "predict-links" });
      if (showLink) {
        const a = showLink.cloneNode(true);
        a.classList.add("md-button");
        a.addEventListener("click", showInWidget);
        links.append(a, " ");
      }
      links.append(again);
      const reason = h("p", { class: "predict-why" });
      reason.append(...[...why.childNodes].map((n) => n.cloneNode(true)));
      result.replaceChildren(verdict, ...(picture ? [picture] : []), reason, links);
      if (byReader) again.focus({ preventScroll: true });
    }

    commit.addEventListener("click", () => {
      let guess;
      if (scale) guess = Number(input.value);
      else {
        guess = chosen();
        if (guess === null) {
          hint.textContent = "Pick one of the answers first, or skip.";
          return;
        }
      }
      const state = { guess };
      save(key, state);
      reveal(state, true);
    });
    skip.addEventListener("click", () => {
      const state = { skipped: true };
      save(key, state);
      reveal(state, true);
    });

    root.dataset.predictMounted = "true";
    const saved = load(key);
    const valid = saved && (saved.skipped || (scale ? Number.isFinite(Number(saved.guess)) && typeof saved.guess === "number"
      : options.some((o) => o.value === saved.guess)));
    if (valid) reveal(saved, false);
  }

  // "Show me in the widget": the link sets the widget's state in the page address (its
  // widget follows the address, widgets/live.js), then the widget is brought into view.
  function showInWidget(event) {
    const href = event.currentTarget.getAttribute("href") || "";
    const target = href.includes("=") ? href.slice(1).split(".")[0] : href.replace(/^#widget-/, "");
    const widget = document.getElementById("widget-" + target);
    if (!widget) return; // an ordinary link, then
    event.preventDefault();
    if (href.includes("=")) location.hash = href.slice(1);
    else history.replaceState(history.state, "", href);
    widget.scrollIntoView({ behavior: reduceMotion() ? "auto" : "smooth", block: "start" });
  }

  function mountAll() {
    for (const root of document.querySelectorAll(".predict[data-predict]:not([data-predict-mounted])")) {
      try {
        mount(root);
      } catch (err) {
        console.error("pysim checkpoint " + root.dataset.predict + " failed to mount", err);
      }
    }
  }

  window.PySimPredict = { mountAll };
  mountAll();
  // Instant navigation (the hosted build): Material announces every page it swaps in on
  // document$, which replays the current one. Its bundle runs after this script on a
  // page load, so the subscription waits for the document to be parsed.
  function follow() {
    const documents = window.document$;
    if (documents && typeof documents.subscribe === "function") documents.subscribe(() => mountAll());
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", follow, { once: true });
  else follow();
})();
