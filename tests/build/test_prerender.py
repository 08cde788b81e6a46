"""Widget placeholders filled with a view model, against a stand-in for pysim.bridge.call."""

import json
import shutil
import subprocess
import sys

import pytest

from sitebuild import ROOT, BuildError, prerender

FIELDS = {"race": {"fields": [{"name": "seed"}]}, "toy": {"fields": []}}


def call(name, payload):
    """A bridge that echoes its config, and refuses seed 0 as pysim's would."""
    config = json.loads(payload)["config"]
    if config.get("seed") == 0:
        return json.dumps({"ok": False, "error": {"field": "seed", "message": "seed must be 1..1000"}})
    return json.dumps({"ok": True, "result": {"name": name, "echo": config, "note": "a </script> inside"}})


def model_of(html):
    return prerender.models(html)[0]


def test_a_placeholder_gets_its_model_its_fields_and_a_noscript_line():
    page = '<p>a</p><div class="pysim-widget" data-widget="race"></div><p>b</p>'
    out, found = prerender.prerender(page, call, FIELDS, {"race"})
    assert found == ["race"]
    assert out.startswith('<p>a</p><div class="pysim-widget" data-widget="race" id="widget-race" '
                          'data-search-exclude><template class="pysim-prerender">')
    assert out.endswith(prerender.NOSCRIPT + "</div><p>b</p>")
    assert model_of(out) == {"config": {}, "view": {"name": "race", "echo": {}, "note": "a </script> inside"},
                             "fields": [{"name": "seed"}]}
    # The model's markup is escaped text: the data block ends where it should, and
    # nothing in it is an element.
    assert out.count("</template>") == 1 and "</script>" not in out and "&lt;/script&gt;" in out


def test_the_config_attribute_is_read_after_html_unescaping():
    page = ('<div class="pysim-widget" data-widget="race" data-config=\'{"seed": 7, "x": "&lt;b&gt;"}\'>\n</div>'
            '<div class="pysim-widget" data-widget="toy"></div>')
    out, found = prerender.prerender(page, call, FIELDS, {"race", "toy"})
    assert found == ["race", "toy"]
    assert model_of(out)["view"]["echo"] == {"seed": 7, "x": "<b>"}
    assert 'id="widget-race" data-config=\'{"seed": 7, "x": "&lt;b&gt;"}\' data-search-exclude>' in out  # attributes kept


def test_a_widget_without_a_script_is_an_error():
    with pytest.raises(BuildError, match=r"docs/p\.md uses widget 'race' but widgets/race\.js does not exist"):
        prerender.prerender('<div class="pysim-widget" data-widget="race"></div>', call, FIELDS, set(), "docs/p.md")


def test_a_config_pysim_refuses_is_an_error():
    page = '<div class="pysim-widget" data-widget="race" data-config=\'{"seed": 0}\'></div>'
    with pytest.raises(BuildError, match="seed must be 1..1000"):
        prerender.prerender(page, call, FIELDS, {"race"})


def test_a_page_without_widgets_is_unchanged():
    assert prerender.prerender("<p>text</p>", call, FIELDS, {"race"}) == ("<p>text</p>", [])


def test_widget_pages_are_the_pages_whose_markdown_holds_a_widget_in_the_order_given():
    pages = [("b.html", '<div class="pysim-widget" data-widget="toy"></div>'),
             ("a.html", "No widget here, only the word pysim-widget."),
             ("c/index.html", 'Text.\n\n<div class="pysim-widget" data-widget="race" data-config=\'{}\'></div>\n')]
    assert prerender.widget_pages(pages) == ["b.html", "c/index.html"]
    assert prerender.widget_pages([]) == []


def test_describe_lists_the_fields_of_every_simulation_the_bridge_knows():
    from pysim import bridge  # not fresh_import: that would drop the pysim other tests hold

    fields = prerender.describe(bridge.call)
    assert fields and all(isinstance(f["fields"], list) for f in fields.values())


def test_a_widget_with_data_files_carries_their_map_and_others_do_not():
    page = '<div class="pysim-widget" data-widget="race"></div><div class="pysim-widget" data-widget="toy"></div>'
    files = {"race": {"/pysim-data/traces/conv.txt.gz": "../assets/data/conv.txt.0123456789.gz"}}
    out, found = prerender.prerender(page, call, FIELDS, {"race", "toy"}, "docs/p.md", files)
    assert found == ["race", "toy"]
    first, second = out.split('data-widget="toy"')
    assert model_of(first)["files"] == files["race"]
    assert "files" not in model_of(second)


def test_a_second_build_keeps_pysim_until_one_of_its_files_changes(tmp_path):
    """`python -m sitebuild`'s second build reuses the first one's pysim (and the figures
    it computed); `mkdocs serve` gets a fresh one after an edit. In a Python of its own,
    on a copy of pysim: dropping modules here would drop the pysim other tests hold."""
    shutil.copytree(ROOT / "pysim", tmp_path / "pysim", ignore=shutil.ignore_patterns("__pycache__"))
    script = """
import sys
from pathlib import Path
from sitebuild import prerender
source = Path(sys.argv[1])
first = prerender.fresh_import("pysim.figures", source)
again = prerender.fresh_import("pysim.figures", source)
edited = source / "pysim" / "utils.py"
edited.write_text(edited.read_text() + "\\n# an edit\\n")
after = prerender.fresh_import("pysim.figures", source)
print(first is again, again is after, Path(first.__file__).is_relative_to(source))
"""
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["True", "False", "True"], out


def test_a_companion_comes_with_its_fields_and_a_view_per_option():
    """data-companions='{"SIM": "FIELD"}' (the policy lab's puzzles): the companion's fields
    and its view for each option of FIELD, so the widget lists them before Python starts."""
    fields = {**FIELDS, "quiz": {"fields": [{"name": "which", "kind": "choice", "options": ["a", "b"]}]}}
    page = '<div class="pysim-widget" data-widget="race" data-companions=\'{"quiz": "which"}\'></div>'
    out, _ = prerender.prerender(page, call, fields, {"race"})
    companions = model_of(out)["companions"]
    assert companions == {"quiz": {"field": "which", "fields": fields["quiz"]["fields"], "views": {
        "a": {"name": "quiz", "echo": {"which": "a"}, "note": "a </script> inside"},
        "b": {"name": "quiz", "echo": {"which": "b"}, "note": "a </script> inside"}}}}
    with pytest.raises(BuildError, match="no choice field 'nope'"):
        prerender.prerender(page.replace('"which"', '"nope"'), call, fields, {"race"})
