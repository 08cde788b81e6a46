// One job: what a widget takes that its unmount must give back. Listeners, timers,
// intervals, frames, observers, runtime and scheme subscriptions and canvases taken
// through a tracker are released by one release() (live.js hands them to a widget as
// w.listen, w.timeout, ...), so a long visit's memory stays flat.
(function () {
  "use strict";
  const { h, runtime } = window.PySim; // dom.js, rpc.js

  function tracker() {
    const undo = [];
    const [timers, intervals, frames] = [new Set(), new Set(), new Set()];
    return {
      listen(target, type, fn, opts) {
        target.addEventListener(type, fn, opts);
        undo.push(() => target.removeEventListener(type, fn, opts));
      },
      timeout(fn, ms) {
        const id = setTimeout(() => { timers.delete(id); fn(); }, ms);
        timers.add(id);
        return id;
      },
      interval(fn, ms) {
        const id = setInterval(fn, ms);
        intervals.add(id);
        return id;
      },
      frame(fn) {
        const id = requestAnimationFrame((t) => { frames.delete(id); fn(t); });
        frames.add(id);
        return id;
      },
      observe(observer) {
        undo.push(() => observer.disconnect());
        return observer;
      },
      subscribe: (listener) => undo.push(runtime.subscribe(listener)),
      scheme: (fn) => undo.push(PySim.onSchemeChange(fn)), // a light/dark switch (dom.js)
      canvas(attrs) {
        const canvas = h("canvas", attrs || {});
        undo.push(() => { canvas.width = 0; canvas.height = 0; }); // frees its pixels now
        return canvas;
      },
      release() {
        for (const id of timers) clearTimeout(id);
        for (const id of intervals) clearInterval(id);
        for (const id of frames) cancelAnimationFrame(id);
        timers.clear(); intervals.clear(); frames.clear();
        while (undo.length) undo.pop()();
      },
    };
  }

  window.PySim.tracker = tracker;
})();
