// The code editor of the widgets that run the reader's Python: exercise 5's toy scheduler
// (widgets/exercises.js) and the policy lab's policy (widgets/policies.js).
//
// The code first sits in a plain text area, so neither the page nor Python waits for
// Ace's half a megabyte of script; Ace (sitebuild/assets.py, VENDOR_LATER[later]) takes
// its place once Python is up (the widget calls upgrade()), or the moment the reader
// touches the text area, keeping the text, the caret and the focus. If Ace cannot load,
// the text area stays: it edits as well, without colours. An error's line is marked in
// the gutter, tinted and holds the cursor, until the next edit.
//
//   const editor = PySim.codeEditor(w, { code, onChange, label, prefix, later, rows, minLines, maxLines })
//   editor.element, upgrade(), kind, get(), set(text), mark(line, text), unmark(), destroy()
//
// The classes are the widget's own: PREFIX-fallback (the text area), PREFIX-editor (Ace's
// box), PREFIX-error-line (the tint), styled in the widget's stylesheet.
(function () {
  "use strict";
  const { h, dark } = window.PySim;
  const THEMES = { light: "ace/theme/chrome", dark: "ace/theme/tomorrow_night" };

  function codeEditor(w, { code, onChange, label, prefix, later, rows = 18, minLines = 12, maxLines = 28 }) {
    const root = w.root;
    const area = h("textarea", { class: `${prefix}-fallback`, spellcheck: "false", rows, "aria-label": label });
    area.value = code;
    w.listen(area, "input", () => onChange(area.value));
    // The text area cannot mark a line: it selects it, which shows once it has focus.
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
      const host = h("div", { class: `${prefix}-editor`, id: w.id(`${prefix}-editor`) });
      area.replaceWith(host);
      const editor = window.ace.edit(host, {
        mode: "ace/mode/python",
        theme: dark() ? THEMES.dark : THEMES.light,
        value: area.value,
        useWorker: false,
        tabSize: 4,
        useSoftTabs: true,
        showPrintMargin: false,
        minLines,
        maxLines,
        fontSize: "13px",
        // Long lines wrap at the editor's edge (indented like their start) instead of
        // running out of sight past it.
        wrap: true,
        indentedSoftWrap: true,
        // Keyboard users: Tab reaches the editor, Enter starts editing, Escape leaves it.
        enableKeyboardAccessibility: true,
        textInputAriaLabel: label,
      });
      // Ace scrolls its text by moving layers, never by scrolling its boxes. But the
      // browser, keeping the focused (hidden) text input in sight, can scroll them
      // natively, say when the editor's last row sits at the window's edge: the text then
      // drawn two rows above where Ace believes it is, and a click lands on the wrong line.
      // Such a scroll is undone at once.
      for (const box of [editor.container, editor.renderer.scroller]) {
        w.listen(box, "scroll", () => { if (box.scrollTop) box.scrollTop = 0; });
      }
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
      // The line pysim says an error points at: a gutter mark, the line tinted, the cursor
      // on it (scrolled into view).
      function mark(line, text) {
        unmark();
        const row = Math.max(0, Math.min(line - 1, editor.session.getLength() - 1));
        editor.session.setAnnotations([{ row, column: 0, text, type: "error" }]);
        marker = editor.session.addMarker(new (window.ace.require("ace/range").Range)(row, 0, row, 1), `${prefix}-error-line`, "fullLine");
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
      // Ace may be here already (the other editor loaded it earlier in this visit).
      const loaded = window.ace && typeof window.ace.edit === "function" ? Promise.resolve() : window.PySim.loadLater(later);
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

  window.PySim.codeEditor = codeEditor;
})();
