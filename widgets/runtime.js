// The page side of the widgets: one Python worker per visit, shared by every widget (on
// the hosted site it outlives page changes: navigation.js); mounting and unmounting each
// widget with its status line; when Python starts.
// (A widget's own lifecycle, recompute, errors and link state, is live.js.)
//
// This is a classic script, not a module: browsers refuse module scripts from file://,
// and a downloaded copy of the site must still draw its pre-rendered pictures there.
(function () {
  "use strict";
  const { h } = window.PySim; // from dom.js, which runs first

  const settingsEl = document.getElementById("pysim-runtime");
  const settings = settingsEl ? JSON.parse(settingsEl.textContent) : null;
  // Its paths lead from the page they came with, which instant navigation leaves: the
  // widget pages' are made absolute now (navigation.js compares them with later pages).
  if (settings) settings.widget_pages = (settings.widget_pages || []).map(absolute);
  const BOOT_TIMEOUT_MS = 90000;
  const NEAR_PX = 600; // Python starts when a widget comes this close to the screen
  const FIRST_PAINT_WAIT_MS = 2000; // the longest Python waits for the first paint report

  function absolute(url) {
    return new URL(url, document.baseURI).href;
  }

  // Snapshot or plain start, chosen by the link. The hosted build ships a snapshot of
  // Python's memory (sitebuild/snapshot.py): restoring it skips Python's start and the
  // import of pysim, but it is 6.4 MB to download, where a plain start downloads the
  // standard library compiled instead (sitebuild/stdlib.py), 1.05 MB more than its
  // sources. bench/bench_network.py measured both ways on our 2-core machines at rest,
  // behind a Brotli host (README "Deploying"): cold, the plain start was sooner on every
  // link (interactive 1.86 s against 2.20 at 100 Mbit/s, 3.57 against 5.66 at 20, 29
  // against 56 at 1.6); the snapshot saves only its CPU, about 0.25 s (1.30 s against
  // 1.55 warm), which its extra 5.3 MB repay only above some 170 Mbit/s.
  // So the page estimates the link from what it has just downloaded (the page itself,
  // its scripts, stylesheets and fonts: Resource Timing, bodies that came whole over the
  // network) and restores the snapshot only on a link at least SNAPSHOT_MIN_MBIT_S fast.
  // The estimate is the fastest single body of at least RATE_MIN_BYTES: no body comes
  // faster than the link allows, while a busy main thread or TCP's slow start only make
  // one look slower, so it reads low (DevTools' throttling, a Brotli host: 9 to 77 at
  // 100 Mbit/s, median 12; 3 to 18 at 20; 0.6 at 1.6), and a doubt goes to the smaller
  // download. When everything came from the cache (a return visit) there is no
  // estimate, and the page starts the way it started last time (remembered in
  // localStorage), whose files the cache holds: a visit that started plain must not
  // fetch the snapshot on its return. navigator.connection cannot
  // decide it: Chromium caps its downlink at 10 Mbit/s and, before it has an estimate,
  // says 1.3 Mbit/s on loopback.
  const SNAPSHOT_MIN_MBIT_S = 100;
  const LAST_START = "pysim.python-start"; // localStorage: "snapshot" or "plain"
  const RATE_MIN_BYTES = 4000; // at 20 Mbit/s 1.6 ms: fast links read low, slow ones do not

  // The link's rate in Mbit/s as the page's own downloads show it, or null.
  function linkRate() {
    if (!window.performance || !performance.getEntriesByType) return null;
    let best = null;
    for (const e of [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")]) {
      if (e.encodedBodySize < RATE_MIN_BYTES || e.transferSize < e.encodedBodySize) continue; // small or cached
      const mbit = (e.encodedBodySize * 8) / (Math.max(1, e.responseEnd - e.responseStart) * 1000);
      best = best === null ? mbit : Math.max(best, mbit);
    }
    return best;
  }

  // `?python=plain` or `?python=snapshot` in the page's address overrides the estimate
  // (bench/bench_network.py measures each way so; a reader who knows their link may too).
  function snapshotFor(rate) {
    const asked = new URLSearchParams(location.search).get("python");
    if (!settings.snapshot || asked === "plain") return false;
    if (asked === "snapshot") return true;
    if (rate === null) return stored(LAST_START) === "snapshot"; // all cached: as last time
    return rate >= SNAPSHOT_MIN_MBIT_S;
  }

  // (Storage may be refused: a private window, a file:// page in some browsers.)
  function stored(key) {
    try { return localStorage.getItem(key); } catch (err) { return null; }
  }
  function store(key, value) {
    try { localStorage.setItem(key, value); } catch (err) { /* the next visit estimates again */ }
  }

  // ------------------------------------------------------------- the worker

  class Runtime {
    constructor() {
      this.state = "idle"; // idle | loading | ready | failed | unavailable
      this.text = "Python not started";
      this.listeners = new Set();
      this.pending = new Map();
      this.nextId = 1;
      this.worker = null;
      this.booting = null;
      this.bootMs = null;
      this.restored = null;
      this.link = null; // {mbit_s, snapshot}: the link estimate that chose how Python starts
      this.progress = null; // {loaded, total} bytes while Python downloads
      this.bootSoon = false; // Python will start right after the first paint (search.js asks)
    }

    get servedOverHttp() {
      return location.protocol === "http:" || location.protocol === "https:";
    }

    subscribe(listener) {
      this.listeners.add(listener);
      listener(this.state, this.text);
      return () => this.listeners.delete(listener);
    }

    setState(state, text) {
      this.state = state;
      this.text = text;
      for (const listener of this.listeners) listener(state, text);
    }

    // Create the worker thread ahead of time. It loads only our small worker.js; not a
    // byte of Pyodide comes until start() sends it "boot".
    prepare() {
      if (this.worker || !settings || !this.servedOverHttp) return;
      const worker = new Worker(absolute(settings.worker), { type: "module", name: "pysim" });
      worker.onerror = (event) => {
        event.preventDefault();
        this.earlyError = "The Python worker did not load" + (event.message ? ": " + event.message : "");
      };
      this.worker = worker;
    }

    // Start Python once; every caller gets the same promise.
    start() {
      if (this.booting) return this.booting;
      if (!settings || !this.servedOverHttp) {
        this.setState("unavailable", "Live simulation needs a local web server (see the note at the top).");
        return Promise.reject(new Error("unavailable"));
      }
      this.booting = new Promise((resolve, reject) => {
        this.setState("loading", "Starting Python");
        this.prepare();
        const worker = this.worker;
        const timer = setTimeout(() => fail("Python did not start within 90 seconds."), BOOT_TIMEOUT_MS);
        const fail = (message) => {
          clearTimeout(timer);
          this.teardown(message);
          this.setState("failed", message);
          reject(new Error(message));
        };
        worker.onmessage = (event) => {
          const msg = event.data;
          if (msg.type === "progress") {
            this.progress = msg.total ? { loaded: msg.loaded, total: msg.total } : null;
            this.setState("loading", msg.text);
          }
          else if (msg.type === "ready") {
            clearTimeout(timer);
            this.bootMs = msg.ms;
            this.restored = msg.restored; // from the build's snapshot, or started afresh
            store(LAST_START, msg.restored ? "snapshot" : "plain");
            this.progress = null;
            this.setState("ready", `Python ${msg.python} ready`);
            resolve(this);
          } else if (msg.type === "failed") fail("Python could not start: " + msg.message);
          else if (msg.type === "result") this.settle(msg);
          else if (msg.type === "fatal" && this.worker === worker) this.crashed(msg.message);
        };
        worker.onerror = (event) => {
          event.preventDefault();
          const message = "The Python worker stopped" + (event.message ? ": " + event.message : "");
          if (this.state === "ready") this.crashed(message);
          else fail(message);
        };
        if (this.earlyError) {
          fail(this.earlyError);
          return;
        }
        const rate = linkRate();
        const snapshot = snapshotFor(rate);
        this.link = { mbit_s: rate, snapshot }; // what decided the start (bench, tests)
        // The progress line counts what this start downloads: the snapshot and the
        // standard library's sources, or neither and its bytecode.
        const name = (url) => url.split("/").pop();
        const stdlib = settings.stdlib[snapshot ? "source" : "compiled"];
        const sizes = Object.assign({}, settings.sizes);
        if (settings.snapshot && !snapshot) delete sizes[name(settings.snapshot)];
        delete sizes[name(settings.stdlib[snapshot ? "compiled" : "source"])];
        worker.postMessage({
          type: "boot",
          pyodide: absolute(settings.pyodide),
          lock: absolute(settings.lock),
          package: settings.package,
          sizes,
          snapshot: snapshot ? absolute(settings.snapshot) : null,
          stdlib: absolute(stdlib),
          files: [...wantedFiles()].map(([path, url]) => [path, absolute(url)]), // download while it starts
        });
      });
      return this.booting;
    }

    settle(msg) {
      const entry = this.pending.get(msg.id);
      if (!entry) return;
      this.pending.delete(msg.id);
      clearTimeout(entry.timer);
      let answer;
      try {
        answer = JSON.parse(msg.text);
      } catch (err) {
        answer = { ok: false, error: { field: "", message: "unreadable answer from Python" } };
      }
      answer.ms = msg.ms;
      entry.resolve(answer);
    }

    // Ask pysim for a view model. Resolves to {ok, result | error, ms}; rejects only
    // when Python is unavailable or stopped. `files` ({path in Pyodide: site URL}) are
    // data the call reads; the worker downloads each once, before the call runs.
    async call(name, payload, { timeoutMs = 20000, files = null } = {}) {
      await this.start();
      return new Promise((resolve, reject) => {
        const id = this.nextId++;
        const timer = setTimeout(() => {
          this.pending.delete(id);
          // A call that never returns means Python is stuck: start a fresh one.
          this.crashed("A computation took longer than " + timeoutMs / 1000 + " s and was stopped.");
          reject(new Error("timeout"));
        }, timeoutMs);
        this.pending.set(id, { resolve, reject, timer });
        const urls = files && Object.entries(files).map(([path, url]) => [path, absolute(url)]);
        this.worker.postMessage({ type: "call", id, name, payload: JSON.stringify(payload), files: urls });
      });
    }

    teardown(reason) {
      if (this.worker) this.worker.terminate();
      this.worker = null;
      this.earlyError = null;
      this.booting = null;
      for (const entry of this.pending.values()) {
        clearTimeout(entry.timer);
        entry.reject(new Error(reason));
      }
      this.pending.clear();
    }

    // The worker died or hung: drop it and start a new one right away.
    crashed(reason) {
      this.teardown(reason);
      this.setState("loading", reason + " Restarting Python");
      this.start().catch(() => {});
    }

    retry() {
      this.teardown("retry");
      this.setState("idle", "Python not started");
      return this.start();
    }
  }

  const runtime = new Runtime();

  // ------------------------------------------------------------- mounting

  const mounts = {};
  const mounted = new Map(); // root element -> what unmount() must release, and its data files
  // The data files the widgets on the page read (path in Pyodide -> URL; the lab's traces).
  const wantedFiles = () => new Map([...mounted.values()].flatMap((entry) => Object.entries(entry.files)));

  // A widget's script runs after the page's text (the scripts sit at the end of the
  // body), so its widgets are already in the document: mount them at once, and once
  // every widget on the page is drawn, arrange for Python to start. `mount(body, ctx)`
  // may return {unmount()}; live.js's widgets always do.
  function register(name, mount) {
    mounts[name] = mount;
    mountAll(name); // its own widgets only (navigation.js may run a script of a page ahead)
    if (document.querySelector(".pysim-widget[data-widget]:not([data-mounted])") === null) armStart();
  }

  function statusLine(root) {
    const text = h("span", { class: "pysim-status-text" });
    const retry = h("button", { type: "button", class: "pysim-retry", hidden: true, onclick: () => runtime.retry().catch(() => {}) }, "Retry");
    // The note goes at the top of the widget, where a reader looks first (at the bottom
    // it sat 1,700 px below the controls it explains).
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

  // Where the top of the screen will be, relative to where it is now, once the browser
  // has scrolled to the link's #target (it does that late, after the page has loaded; a
  // reader who followed a link to a widget should not wait for that scroll).
  function screenTop() {
    try {
      const target = location.hash.length > 1 && document.getElementById(decodeURIComponent(location.hash.slice(1)));
      return target ? target.getBoundingClientRect().top : 0;
    } catch (err) {
      return 0; // a malformed link: judge by the screen as it is
    }
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
    if (gone.length) disarm();
  }

  // The page entered by instant navigation is in, with its scripts and stylesheets:
  // mount its widgets (live at once if Python is already running) and arm Python's
  // start for them. Idempotent, like mountAll and armStart.
  function pageChanged() {
    unmountGone();
    mountAll();
    armStart();
  }

  // Call `then` once the first contentful paint has been reported. Widgets can mount
  // before it (their scripts run while the page is still parsing), and the paint that
  // follows a frame is reported a little later than the frame itself. A browser that
  // does not report paints, or a page that is never shown, waits FIRST_PAINT_WAIT_MS.
  function afterFirstPaint(then) {
    const painted = () => performance.getEntriesByName("first-contentful-paint").length > 0;
    const observable = window.PerformanceObserver &&
      (PerformanceObserver.supportedEntryTypes || []).includes("paint");
    if (!observable || painted()) {
      then();
      return;
    }
    let done = false;
    const go = () => {
      if (done) return;
      done = true;
      observer.disconnect();
      clearTimeout(timer);
      then();
    };
    const observer = new PerformanceObserver(() => { if (painted()) go(); });
    observer.observe({ type: "paint", buffered: true });
    const timer = setTimeout(go, FIRST_PAINT_WAIT_MS);
  }

  // Run `then` in a task of its own, ahead of ordinary tasks where the browser lets us
  // say so: after a frame, a setTimeout would queue behind the page's other start-up
  // work (Material's bundle), and Python would start that much later.
  function soon(then) {
    if (window.scheduler && typeof scheduler.postTask === "function") {
      scheduler.postTask(then, { priority: "user-blocking" }).catch(() => {});
    } else setTimeout(then, 0);
  }

  // Start Python when a widget comes near the screen, or as soon as the reader
  // touches one (pointer or keyboard focus), whichever is first. Once per page.
  // (With instant navigation, once per page entered: unmountGone disarms.)
  let armed = false;
  let releaseArming = () => {}; // what the current arming holds: its frame or its observer
  function disarm() {
    armed = false;
    releaseArming();
    releaseArming = () => {};
  }
  function armStart() {
    const widgets = document.querySelectorAll(".pysim-widget[data-mounted]");
    if (armed || !widgets.length) return;
    armed = true;
    if (!runtime.servedOverHttp) {
      runtime.start().catch(() => {});
      return;
    }
    // Entered by instant navigation: Python is already on its way, or running (the
    // widgets go live by themselves), or could not start (their status offers Retry).
    if (runtime.state !== "idle") return;
    const touched = () => runtime.start().catch(() => {});
    for (const w of widgets) {
      w.addEventListener("pointerdown", touched, { once: true });
      w.addEventListener("focusin", touched, { once: true });
    }
    // Where the widgets are is read in the next frame, where the browser lays the page out
    // to draw them anyway; read now, it would lay the page out once more first, and the
    // pictures would come that much later.
    const frame = requestAnimationFrame(() => whereTheyAre(widgets, touched));
    releaseArming = () => cancelAnimationFrame(frame);
  }

  // A widget near the screen: spawn the worker, and boot Python in the task after this
  // frame (which draws the widgets) once the first paint is reported: text and pictures
  // come before any Pyodide byte. Otherwise Python starts when a widget comes near (every
  // browser that runs Pyodide 314's module worker has IntersectionObserver).
  function whereTheyAre(widgets, touched) {
    const top = screenTop();
    const near = [...widgets].some((w) => {
      const r = w.getBoundingClientRect();
      return r.bottom - top > -NEAR_PX && r.top - top < window.innerHeight + NEAR_PX;
    });
    if (near) {
      runtime.bootSoon = true;
      runtime.prepare();
      afterFirstPaint(() => soon(touched));
      return;
    }
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        observer.disconnect();
        runtime.start().catch(() => {});
      }
    }, { rootMargin: `${NEAR_PX}px 0px` });
    widgets.forEach((w) => observer.observe(w));
    releaseArming = () => observer.disconnect();
  }

  // ------------------------------------------------------------- libraries for later
  //
  // A library a widget can draw its picture without (sitebuild/assets.py, VENDOR_LATER: the
  // exercise's code editor) is not on the page at first: the widget asks for it when it
  // needs it. Its files load in parallel and run in order; the promise settles once.
  const later = {};
  function loadLater(name) {
    if (!later[name]) {
      const urls = (settings && settings.later && settings.later[name]) || [];
      later[name] = Promise.all(urls.map((url) => new Promise((resolve, reject) => {
        const script = h("script", { src: absolute(url) });
        script.async = false; // run in the order given, each as soon as the ones before it
        script.onload = resolve;
        script.onerror = () => reject(new Error("could not load " + url));
        document.head.append(script);
      })));
    }
    return later[name];
  }

  Object.assign(window.PySim, { settings, runtime, register, mountAll, unmount, unmountAll, unmountGone,
                                pageChanged, loadLater });
  // Widgets normally mount as their scripts register. DOMContentLoaded (or "load", for
  // a script added late) catches the rest, and arms Python for whatever did mount, even
  // if one widget's script failed to load. Both steps are idempotent.
  function mountRest() {
    mountAll();
    armStart();
  }
  if (document.readyState === "complete") mountRest();
  else {
    document.addEventListener("DOMContentLoaded", mountRest);
    window.addEventListener("load", mountRest);
  }
})();
