// One job: a widget's life while it is mounted, from the pre-rendered picture to a live
// simulation (`PySim.widget`; mount.js mounts and unmounts it).
//
// A widget is its layout, its drawing and its own interactions; everything else is
// here, once, or in a kit piece this file hands on:
//   - controls drawn from pysim's `describe` metadata, before Python starts (controls.js);
//   - the state (config, actions), recomputed by pysim on every change, debounced, with
//     a guard so an older answer never replaces a newer one;
//   - pysim's message shown at the control of the field it names, the last good picture
//     kept;
//   - the state in the URL hash ("NAME.key=value&...", link.js), read back through the
//     bridge: a link is never judged here, so a bad one shows pysim's message and the
//     default picture;
//   - the widget goes live once Python is up: it keeps the pre-rendered picture (the
//     build computed it with the same pysim, and the browser tests prove Pyodide agrees),
//     and `data-live` says it now answers the reader;
//   - a worker that crashed is restarted by rpc.js; answers lost with it settle
//     here as "Python is not available";
//   - a drawing redrawn when the widget's width or the colour scheme changes (`redraw`,
//     redraw.js);
//   - unmount(): every listener, timer, observer and canvas the widget took, released
//     (track.js).
//
// Writing a widget:
//
//   PySim.widget("NAME", {
//     link: ["step"],            // the widget's own keys in the hash (not config; optional)
//     retired: { key: "why" },   // settings a link may still hold that pysim dropped:
//                                // skipped, and the reader told why (optional)
//     renamed: { old: "new" },   // settings pysim renamed: an older link's key is read
//                                // under its new name, and the link rewritten (optional)
//     mount(w) {                 // once per widget on the page, before Python starts
//       const controls = w.controls({ skip: ["seed"] }); // every other described field
//       w.body.append(controls.root, w.messages, chart);  // where they go (else: on top)
//       return {
//         draw(view, state, why) { ... }, // the view pysim computed for state; why:
//                                         // "mount", "change" or "link"
//         linkState() { return { step } },  // optional: values of the `link` keys
//         busy(on) { ... },                 // optional: a computation starts / ends
//         refused(error) { ... },           // optional: pysim refused the reader's change
//         redraw(why) { ... },              // optional: the widget's width changed ("width")
//                                           // or the reader switched light/dark ("scheme")
//         unmount() { ... },                // optional: what `w` does not track
//       };
//     },
//   });
//
// `w` holds: name, root (the .pysim-widget), body, fields (the describe list),
// field(name), view and state (what is shown), draft (what the controls say), link
// (the `link` keys' text from the hash), messages (an element for pysim's messages);
// set(patch, delayMs, actions?) to change the config (and the actions with it: a
// setting that starts over), act(action) and replay(actions) for simulations that take
// actions, recompute(), call(payload, options) for a run of the widget's own (a pinned
// comparison, the reader's code, a companion simulation named by options.simulation;
// other options as runtime.call's), whenLive (a promise: the
// widget answers the reader now), offline (no Python here, a copy opened from disk: what needs it
// is disabled), saveLink() after its own state changed, id(stem) (an id unique on the
// page), playback(options) (a run's steps played back: playback.js), pin(options) (pin
// one run and compare: pin.js); and, released by unmount: listen(target, type, fn,
// opts), timeout(fn, ms), interval(fn, ms), frame(fn), observe(observer), canvas(attrs),
// onRuntime(listener) (runtime.subscribe), onScheme(fn) (a light/dark switch: a new
// data-md-color-scheme, not the same one again; `redraw` above is what a drawing wants).
//
// Data attributes on w.root, for tests and styles: data-live ("ready": Python is up and
// the widget answers; "pending" while a link's state is still being computed),
// data-pending (a change waits out its debounce), data-busy (computing), data-error (the
// field pysim refused), data-compute-ms.
(function () {
  "use strict";
  const { h, runtime, register, buildControls, labelOf, tracker, redrawOn,
          hashPairs, readLink, writeLink, parseValue, encodeValue, encodeActions, decodeActions, merged } = window.PySim;
  const MAX_LINK_CHARS = 1900; // a longer action history stays out of the link
  const UNAVAILABLE = "Python is not available, so the picture shows the last computed settings.";
  // What asks Python for a new picture: the described controls, and what a widget marks
  // data-needs-python (a preset, an action). Playback of the pre-computed picture needs none.
  const NEEDS_PYTHON = ".pysim-control :is(input, select, textarea, button), [data-needs-python]";

  const clone = (state) => ({ config: merged(state.config), actions: [...state.actions] });
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

  // ------------------------------------------------------------- the lifecycle

  function widget(name, spec) {
    register(name, (body, { prerendered, root }) => mountLive(name, spec, body, prerendered, root));
  }

  // What a pre-rendered model was computed from (the widget starts there): its fields'
  // defaults under the page's own config (data-config), no actions.
  function baseOf(prerendered) {
    const defaults = Object.fromEntries((prerendered.fields || []).map((f) => [f.name, f.default]));
    return { config: merged(defaults, prerendered.config || {}), actions: [] };
  }

  function mountLive(name, spec, body, prerendered, root) {
    const fields = prerendered.fields || [];
    const byName = new Map(fields.map((f) => [f.name, f]));
    const base = baseOf(prerendered);
    const linkKeys = spec.link || [];
    const linked = spec.link !== false;
    const unlinked = spec.unlinked || []; // fields the link never holds (a long paste)
    const retired = spec.retired || {}; // keys older links hold that pysim no longer has
    const renamed = spec.renamed || {}; // old key -> the key pysim reads now
    // spec.timeoutMs: how long a recompute may run before the worker is thought stuck
    // (rpc.js's call default, unless the widget's simulation is known to be slow).
    const files = prerendered.files || null; // data files the calls read (the lab's traces)
    const slots = new Map(); // message slots the widget drew for its own editors (data fields)
    const kits = []; // the widget's playback and pin: what they keep in the link
    let shown = clone(base);
    let draft = clone(base);
    let view = prerendered.view;
    let seq = 0;
    let debounce = null;
    let alive = true;
    let controls = null;
    let wentLive = null;
    const t = tracker();
    const general = h("p", { class: "pysim-error pysim-general-error", role: "alert" });
    const linkNote = h("p", { class: "pysim-error pysim-hash-message", role: "alert" });
    // After a refused change the picture below is the last run pysim accepted, not the
    // settings the controls now show: said here, and marked on the root (data-stale), which
    // widgets.css uses to dim the drawings (canvas, svg, .pysim-picture) after the messages.
    const staleNote = h("p", { class: "pysim-stale-note", role: "status" });
    const messages = h("div", { class: "pysim-messages" }, general, linkNote, staleNote);
    const STALE = "Out of date: everything below still shows the last settings pysim accepted, until the setting above is fixed.";

    // The link, split into what pysim judges (config, actions) and the widget's own keys.
    function fromLink() {
      const state = clone(base);
      const ui = {};
      const pairs = linked ? readLink(name) : [];
      const dropped = [];
      for (const [oldKey, text] of pairs) {
        const key = Object.hasOwn(renamed, oldKey) ? renamed[oldKey] : oldKey;
        if (Object.hasOwn(retired, key)) dropped.push(`${key}: ${retired[key]}`);
        else if (linkKeys.includes(key)) ui[key] = text;
        else if (key === "actions") state.actions = decodeActions(text);
        else state.config = merged(state.config, { [key]: parseValue(text) });
      }
      // What the link never holds stays as it is on the page (a paste survives back);
      // if a hand-made link holds it anyway, pysim judges it like the rest.
      const given = new Set(pairs.map(([key]) => key));
      for (const f of unlinked) if (!given.has(f)) state.config = merged(state.config, { [f]: shown.config[f] });
      return { state, ui, dropped };
    }
    const link = fromLink();
    const droppedNote = link.dropped.length ? `This link holds a setting the page no longer has, left out: ${link.dropped.join("; ")}.` : "";
    linkNote.textContent = droppedNote;

    function labelFor(field) {
      if (byName.has(field)) return labelOf(byName.get(field));
      return field === "actions" ? "Actions" : field || "Settings";
    }

    function clearErrors() {
      if (controls) controls.clearErrors();
      for (const slot of slots.values()) slot.textContent = "";
      general.textContent = "";
      staleNote.textContent = "";
      delete root.dataset.stale;
    }

    function syncControls() {
      if (controls) controls.set(draft.config);
    }

    function saveLink() {
      if (!linked) return;
      const pairs = [];
      for (const f of fields) {
        const v = shown.config[f.name];
        if (unlinked.includes(f.name)) continue;
        if (f.kind !== "data" || !same(v, f.default)) pairs.push([f.name, encodeValue(v)]);
      }
      const actions = encodeActions(shown.actions);
      if (actions && actions.length <= MAX_LINK_CHARS) pairs.push(["actions", actions]);
      const own = Object.assign({}, ...kits.map((kit) => kit.linkState()), handle.linkState ? handle.linkState() : {});
      for (const key of linkKeys) if (own[key] !== undefined) pairs.push([key, String(own[key])]);
      writeLink(name, pairs);
    }

    const payloadOf = (state) => ({ config: state.config, actions: state.actions });

    // Ask pysim for `next`; draw it if it is still the newest request when it answers.
    async function compute(next, { fromLink: isLink = false } = {}) {
      const mine = ++seq;
      root.dataset.busy = "true";
      if (handle.busy) handle.busy(true);
      let answer;
      try {
        answer = await runtime.call(name, payloadOf(next), { files, timeoutMs: spec.timeoutMs });
      } catch (err) {
        if (!alive || mine !== seq) return;
        delete root.dataset.busy;
        if (handle.busy) handle.busy(false);
        clearErrors();
        general.textContent = UNAVAILABLE;
        draft = clone(shown);
        syncControls(); // the controls show what the picture shows
        return;
      }
      if (!alive || mine !== seq) return; // a newer change superseded this one
      delete root.dataset.busy;
      if (handle.busy) handle.busy(false);
      root.dataset.computeMs = answer.ms.toFixed(2);
      clearErrors();
      if (!answer.ok) {
        const { field, message } = answer.error;
        if (isLink) {
          const picture = same(shown, base) ? "the defaults" : "the last good settings";
          linkNote.textContent = `Ignored the link's settings; the picture shows ${picture}. ${labelFor(field)}: ${message}`;
          draft = clone(shown);
          syncControls();
          return;
        }
        let control = controls && controls.has(field) ? controls.get(field) : null;
        const unseen = control && control.root.closest("[hidden]");
        if (unseen && !same(next.config[field], shown.config[field])) {
          // Another choice now hides this field (the cluster's replica counts under the
          // other layout), so the reader can neither see its message nor fix it: its
          // refused value gives way to the last one pysim took, and the change goes on.
          draft.config = merged(draft.config, { [field]: shown.config[field] });
          syncControls();
          if (debounce === null) return compute(clone(draft));
          return; // a newer change is waiting and takes the reverted value with it
        }
        if (unseen) control = null; // said where the reader can read it
        if (control) control.showError(`${labelFor(field)}: ${message}`);
        else if (slots.has(field)) slots.get(field).textContent = `${labelFor(field)}: ${message}`;
        else general.textContent = `${labelFor(field)}: ${message}`;
        root.dataset.error = field || "input";
        root.dataset.stale = "true";
        staleNote.textContent = STALE;
        if (handle.refused) handle.refused(answer.error);
        return; // keep the last good picture
      }
      delete root.dataset.error;
      linkNote.textContent = isLink ? droppedNote : "";
      shown = next;
      view = answer.result;
      if (debounce === null) {
        draft = clone(next);
        syncControls();
      }
      saveLink();
      draw(view, shown, isLink ? "link" : "change");
    }

    function flush() {
      clearTimeout(debounce);
      debounce = null;
      delete root.dataset.pending;
      return compute(clone(draft));
    }

    const w = {
      name, root, body, fields, messages, link: link.ui,
      field: (n) => byName.get(n),
      get view() { return view; },
      get state() { return shown; },
      get draft() { return draft; },
      get offline() { return runtime.state === "unavailable"; }, // no Python here: keep [data-needs-python] off
      controls(options = {}) {
        controls = buildControls(fields, Object.assign({ onChange: (n, v, ms) => w.set({ [n]: v }, ms) }, options));
        syncControls();
        return controls;
      },
      set(patch, delayMs = 0, actions = null) {
        draft.config = merged(draft.config, patch);
        if (actions) draft.actions = [...actions];
        clearTimeout(debounce);
        root.dataset.pending = "true"; // a change waits out its debounce (then data-busy)
        debounce = setTimeout(flush, delayMs);
      },
      act(action) { return w.replay([...draft.actions, action]); },
      replay(actions) {
        draft.actions = [...actions];
        return flush();
      },
      recompute: flush,
      // A run of the widget's own: of its simulation, or of a companion one named by
      // `simulation` (the lab's sweep points), with the widget's data files.
      call: (payload, { simulation = name, ...options } = {}) => runtime.call(simulation, payload, { files, ...options }),
      // Where pysim's message about a data field goes (the widget's own editor for it).
      errorSlot(field, element) { slots.set(field, element); },
      whenLive: new Promise((resolve) => { wentLive = resolve; }),
      saveLink,
      id: PySim.uniqueId,
      // Playback of the run's steps (playback.js) and pin and compare (pin.js): each keeps
      // its own keys in the link.
      playback(options) { const kit = PySim.playback(w, options); kits.push(kit); return kit; },
      pin(options) { const kit = PySim.pin(w, options); kits.push(kit); return kit; },
      listen: t.listen, timeout: t.timeout, interval: t.interval, frame: t.frame,
      observe: t.observe, canvas: t.canvas, onRuntime: t.subscribe, onScheme: t.scheme,
    };

    const handle = spec.mount(w);
    if (controls && !controls.root.isConnected) body.prepend(controls.root);
    if (!messages.isConnected) (controls ? controls.root : body).after(messages);
    // A copy opened from disk (file://) has no Python: what would ask it for a picture is
    // disabled (no typed value over a picture made for another), after every drawing too.
    function holdOffline() {
      if (!w.offline) return;
      root.dataset.offline = "true";
      for (const el of root.querySelectorAll(NEEDS_PYTHON)) el.disabled = true;
    }
    const draw = (...args) => { handle.draw(...args); holdOffline(); };
    draw(view, shown, "mount");
    if (handle.redraw) redrawOn(body, handle.redraw, t, () => alive);

    const linkWanted = !same(link.state, base);
    // When Python is up the widget answers the reader. Its picture stays: the build drew
    // it with the same pysim, and pysim is deterministic (the browser tests compare the
    // two for every widget, so no reader's machine has to). A link's state is computed
    // now; data-live waits for it ("pending"), so a test reading "ready" sees that state.
    async function goLive() {
      if (linkWanted) {
        root.dataset.live = "pending";
        await compute(link.state, { fromLink: true });
        if (!alive) return;
      }
      root.dataset.live = "ready";
      wentLive("ready");
    }
    // A link that holds a state asks for Python at once: the reader came for that state.
    if (linkWanted) runtime.start().catch(() => {});
    const unsubscribe = runtime.subscribe((state) => {
      if (state === "ready" && !root.dataset.live) goLive();
      holdOffline();
      if (state === "unavailable" && linkWanted) {
        linkNote.textContent = "This link's settings need Python to compute; the picture shows the defaults.";
      }
    });

    // Back and forward (and a link edited by hand) change the hash: follow it, unless
    // it holds no state at all (a heading's anchor, a table-of-contents click).
    t.listen(window, "hashchange", () => {
      if (!hashPairs().length) return;
      const next = fromLink();
      w.link = next.ui;
      if (!same(next.state, shown)) compute(next.state, { fromLink: true });
    });

    return {
      unmount() {
        alive = false;
        clearTimeout(debounce);
        unsubscribe();
        if (handle.unmount) handle.unmount();
        t.release();
        for (const key of ["live", "pending", "busy", "error", "computeMs"]) delete root.dataset[key];
      },
    };
  }

  window.PySim.widget = widget;
})();
