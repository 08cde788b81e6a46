// One job: libraries a widget can draw its picture without (sitebuild/assets.py,
// VENDOR_LATER: the code editor's Ace), loaded when the widget asks, so they do not
// compete with Python's start. Their files load in parallel and run in order; the
// promise settles once per visit.
(function () {
  "use strict";
  const { h, settings, absolute } = window.PySim; // dom.js, rpc.js

  const later = {};
  function loadLater(name) {
    if (!later[name]) {
      const urls = (settings && settings.later && settings.later[name]) || [];
      later[name] = Promise.all(urls.map((url) => new Promise((resolve, reject) => {
        const script = h("script", { src: absolute(url) });
        script.async = false; // run in the order given, each as soon as the ones before it
        script.onload = resolve;
        script.onerror = () => reject(new Error("could not load " + url));
        document.head.append(script);
      })));
    }
    return later[name];
  }

  window.PySim.loadLater = loadLater;
})();
