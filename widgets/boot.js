// One job: when Python starts. Once a page's widgets are mounted (mount.js arms this),
// Python boots right after the first paint if a widget is near the screen, else when one
// comes near, or as soon as the reader touches one, whichever is first.
(function () {
  "use strict";
  const { runtime } = window.PySim; // rpc.js
  const NEAR_PX = 600; // Python starts when a widget comes this close to the screen
  const FIRST_PAINT_WAIT_MS = 2000; // the longest Python waits for the first paint report

  // Where the top of the screen will be, relative to where it is now, once the browser
  // has scrolled to the link's #target (it does that late, after the page has loaded; a
  // reader who followed a link to a widget should not wait for that scroll).
  function screenTop() {
    try {
      const target = location.hash.length > 1 && document.getElementById(decodeURIComponent(location.hash.slice(1)));
      return target ? target.getBoundingClientRect().top : 0;
    } catch (err) {
      return 0; // a malformed link: judge by the screen as it is
    }
  }

  // Call `then` once the first contentful paint has been reported. Widgets can mount
  // before it (their scripts run while the page is still parsing), and the paint that
  // follows a frame is reported a little later than the frame itself. A browser that
  // does not report paints, or a page that is never shown, waits FIRST_PAINT_WAIT_MS.
  function afterFirstPaint(then) {
    const painted = () => performance.getEntriesByName("first-contentful-paint").length > 0;
    const observable = window.PerformanceObserver &&
      (PerformanceObserver.supportedEntryTypes || []).includes("paint");
    if (!observable || painted()) {
      then();
      return;
    }
    let done = false;
    const go = () => {
      if (done) return;
      done = true;
      observer.disconnect();
      clearTimeout(timer);
      then();
    };
    const observer = new PerformanceObserver(() => { if (painted()) go(); });
    observer.observe({ type: "paint", buffered: true });
    const timer = setTimeout(go, FIRST_PAINT_WAIT_MS);
  }

  // Run `then` in a task of its own, ahead of ordinary tasks where the browser lets us
  // say so: after a frame, a setTimeout would queue behind the page's other start-up
  // work (Material's bundle), and Python would start that much later.
  function soon(then) {
    if (window.scheduler && typeof scheduler.postTask === "function") {
      scheduler.postTask(then, { priority: "user-blocking" }).catch(() => {});
    } else setTimeout(then, 0);
  }

  // Once per page (with instant navigation, once per page entered: mount.js disarms
  // when the widgets it armed for are gone). Idempotent.
  let armed = false;
  let releaseArming = () => {}; // what the current arming holds: its frame or its observer
  function disarm() {
    armed = false;
    releaseArming();
    releaseArming = () => {};
  }
  function arm() {
    const widgets = document.querySelectorAll(".pysim-widget[data-mounted]");
    if (armed || !widgets.length) return;
    armed = true;
    if (!runtime.servedOverHttp) {
      runtime.start().catch(() => {}); // says at once that this copy has no Python
      return;
    }
    // Entered by instant navigation: Python is already on its way, or running (the
    // widgets go live by themselves), or could not start (their status offers Retry).
    if (runtime.state !== "idle") return;
    const touched = () => runtime.start().catch(() => {});
    for (const w of widgets) {
      w.addEventListener("pointerdown", touched, { once: true });
      w.addEventListener("focusin", touched, { once: true });
    }
    // Where the widgets are is read in the next frame, where the browser lays the page out
    // to draw them anyway; read now, it would lay the page out once more first, and the
    // pictures would come that much later.
    const frame = requestAnimationFrame(() => whereTheyAre(widgets, touched));
    releaseArming = () => cancelAnimationFrame(frame);
  }

  // A widget near the screen: spawn the worker, and boot Python in the task after this
  // frame (which draws the widgets) once the first paint is reported: text and pictures
  // come before any Pyodide byte. Otherwise Python starts when a widget comes near (every
  // browser that runs Pyodide 314's module worker has IntersectionObserver).
  function whereTheyAre(widgets, touched) {
    const top = screenTop();
    const near = [...widgets].some((w) => {
      const r = w.getBoundingClientRect();
      return r.bottom - top > -NEAR_PX && r.top - top < window.innerHeight + NEAR_PX;
    });
    if (near) {
      runtime.bootSoon = true;
      runtime.prepare();
      afterFirstPaint(() => soon(touched));
      return;
    }
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        observer.disconnect();
        runtime.start().catch(() => {});
      }
    }, { rootMargin: `${NEAR_PX}px 0px` });
    widgets.forEach((w) => observer.observe(w));
    releaseArming = () => observer.disconnect();
  }

  window.PySim.boot = { arm, disarm };
})();
