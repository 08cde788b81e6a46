// Widget for simulation 4, choosing the batch size (pysim/batch_size.py, bridge name
// "batch_size").
//
// pysim computes every number: the KV pool, the two limits, the recommended
// --max-num-seqs, the answer sentence and the curve of per-user speed and total
// throughput against the batch size. This file only turns the reader's choices into a
// config, asks pysim, and draws the view model with uPlot (the global `uPlot`, shipped
// on this page by the hook). The chart is a picture of the table below it.
(function () {
  "use strict";
  const { h, readHash, writeHash } = window.PySim;
  const NAME = "batch_size";

  // The slider for the target speed walks these values; typing allows any number.
  const TARGET_STEPS = [1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100,
    120, 150, 200, 250, 300, 400, 500, 600, 800, 1000];
  const FIELD_LABELS = {
    gpu: "GPU", model: "Model", context_tokens: "Context per request (tokens)",
    target_tok_s: "Target speed per user (tokens/s)", kv_fp8: "FP8 KV cache",
    weights_fp8: "FP8 weights",
  };

  // ---------------------------------------------------------------- formatting

  const intFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  const compactFormat = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });
  const int = (x) => intFormat.format(x);
  function speed(x) {
    if (x >= 100) return int(x);
    return x.toFixed(x >= 10 ? 1 : 2);
  }
  // Batch sizes on the log axis are powers of two: 1,024 and up read as 1K, 2K, ... 64K.
  function batchTick(s) {
    if (s == null) return "";
    return s >= 1024 && s % 1024 === 0 ? s / 1024 + "K" : int(s);
  }
  function gb(bytes) {
    return (bytes / 1e9).toFixed(2).replace(/\.?0+$/, "") + " GB";
  }
  function kib(bytes) {
    const k = bytes / 1024;
    return (Number.isInteger(k) ? int(k) : k.toFixed(1)) + " KiB";
  }

  // Context lengths the slider walks: 1, 1.25, 1.5 and 1.75 times each power of two
  // (128, 160, 192, 224, 256, ..., 2,048, 2,560, ...) and the model's own maximum.
  function contextSteps(lo, hi) {
    const out = [];
    for (let base = lo; base <= hi; base *= 2) {
      for (const m of [4, 5, 6, 7]) {
        const v = (base * m) / 4;
        if (v <= hi) out.push(v);
      }
    }
    if (out[out.length - 1] !== hi) out.push(hi);
    return out;
  }

  function nearestIndex(steps, value) {
    let best = 0;
    for (let i = 1; i < steps.length; i++) {
      if (Math.abs(Math.log(steps[i] / value)) < Math.abs(Math.log(steps[best] / value))) best = i;
    }
    return best;
  }

  // ---------------------------------------------------------------- controls

  let uid = 0;
  const newId = (stem) => `bs-${stem}-${++uid}-${Math.random().toString(36).slice(2, 6)}`;

  // A slider over a list of values (so it can be logarithmic), a typed entry beside
  // it, a label, and a slot for pysim's message. Same structure as PySim.numberControl.
  function steppedControl({ name, label, unit, steps, value, typedStep, onChange }) {
    const id = newId(name);
    const error = h("span", { class: "pysim-error", id: id + "-err", role: "alert" });
    const note = h("span", { class: "bs-control-note", "aria-live": "polite" });
    const range = h("input", { type: "range", id, name, min: 0, step: 1, "aria-describedby": id + "-err" });
    const box = h("input", {
      type: "number", name: name + "-value", step: typedStep, inputmode: "decimal",
      "aria-label": label + " (typed value)", "aria-describedby": id + "-err",
    });
    let values = steps;
    function setSteps(next) {
      values = next;
      range.max = values.length - 1;
      box.min = values[0];
      box.max = values[values.length - 1];
    }
    function set(v) {
      const i = nearestIndex(values, v);
      range.value = i;
      range.setAttribute("aria-valuetext", `${int(v)} ${unit}`);
      box.value = v;
    }
    range.addEventListener("input", () => {
      const v = values[Number(range.value)];
      box.value = v;
      range.setAttribute("aria-valuetext", `${int(v)} ${unit}`);
      onChange(v);
    });
    box.addEventListener("change", () => {
      const v = Number(box.value);
      if (box.value !== "" && Number.isFinite(v) && v > 0) {
        range.value = nearestIndex(values, v);
        range.setAttribute("aria-valuetext", `${box.value} ${unit}`);
      }
      onChange(box.value === "" ? "" : v);
    });
    setSteps(steps);
    set(value);
    const root = h("div", { class: "pysim-control bs-control", "data-field": name },
      h("label", { for: id }, label), range, box, note, error);
    return {
      root, range, box, label, set, setSteps,
      showError(message) { error.textContent = message || ""; root.classList.toggle("has-error", !!message); },
      showNote(message) { note.textContent = message || ""; },
    };
  }

  function selectControl({ name, label, options, value, onChange }) {
    const id = newId(name);
    const error = h("span", { class: "pysim-error", id: id + "-err", role: "alert" });
    const select = h("select", { id, name, "aria-describedby": id + "-err" },
      options.map((o) => h("option", { value: o.id }, o.label)));
    select.value = value;
    select.addEventListener("change", () => onChange(select.value));
    const root = h("div", { class: "bs-select", "data-field": name },
      h("label", { for: id }, label), select, error);
    return {
      root, select, label,
      set(v) { select.value = v; },
      showError(message) { error.textContent = message || ""; root.classList.toggle("has-error", !!message); },
    };
  }

  function checkControl({ name, label, help, value, onChange }) {
    const id = newId(name);
    const error = h("span", { class: "pysim-error", id: id + "-err", role: "alert" });
    const input = h("input", { type: "checkbox", id, name, role: "switch", "aria-describedby": id + "-help " + id + "-err" });
    input.checked = value;
    input.addEventListener("change", () => onChange(input.checked));
    const root = h("div", { class: "bs-check", "data-field": name },
      input, h("label", { for: id }, label),
      h("span", { class: "bs-check-help", id: id + "-help" }, help), error);
    return {
      root, input, label,
      set(v) { input.checked = !!v; },
      showError(message) { error.textContent = message || ""; root.classList.toggle("has-error", !!message); },
    };
  }

  // ---------------------------------------------------------------- colours

  function palette(el) {
    const css = getComputedStyle(el);
    const v = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
    return {
      text: v("--pysim-text", "#222"), grid: v("--pysim-grid", "#ccc"),
      bg: v("--md-default-bg-color", "#fff"),
      speed: v("--bs-speed", "#3f6ad8"), total: v("--bs-total", "#c0561b"),
      memory: v("--bs-memory", "#d64545"), rec: v("--bs-rec", "#1f8a52"),
      compute: v("--bs-compute", "rgba(201,162,39,0.16)"), nofit: v("--bs-nofit", "#9a9a9a"),
      font: css.fontFamily || "sans-serif",
    };
  }

  function hatchPattern(ctx, color, ratio) {
    const size = Math.round(7 * ratio);
    const c = document.createElement("canvas");
    c.width = c.height = size;
    const g = c.getContext("2d");
    g.strokeStyle = color;
    g.globalAlpha = 0.55;
    g.lineWidth = Math.max(1, ratio);
    g.beginPath();
    g.moveTo(0, size); g.lineTo(size, 0);
    g.moveTo(-1, 1); g.lineTo(1, -1);
    g.moveTo(size - 1, size + 1); g.lineTo(size + 1, size - 1);
    g.stroke();
    return ctx.createPattern(c, "repeat");
  }

  // ---------------------------------------------------------------- the widget

  function mount(body, { prerendered, runtime, root }) {
    let view = prerendered.view;
    const fields = Object.fromEntries((prerendered.fields || []).map((f) => [f.name, f]));
    const gpuIds = view.catalog.gpus.map((g) => g.id);
    const modelIds = view.catalog.models.map((m) => m.id);
    const ctxLo = (fields.context_tokens && fields.context_tokens.lo) || 128;
    // What the controls say; it becomes the shown config once pysim accepts it.
    const draft = Object.assign({}, view.config);
    let requestSeq = 0;

    // ---------------------------------------------------------------- state from the link
    const fromHash = readHash(NAME);
    const hashProblems = [];
    const hashApplied = [];
    for (const [key, value] of Object.entries(fromHash)) {
      let ok = false;
      if (key === "gpu") ok = gpuIds.includes(value);
      else if (key === "model") ok = modelIds.includes(value);
      else if (key === "context_tokens") ok = /^\d{1,7}$/.test(value);
      else if (key === "target_tok_s") ok = /^\d{1,4}(\.\d{1,3})?$/.test(value);
      else if (key === "kv_fp8" || key === "weights_fp8") ok = value === "true" || value === "false";
      else { hashProblems.push(`unknown setting "${key}"`); continue; }
      if (!ok) { hashProblems.push(`${key} "${value}" is not allowed`); continue; }
      if (key === "context_tokens" || key === "target_tok_s") draft[key] = Number(value);
      else if (key === "kv_fp8" || key === "weights_fp8") draft[key] = value === "true";
      else draft[key] = value;
      hashApplied.push(key);
    }

    // ---------------------------------------------------------------- controls
    const modelInfo = (id) => view.catalog.models.find((m) => m.id === id) || view.catalog.models[0];
    const controls = {
      gpu: selectControl({ name: "gpu", label: FIELD_LABELS.gpu, options: view.catalog.gpus, value: draft.gpu,
        onChange: (v) => change("gpu", v, 0) }),
      model: selectControl({ name: "model", label: FIELD_LABELS.model, options: view.catalog.models, value: draft.model,
        onChange: (v) => changeModel(v) }),
      context_tokens: steppedControl({
        name: "context_tokens", label: FIELD_LABELS.context_tokens, unit: "tokens",
        steps: contextSteps(ctxLo, modelInfo(draft.model).max_context_tokens),
        value: draft.context_tokens, typedStep: 1, onChange: (v) => change("context_tokens", v),
      }),
      target_tok_s: steppedControl({
        name: "target_tok_s", label: FIELD_LABELS.target_tok_s, unit: "tokens/s",
        steps: TARGET_STEPS, value: draft.target_tok_s, typedStep: "any",
        onChange: (v) => change("target_tok_s", v),
      }),
      weights_fp8: checkControl({ name: "weights_fp8", label: FIELD_LABELS.weights_fp8,
        help: "1 byte a parameter instead of 2", value: draft.weights_fp8, onChange: (v) => change("weights_fp8", v, 0) }),
      kv_fp8: checkControl({ name: "kv_fp8", label: FIELD_LABELS.kv_fp8,
        help: "1 byte a number instead of 2", value: draft.kv_fp8, onChange: (v) => change("kv_fp8", v, 0) }),
    };

    const presetButtons = Object.entries(view.presets).map(([key, p]) =>
      h("button", {
        type: "button", class: "md-button bs-preset", "data-preset": key, "aria-pressed": "false",
        onclick: () => applyPreset(key),
      }, h("span", { class: "bs-preset-name" }, p.label),
      h("span", { class: "bs-preset-detail" }, `${int(p.context_tokens)} tokens, ${p.target_tok_s} tok/s`)));
    const presetWhy = h("p", { class: "bs-preset-why" });

    const generalError = h("p", { class: "pysim-error bs-general-error", role: "alert" });
    const hashMessage = h("p", { class: "pysim-error bs-hash-message", role: "alert" },
      hashProblems.length ? "Ignored part of the link: " + hashProblems.join("; ") + "." : "");
    const answerEl = h("p", { class: "bs-answer", "aria-live": "polite" });
    const reasonEl = h("div", { class: "bs-reason", role: "note" });
    const figuresEl = h("dl", { class: "bs-figures" });
    const noteEl = h("p", { class: "bs-note" });
    const chartEl = h("div", { class: "bs-chart" });
    const legendItem = (cls, text) => h("span", { class: "bs-legend-item" }, h("span", { class: "bs-sw " + cls }), text);
    const legendEl = h("div", { class: "pysim-legend bs-legend", "aria-label": "Chart legend" },
      legendItem("bs-sw-speed", "per-user speed (left axis)"),
      legendItem("bs-sw-total", "total throughput (right axis)"),
      legendItem("bs-sw-target", "target speed (diamond: where the curve meets it)"),
      legendItem("bs-sw-memory", "memory limit"),
      legendItem("bs-sw-rec", "recommended --max-num-seqs"),
      legendItem("bs-sw-nofit", "does not fit in memory"),
      legendItem("bs-sw-compute", "compute-bound region"),
      legendItem("bs-sw-pt-memory", "memory-bound point"),
      legendItem("bs-sw-pt-compute", "compute-bound point"));
    const table = h("table", { class: "bs-table" });

    body.append(
      h("div", { class: "bs-presets", role: "group", "aria-label": "Presets" },
        h("span", { class: "bs-presets-label" }, "Presets:"), presetButtons),
      presetWhy,
      h("div", { class: "bs-controls" },
        h("div", { class: "bs-selects" }, controls.gpu.root, controls.model.root),
        controls.context_tokens.root, controls.target_tok_s.root,
        h("div", { class: "bs-checks", role: "group", "aria-label": "Precision" },
          controls.weights_fp8.root, controls.kv_fp8.root)),
      generalError, hashMessage,
      answerEl, reasonEl, figuresEl,
      h("h4", { class: "bs-chart-title" }, "Per-user speed and total throughput against the batch size"),
      noteEl, chartEl, legendEl,
      h("details", { class: "bs-details", open: true },
        h("summary", {}, "Table: every batch size on the chart"),
        h("div", { class: "pysim-table-wrap" }, table)));

    // ---------------------------------------------------------------- reader actions
    let debounce = null;
    function change(name, value, delay = 150) {
      draft[name] = value;
      clearTimeout(debounce);
      debounce = setTimeout(() => recompute(Object.assign({}, draft)), delay);
    }

    function changeModel(id) {
      // A model reads at most its own context: keep the request inside it.
      const max = modelInfo(id).max_context_tokens;
      controls.context_tokens.setSteps(contextSteps(ctxLo, max));
      if (typeof draft.context_tokens === "number" && draft.context_tokens > max) {
        draft.context_tokens = max;
        controls.context_tokens.showNote(`Lowered to ${int(max)}, the longest context ${modelInfo(id).label} reads.`);
      } else controls.context_tokens.showNote("");
      if (typeof draft.context_tokens === "number") controls.context_tokens.set(draft.context_tokens);
      change("model", id, 0);
    }

    function applyPreset(key) {
      const p = view.presets[key];
      draft.context_tokens = Math.min(p.context_tokens, modelInfo(draft.model).max_context_tokens);
      draft.target_tok_s = p.target_tok_s;
      controls.context_tokens.set(draft.context_tokens);
      controls.context_tokens.showNote("");
      controls.target_tok_s.set(draft.target_tok_s);
      change("context_tokens", draft.context_tokens, 0);
    }

    function saveHash() {
      const c = view.config;
      writeHash(NAME, {
        gpu: c.gpu, model: c.model, context_tokens: c.context_tokens, target_tok_s: c.target_tok_s,
        kv_fp8: c.kv_fp8, weights_fp8: c.weights_fp8,
      });
    }

    function clearErrors() {
      for (const c of Object.values(controls)) c.showError("");
      generalError.textContent = "";
    }

    async function recompute(next) {
      const seq = ++requestSeq;
      root.dataset.busy = "true";
      let answer;
      try {
        answer = await runtime.call(NAME, { config: next });
      } catch (err) {
        if (seq !== requestSeq) return;
        delete root.dataset.busy;
        clearErrors();
        generalError.textContent = "Python is not available, so the picture shows the last computed settings.";
        syncControls(); // the controls show what the picture shows
        return;
      }
      if (seq !== requestSeq) return; // a newer change superseded this one
      delete root.dataset.busy;
      root.dataset.computeMs = answer.ms.toFixed(2);
      clearErrors();
      if (!answer.ok) {
        const control = controls[answer.error.field];
        const label = control ? control.label : "Settings";
        if (control) control.showError(`${label}: ${answer.error.message}`);
        else generalError.textContent = `${label}: ${answer.error.message}`;
        root.dataset.error = answer.error.field || "input";
        return; // keep the last good picture
      }
      delete root.dataset.error;
      view = answer.result;
      Object.assign(draft, view.config);
      saveHash();
      render();
    }

    function syncControls() {
      Object.assign(draft, view.config);
      for (const [name, control] of Object.entries(controls)) control.set(view.config[name]);
      controls.context_tokens.setSteps(contextSteps(ctxLo, view.model.max_context_tokens));
      controls.context_tokens.set(view.config.context_tokens);
    }

    // When Python is ready, recompute the current settings there. With the default
    // settings the result must equal the pre-rendered model: pysim is deterministic.
    runtime.subscribe(async (state) => {
      if (state !== "ready" || root.dataset.live) return;
      root.dataset.live = "pending";
      const seq = requestSeq;
      const shown = view;
      const answer = await runtime.call(NAME, { config: Object.assign({}, shown.config) }).catch(() => null);
      if (!answer || !answer.ok) { root.dataset.live = "failed"; return; }
      const same = JSON.stringify(answer.result) === JSON.stringify(shown);
      if (!same && shown === prerendered.view) {
        console.error("pysim: the pre-rendered batch-size view differs from what Pyodide computed");
      }
      root.dataset.live = same ? "same" : "updated";
      root.dataset.computeMs = answer.ms.toFixed(2);
      if (seq === requestSeq && !same) { view = answer.result; render(); }
    });

    // ---------------------------------------------------------------- drawing: text
    function figure(key, label, value, detail) {
      return h("div", { class: "bs-figure", "data-key": key },
        h("dt", {}, label), h("dd", {}, h("span", { class: "bs-value" }, value),
          detail ? h("span", { class: "bs-detail" }, detail) : null));
    }

    function renderText() {
      const v = view;
      const c = v.config;
      for (const b of presetButtons) b.setAttribute("aria-pressed", String(b.dataset.preset === v.active_preset));
      const preset = v.active_preset && v.presets[v.active_preset];
      presetWhy.textContent = preset
        ? `${preset.label}: ${preset.why}.`
        : "Custom settings: neither preset's context and target.";

      answerEl.textContent = v.answer;
      answerEl.dataset.recommended = v.recommended_max_num_seqs === null ? "none" : String(v.recommended_max_num_seqs);
      root.dataset.reason = v.reason || "";
      reasonEl.hidden = !v.reason;
      reasonEl.replaceChildren(...(v.reason
        ? [h("strong", {}, "No batch size works: "), v.reason_text + "."]
        : []));

      const rec = v.recommended_max_num_seqs;
      figuresEl.replaceChildren(...[
        figure("recommended", "Set --max-num-seqs to", rec === null ? "none" : int(rec),
          rec === null ? v.reason.replace(/_/g, " ") : `limited by ${v.limited_by}`),
        figure("max_batch_memory", "Memory allows", int(v.max_batch_memory),
          `requests of ${int(c.context_tokens)} tokens`),
        figure("max_batch_speed", "The speed target allows", int(v.max_batch_speed),
          `at ≥ ${c.target_tok_s} tok/s each`),
        figure("kv_bytes_per_token", "KV cache per token", `${int(v.kv_bytes_per_token)} B`,
          `${kib(v.kv_bytes_per_token)}, ${v.precision.kv_cache}`),
        figure("weight_bytes", "Weights", gb(v.weight_bytes), v.precision.weights),
        figure("kv_pool_bytes", "KV pool", gb(v.kv_pool_bytes),
          `${gb(v.usable_bytes)} usable − weights − ${gb(v.reserve_bytes)} reserve`),
        figure("kv_pool_tokens", "KV pool holds", int(v.kv_pool_tokens), "tokens"),
        rec === null ? null : figure("at_recommended", `At ${int(rec)} requests`,
          `${speed(v.per_user_tok_s)} tok/s`,
          `per user; ${int(v.total_tok_s)} tok/s in total; step ${v.t_step_ms.toFixed(2)} ms`),
        figure("crossover_batch", "Compute binds from batch",
          v.crossover_batch === null ? "never" : int(v.crossover_batch),
          v.crossover_batch === null ? "each request's KV read outweighs its FLOPs" : "below that, reading memory binds"),
      ].filter(Boolean));
      noteEl.replaceChildren(h("strong", {}, "Ideal ceiling. "), v.note);
    }

    function renderTable() {
      const v = view;
      const rec = v.recommended_max_num_seqs;
      const head = h("tr", {}, ["Batch", "Step (ms)", "Per-user tok/s", "Total tok/s", "Bound", "Fits in memory", "Meets target"]
        .map((t) => h("th", { scope: "col" }, t)));
      const rows = v.curve.map((p) => {
        const isRec = p.batch === rec;
        return h("tr", {
          "data-batch": p.batch, "data-bound": p.bound, class: [isRec ? "bs-rec-row" : "", p.fits ? "" : "bs-nofit-row"].join(" ").trim() || null,
        },
        h("th", { scope: "row" }, int(p.batch), isRec ? h("span", { class: "bs-rec-tag" }, " recommended") : null),
        h("td", {}, p.t_step_ms.toFixed(2)), h("td", {}, speed(p.per_user_tok_s)), h("td", {}, int(p.total_tok_s)),
        h("td", { class: "bs-bound-" + p.bound }, p.bound), h("td", {}, p.fits ? "yes" : "no"),
        h("td", {}, p.meets_target ? "yes" : "no"));
      });
      table.replaceChildren(
        h("caption", {}, `${v.gpu.label}, ${v.model.label}, ${int(v.config.context_tokens)} tokens of context, target ${v.config.target_tok_s} tok/s per user (ideal ceilings)`),
        h("thead", {}, head), h("tbody", {}, rows));
    }

    // ---------------------------------------------------------------- drawing: chart
    let plot = null;
    let pal = null;

    function chartData() {
      return [view.curve.map((p) => p.batch), view.curve.map((p) => p.per_user_tok_s), view.curve.map((p) => p.total_tok_s)];
    }

    function chartSize() {
      const width = Math.max(220, Math.floor(chartEl.clientWidth));
      return { width, height: width < 520 ? 270 : 320 };
    }

    function summary() {
      const v = view;
      const first = v.curve[0];
      const last = v.curve[v.curve.length - 1];
      const rec = v.recommended_max_num_seqs;
      return `Chart, ideal ceilings: as the batch grows from ${int(first.batch)} to ${int(last.batch)}, ` +
        `per-user speed falls from ${speed(first.per_user_tok_s)} to ${speed(last.per_user_tok_s)} tokens/s and ` +
        `total throughput rises from ${int(first.total_tok_s)} to ${int(last.total_tok_s)} tokens/s. ` +
        `Memory allows ${int(v.max_batch_memory)} requests; the ${v.config.target_tok_s} tokens/s target allows ` +
        `${int(v.max_batch_speed)}; recommended: ${rec === null ? "none" : int(rec)}. The table below lists every point.`;
    }

    // Under the curves: where compute binds (tinted) and where memory runs out (hatched).
    function drawRegions(u) {
      const ratio = uPlot.pxRatio;
      const { left, top, width, height } = u.bbox;
      const right = left + width;
      const ctx = u.ctx;
      const xMax = u.scales.x.max;
      ctx.save();
      ctx.beginPath();
      ctx.rect(left, top, width, height);
      ctx.clip();
      const cross = view.crossover_batch;
      if (cross !== null && cross <= xMax) {
        const x0 = u.valToPos(cross, "x", true);
        ctx.fillStyle = pal.compute;
        ctx.fillRect(x0, top, right - x0, height);
      }
      const m = view.max_batch_memory;
      const xm = m >= 1 ? u.valToPos(m, "x", true) : left;
      if (xm < right) {
        ctx.fillStyle = hatchPattern(ctx, pal.nofit, ratio);
        ctx.fillRect(xm, top, right - xm, height);
      }
      ctx.restore();
    }

    // A text label on a box of the page colour, kept inside the canvas.
    function label(u, text, x, y, color, align) {
      const ratio = uPlot.pxRatio;
      const ctx = u.ctx;
      ctx.font = `600 ${Math.round(11 * ratio)}px ${pal.font}`;
      const w = ctx.measureText(text).width;
      const pad = 3 * ratio;
      const lh = 15 * ratio;
      let x0 = align === "right" ? x - w : x;
      x0 = Math.max(pad, Math.min(x0, ctx.canvas.width - w - pad));
      ctx.globalAlpha = 0.88;
      ctx.fillStyle = pal.bg;
      ctx.fillRect(x0 - pad, y, w + 2 * pad, lh);
      ctx.globalAlpha = 1;
      ctx.fillStyle = color;
      ctx.textBaseline = "top";
      ctx.textAlign = "left";
      ctx.fillText(text, x0, y + 2 * ratio);
    }

    // A label beside a vertical line at x, at the top of the plot: to its right, or to
    // its left when it would run past the plot's right edge.
    function lineLabel(u, text, x, row, color) {
      const ratio = uPlot.pxRatio;
      const { top, left, width } = u.bbox;
      u.ctx.font = `600 ${Math.round(11 * ratio)}px ${pal.font}`;
      const w = u.ctx.measureText(text).width;
      const y = top + (4 + row * 17) * ratio;
      if (x + 5 * ratio + w <= left + width) label(u, text, x + 5 * ratio, y, color, "left");
      else label(u, text, x - 5 * ratio, y, color, "right");
    }

    function vline(ctx, x, u, color, widthPx, dash) {
      const { top, height } = u.bbox;
      ctx.strokeStyle = color;
      ctx.lineWidth = widthPx;
      ctx.setLineDash(dash);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      ctx.setLineDash([]);
    }

    // Over the curves: target, memory limit, recommendation, and a marker per point
    // (hollow circle: memory-bound; filled square: compute-bound).
    function drawMarks(u) {
      const ratio = uPlot.pxRatio;
      const ctx = u.ctx;
      const { left, top, width, height } = u.bbox;
      const v = view;
      const small = u.width < 520;
      const m = v.max_batch_memory;
      const rec = v.recommended_max_num_seqs;
      ctx.save();
      ctx.beginPath();
      ctx.rect(left - 8 * ratio, top - 8 * ratio, width + 16 * ratio, height + 16 * ratio);
      ctx.clip();

      // Markers per point, on both curves.
      const r = (small ? 2.3 : 3) * ratio;
      for (const p of v.curve) {
        const x = u.valToPos(p.batch, "x", true);
        for (const [value, scale, color] of [[p.per_user_tok_s, "speed", pal.speed], [p.total_tok_s, "total", pal.total]]) {
          const y = u.valToPos(value, scale, true);
          ctx.lineWidth = 1.5 * ratio;
          ctx.strokeStyle = color;
          if (p.bound === "compute") {
            ctx.fillStyle = color;
            ctx.fillRect(x - r - ratio / 2, y - r - ratio / 2, 2 * r + ratio, 2 * r + ratio);
          } else {
            ctx.fillStyle = pal.bg;
            ctx.beginPath();
            ctx.arc(x, y, r, 0, 2 * Math.PI);
            ctx.fill();
            ctx.stroke();
          }
        }
      }

      // Target speed: a horizontal line on the per-user axis, and a diamond where the
      // per-user curve meets it (the largest batch the target allows).
      const ty = u.valToPos(v.config.target_tok_s, "speed", true);
      ctx.strokeStyle = pal.speed;
      ctx.lineWidth = 1.5 * ratio;
      ctx.setLineDash([2 * ratio, 4 * ratio]);
      ctx.beginPath();
      ctx.moveTo(left, ty);
      ctx.lineTo(left + width, ty);
      ctx.stroke();
      ctx.setLineDash([]);
      if (v.max_batch_speed >= 1 && v.max_batch_speed <= u.scales.x.max) {
        const sx = u.valToPos(v.max_batch_speed, "x", true);
        const s = 5 * ratio;
        ctx.fillStyle = pal.speed;
        ctx.beginPath();
        ctx.moveTo(sx, ty - s); ctx.lineTo(sx + s, ty); ctx.lineTo(sx, ty + s); ctx.lineTo(sx - s, ty);
        ctx.closePath();
        ctx.fill();
      }

      // Memory limit and recommendation: vertical lines; rings on both curves.
      if (m >= 1) vline(ctx, u.valToPos(m, "x", true), u, pal.memory, 2 * ratio, [6 * ratio, 4 * ratio]);
      if (rec !== null) {
        const xr = u.valToPos(rec, "x", true);
        vline(ctx, xr, u, pal.rec, 2.5 * ratio, []);
        for (const [value, scale] of [[v.per_user_tok_s, "speed"], [v.total_tok_s, "total"]]) {
          const y = u.valToPos(value, scale, true);
          ctx.strokeStyle = pal.rec;
          ctx.lineWidth = 2.5 * ratio;
          ctx.beginPath();
          ctx.arc(xr, y, (small ? 5.5 : 7) * ratio, 0, 2 * Math.PI);
          ctx.stroke();
        }
      }
      ctx.restore();

      // Labels last, on top of everything, and never clipped by the plot area.
      label(u, `target ${v.config.target_tok_s} tok/s`, left + 6 * ratio, ty - 17 * ratio, pal.speed, "left");
      if (rec !== null) {
        const text = rec === m ? `recommended = memory limit: ${int(rec)}` : `recommended: ${int(rec)}`;
        lineLabel(u, small && rec === m ? `recommended: ${int(rec)} (memory)` : text, u.valToPos(rec, "x", true), 0, pal.rec);
      }
      if (m >= 1 && m !== rec) lineLabel(u, `memory limit: ${int(m)}`, u.valToPos(m, "x", true), rec === null ? 0 : 1, pal.memory);
      if (m < 1) label(u, "nothing fits in memory", left + 6 * ratio, top + 4 * ratio, pal.memory, "left");
    }

    function makeChart() {
      if (plot) { plot.destroy(); plot = null; }
      pal = palette(root);
      const { width, height } = chartSize();
      const narrow = width < 520;
      const axisFont = `${narrow ? 11 : 12}px ${pal.font}`;
      const labelFont = `600 ${narrow ? 11 : 12}px ${pal.font}`;
      const axis = (extra) => Object.assign({
        stroke: pal.text, font: axisFont, labelFont,
        grid: { stroke: pal.grid, width: 1 }, ticks: { stroke: pal.grid, width: 1, size: 4 },
      }, extra);
      const opts = {
        width, height,
        cursor: { drag: { x: false, y: false, setScale: false }, points: { size: 8 } },
        legend: { live: true },
        scales: {
          x: { distr: 3, log: 2 },
          speed: { range: (u, lo, hi) => [0, Math.max(hi, view.config.target_tok_s) * 1.12] },
          total: { range: (u, lo, hi) => [0, hi * 1.12] },
        },
        series: [
          { label: "Batch", value: (u, x) => (x == null ? "–" : int(x)) },
          { label: "Per-user speed", scale: "speed", stroke: pal.speed, width: 2.5, points: { show: false },
            value: (u, y) => (y == null ? "–" : speed(y) + " tok/s") },
          { label: "Total throughput", scale: "total", stroke: pal.total, width: 2.5, dash: [8, 4], points: { show: false },
            value: (u, y) => (y == null ? "–" : int(y) + " tok/s") },
        ],
        axes: [
          axis({
            scale: "x", label: narrow ? "Batch size (log scale)" : "Batch size: requests running together (log scale)",
            space: narrow ? 34 : 40,
            values: (u, splits) => splits.map(batchTick),
          }),
          axis({
            scale: "speed", side: 3, label: narrow ? "Per-user tok/s" : "Per-user speed (tokens/s)",
            stroke: pal.speed, size: narrow ? 34 : 50, labelSize: narrow ? 20 : 26,
            values: (u, splits) => splits.map((s) => (s == null ? "" : compactFormat.format(s))),
          }),
          axis({
            scale: "total", side: 1, label: narrow ? "Total tok/s" : "Total throughput (tokens/s)",
            stroke: pal.total, size: narrow ? 34 : 52, labelSize: narrow ? 20 : 26, grid: { show: false },
            values: (u, splits) => splits.map((s) => (s == null ? "" : compactFormat.format(s))),
          }),
        ],
        hooks: {
          drawAxes: [drawRegions], draw: [drawMarks, showLegendAtRecommendation],
          setCursor: [showLegendAtRecommendation],
        },
      };
      plot = new uPlot(opts, chartData(), chartEl);
      const wrap = plot.root.querySelector(".u-wrap");
      if (wrap) wrap.setAttribute("role", "img");
      updateChartLabel();
    }

    // Before the reader hovers, the uPlot legend reads the values at the recommendation.
    // (uPlot clears the legend after each redraw and when the pointer leaves.)
    function showLegendAtRecommendation(u) {
      if (!u || u.cursor.idx != null) return;
      const rec = view.recommended_max_num_seqs;
      const idx = Math.max(0, view.curve.findIndex((p) => p.batch === rec));
      u.setLegend({ idx }, false);
    }

    function updateChartLabel() {
      const wrap = plot && plot.root.querySelector(".u-wrap");
      if (wrap) wrap.setAttribute("aria-label", summary());
    }

    function renderChart() {
      if (!plot) makeChart();
      else {
        plot.setData(chartData());
        updateChartLabel();
      }
    }

    function render() {
      renderText();
      renderTable();
      renderChart();
    }

    // ---------------------------------------------------------------- start
    render();
    if (hashApplied.length) {
      // Show the link's settings in the controls and compute them as soon as Python runs.
      recompute(Object.assign({}, draft)).catch(() => {});
    }

    let lastWidth = chartEl.clientWidth;
    new ResizeObserver(() => {
      const w = chartEl.clientWidth;
      if (!plot || w === lastWidth) return;
      lastWidth = w;
      const before = plot.width < 520;
      const size = chartSize();
      // Narrow and wide charts use different label texts and fonts: rebuild across the line.
      if ((size.width < 520) !== before) makeChart();
      else plot.setSize(size);
    }).observe(chartEl);
    // uPlot draws on a canvas: rebuild it with the new colours on a light/dark switch.
    new MutationObserver(() => makeChart())
      .observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  }

  window.PySim.register(NAME, mount);
})();
