// One job: Material's search index waits for Python on a widget page (a classic script
// that runs after rpc.js and before Material's bundle, which starts the search worker).
(function () {
  "use strict";
  const { settings, runtime } = window.PySim;
  const absolute = (url) => new URL(url, document.baseURI).href;

  // Material starts its search worker as soon as its bundle runs: the worker receives
  // the whole search index and builds it, a few hundred ms of CPU. On a page with a
  // widget that lands exactly while Pyodide's WebAssembly compiles, and a reader's
  // machine may have two cores. So on these pages Material gets a stand-in worker that
  // keeps its messages, and the real one starts when Python is up (or cannot start), or
  // the moment the reader reaches for the search box; on a page opened far from its widgets (Python waits for a scroll), once
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

    runtime.subscribe((state) => {
      if (state !== "idle" && state !== "loading") startAll(); // ready, failed or unavailable
    });
    window.addEventListener("load", () => { if (runtime.state === "idle" && !runtime.bootSoon) startAll(); });
    document.addEventListener("focusin", (e) => { if (e.target.closest && e.target.closest(".md-search")) startAll(); });
    document.addEventListener("change", (e) => { if (e.target.id === "__search") startAll(); });
    setTimeout(startAll, SEARCH_WAIT_MS);
  }

  // (Run by navigation.js on a page entered by instant navigation, Material's bundle has
  // already started its search worker: nothing is left to defer.)
  const bundleRan = !!window.document$;
  if (settings && runtime.servedOverHttp && window.Worker && window.Proxy && !bundleRan) deferSearchWorker();
})();
