// One job: when a widget's drawing is drawn again: its width changed or the reader
// switched light/dark, at most once a frame (live.js calls the widget's `redraw` hook
// through this).
(function () {
  "use strict";

  // A drawing sized to the widget's width, or coloured from CSS, is drawn again when the
  // width changes or the reader switches light/dark: `redraw("width")` or
  // `redraw("scheme")` (a scheme switch may change the width too: one redraw says
  // "scheme"), once, in the next frame, however many reports came before it. Heights
  // change as a widget draws, so only a new width counts; and the observer's first report,
  // which comes with the first frame at the width the picture was just drawn at, draws
  // nothing: the pre-rendered picture is on the screen at once.
  function redrawOn(body, redraw, t, alive) {
    let width = body.clientWidth; // what the mount's picture was drawn for
    let why = null; // the redraw waiting for its frame
    const soon = (reason) => {
      if (why === null) t.frame(() => { const now = why; why = null; if (alive()) redraw(now); });
      if (why !== "scheme") why = reason;
    };
    t.observe(new ResizeObserver(() => {
      if (body.clientWidth === width) return;
      width = body.clientWidth;
      soon("width");
    })).observe(body);
    t.scheme(() => soon("scheme"));
  }

  window.PySim.redrawOn = redrawOn;
})();
