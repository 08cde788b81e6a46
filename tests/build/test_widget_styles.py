"""A widget's stylesheet styles that widget and nothing else.

On the hosted site a look ahead at a page puts that page's stylesheets into the page
the reader is on, ahead of the click (widgets/navigation.js), so the widgets entered
mount without waiting for one. That is only harmless if every rule of widgets/NAME.css
reaches NAME's own elements: each selector names `[data-widget="NAME"]` or a class that
NAME's scripts make and no other widget's script does."""

import re
from pathlib import Path

from pysim.registry import names
from sitebuild.assets import PAGE_WIDE, PREDICT_SCRIPT, PREDICT_STYLE, SHARED_STYLES, WIDGETS_DIR

COMMENT = re.compile(r"/\*.*?\*/", re.S)
CLASS = re.compile(r"\.(-?[A-Za-z_][\w-]*)")


def selectors(css: str) -> list[str]:
    """Every selector of the style rules (inside @media and @supports blocks too)."""
    out = []
    for head in re.findall(r"([^{};]+)\{", COMMENT.sub("", css)):
        head = head.strip()
        if head.startswith("@") or re.fullmatch(r"from|to|[\d.]+%", head):
            continue  # a block's condition, or a step of @keyframes (named below)
        out += [s.strip() for s in head.split(",") if s.strip()]
    return out


# Each widget's own classes start with its prefix (widgets/README.md, "Styles"), read from
# its stylesheet: the start (a word and a hyphen, `kv-`) that the classes of most of its
# selectors share. Every other selector must name it too (or `[data-widget="NAME"]`), and
# no other script may make a class with it, so a sheet that mixes prefixes, or takes a
# shared one (`pysim-`), fails below; a new widget's sheet needs no line here.
START = re.compile(r"[a-z0-9]+-")


def prefix_of(name: str, css: str) -> str | None:
    counts = {}
    for sel in selectors(css):
        if f'[data-widget="{name}"]' not in sel:
            for start in {m.group(0) for c in CLASS.findall(sel) if (m := START.match(c))}:
                counts[start] = counts.get(start, 0) + 1
    return min(counts, key=lambda start: (-counts[start], start)) if counts else None


def widget_sheets() -> dict[str, Path]:
    """Widget name -> widgets/NAME.css, for every widget that has a stylesheet."""
    return {p.stem: p for p in sorted(WIDGETS_DIR.glob("*.css"))
            if p.name not in (*SHARED_STYLES, *PAGE_WIDE, PREDICT_STYLE)}


def prefixes() -> dict[str, str | None]:
    return {name: prefix_of(name, path.read_text(encoding="utf-8")) for name, path in widget_sheets().items()}


def scripts_of(name: str) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(WIDGETS_DIR.glob(f"{name}*.js")))


def test_every_rule_of_a_widgets_stylesheet_names_that_widget():
    sheets = widget_sheets()
    assert set(sheets) <= set(names()), "a stylesheet in widgets/ that is no simulation's widget"
    PREFIX = prefixes()
    assert None not in PREFIX.values(), PREFIX  # every sheet styles its own classes
    stray, animations = {}, {}
    for name, path in sheets.items():
        css = path.read_text(encoding="utf-8")
        for sel in selectors(css):
            if f'[data-widget="{name}"]' not in sel and not any(c.startswith(PREFIX[name]) for c in CLASS.findall(sel)):
                stray.setdefault(path.name, []).append(sel)
        # Animation names are global too.
        for key in re.findall(r"@keyframes\s+([\w-]+)", css):
            if not key.startswith(PREFIX[name]):
                animations.setdefault(path.name, []).append(key)
    assert stray == {}
    assert animations == {}


def test_a_widgets_class_prefix_is_its_own():
    """No other script makes a class with a widget's prefix, so its rules reach nothing
    else (the shared scripts and the other widgets' scripts)."""
    for name, prefix in prefixes().items():
        made = re.compile(rf"""["' ]{re.escape(prefix)}[a-z]""")  # a class name starting in a string
        others = [p for p in sorted(WIDGETS_DIR.glob("*.js")) if not p.name.startswith(name)]
        assert len(others) > 10
        used = [p.name for p in others if made.search(p.read_text(encoding="utf-8"))]
        assert used == [], f"{prefix} classes made outside {name}: {used}"
        assert made.search(scripts_of(name)), name


def test_the_check_reads_selectors_as_a_browser_does():
    css = ("/* a, b { } */ .x, .y:hover > .z { a: b } @media (max-width: 10px) { .w { c: d } }"
           " @keyframes k { from { e: f } 50% { e: g } to { e: h } }")
    assert selectors(css) == [".x", ".y:hover > .z", ".w"]


def test_the_checkpoints_stylesheet_reaches_checkpoints_only():
    """widgets/predict.css is no widget's, but a look ahead brings it into other pages as
    well: every rule names `.predict` (the checkpoint's block), and only predict.js (and
    the build step writing the block) makes a class starting with predict-."""
    css = (WIDGETS_DIR / PREDICT_STYLE).read_text(encoding="utf-8")
    stray = [sel for sel in selectors(css) if "predict" not in CLASS.findall(sel)]
    assert stray == []
    assert not re.findall(r"@keyframes\s+(?!predict-)", css)
    made = re.compile(r"""["' ]predict-[a-z]""")
    others = [p.name for p in sorted(WIDGETS_DIR.glob("*.js")) if p.name != PREDICT_SCRIPT
              and made.search(p.read_text(encoding="utf-8"))]
    assert others == []
