// One job: the Python worker's client. One worker per visit, shared by every widget (on
// the hosted site it outlives page changes: navigation.js): start Python in it once,
// ask pysim for view models, and restart a worker that crashed or hung. Its state
// ("idle", "loading", "ready", "failed", "unavailable") goes to every subscriber (the
// status lines, the widgets, search.js). When to start is boot.js's.
//
// This and every kit file is a classic script, not a module: browsers refuse module
// scripts from file://, and a downloaded copy of the site must still draw its
// pre-rendered pictures there.
(function () {
  "use strict";

  const settingsEl = document.getElementById("pysim-runtime");
  const settings = settingsEl ? JSON.parse(settingsEl.textContent) : null;
  // Its paths lead from the page they came with, which instant navigation leaves: the
  // widget pages' are made absolute now (navigation.js compares them with later pages).
  if (settings) settings.widget_pages = (settings.widget_pages || []).map(absolute);
  const BOOT_TIMEOUT_MS = 90000;

  function absolute(url) {
    return new URL(url, document.baseURI).href;
  }

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
      this.bootSoon = false; // Python will start right after the first paint (search.js asks)
      // The data files the page's widgets read, [path in Pyodide, URL] pairs (mount.js
      // knows them): the worker downloads them while Python starts.
      this.wantedFiles = () => [];
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
          sizes: settings.sizes, // for the progress line: what this start downloads
          stdlib: absolute(settings.stdlib),
          files: [...this.wantedFiles()].map(([path, url]) => [path, absolute(url)]), // download while it starts
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

  Object.assign(window.PySim, { settings, absolute, runtime: new Runtime() });
})();
