// Boot Pyodide in Node, install the pysim wheel, import pysim, and write a gzipped
// memory snapshot of that interpreter: sitebuild/snapshot.py's helper.
//
//   node sitebuild/snapshot.mjs <pyodide npm dir> <wheel> <out.gz> <python_stdlib.zip>
//
// The standard library is the one the site ships (sitebuild/stdlib.py's cut): the
// restored Python reads its modules from that zip, so it must be the same file.
//
// The browser's worker hands the snapshot to loadPyodide (`_loadSnapshot`), which puts
// this memory back instead of starting Python and importing pysim again. The wheel is
// unpacked with Python's zipfile, not pyodide.loadPackage: a snapshot may not hold any
// JavaScript object Python refers to, and loadPackage leaves some behind.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";

async function main() {
  const [npmDir, wheel, out, stdlib] = process.argv.slice(2);
  const { loadPyodide } = await import(path.resolve(npmDir, "pyodide.mjs"));
  const py = await loadPyodide({ indexURL: path.resolve(npmDir) + "/", _makeSnapshot: true, stdout: () => {},
                                     ...(stdlib ? { stdLibURL: path.resolve(stdlib) } : {}) });
  py.FS.writeFile("/tmp/pysim.whl", fs.readFileSync(wheel));
  py.runPython(`
import gc, importlib, pkgutil, site, zipfile
zipfile.ZipFile("/tmp/pysim.whl").extractall(site.getsitepackages()[0])
import pysim, pysim.bridge
# Every module the simulations may import later (all but the command line's).
names = [m.name for m in pkgutil.walk_packages(pysim.__path__, "pysim.") if m.name != "pysim.__main__"]
for name in names:
    importlib.import_module(name)
del gc, importlib, pkgutil, site, zipfile, name, names  # the reader's __main__ starts empty
`);
  const imported = py.runPython("import gc, sys; gc.collect(); sum(m.startswith('pysim') for m in sys.modules)");
  py.runPython("del gc, sys");
  py.FS.unlink("/tmp/pysim.whl");
  const memory = py.makeMemorySnapshot();
  fs.writeFileSync(out, zlib.gzipSync(memory, { level: 9 }));
  console.log(JSON.stringify({ modules: imported, memory_bytes: memory.length }));
}

// A failure ends with its one-line reason, which the build shows.
main().catch((err) => {
  console.error(String((err && err.message) || err));
  process.exit(1);
});
