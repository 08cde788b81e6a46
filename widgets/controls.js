// Controls drawn from pysim's own description of a config (pysim/config.py, `describe`),
// so each setting's label, range, step, unit, choices and help text are written once,
// in Python, next to the check that enforces them. The build embeds the description in
// the page beside the pre-rendered model, so the controls are drawn before Python runs.
//
// A described field looks like
//   {name, kind: "int"|"float"|"bool"|"choice"|"data", default, help, label,
//    lo, hi, unit, step, scale: "linear"|"log", slider_max (numbers: the slider stops
//    there when the range is too wide to drag through; typing reaches hi),
//    options, option_labels: {option: text} (choices)}
// and becomes, by kind:
//   int / float  a slider (log-spaced steps when scale is "log") and a typed box
//   choice       a select          bool   a checkbox with role "switch"
//   data         nothing (a list of requests, code: the widget draws its own editor)
// Every control shows its help text, and has a slot where pysim's message for that
// field appears (role "alert"). Values are sent to pysim as typed: the controls never
// judge them, so a bad value always gets pysim's message.
(function () {
  "use strict";
  const { h, fmt, uniqueId } = window.PySim;

  // "max_num_seqs" -> "Max num seqs": what a field is called if pysim gives no label.
  function labelOf(field) {
    if (field.label) return field.label;
    const words = field.name.replace(/_/g, " ");
    return words.charAt(0).toUpperCase() + words.slice(1);
  }

  // The values a log-scale slider walks, lo and hi included. A range whose ends are
  // powers of two (token counts: 128 to 131,072) steps through 1, 1.25, 1.5 and 1.75
  // times each power of two; any other through the decimal series 1, 1.2, 1.5, 2, 2.5,
  // 3, 4, 5, 6, 8 times each power of ten. Values are rounded to the field's step.
  function logSteps(lo, hi, step) {
    const pow2 = (x) => x > 0 && Number.isInteger(Math.log2(x));
    const binary = pow2(lo) && pow2(hi);
    const base = binary ? 2 : 10;
    const mantissas = binary ? [1, 1.25, 1.5, 1.75] : [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8];
    const round = (v) => (typeof step === "number" && step > 0 ? Math.round(v / step) * step : v);
    const out = new Set([lo]);
    for (let p = Math.pow(base, Math.floor(Math.log(lo) / Math.log(base) + 1e-9)); p <= hi; p *= base) {
      for (const m of mantissas) {
        const v = round(p * m);
        if (v > lo && v < hi) out.add(Number(v.toPrecision(12)));
      }
    }
    out.add(hi);
    return [...out].sort((a, b) => a - b);
  }

  function nearestIndex(values, v) {
    let best = 0;
    for (let i = 1; i < values.length; i++) {
      if (Math.abs(values[i] - v) < Math.abs(values[best] - v)) best = i;
    }
    return best;
  }

  // The parts every control shares: a root marked with the field, its label, its help
  // text and its error slot, both named by the inputs' aria-describedby.
  function frame(field, id) {
    const label = labelOf(field);
    const help = h("span", { class: "pysim-help", id: id + "-help" }, field.help || "");
    const error = h("span", { class: "pysim-error", id: id + "-err", role: "alert" });
    const root = h("div", { class: "pysim-control", "data-field": field.name, "data-kind": field.kind });
    return {
      root, label, help, error, describedBy: `${id}-help ${id}-err`,
      showError(message) {
        error.textContent = message || "";
        root.classList.toggle("has-error", !!message);
      },
    };
  }

  function numberControl(field, onChange) {
    const id = uniqueId(`pysim-${field.name}`);
    const c = frame(field, id);
    const integer = field.kind === "int";
    const step = field.step || (integer ? 1 : "any");
    const log = field.scale === "log" && field.lo > 0;
    const unit = field.unit ? " " + field.unit : "";
    const range = h("input", { type: "range", id, name: field.name, "aria-describedby": c.describedBy });
    const box = h("input", {
      type: "number", name: field.name + "-value", step, inputmode: integer ? "numeric" : "decimal",
      "aria-label": c.label + " (typed value)", "aria-describedby": c.describedBy,
    });
    let values = null; // the log slider's values; a linear slider holds the value itself
    const showValue = (v) => range.setAttribute("aria-valuetext", fmt(v) + unit);
    c.setRange = (lo, hi) => {
      box.min = lo;
      box.max = hi;
      if (field.slider_max != null) hi = Math.min(hi, field.slider_max);
      if (log) {
        values = logSteps(lo, hi, field.step);
        range.min = 0;
        range.max = values.length - 1;
        range.step = 1;
      } else {
        range.min = lo;
        range.max = hi;
        range.step = typeof step === "number" ? step : (hi - lo) / 100;
      }
    };
    // A value the reader is typing is theirs until they commit it (Enter, or leaving
    // the box): an answer to an earlier change, arriving meanwhile, must not retype it.
    let typing = false;
    box.addEventListener("input", () => { typing = true; });
    box.addEventListener("blur", () => { typing = false; });
    c.set = (v) => {
      if (!typing) box.value = v;
      if (typeof v !== "number") return;
      range.value = values ? nearestIndex(values, v) : v;
      showValue(v);
    };
    range.addEventListener("input", () => {
      const v = values ? values[Number(range.value)] : Number(range.value);
      box.value = v;
      showValue(v);
      onChange(field.name, v, 150);
    });
    box.addEventListener("change", () => {
      typing = false;
      const v = box.value === "" ? "" : Number(box.value);
      if (v !== "") {
        range.value = values ? nearestIndex(values, v) : v;
        showValue(v);
      }
      onChange(field.name, v, 0);
    });
    c.setRange(field.lo, field.hi);
    c.root.classList.add("pysim-number");
    c.root.append(h("label", { for: id }, c.label), range, box, c.help, c.error);
    return Object.assign(c, { range, box });
  }

  function choiceControl(field, onChange, optionLabel) {
    const id = uniqueId(`pysim-${field.name}`);
    const c = frame(field, id);
    const select = h("select", { id, name: field.name, "aria-describedby": c.describedBy },
      field.options.map((o) => h("option", { value: o },
        optionLabel ? optionLabel(o) : (field.option_labels && field.option_labels[o]) || o)));
    select.addEventListener("change", () => onChange(field.name, select.value, 0));
    c.set = (v) => { select.value = v; };
    c.root.append(h("label", { for: id }, c.label), select, c.help, c.error);
    return Object.assign(c, { select });
  }

  function boolControl(field, onChange) {
    const id = uniqueId(`pysim-${field.name}`);
    const c = frame(field, id);
    const input = h("input", { type: "checkbox", id, name: field.name, role: "switch", "aria-describedby": c.describedBy });
    input.addEventListener("change", () => onChange(field.name, input.checked, 0));
    c.set = (v) => { input.checked = !!v; };
    c.root.append(input, h("label", { for: id }, c.label), c.help, c.error);
    return Object.assign(c, { input });
  }

  // Controls for every field of `fields` but those in `skip` (and data fields), in
  // pysim's order, inside one `.pysim-controls` element. A widget may move a control's
  // root elsewhere in its layout; whatever it does not place stays in that element, so
  // a field added to the config shows up with no change to the widget.
  //   onChange(name, value, debounceMs)   what the reader set (not yet checked)
  //   optionLabels {name: (option) => text} for choices shown by another name
  //   fieldsets    the widget's class prefix (PREFIX): the controls in the config's
  //                fieldsets (groupsOf), <fieldset class="pysim-fieldset PREFIX-group">
  //                each, with its legend, in a <div class="pysim-fieldsets PREFIX-groups">
  //                first in the root (a field no group names stays after it); `sets`
  //                holds them by title
  function buildControls(fields, { onChange, skip = [], optionLabels = {}, fieldsets = null }) {
    const byName = new Map();
    const root = h("div", { class: "pysim-controls" });
    for (const field of fields) {
      if (field.kind === "data" || skip.includes(field.name)) continue;
      const control = field.kind === "bool" ? boolControl(field, onChange)
        : field.kind === "choice" ? choiceControl(field, onChange, optionLabels[field.name])
          : numberControl(field, onChange);
      control.set(field.default);
      byName.set(field.name, control);
      root.append(control.root);
    }
    const sets = {};
    if (fieldsets) {
      const groups = h("div", { class: `pysim-fieldsets ${fieldsets}-groups` });
      for (const [title, names] of groupsOf(fields)) {
        sets[title] = h("fieldset", { class: `pysim-fieldset ${fieldsets}-group` }, h("legend", {}, title),
          ...names.filter((n) => byName.has(n)).map((n) => byName.get(n).root));
        groups.append(sets[title]);
      }
      root.prepend(groups);
    }
    return {
      root,
      sets,
      get: (name) => byName.get(name),
      has: (name) => byName.has(name),
      set(config) { for (const [name, c] of byName) if (name in config) c.set(config[name]); },
      clearErrors() { for (const c of byName.values()) c.showError(""); },
    };
  }

  // The fieldsets a config lays its controls out in, from pysim's description: each field
  // of a group carries `group`, `group_order` and `order_in_group` (pysim/config.py,
  // `describe`), so a field pysim adds to a group shows in it with no list kept here.
  // [[title, [names]], ...], groups and names in the order of the config's GROUPS.
  function groupsOf(fields) {
    const byTitle = new Map();
    for (const f of fields) {
      if (!f.group) continue;
      if (!byTitle.has(f.group)) byTitle.set(f.group, { order: f.group_order, fields: [] });
      byTitle.get(f.group).fields.push(f);
    }
    return [...byTitle.entries()].sort((a, b) => a[1].order - b[1].order)
      .map(([t, g]) => [t, g.fields.sort((a, b) => a.order_in_group - b.order_in_group).map((f) => f.name)]);
  }

  // A config's identity for what depends on it, but for the keys in `except`: every key,
  // present and future, counts unless named (a sweep's points, which set some keys themselves).
  function signatureExcept(config, except) {
    return JSON.stringify(Object.keys(config).filter((k) => !except.includes(k)).sort().map((k) => [k, config[k]]));
  }

  Object.assign(window.PySim, { buildControls, labelOf, logSteps, groupsOf, signatureExcept });
})();
