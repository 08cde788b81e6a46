// The inline script the iframe-worker shim writes into its iframe, for one worker URL.
//
// Material's offline plugin makes search work from file:// with this shim: a Worker
// stand-in that runs the worker's script inside a hidden iframe. The iframe inherits the
// page's Content-Security-Policy, so the script the shim writes there needs a hash in it.
// Rather than re-reading the shim's source, this runs the shim itself against a stand-in
// document and prints what it writes (the shim builds that script from its own functions'
// source text, which Function.prototype.toString returns exactly).
//
// Usage: node iframe_worker.mjs SHIM.js WORKER_URL   -> the script's text on stdout
import { readFileSync } from "node:fs";
import vm from "node:vm";

const [shimPath, workerUrl] = process.argv.slice(2);
const written = [];
const frameDocument = { open() {}, write: (text) => written.push(text), close() {} };
const page = {
  EventTarget, Promise, Date,  // all the shim touches while it builds the iframe
  location: { protocol: "file:" },
  onmessage: null, onerror: null,  // the shim assigns these globals
  document: {
    createElement: () => ({ contentWindow: { document: frameDocument } }),
    body: { appendChild() {} },
  },
};
page.window = page;
vm.runInNewContext(readFileSync(shimPath, "utf8"), page);
new page.IFrameWorker(workerUrl);
const found = /^<html><body><script>([\s\S]*?)<\/script>/.exec(written.join(""));
if (!found) {
  console.error("iframe-worker: the shim wrote no inline script; has it changed?");
  process.exit(1);
}
process.stdout.write(found[1]);
