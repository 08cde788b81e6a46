// One job: the page's widgets, mounted and unmounted. This is the one owner of a widget's
// life on the page: nothing else calls a widget's mount or its unmount. A widget mounts
// from its pre-rendered model as its script registers it, again when instant navigation
// brings its page in (navigation.js: pageChanged), and is unmounted when that page goes
// (unmountGone). Once a page's widgets are drawn it arms Python's start (boot.js).
(function () {
  "use strict";
  const { h, runtime, statusLine, boot } = window.PySim; // dom.js, rpc.js, status.js, boot.js

  const mounts = {};
  const mounted = new Map(); // root element -> what unmount() must release, and its data files
  // The data files the widgets on the page read (path in Pyodide -> URL; the lab's
  // traces): the worker downloads them while Python starts.
  runtime.wantedFiles = () => new Map([...mounted.values()].flatMap((entry) => Object.entries(entry.files)));

  // A widget's script runs after the page's text (the scripts sit at the end of the
  // body), so its widgets are already in the document: mount them at once, and once
  // every widget on the page is drawn, arm Python's start. `mount(body, ctx)` may return
  // {unmount()}; live.js's widgets always do.
  function register(name, mount) {
    mounts[name] = mount;
    mountAll(name); // its own widgets only (navigation.js may run a script of a page ahead)
    if (document.querySelector(".pysim-widget[data-widget]:not([data-mounted])") === null) boot.arm();
  }

  function mountAll(only = null) {
    for (const root of document.querySelectorAll(".pysim-widget[data-widget]")) {
      if (root.dataset.mounted || (only && root.dataset.widget !== only)) continue;
      const name = root.dataset.widget;
      const data = root.querySelector("template.pysim-prerender");
      const mount = mounts[name];
      if (!mount || !data) continue;
      root.dataset.mounted = "true";
      const prerendered = JSON.parse(data.content.textContent); // sitebuild/prerender.py
      for (const el of root.querySelectorAll(".pysim-noscript")) el.remove();
      const body = h("div", { class: "pysim-body" });
      const status = statusLine(root);
      root.append(status.note, body, status.bar);
      let handle = null;
      try {
        handle = mount(body, { prerendered, runtime, root });
      } catch (err) {
        console.error("pysim widget " + name + " failed to mount", err);
      }
      mounted.set(root, { handle, status, body, files: prerendered.files || {} });
    }
  }

  // Take a widget off the page: its own listeners, timers, observers and canvases (the
  // widget's unmount), its status line's subscription, and the elements mountAll added.
  // The pre-rendered model stays, so mountAll() can mount the widget again.
  function unmount(root) {
    const entry = mounted.get(root);
    if (!entry) return;
    mounted.delete(root);
    entry.status.unsubscribe();
    try {
      if (entry.handle && entry.handle.unmount) entry.handle.unmount();
    } catch (err) {
      console.error("pysim widget " + root.dataset.widget + " failed to unmount", err);
    }
    entry.body.remove();
    for (const el of entry.status.elements) el.remove();
    delete root.dataset.mounted;
    delete root.dataset.runtime;
  }

  function unmountAll(container = document) {
    for (const root of [...mounted.keys()]) if (container.contains(root)) unmount(root);
  }

  // Instant navigation swapped the page's content (navigation.js): the widgets it took
  // away are no longer in the document. Unmount them, and forget how Python was to
  // start for them; the page entered arms its own start.
  function unmountGone() {
    const gone = [...mounted.keys()].filter((root) => !root.isConnected);
    gone.forEach(unmount);
    if (gone.length) boot.disarm();
  }

  // The page entered by instant navigation is in, with its scripts and stylesheets:
  // mount its widgets (live at once if Python is already running) and arm Python's
  // start for them. Idempotent, like mountAll and boot.arm.
  function pageChanged() {
    unmountGone();
    mountRest();
  }
  function mountRest() {
    mountAll();
    boot.arm();
  }

  Object.assign(window.PySim, { register, mountAll, unmount, unmountAll, unmountGone, pageChanged });
  // Widgets normally mount as their scripts register. DOMContentLoaded (or "load", for
  // a script added late) catches the rest, and arms Python for whatever did mount, even
  // if one widget's script failed to load. Both steps are idempotent.
  if (document.readyState === "complete") mountRest();
  else {
    document.addEventListener("DOMContentLoaded", mountRest);
    window.addEventListener("load", mountRest);
  }
})();
