// Run the pysim unit tests inside Pyodide under Node: the same Python (3.14, wasm) and
// the same wheel the browser gets, so "works in CPython" also means "works in the page".
//
// usage: node tests/pyodide/run_pytest.mjs WHEEL_DIR PYSIM_WHEEL [pytest args...]
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const [wheelDir, pysimWheel, ...pytestArgs] = process.argv.slice(2);
if (!wheelDir || !pysimWheel) {
  console.error("usage: node tests/pyodide/run_pytest.mjs WHEEL_DIR PYSIM_WHEEL [pytest args...]");
  process.exit(2);
}

const { loadPyodide } = await import(join(root, "node_modules", "pyodide", "pyodide.mjs"));
const t0 = Date.now();
const pyodide = await loadPyodide({ indexURL: join(root, "node_modules", "pyodide") + "/" });
const wheels = readdirSync(wheelDir).filter((f) => f.endsWith(".whl")).map((f) => join(wheelDir, f));
// unpackArchive extracts into the working directory unless told otherwise.
const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
for (const wheel of [...wheels, pysimWheel]) {
  pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel", { extractDir: sitePackages });
}
// The tests are read from the work tree; pysim itself comes from the wheel.
pyodide.FS.mkdirTree("/work");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: join(root, "tests") }, "/work");
// The serving lab's traces, where the page's worker puts them (pysim/traffic/traces.py).
copyTraces(pyodide, join(root, "data", "traces"));
// The published benchmark records the step-time model is fitted to (tests/unit/test_fit.py).
pyodide.FS.mkdirTree("/pysim-data/realbench");
pyodide.FS.writeFile("/pysim-data/realbench/records.jsonl",
  new Uint8Array(readFileSync(join(root, "data", "realbench", "records.jsonl"))));
console.log(`pyodide ${pyodide.version} booted and wheels unpacked in ${Date.now() - t0} ms`);
pyodide.globals.set("pytest_args", pyodide.toPy(pytestArgs));
const code = await pyodide.runPythonAsync(`
import importlib; importlib.invalidate_caches()
import os, sys, pytest
os.chdir("/work")
import pysim
assert "/site-packages/" in pysim.__file__, pysim.__file__   # testing the wheel, not the source
print("python", sys.version.split()[0], "pysim from", pysim.__file__)
int(pytest.main(["-p", "no:cacheprovider", "unit", *pytest_args]))
`);
process.exit(code);

function copyTraces(py, dir) {
  py.FS.mkdirTree("/pysim-data/traces");
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".txt.gz"))) {
    py.FS.writeFile(`/pysim-data/traces/${name}`, new Uint8Array(readFileSync(join(dir, name))));
  }
}
