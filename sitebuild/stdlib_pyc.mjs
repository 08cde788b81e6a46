// Compile the page's standard library (sitebuild/stdlib.py's cut) to bytecode, in the
// Pyodide the site ships, so its magic number and its compiler are the browser's:
// sitebuild/stdlib.py's helper.
//
//   node sitebuild/stdlib_pyc.mjs <pyodide npm dir> <cut.zip> <out.zip>
//
// Each module's source becomes an unchecked hash-based .pyc (PEP 552: no timestamp, and
// the importer does not look for the source), named as Python's zip importer finds it;
// the zip holds the .pyc files only. Entries are sorted and dated 1980, so the same cut
// compiles to the same bytes.
import fs from "node:fs";
import path from "node:path";

async function main() {
  const [npmDir, source, out] = process.argv.slice(2);
  const { loadPyodide } = await import(path.resolve(npmDir, "pyodide.mjs"));
  const py = await loadPyodide({ indexURL: path.resolve(npmDir) + "/", stdout: () => {} });
  py.FS.writeFile("/tmp/source.zip", fs.readFileSync(source));
  const count = py.runPython(`
import importlib.util, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc
count = 0
with zipfile.ZipFile("/tmp/source.zip") as src, \\
        zipfile.ZipFile("/tmp/out.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
    for info in sorted(src.infolist(), key=lambda i: i.filename):
        data, name = src.read(info), info.filename
        if name.endswith(".py"):
            # Tracebacks name the file where the source would be, as Pyodide's own zip does.
            code = compile(data, "/lib/python314.zip/" + name, "exec", dont_inherit=True)
            data, name = bytes(_code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False)), name + "c"
            count += 1
        entry = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
        entry.compress_type = zipfile.ZIP_DEFLATED
        entry.external_attr = info.external_attr
        dst.writestr(entry, data)
count
`);
  fs.writeFileSync(out, py.FS.readFile("/tmp/out.zip"));
  console.log(JSON.stringify({ compiled: count }));
}

main().catch((err) => {
  console.error(String((err && err.message) || err));
  process.exit(1);
});
