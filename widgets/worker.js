// The Python side of the page: one module Web Worker that boots Pyodide from this
// site's own files and answers simulation calls through pysim.bridge.
//
// Messages in:  {type: "boot", pyodide, lock, package}   {type: "call", id, name, payload}
// Messages out: {type: "progress", stage, text}  {type: "ready", ms, python}
//               {type: "failed", message}        {type: "result", id, text, ms}
//
// Pyodide 314 only runs in a *module* worker; the page keeps its thread free for
// drawing while Python works here.

let bridge = null;

function post(message) {
  self.postMessage(message);
}

async function boot({ pyodide: base, lock, package: pkg }) {
  const t0 = performance.now();
  try {
    post({ type: "progress", stage: "download", text: "Downloading the Python runtime" });
    const { loadPyodide } = await import(base + "pyodide.mjs");
    post({ type: "progress", stage: "start", text: "Starting Python" });
    const py = await loadPyodide({
      indexURL: base,
      lockFileURL: lock,
      // Every package comes from this site: with packageBaseUrl set, Pyodide has no
      // reason to fall back to a CDN, and the browser tests check that it never does.
      packageBaseUrl: base,
      stdout: () => {},
      stderr: (line) => console.warn("[python]", line),
    });
    post({ type: "progress", stage: "package", text: "Loading the simulations" });
    const errors = [];
    await py.loadPackage(pkg, {
      messageCallback: () => {},
      errorCallback: (line) => errors.push(line),
    });
    if (!py.loadedPackages[pkg]) {
      throw new Error(errors.join(" ") || `could not load ${pkg}`);
    }
    bridge = py.pyimport("pysim.bridge");
    const python = py.runPython("import sys; sys.version.split()[0]");
    post({ type: "ready", ms: performance.now() - t0, python });
  } catch (err) {
    post({ type: "failed", message: String((err && err.message) || err).slice(0, 300) });
  }
}

function call({ id, name, payload }) {
  const t0 = performance.now();
  let text;
  try {
    text = bridge.call(name, payload);
  } catch (err) {
    // bridge.call never raises; this only catches a broken interpreter.
    text = JSON.stringify({ ok: false, error: { field: "", message: "Python failed: " + String(err).slice(0, 200) } });
  }
  post({ type: "result", id, text, ms: performance.now() - t0 });
}

self.onmessage = (event) => {
  const message = event.data || {};
  if (message.type === "boot") boot(message);
  else if (message.type === "call") call(message);
};
