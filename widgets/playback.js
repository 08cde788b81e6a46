// Playback of a run pysim has already computed. The view model holds every step, so
// playing is only drawing: a cursor (how many steps are done) that Run moves along a
// clock, Step and Reset move by hand, and the link keeps as NAME.step. Nothing here
// asks Python.
//
//   const play = w.playback({
//     steps: () => w.view.steps.length, // how many steps the run has
//     at: (n) => ...,     // when the n-th step ends on the run's clock, at(0) = 0 (default
//                         // n: one unit a step)
//     rate: 0.25,         // clock units per real millisecond; set play.rate to change it
//     smooth: true,       // draw every frame while playing, not only when a step is reached
//     draw() { ... },     // draw play.cursor (and, smooth, play.clock)
//     playing(on) { ... } // optional: playback started or stopped (a button's label)
//   });
//   play.cursor, play.clock, play.playing, play.rate
//   play.run(), play.pause(), play.toggle(), play.moveTo(n), play.fromLink()
//
// Run plays on from the cursor, or from the first step once the run has been shown to
// its end. A reader who asked their system for less motion (prefers-reduced-motion,
// WCAG 2.3.3) gets the last step at once. The frames come from w.frame, so a widget
// taken off the page stops playing. data-playing on the widget's root says whether it
// plays. The widget's spec lists "step" among its `link` keys.
(function () {
  "use strict";
  const lessMotion = () => window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;

  function playback(w, { steps, at = (n) => n, rate = 1, smooth = false, draw, playing: told = () => {} }) {
    let cursor = steps();
    let clock = 0;
    let playing = false;
    let last = 0; // the time of the frame before, in ms
    let turn = 0; // the current run; a paused one's last frame sees a newer turn and stops

    // The step the link names, if it is a whole number (past the end: the end).
    function linkStep() {
      const n = w.link.step ? Number(w.link.step) : NaN;
      return Number.isInteger(n) && n >= 0 ? Math.min(n, steps()) : null;
    }
    const fromMount = linkStep();
    if (fromMount !== null) cursor = fromMount;

    function tick(mine, now) {
      if (mine !== turn) return;
      clock += (now - last) * play.rate;
      last = now;
      const before = cursor;
      const n = steps();
      while (cursor < n && at(cursor + 1) <= clock) cursor += 1;
      if (cursor >= n) { pause(); draw(); return; }
      if (smooth || cursor !== before) draw();
      w.frame((t) => tick(mine, t));
    }

    function run() {
      if (playing) return;
      if (cursor >= steps()) cursor = 0;
      if (lessMotion()) { moveTo(steps()); return; }
      playing = true;
      w.root.dataset.playing = "true";
      told(true);
      clock = at(cursor);
      last = performance.now();
      draw();
      const mine = ++turn;
      w.frame((t) => tick(mine, t));
    }

    function pause() {
      if (!playing) return;
      playing = false;
      turn += 1;
      w.root.dataset.playing = "false";
      told(false);
      w.saveLink();
    }

    function moveTo(n) {
      pause();
      cursor = Math.max(0, Math.min(steps(), n));
      w.saveLink();
      draw();
    }

    const play = {
      rate,
      // Never past the end, even for a moment after a shorter run came in.
      get cursor() { return Math.min(cursor, steps()); },
      get clock() { return clock; },
      get playing() { return playing; },
      run, pause, moveTo,
      toggle() { if (playing) pause(); else run(); },
      // A run that came from a link shows the step the link names, else its end.
      fromLink() { const n = linkStep(); moveTo(n === null ? steps() : n); },
      linkState: () => ({ step: play.cursor }),
    };
    return play;
  }

  window.PySim.playback = playback;
})();
