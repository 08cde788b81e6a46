// The page side of the widgets: one Python worker per page, shared by every widget,
// plus the small pieces all widgets use (mounting, status line, URL-hash state).
//
// This is a classic script, not a module: browsers refuse module scripts from file://,
// and a downloaded copy of the site must still draw its pre-rendered pictures there.
(function () {
  "use strict";

  const settingsEl = document.getElementById("pysim-runtime");
  const settings = settingsEl ? JSON.parse(settingsEl.textContent) : null;
  const BOOT_TIMEOUT_MS = 90000;
  const NEAR_PX = 600; // Python starts when a widget comes this close to the screen
  const FIRST_PAINT_WAIT_MS = 2000; // the longest Python waits for the first paint report

  function absolute(url) {
    return new URL(url, document.baseURI).href;
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
      this.progress = null; // {loaded, total} bytes while Python downloads
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
        this.setState("unavailable", "Live simulation needs a local web server (see the note below).");
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
        worker.postMessage({
          type: "boot",
          pyodide: absolute(settings.pyodide),
          lock: absolute(settings.lock),
          package: settings.package,
          sizes: settings.sizes,
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
    // when Python is unavailable or stopped.
    async call(name, payload, { timeoutMs = 20000 } = {}) {
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
        this.worker.postMessage({ type: "call", id, name, payload: JSON.stringify(payload) });
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

  // ------------------------------------------------------------- URL-hash state
  //
  // Each widget keeps its state in the hash as "name.key=value" pairs, so one link
  // restores every widget on the page. Values are plain text, parsed strictly by the
  // widget; nothing from the hash is ever inserted as markup.

  function readHash(prefix) {
    const out = {};
    const hash = location.hash.replace(/^#/, "");
    if (!hash.includes("=")) return out; // an ordinary heading anchor
    for (const part of hash.split("&")) {
      const eq = part.indexOf("=");
      if (eq < 0) continue;
      let key, value;
      try {
        key = decodeURIComponent(part.slice(0, eq));
        value = decodeURIComponent(part.slice(eq + 1));
      } catch (err) {
        continue;
      }
      if (key.startsWith(prefix + ".")) out[key.slice(prefix.length + 1)] = value.slice(0, 2000);
    }
    return out;
  }

  function writeHash(prefix, state) {
    const keep = [];
    const hash = location.hash.replace(/^#/, "");
    if (hash.includes("=")) {
      for (const part of hash.split("&")) if (part && !part.startsWith(prefix + ".")) keep.push(part);
    }
    for (const [key, value] of Object.entries(state)) {
      // "," and ":" stay readable (paged_kv_cache.actions=admit,admit:B,gen); both are safe in a hash.
      keep.push(`${prefix}.${encodeURIComponent(key)}=${encodeURIComponent(String(value)).replace(/%2C/g, ",").replace(/%3A/g, ":")}`);
    }
    history.replaceState(null, "", "#" + keep.join("&"));
  }

  // ------------------------------------------------------------- DOM helpers

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

  const numberFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });
  function fmt(x) {
    return typeof x === "number" ? numberFormat.format(x) : String(x);
  }

  function reducedMotion() {
    return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  // A slider with a typed entry beside it, a label, and a slot for pysim's message.
  function numberControl({ name, label, min, max, step = 1, value, onChange }) {
    const id = `ctl-${name}-${Math.random().toString(36).slice(2, 8)}`;
    const error = h("span", { class: "pysim-error", id: id + "-err", role: "alert" });
    const range = h("input", {
      type: "range", id, name, min, max, step, value,
      "aria-describedby": id + "-err",
    });
    const box = h("input", {
      type: "number", name: name + "-value", min, max, step, value,
      "aria-label": label + " (typed value)", "aria-describedby": id + "-err",
    });
    range.addEventListener("input", () => { box.value = range.value; onChange(range.value); });
    box.addEventListener("change", () => {
      if (box.value !== "" && Number(box.value) >= min && Number(box.value) <= max) range.value = box.value;
      onChange(box.value);
    });
    const root = h("div", { class: "pysim-control", "data-field": name },
      h("label", { for: id }, label), range, box, error);
    return {
      root, range, box, error,
      set(v) { range.value = v; box.value = v; },
      showError(message) { error.textContent = message || ""; root.classList.toggle("has-error", !!message); },
    };
  }

  // ------------------------------------------------------------- canvas helpers

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
  // (hatched "reserved" space in the race, prompt chunks in the budget timeline).
  function stripePattern(ctx, color, { wash = 0, lineWidth = 1.5 } = {}) {
    const c = document.createElement("canvas");
    c.width = c.height = 6;
    const g = c.getContext("2d");
    if (wash) {
      g.fillStyle = color;
      g.globalAlpha = wash;
      g.fillRect(0, 0, 6, 6);
      g.globalAlpha = 1;
    }
    g.strokeStyle = color;
    g.lineWidth = lineWidth;
    g.beginPath();
    g.moveTo(0, 6); g.lineTo(6, 0);
    g.moveTo(-1, 1); g.lineTo(1, -1);
    g.moveTo(5, 7); g.lineTo(7, 5);
    g.stroke();
    return ctx.createPattern(c, "repeat");
  }

  // ------------------------------------------------------------- mounting

  const mounts = {};

  // A widget's script runs after the page's text (the scripts sit at the end of the
  // body), so its widgets are already in the document: mount them at once, and once
  // every widget on the page is drawn, arrange for Python to start.
  function register(name, mount) {
    mounts[name] = mount;
    mountAll();
    if (document.querySelector(".pysim-widget[data-widget]:not([data-mounted])") === null) armStart();
  }

  function statusLine(root) {
    const text = h("span", { class: "pysim-status-text" });
    const retry = h("button", { type: "button", class: "pysim-retry", hidden: true, onclick: () => runtime.retry().catch(() => {}) }, "Retry");
    const note = h("p", { class: "pysim-offline-note", hidden: true },
      "You are reading a downloaded copy. The picture above is pre-computed; to run the simulation, serve this folder: ",
      h("code", {}, "python3 -m http.server 8000"), " in it, then open ", h("code", {}, "http://127.0.0.1:8000/"), ".");
    // Download progress in bytes (the status text says the same for screen readers).
    const meter = h("progress", { class: "pysim-progress", max: 1, value: 0, hidden: true, "aria-hidden": "true" });
    const bar = h("div", { class: "pysim-status", role: "status", "aria-live": "polite" }, text, meter, retry);
    runtime.subscribe((state, message) => {
      bar.dataset.state = state;
      root.dataset.runtime = state;
      text.textContent = message;
      const p = state === "loading" && runtime.progress;
      meter.hidden = !p;
      if (p) { meter.max = p.total; meter.value = p.loaded; }
      retry.hidden = state !== "failed";
      note.hidden = state !== "unavailable";
    });
    return [bar, note];
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

  function mountAll() {
    for (const root of document.querySelectorAll(".pysim-widget[data-widget]")) {
      if (root.dataset.mounted) continue;
      const name = root.dataset.widget;
      const data = root.querySelector("script.pysim-prerender");
      const mount = mounts[name];
      if (!mount || !data) continue;
      root.dataset.mounted = "true";
      const prerendered = JSON.parse(data.textContent);
      for (const el of root.querySelectorAll(".pysim-noscript")) el.remove();
      const body = h("div", { class: "pysim-body" });
      root.append(body, ...statusLine(root));
      try {
        mount(body, { prerendered, runtime, root });
      } catch (err) {
        console.error("pysim widget " + name + " failed to mount", err);
      }
    }
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
  // work (Material's bundle, ~100 ms), and Python would start that much later.
  function soon(then) {
    if (window.scheduler && typeof scheduler.postTask === "function") {
      scheduler.postTask(then, { priority: "user-blocking" }).catch(() => {});
    } else setTimeout(then, 0);
  }

  // Start Python when a widget comes near the screen, or as soon as the reader
  // touches one (pointer or keyboard focus), whichever is first. Once per page.
  let armed = false;
  let bootSoon = false; // a widget is near the screen: Python starts after the first paint
  function armStart() {
    const widgets = document.querySelectorAll(".pysim-widget[data-mounted]");
    if (armed || !widgets.length) return;
    armed = true;
    if (!runtime.servedOverHttp) {
      runtime.start().catch(() => {});
      return;
    }
    const touched = () => runtime.start().catch(() => {});
    for (const w of widgets) {
      w.addEventListener("pointerdown", touched, { once: true });
      w.addEventListener("focusin", touched, { once: true });
    }
    // A widget already near the screen: spawn the worker now, and boot Python once the
    // browser has reported its first paint and drawn one more frame with the widgets,
    // so the text and pictures are on screen before any Pyodide byte is asked for.
    const top = screenTop();
    const near = [...widgets].some((w) => {
      const r = w.getBoundingClientRect();
      return r.bottom - top > -NEAR_PX && r.top - top < window.innerHeight + NEAR_PX;
    });
    if (near) {
      bootSoon = true;
      runtime.prepare();
      afterFirstPaint(() => requestAnimationFrame(() => soon(touched)));
      return;
    }
    if (!("IntersectionObserver" in window)) {
      runtime.start().catch(() => {});
      return;
    }
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        observer.disconnect();
        runtime.start().catch(() => {});
      }
    }, { rootMargin: `${NEAR_PX}px 0px` });
    widgets.forEach((w) => observer.observe(w));
  }

  // ------------------------------------------------------------- libraries for later
  //
  // A library a widget can draw its picture without (hooks.py, VENDOR_LATER: the
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

  // ------------------------------------------------------------- search waits for Python
  //
  // Material starts its search worker as soon as its bundle runs: the worker receives
  // the whole search index and builds it, a few hundred ms of CPU. On a page with a
  // widget that lands exactly while Pyodide's WebAssembly compiles, and a reader's
  // machine may have two cores. So on these pages Material gets a stand-in worker that
  // keeps its messages, and the real one starts when Python is up and has answered the
  // widgets' first calls (or cannot start), or the moment the reader reaches for the
  // search box; on a page opened far from its widgets (Python waits for a scroll), once
  // the page has loaded. Search answers exactly as before, only its index is built
  // later. (From file:// Python never runs: nothing is deferred.)
  const SEARCH_WAIT_MS = 10000; // the longest search waits, whatever Python does

  function deferSearchWorker() {
    const RealWorker = window.Worker;
    const waiting = new Set();
    let released = false; // once true, every search worker runs, now and later
    const startAll = () => {
      released = true;
      for (const w of [...waiting]) w.begin();
    };

    function isSearch(url) {
      const config = document.getElementById("__config"); // Material's, read when it asks
      try {
        const search = config && JSON.parse(config.textContent).search;
        return !!search && absolute(search) === absolute(String(url));
      } catch (err) {
        return false;
      }
    }

    // Just enough of a Worker for Material, which listens with addEventListener:
    // postMessage, terminate, and its "message" and "error" events.
    class DeferredWorker extends EventTarget {
      constructor(args) {
        super();
        this.args = args;
        this.queue = [];
        this.worker = null;
        this.ended = false;
        if (released) this.begin();
        else waiting.add(this);
      }

      begin() {
        waiting.delete(this);
        if (this.worker || this.ended) return;
        const worker = this.worker = Reflect.construct(RealWorker, this.args);
        worker.addEventListener("message", (e) => this.dispatchEvent(new MessageEvent("message", { data: e.data })));
        worker.addEventListener("error", (e) => {
          e.preventDefault(); // reported through this stand-in instead
          this.dispatchEvent(new ErrorEvent("error", { message: e.message, filename: e.filename, lineno: e.lineno }));
        });
        for (const [message, transfer] of this.queue) worker.postMessage(message, transfer);
        this.queue = [];
      }

      postMessage(message, transfer = []) {
        if (this.worker) this.worker.postMessage(message, transfer);
        else if (!this.ended) this.queue.push([message, transfer]);
      }

      terminate() {
        this.ended = true;
        waiting.delete(this);
        if (this.worker) this.worker.terminate();
      }
    }

    window.Worker = new Proxy(RealWorker, {
      construct(target, args, newTarget) {
        return isSearch(args[0]) ? new DeferredWorker(args) : Reflect.construct(target, args, newTarget);
      },
    });

    // Once Python is ready, the widgets' first answers go first: search starts when no
    // call is in flight any more (they are sent in the same task as "ready").
    const whenQuiet = () => (runtime.pending.size ? setTimeout(whenQuiet, 50) : startAll());
    runtime.subscribe((state) => {
      if (state === "ready") setTimeout(whenQuiet, 0);
      else if (state !== "idle" && state !== "loading") startAll();
    });
    window.addEventListener("load", () => { if (runtime.state === "idle" && !bootSoon) startAll(); });
    document.addEventListener("focusin", (e) => { if (e.target.closest && e.target.closest(".md-search")) startAll(); });
    document.addEventListener("change", (e) => { if (e.target.id === "__search") startAll(); });
    setTimeout(startAll, SEARCH_WAIT_MS);
  }

  if (settings && runtime.servedOverHttp && window.Worker && window.Proxy) deferSearchWorker();

  window.PySim = { runtime, register, h, fmt, readHash, writeHash, numberControl, reducedMotion,
    sizeCanvas, stripePattern, loadLater };
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
