// The page's Python with the standard library the site ships (sitebuild/stdlib.py cuts
// it down): boot Pyodide under Node from that exact zip, install the pysim wheel as the
// worker does, and walk what a reader can make Python do on the first widget page and
// after it: import every pysim module, run every simulation's default view, run and
// check the exercise (the starter code, the worked solution, and code with an error in
// it), and import each module a reader's exercise code may reasonably use. Then import
// a module the cut left out: the error must say it was left out.
//
//   node tests/pyodide/cut_stdlib.mjs STDLIB_ZIP PYSIM_WHEEL [--list]
//
// Prints one JSON line: {ok, failures: [...], stdlib: [top-level names imported from the
// zip]}; exits 1 on any failure. With --list (run against Pyodide's full zip) the
// `stdlib` field is how sitebuild/stdlib.py's KEEP list was found; the cut check is
// skipped there, since the full zip leaves nothing out.
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const [zip, wheel, flag] = process.argv.slice(2);
if (!zip || !wheel) {
  console.error("usage: node tests/pyodide/cut_stdlib.mjs STDLIB_ZIP PYSIM_WHEEL [--list]");
  process.exit(2);
}
let out;
try {
  const { loadPyodide } = await import(join(root, "node_modules", "pyodide", "pyodide.mjs"));
  const py = await loadPyodide({
    indexURL: join(root, "node_modules", "pyodide") + "/",
    stdLibURL: resolve(zip),
    stdout: () => {},
  });
  // As widgets/worker.js installs the wheel.
  py.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel",
    { extractDir: py.runPython("__import__('site').getsitepackages()[0]") });
  py.FS.mkdirTree("/pysim-data/traces"); // the lab's traces, where the worker puts them
  for (const name of readdirSync(join(root, "data", "traces")).filter((f) => f.endsWith(".txt.gz"))) {
    py.FS.writeFile(`/pysim-data/traces/${name}`, new Uint8Array(readFileSync(join(root, "data", "traces", name))));
  }
  py.globals.set("listing", flag === "--list");
  py.globals.set("reader_json", readFileSync(join(root, "sitebuild", "stdlib_reader.json"), "utf8"));
  out = py.runPython(readFileSync(join(root, "tests", "pyodide", "cut_stdlib_walk.py"), "utf8"));
} catch (err) {
  // A boot or an install that fails: its Python traceback's end, not Pyodide's source.
  out = JSON.stringify({ ok: false, failures: [String((err && err.message) || err).slice(-2000)], stdlib: [] });
}
console.log(out);
process.exit(JSON.parse(out).ok ? 0 : 1);
