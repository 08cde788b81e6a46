// Instant navigation, the hosted build's (mkdocs.yml: navigation.instant). A click on a
// link inside the site does not load a new page: Material fetches it, swaps its content
// into this one and announces the new document on `document$` (Material for MkDocs
// 9.x, "Setting up navigation" and its custom-JavaScript examples). So this page's
// Python worker, and the Python already running in it, can serve the page entered.
//
// This file is on every page of the hosted build, after Material's bundle (its
// `extra_javascript`). After each swap it
//   1. takes the widgets of the page left off the page (PySim.unmountGone: their
//      listeners, timers, observers and canvases), right away;
//   2. runs the widget scripts of the page entered that have not run yet, in order:
//      the page's <head> preloads them all (overrides/main.html), and Material's swap
//      brings the new page's <head> over, so those preloads are the list;
//   3. waits for the new page's stylesheets (a widget measures itself as it mounts);
//   4. lets runtime.js mount the new widgets from their pre-rendered models and arm
//      Python's start by the same rules as a page load (PySim.pageChanged).
// A page loaded the ordinary way does all of this itself; step 4 then finds nothing to do.
//
// And ahead of a click: Material fetches a page as soon as the pointer or the keyboard
// focus rests on a link to it (navigation.instant.prefetch). With Python running and
// idle, this script then has the check of that page's widgets computed too (their
// pre-rendered models against Pyodide: PySim.verifyModel), so they can be live the
// moment the page is in. One page at a time, and never ahead of a reader's own call.
//
// A classic script, like every widget script (module scripts do not run from file://).
(function () {
  "use strict";
  const documents = window.document$; // Material's, set by its bundle, which runs first
  if (!documents || typeof documents.subscribe !== "function") return;

  // Every script this page has run or asked for, by absolute URL.
  const started = new Set([...document.scripts].filter((s) => s.src).map((s) => s.src));

  function run(src) {
    started.add(src);
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.async = false; // run in the order added, each once the ones before it have
      script.onload = resolve;
      script.onerror = () => reject(new Error("could not load " + src));
      document.body.append(script);
    });
  }

  function loaded(link) {
    if (link.sheet) return Promise.resolve();
    return new Promise((resolve) => {
      link.addEventListener("load", resolve, { once: true });
      link.addEventListener("error", resolve, { once: true }); // draw unstyled, not never
    });
  }

  let ahead = ""; // the page last looked ahead at
  function lookAhead(event) {
    const link = event.target.closest && event.target.closest("a[href]");
    const runtime = window.PySim && PySim.runtime;
    if (!link || link.target || link.origin !== location.origin || link.pathname === location.pathname) return;
    if (!runtime || runtime.state !== "ready" || runtime.pending.size || !PySim.verifyModel || link.pathname === ahead) return;
    ahead = link.pathname;
    fetch(link.pathname)
      .then((response) => (response.ok ? response.text() : ""))
      .then((text) => {
        const page = new DOMParser().parseFromString(text, "text/html");
        for (const root of page.querySelectorAll(".pysim-widget[data-widget]")) {
          const data = root.querySelector("template.pysim-prerender");
          if (data) PySim.verifyModel(root.dataset.widget, JSON.parse(data.content.textContent)).catch(() => {});
        }
      })
      .catch(() => {}); // only a head start: the page checks its widgets itself anyway
  }
  document.body.addEventListener("mouseover", lookAhead, { passive: true });
  document.body.addEventListener("focusin", lookAhead);

  let turn = 0; // the latest swap; an earlier one's work gives way to it
  documents.subscribe(() => {
    const mine = ++turn;
    if (window.PySim && PySim.unmountGone) PySim.unmountGone();
    const wanted = [...document.head.querySelectorAll('link[rel="preload"][as="script"]')]
      .map((link) => link.href)
      .filter((src) => !started.has(src));
    const styles = [...document.head.querySelectorAll('link[rel="stylesheet"]')].map(loaded);
    Promise.all([...wanted.map(run), ...styles])
      .then(() => {
        if (mine === turn && window.PySim && PySim.pageChanged) PySim.pageChanged();
      })
      .catch((err) => console.error("pysim: the page's widgets could not start:", err.message));
  });
})();
