// The Python side of the page: one module Web Worker that boots Pyodide from this
// site's own files and answers simulation calls through pysim.bridge.
//
// Messages in:  {type: "boot", pyodide, lock, package, sizes, stdlib, files?: [[path, url], ...]}
//               {type: "call", id, name, payload, files?: [[path, url], ...]}
//               {type: "stats"}  (bench/bench_page.py: how much memory Python holds)
// Messages out: {type: "progress", stage, text, loaded?, total?}  {type: "ready", ms, python}
//               {type: "failed", message}        {type: "result", id, text, ms}
//               {type: "fatal", message}  (the interpreter is broken: restart the worker)
//               {type: "stats", wasm_bytes, py_blocks}
//
// Pyodide 314 only runs in a *module* worker; the page keeps its thread free for
// drawing while Python works here.

let bridge = null;
let pyodide = null;
let fs = null; // Pyodide's file system, for the data files calls read
// Calls run one at a time, in order, even when one first waits for a download.
let queue = Promise.resolve();
// Data files the page's widgets read (the lab's traces), asked for with the boot: they
// download while Python starts, outside its progress count, and the first call that
// reads one takes its bytes from here (url -> promise of the bytes).
const early = new Map();
const plainFetch = self.fetch.bind(self); // boot() counts its own downloads through self.fetch

function post(message) {
  self.postMessage(message);
}

// What the status line says while Python downloads. On a fast link, the count; once the
// rate so far says the rest takes more than SLOW_S seconds, what is left and that the
// page need not wait: its text and pre-rendered pictures are all there, and only the
// widgets' controls need Python. (No count of seconds: the bytes counted are the files'
// own, unpacked as they arrive, and the wasm unpacks to several times what crosses
// the wire while the zips do not, so the rate so far is a poor clock.)
const SLOW_S = 4;
const SETTLE_MS = 500; // the rate of the first half second is mostly the round trip
function downloading(loaded, total, ms) {
  const mb = (n) => (n / 1e6).toFixed(1);
  const left = ms >= SETTLE_MS && loaded > 0 ? ((total - loaded) / (loaded / ms)) / 1000 : 0;
  if (left <= SLOW_S) return `Downloading Python: ${mb(loaded)} of ${mb(total)} MB`;
  return `Downloading Python: ${mb(total - loaded)} of ${mb(total)} MB left. ` +
    "The text and pictures are ready to read; only the controls wait for it.";
}

// Download progress in bytes. Pyodide fetches the wasm and the standard library, and
// this worker the lock file and the wheel, all with fetch(); we read a
// clone of each response to count its bytes as they arrive, and hand on the original
// (one download, and the browser can still stream-compile and code-cache the wasm).
// Pyodide's two JS modules come by import(), counted whole when they have loaded.
// `sizes` (from the build) gives the total; Python starts once it has all arrived.
function countDownloads(sizes) {
  const total = Object.values(sizes || {}).reduce((a, b) => a + b, 0);
  let loaded = 0;
  let lastPost = -Infinity;
  let started = false;
  let done = false;
  const mb = (n) => (n / 1e6).toFixed(1);
  let firstByte = null;
  const add = (n) => {
    loaded += n;
    const now = performance.now();
    if (firstByte === null) firstByte = now;
    if (done || !total) return;
    if (loaded < total && now - lastPost >= 100) {
      lastPost = now;
      post({ type: "progress", stage: "download", loaded, total, text: downloading(loaded, total, now - firstByte) });
    } else if (loaded >= total && !started) {
      started = true;
      post({ type: "progress", stage: "start", loaded: Math.min(loaded, total), total,
             text: `Starting Python (${mb(total)} MB downloaded)` });
    }
  };
  const realFetch = self.fetch.bind(self);
  self.fetch = async (input, init) => {
    const response = await realFetch(input, init);
    if (response.ok && response.body && !done) {
      const reader = response.clone().body.getReader();
      (async () => {
        for (;;) {
          const { done: end, value } = await reader.read();
          if (end) break;
          add(value.byteLength);
        }
      })().catch(() => {});
    }
    return response;
  };
  return {
    module: (name) => add((sizes && sizes[name]) || 0),
    finish() { done = true; self.fetch = realFetch; },
  };
}

// Pyodide does not reject when some downloads fail: an aborted .wasm fetch leaves
// loadPyodide waiting for ever, with an uncaught error in this worker. So while Python
// boots, a failed or refused download, or any uncaught error, fails the boot at once
// with its reason, and the page offers Retry instead of a long wait.
function watchBoot() {
  let over = false;
  const fail = (message) => {
    if (over) return;
    over = true;
    post({ type: "failed", message: String(message).slice(0, 300) });
  };
  const name = (input) => String((input && input.url) || input).split("?")[0].split("/").pop();
  const original = self.fetch;
  const inner = original.bind(self);
  self.fetch = async (input, init) => {
    let response;
    try {
      response = await inner(input, init);
    } catch (err) {
      fail(`could not download ${name(input)} (${(err && err.message) || err})`);
      throw err;
    }
    if (!response.ok) fail(`could not download ${name(input)} (HTTP ${response.status})`);
    return response;
  };
  const onRejection = (event) => {
    event.preventDefault();
    fail((event.reason && event.reason.message) || event.reason);
  };
  self.addEventListener("unhandledrejection", onRejection);
  return {
    fail,
    done() {
      over = true;
      self.fetch = original;
      self.removeEventListener("unhandledrejection", onRejection);
    },
  };
}

// The wheel the lock file names (sitebuild/wheel.py), fetched while Python boots; the
// browser checks its bytes against the sha256 the lock records (fetch's `integrity`).
async function fetchWheel(lockText, base, pkg) {
  const entry = JSON.parse(await lockText).packages[pkg];
  const digest = String.fromCharCode(...entry.sha256.match(/../g).map((byte) => parseInt(byte, 16)));
  const response = await fetch(new URL(entry.file_name, base), { integrity: "sha256-" + btoa(digest) });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function boot({ pyodide: base, lock, package: pkg, sizes, stdlib, files }) {
  const t0 = performance.now();
  const watch = watchBoot();
  const progress = countDownloads(sizes);
  try {
    post({ type: "progress", stage: "download", text: "Downloading Python" });
    // The lock file once, for Pyodide and for the wheel's name; the wheel at once too.
    const lockText = fetch(lock).then((r) => {
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      return r.text();
    });
    const wheel = fetchWheel(lockText, base, pkg);
    wheel.catch(() => {}); // awaited below; a failure there is the boot's to report
    for (const [, url] of files || []) {
      const bytes = download(url);
      bytes.catch(() => {}); // the call that reads the file reports it
      early.set(url, bytes);
    }
    const { loadPyodide } = await import(base + "pyodide.mjs");
    progress.module("pyodide.mjs");
    // The same module record Pyodide imports next (one fetch); here only to count it.
    import(base + "pyodide.asm.mjs").then(() => progress.module("pyodide.asm.mjs"), () => {});
    const options = {
      indexURL: base,
      // The page's standard library (sitebuild/stdlib.py), compiled to bytecode.
      stdLibURL: stdlib,
      lockFileContents: lockText,
      // Every package comes from this site: with packageBaseUrl set, Pyodide has no
      // reason to fall back to a CDN, and the browser tests check that it never does.
      packageBaseUrl: base,
      stdout: () => {},
      stderr: (line) => console.warn("[python]", line),
    };
    const py = await loadPyodide(options);
    // The wheel's files into site-packages, as the lock's install_dir "site" says.
    // unpackArchive, not loadPackage: the same files, without loadPackage's own work of
    // resolving and checking a package, which takes several times as long.
    py.unpackArchive(await wheel, "wheel", { extractDir: py.runPython("__import__('site').getsitepackages()[0]") });
    py.runPython("__import__('importlib').invalidate_caches()");
    progress.finish();
    post({ type: "progress", stage: "start", text: "Starting the simulations" });
    bridge = py.pyimport("pysim.bridge");
    pyodide = py;
    fs = py.FS;
    const python = py.runPython("import sys; sys.version.split()[0]");
    watch.done();
    post({ type: "ready", ms: performance.now() - t0, python });
  } catch (err) {
    watch.fail((err && err.message) || err);
  }
}

// Data files a call reads (the serving lab's traces): each is downloaded once into
// Pyodide's file system, where pysim looks for it (pysim/traffic/traces.py). A failed download
// is answered like any other error, naming the file.
async function fetchFiles(files) {
  for (const [path, url] of files || []) {
    if (fs.analyzePath(path).exists) continue;
    const pending = early.get(url) || download(url);
    early.delete(url); // a failed download is tried again by the next call
    const bytes = await pending;
    fs.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    fs.writeFile(path, bytes);
  }
}

async function download(url) {
  const response = await plainFetch(url);
  if (!response.ok) throw new Error(`could not download ${url.split("/").pop()} (HTTP ${response.status})`);
  return new Uint8Array(await response.arrayBuffer());
}

async function callWithFiles(message) {
  const t0 = performance.now();
  try {
    await fetchFiles(message.files);
  } catch (err) {
    const text = JSON.stringify({ ok: false, error: { field: "", message: String((err && err.message) || err).slice(0, 200) } });
    post({ type: "result", id: message.id, text, ms: performance.now() - t0 });
    return;
  }
  call(message);
}

function call({ id, name, payload }) {
  const t0 = performance.now();
  let text;
  let fatal = false;
  try {
    text = bridge.call(name, payload);
  } catch (err) {
    // bridge.call never raises; this only catches a broken interpreter, such as a
    // reader's program that recursed past the WebAssembly stack (a fatal error).
    text = JSON.stringify({ ok: false, error: { field: "", message: "Python failed: " + String(err).slice(0, 200) } });
    fatal = true;
  }
  post({ type: "result", id, text, ms: performance.now() - t0 });
  // After a fatal error this interpreter answers nothing more: ask for a fresh one.
  if (fatal) post({ type: "fatal", message: "Python stopped after an internal error." });
}

// The WebAssembly memory (it only grows: the high-water mark of everything Python has
// held) and the blocks Python's allocator holds now, after a full collection.
function stats() {
  if (!pyodide) return { type: "stats", wasm_bytes: null, py_blocks: null };
  const blocks = pyodide.runPython("import gc, sys; gc.collect(); sys.getallocatedblocks()");
  return { type: "stats", wasm_bytes: pyodide._module.HEAP8.buffer.byteLength, py_blocks: blocks };
}

self.onmessage = (event) => {
  const message = event.data || {};
  if (message.type === "boot") boot(message);
  else if (message.type === "stats") queue = queue.then(() => post(stats()));
  else if (message.type === "call") {
    queue = queue.then(() => (message.files ? callWithFiles(message) : call(message)));
  }
};
