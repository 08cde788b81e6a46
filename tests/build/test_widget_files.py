"""The size of the widgets' scripts (issue 13): a widget file holds its layout, its
drawing and its own interactions; what every widget needs is in live.js, once."""

from sitebuild.assets import WIDGETS_DIR

MAX_LINES = 450


def test_no_script_in_widgets_is_over_450_lines():
    scripts = sorted(WIDGETS_DIR.glob("*.js"))
    assert len(scripts) > 10
    lengths = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in scripts}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}
