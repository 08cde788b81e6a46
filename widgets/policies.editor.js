// The policy lab's code editor (widgets/policies.js lays the widget out): the reader's
// policy, `order(request, engine)` and optionally `victim(running, engine)`.
//
// The same pattern as exercise 5's editor (widgets/exercises.js): the code first sits in
// a plain text area, so neither the page nor Python waits for Ace's half a megabyte;
// Ace (VENDOR_LATER "policies" in sitebuild/assets.py) takes its place once Python is
// up, or the moment the reader touches the text area, keeping the text, the caret and
// the focus. Without Ace the text area stays and edits as well. An error's line is
// marked in the gutter and tinted until the next edit.
//
//   const editor = PySim.policyEditor(w, code, onChange, label)
//   editor.element, upgrade(), get(), set(text), mark(line, text), unmark(), destroy()
(function () {
  "use strict";
  const { h, dark } = window.PySim;
  const THEMES = { light: "ace/theme/chrome", dark: "ace/theme/tomorrow_night" };

  function policyEditor(w, code, onChange, label) {
    const root = w.root;
    const area = h("textarea", { class: "pol-fallback", spellcheck: "false", rows: 18, "aria-label": label });
    area.value = code;
    w.listen(area, "input", () => onChange(area.value));
    const selectLine = (line) => {
      const lines = area.value.split("\n");
      const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
      area.setSelectionRange(start, start + (lines[line - 1] || "").length);
    };
    let current = { kind: "textarea", get: () => area.value, set: (text) => { area.value = text; },
      mark: selectLine, unmark() {}, destroy() {} };
    let upgrading = null;

    function withAce() {
      if (!(window.ace && typeof window.ace.edit === "function") || !area.isConnected) return;
      const focused = document.activeElement === area;
      const caret = area.selectionStart;
      const host = h("div", { class: "pol-editor", id: w.id("pol-editor") });
      area.replaceWith(host);
      const editor = window.ace.edit(host, {
        mode: "ace/mode/python",
        theme: dark() ? THEMES.dark : THEMES.light,
        value: area.value,
        useWorker: false,
        tabSize: 4,
        useSoftTabs: true,
        showPrintMargin: false,
        minLines: 12,
        maxLines: 28,
        fontSize: "13px",
        wrap: true,
        indentedSoftWrap: true,
        // Keyboard users: Tab reaches the editor, Enter starts editing, Escape leaves it.
        enableKeyboardAccessibility: true,
        textInputAriaLabel: label,
      });
      editor.session.setUndoManager(new window.ace.UndoManager());
      editor.clearSelection();
      if (focused) {
        editor.focus();
        editor.moveCursorToPosition(editor.session.doc.indexToPosition(caret, 0));
      }
      let marker = null;
      function unmark() {
        editor.session.clearAnnotations();
        if (marker !== null) editor.session.removeMarker(marker);
        marker = null;
      }
      function mark(line, text) {
        unmark();
        const row = Math.max(0, Math.min(line - 1, editor.session.getLength() - 1));
        editor.session.setAnnotations([{ row, column: 0, text, type: "error" }]);
        marker = editor.session.addMarker(new (window.ace.require("ace/range").Range)(row, 0, row, 1), "pol-error-line", "fullLine");
        editor.gotoLine(row + 1, 0, false);
        editor.clearSelection();
      }
      editor.session.on("change", () => { unmark(); onChange(editor.getValue()); });
      w.onScheme(() => editor.setTheme(dark() ? THEMES.dark : THEMES.light));
      current = {
        kind: "ace",
        get: () => editor.getValue(),
        set: (text) => { editor.setValue(text, -1); editor.clearSelection(); },
        mark, unmark,
        destroy: () => editor.destroy(),
      };
      root.dataset.editor = "ace";
    }

    function upgrade() {
      // Ace may be here already (exercise 5's editor loaded it earlier in this visit).
      const loaded = window.ace && typeof window.ace.edit === "function" ? Promise.resolve() : window.PySim.loadLater("policies");
      if (!upgrading) upgrading = loaded.then(withAce, () => {});
      return upgrading;
    }
    area.addEventListener("focus", upgrade, { once: true });
    area.addEventListener("pointerdown", upgrade, { once: true });
    root.dataset.editor = "textarea";
    return {
      element: area,
      upgrade,
      get kind() { return current.kind; },
      get: () => current.get(),
      set: (text) => current.set(text),
      mark: (line, text) => current.mark(line, text),
      unmark: () => current.unmark(),
      destroy: () => current.destroy(),
    };
  }

  window.PySim.policyEditor = policyEditor;
})();
