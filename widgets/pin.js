// Pin and compare: the reader keeps one run (its config and view model) and changes a
// setting; the widget draws the pinned run beside the live one, so the two differ in one
// thing and everything else on the screen compares them. Two buttons: pin the run shown,
// let the pinned one go.
//
//   const pin = w.pin({
//     labels: ["Pin this run", "Clear pin"],
//     keep: () => ({ sweep }),         // optional: more to hold with {config, view}
//     link: ["scenario", "max_num_batched_tokens"], // optional: the fields a link keeps of
//                                      // the pinned run, as NAME.pin_FIELD (list those
//                                      // keys in the spec's `link` too)
//     changed(pinned) { draw(); },     // after a pin, a clear, or a link's pinned run came
//     refused(why) { ... },            // optional: pysim refused a link's pinned run
//     describe: (config) => "...",     // optional: the pinned configuration in words, for
//     note: "my-pin-note",             // pin.note, a line under the buttons with this class
//   });
//   pin.buttons  // [pin, clear]: place them
//   pin.note     // with `describe`: "Pinned: <words>. Change a setting to compare; ..."
//   pin.pinned   // {config, view, ...} or null; view is null while a link's run is computed
//   pin.cards(dl, figures, "lab")  // figures: [[label, (view) => text]]: a card each
//                                  // (.pysim-card.PREFIX-card), the pinned run's value under it
//   pin.table(table, rows)         // rows: the same; a row each, a column for this run and,
//                                  // with a pinned run, one for it
//
// A link's pinned run is computed by pysim like the live one once Python is up (so it is
// judged there too): the live run's config with the link's pin_ values over it.
// data-pinned on the widget's root says whether a run is pinned.
(function () {
  "use strict";
  const { h } = window.PySim;

  function pin(w, { labels: [pinText, clearText], keep = () => ({}), link = [], changed, refused = () => {},
    describe = null, note: noteClass = null }) {
    let pinned = null;
    const note = describe ? h("p", { class: noteClass, "aria-live": "polite" }) : null;
    const pinBtn = h("button", { type: "button", class: "md-button",
      onclick: () => hold({ config: w.state.config, view: w.view, ...keep() }) }, pinText);
    const clearBtn = h("button", { type: "button", class: "md-button", disabled: true, onclick: () => hold(null) }, clearText);

    function hold(run) {
      pinned = run;
      clearBtn.disabled = !pinned;
      w.root.dataset.pinned = String(!!pinned);
      if (note) {
        note.textContent = pinned ? `Pinned: ${describe(pinned.config)}. Change a setting to compare; the pinned run is drawn dashed.` : "";
      }
      if (link.length) w.saveLink();
      changed(pinned);
    }
    w.root.dataset.pinned = "false";

    async function fromLink(given) {
      const config = { ...w.state.config };
      for (const field of given) config[field] = PySim.parseValue(w.link["pin_" + field]);
      const mine = { config, view: null };
      hold(mine);
      const answer = await w.call({ config }).catch(() => null);
      if (pinned !== mine) return; // pinned or cleared meanwhile
      if (answer && answer.ok) {
        mine.view = answer.result;
        changed(pinned);
        return;
      }
      refused(answer ? `${answer.error.field}: ${answer.error.message}` : "Python is not available");
      hold(null);
    }
    const given = link.filter((field) => w.link["pin_" + field] !== undefined);
    if (given.length) w.whenLive.then(() => fromLink(given));

    // The run's figures beside the pinned run's, as cards and as a table.
    const other = () => (pinned ? pinned.view : null);
    function cards(dl, figures, prefix) {
      const was = other();
      dl.replaceChildren(...figures.map(([label, f]) => h("div", { class: `pysim-card ${prefix}-card` }, h("dt", {}, label),
        h("dd", {}, f(w.view), was ? h("span", { class: `pysim-card-pin ${prefix}-card-pin` }, `pinned: ${f(was)}`) : ""))));
    }
    function table(el, rows) {
      const was = other();
      const col = (text) => h("th", { scope: "col" }, text);
      el.replaceChildren(h("caption", {}, was ? "This run and the pinned one" : "This run, in numbers"),
        h("thead", {}, h("tr", {}, col("Metric"), col("This run"), was ? col("Pinned") : "")),
        h("tbody", {}, ...rows.map(([label, f]) => h("tr", {}, h("th", { scope: "row" }, label), h("td", {}, f(w.view)),
          was ? h("td", {}, f(was)) : ""))));
    }

    return {
      buttons: [pinBtn, clearBtn],
      note,
      cards,
      table,
      get pinned() { return pinned; },
      linkState: () => Object.fromEntries(pinned ? link.map((field) => ["pin_" + field, pinned.config[field]]) : []),
    };
  }

  window.PySim.pin = pin;
})();
