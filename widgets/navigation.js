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
//   3. waits for the new page's stylesheets (a widget measures itself as it mounts),
//      which a look ahead (below) has put in place already;
//   4. lets mount.js mount the new widgets from their pre-rendered models and arm
//      Python's start by the same rules as a page load (PySim.pageChanged).
// A page loaded the ordinary way does all of this itself; step 4 then finds nothing to do.
//
// And ahead of a click, so the page entered is drawn without waiting for its files. A
// look ahead at a page fetches it (from the HTTP cache, once Material has prefetched it),
// runs its widget scripts and applies its stylesheets here. It happens
//   - when the pointer or the keyboard focus rests on a link to a page (Material
//     prefetches the page then too: navigation.instant.prefetch);
//   - while the reader reads: once Python has been idle IDLE_MS, for the widget pages
//     just before and after this one in the chapter (the build lists the widget pages
//     in the nav's order: settings.widget_pages), the next one first.
// One page at a time, and never ahead of a reader's own call.
//
// A classic script, like every widget script (module scripts do not run from file://).
(function () {
  "use strict";
  const documents = window.document$; // Material's, set by its bundle, which runs first
  if (!documents || typeof documents.subscribe !== "function") return;
  const IDLE_MS = 1000; // how long Python must have had nothing to do before a look ahead

  // Material's swap keeps an element of <head> that the page entered has too, and
  // replaces the others; it tells them apart by their HTML, with the page entered's
  // URLs made absolute. So this page's URLs are made absolute as well (the same files:
  // nothing loads again). Without it, the first swap of a visit would take every
  // stylesheet out and put it back, and the widgets entered would wait for them all.
  for (const el of document.head.querySelectorAll("link[href], script[src]")) {
    const attr = el.tagName === "LINK" ? "href" : "src";
    el.setAttribute(attr, el[attr]);
  }

  // Every script this page has run or asked for, by absolute URL: src -> its loading.
  const started = new Map([...document.scripts].filter((s) => s.src).map((s) => [s.src, Promise.resolve()]));

  function run(src) {
    if (!started.has(src)) {
      started.set(src, new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = src;
        script.async = false; // run in the order added, each once the ones before it have
        script.onload = resolve;
        script.onerror = () => {
          started.delete(src); // the page that needs it asks again
          reject(new Error("could not load " + src));
        };
        document.body.append(script);
      }));
    }
    return started.get(src);
  }

  function loaded(link) {
    if (link.sheet) return Promise.resolve();
    return new Promise((resolve) => {
      link.addEventListener("load", resolve, { once: true });
      link.addEventListener("error", resolve, { once: true }); // draw unstyled, not never
    });
  }

  const runtime = () => window.PySim && PySim.runtime;
  const idle = () => {
    const r = runtime();
    return Boolean(r && r.state === "ready" && !r.pending.size);
  };

  // Look ahead at the page at `pathname` (this site's); resolves when its scripts are asked for.
  const seen = new Set(); // pages looked ahead at: each once per visit
  function lookAheadAt(pathname) {
    if (seen.has(pathname) || pathname === location.pathname) return Promise.resolve();
    seen.add(pathname); // (a page that could not be fetched is not asked for again)
    return fetch(pathname)
      .then((response) => (response.ok ? response.text() : ""))
      .then((text) => {
        const page = new DOMParser().parseFromString(text, "text/html");
        if (!page.querySelector(".pysim-widget[data-widget]")) return;
        // Its scripts run now (a widget script only registers its widget), and its
        // stylesheets join this page's <head>, so the swap waits for neither. Each styles
        // its own classes only (a widget's, its prefix's; KaTeX's and uPlot's, theirs), so
        // here it changes nothing; and the swap keeps it, as the same element the page
        // entered has (see above).
        const base = new URL(pathname, location.origin);
        for (const link of page.head.querySelectorAll('link[rel="preload"][as="script"]')) {
          run(new URL(link.getAttribute("href"), base).href).catch(() => {});
        }
        const here = new Set([...document.head.querySelectorAll('link[rel="stylesheet"]')].map((l) => l.href));
        for (const link of page.head.querySelectorAll('link[rel="stylesheet"]')) {
          const early = document.importNode(link, false);
          early.setAttribute("href", new URL(link.getAttribute("href"), base).href);
          if (!here.has(early.href)) document.head.append(early);
        }
      })
      .catch(() => {}); // only a head start: the page entered loads what it lacks itself
  }

  let swapping = false; // from Material's swap until the widgets entered are mounted
  function lookAhead(event) {
    // (During a swap the page moves under a pointer at rest: that is not the reader's.)
    if (swapping) return;
    const link = event.target.closest && event.target.closest("a[href]");
    if (!link || link.target || link.origin !== location.origin || link.pathname === location.pathname) return;
    if (!idle()) return;
    lookAheadAt(link.pathname);
  }
  document.body.addEventListener("mouseover", lookAhead, { passive: true });
  document.body.addEventListener("focusin", lookAhead);

  // The widget pages next to this one in the chapter, as pathnames: the nearest before
  // and after it in the sidebar's order (this page may hold no widget itself), next first.
  function neighbours() {
    const pages = new Set(((window.PySim && PySim.settings && PySim.settings.widget_pages) || [])
      .map((url) => new URL(url).pathname)); // absolute: rpc.js made them so
    const order = [...new Set([...document.querySelectorAll("nav.md-nav--primary a.md-nav__link[href]")]
      .map((a) => a.pathname))];
    const here = order.indexOf(location.pathname);
    if (here < 0) return [];
    const next = order.slice(here + 1).find((p) => pages.has(p));
    const before = order.slice(0, here).reverse().find((p) => pages.has(p));
    return [next, before].filter(Boolean);
  }

  // While the reader reads: wait until Python has been idle IDLE_MS, then look ahead
  // at the neighbours one at a time. A page change starts this over for the new page.
  let reading = 0;
  function readAhead() {
    const mine = ++reading;
    let quietSince = null;
    const tick = () => {
      if (mine !== reading) return;
      const r = runtime();
      if (!r || r.state === "unavailable") return; // no Python on this visit (yet, or at all)
      if (!idle()) quietSince = null;
      else if (quietSince === null) quietSince = performance.now();
      else if (performance.now() - quietSince >= IDLE_MS) {
        const page = neighbours().find((p) => !seen.has(p));
        if (!page) return; // both done
        quietSince = null;
        lookAheadAt(page).then(() => setTimeout(tick, IDLE_MS / 4));
        return;
      }
      setTimeout(tick, IDLE_MS / 4);
    };
    tick();
  }

  let turn = 0; // the latest swap; an earlier one's work gives way to it
  documents.subscribe(() => {
    const mine = ++turn;
    swapping = true;
    if (window.PySim && PySim.unmountGone) PySim.unmountGone();
    const scripts = [...document.head.querySelectorAll('link[rel="preload"][as="script"]')].map((link) => run(link.href));
    const styles = [...document.head.querySelectorAll('link[rel="stylesheet"]')].map(loaded);
    Promise.all([...scripts, ...styles])
      .then(() => {
        if (mine !== turn) return;
        if (window.PySim && PySim.pageChanged) PySim.pageChanged();
        readAhead();
      })
      .catch((err) => console.error("pysim: the page's widgets could not start:", err.message))
      .finally(() => { if (mine === turn) swapping = false; });
  });
})();
