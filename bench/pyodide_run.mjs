// Run a Python snippet inside Pyodide under Node with the site's pysim wheel installed,
// and print what the snippet prints. Benchmarks use it to time pysim in Pyodide.
//
// usage: node bench/pyodide_run.mjs PYSIM_WHEEL SNIPPET_FILE
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const [wheel, snippetFile] = process.argv.slice(2);
const { loadPyodide } = await import(join(root, "node_modules", "pyodide", "pyodide.mjs"));
const pyodide = await loadPyodide({ indexURL: join(root, "node_modules", "pyodide") + "/" });
const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel", { extractDir: sitePackages });
pyodide.runPython("import importlib; importlib.invalidate_caches()");
// The serving lab's traces, where the page's worker puts them (pysim/traffic/traces.py).
pyodide.FS.mkdirTree("/pysim-data/traces");
const traces = join(root, "data", "traces");
for (const name of readdirSync(traces).filter((f) => f.endsWith(".txt.gz"))) {
  pyodide.FS.writeFile(`/pysim-data/traces/${name}`, new Uint8Array(readFileSync(join(traces, name))));
}
pyodide.setStdout({ batched: (line) => console.log(line) });
await pyodide.runPythonAsync(readFileSync(snippetFile, "utf8"));
