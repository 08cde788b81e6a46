"""Content-hashed names, and the tags a widget page gets, from hand-made inputs."""

import json
import re

from sitebuild import assets
from sitebuild.assets import Asset

# sha256("") = e3b0c442 98fc1c14 ... and sha256("abc") = ba7816bf 8f01cfea ... (the test
# vectors of FIPS 180-2); a name keeps the first 10 hex digits.
EMPTY, ABC = "e3b0c44298", "ba7816bf8f"


def test_a_name_carries_the_first_ten_digits_of_the_content_hash():
    assert assets.hashed_name("rpc.js", b"") == f"rpc.{EMPTY}.js"
    assert assets.hashed_name("uPlot.min.css", b"abc") == f"uPlot.min.{ABC}.css"


def test_collect_hashes_widgets_and_vendored_files(tmp_path):
    widgets, npm = tmp_path / "widgets", tmp_path / "node_modules"
    widgets.mkdir()
    (widgets / "rpc.js").write_bytes(b"abc")
    (widgets / "widgets.css").write_bytes(b"")
    (widgets / "notes.txt").write_bytes(b"not shipped")
    (widgets / assets.THEME).write_bytes(b"abc")
    for rel in [r for files in [*assets.VENDOR.values(), *assets.VENDOR_LATER.values()] for r in files]:
        (npm / rel).parent.mkdir(parents=True, exist_ok=True)
        (npm / rel).write_bytes(b"")
    found = assets.collect(widgets, npm)
    assert found["rpc.js"] == Asset(f"assets/widgets/rpc.{ABC}.js", b"abc")
    assert found["widgets.css"].path == f"assets/widgets/widgets.{EMPTY}.css"
    assert found["uplot/dist/uPlot.iife.min.js"].path == f"assets/vendor/uPlot.iife.min.{EMPTY}.js"
    assert "notes.txt" not in found
    # The site's stylesheet is every page's, not a widget's: not under assets/widgets/.
    assert assets.THEME not in found
    assert assets.theme(widgets) == Asset(f"assets/stylesheets/theme.{ABC}.css", b"abc")
    # 2 widget files + 2 uPlot files + 4 of Ace.
    assert len(found) == 8
    assert assets.files(found)[f"assets/widgets/rpc.{ABC}.js"] == b"abc"


CODE_WIDGET = next(iter(assets.VENDOR_LATER))  # a widget whose code editor loads Ace later


def fake_assets():
    names = [*assets.SHARED_SCRIPTS, assets.CHARTS, assets.LATER, assets.EDITOR, "worker.js", "race.part.js", "widgets.css", "race.js", "batch_size.js", "batch_size.css",
             f"{CODE_WIDGET}.js", *assets.VENDOR["batch_size"], *assets.VENDOR_LATER[CODE_WIDGET]]
    return {n: Asset(f"assets/x/{n.rsplit('/', 1)[-1]}", b"") for n in names}


RUNTIME = {"pyodide": "assets/pyodide/1.2.3/", "lock": "assets/pyodide/1.2.3/lock.json", "sizes": {"a.whl": 5},
           "stdlib": "assets/pyodide/1.2.3/c.pyc.zip"}


def test_a_page_loads_vendor_then_runtime_then_its_widgets_once_each():
    page = assets.page_assets(["race", "batch_size", "race"], fake_assets(), RUNTIME, up="../")
    # Widgets sorted by name; uPlot (batch_size's library) before everything it needs.
    # The shared scripts in their run order, the chart kit (uPlot is on the page), and a
    # widget's part file (race.part.js) before it.
    shared = [f"../assets/x/{n}" for n in assets.SHARED_SCRIPTS]
    assert page.scripts == ["../assets/x/uPlot.iife.min.js", *shared, "../assets/x/charts.js",
                            "../assets/x/batch_size.js", "../assets/x/race.part.js", "../assets/x/race.js"]
    assert page.styles == ["../assets/x/uPlot.min.css", "../assets/x/widgets.css", "../assets/x/batch_size.css"]
    settings = json.loads(page.runtime)
    assert settings == {"pyodide": "../assets/pyodide/1.2.3/", "lock": "../assets/pyodide/1.2.3/lock.json",
                        "worker": "../assets/x/worker.js", "package": "pysim", "sizes": {"a.whl": 5},
                        "stdlib": "../assets/pyodide/1.2.3/c.pyc.zip",
                        # Every widget's, this page's or not (the exercise's and the policy lab's editors).
                        "later": {name: [f"../assets/x/{n.rsplit('/', 1)[-1]}" for n in files]
                                  for name, files in assets.VENDOR_LATER.items()},
                        "widget_pages": []}


def test_a_page_with_a_code_editor_loads_the_editor_before_its_widget_and_ace_later():
    page = assets.page_assets([CODE_WIDGET, "race"], fake_assets(), RUNTIME)
    shared = [f"assets/x/{n}" for n in assets.SHARED_SCRIPTS]
    vendor = [f"assets/x/{n.rsplit('/', 1)[-1]}" for n in assets.VENDOR.get(CODE_WIDGET, ()) if n.endswith(".js")]
    kit = ["assets/x/charts.js"] if assets.UPLOT in assets.VENDOR.get(CODE_WIDGET, ()) else []
    assert page.scripts == [*vendor, *shared, *kit, "assets/x/later.js", "assets/x/editor.js",
                            f"assets/x/{CODE_WIDGET}.js", "assets/x/race.part.js", "assets/x/race.js"]
    # Ace itself is not on the page: the editor asks for it (PySim.loadLater).
    assert not any(s.rsplit("/", 1)[-1].startswith(("ace.", "mode-", "theme-")) for s in page.scripts)
    plain = assets.page_assets(["race"], fake_assets(), RUNTIME).scripts
    assert "assets/x/editor.js" not in plain and "assets/x/later.js" not in plain


def test_every_page_lists_the_widget_pages_from_where_it_is():
    page = assets.page_assets(["race"], fake_assets(), {**RUNTIME, "widget_pages": ["a.html", "b/index.html"]}, "../")
    assert json.loads(page.runtime)["widget_pages"] == ["../a.html", "../b/index.html"]


def test_libraries_for_later_are_listed_not_linked():
    page = assets.page_assets([CODE_WIDGET], fake_assets(), RUNTIME)
    assert page.scripts == [*(f"assets/x/{n}" for n in assets.SHARED_SCRIPTS), "assets/x/later.js", "assets/x/editor.js",
                            f"assets/x/{CODE_WIDGET}.js"]
    assert json.loads(page.runtime)["later"][CODE_WIDGET] == [
        "assets/x/ace.js", "assets/x/mode-python.js", "assets/x/theme-chrome.js", "assets/x/theme-tomorrow_night.js"]


def test_every_widget_page_carries_the_same_settings():
    """rpc.js reads them once per visit, and instant navigation makes a visit span pages."""
    pages = [assets.page_assets(names, fake_assets(), RUNTIME) for names in (["race"], [CODE_WIDGET], ["batch_size", "race"])]
    assert len({page.runtime for page in pages}) == 1


def test_the_settings_cannot_close_their_script_element():
    page = assets.page_assets(["race"], fake_assets(), {**RUNTIME, "sizes": {"</script>.whl": 1}})
    assert "</" not in page.runtime
    assert json.loads(page.runtime)["sizes"] == {"</script>.whl": 1}


def test_data_files_are_hashed_and_each_page_gets_urls_relative_to_itself(tmp_path):
    (tmp_path / "conv.txt.gz").write_bytes(b"abc")
    (tmp_path / "code.txt.gz").write_bytes(b"")
    data = assets.collect_data({"lab": {"/pysim-data/traces/conv.txt.gz": tmp_path / "conv.txt.gz",
                                        "/pysim-data/traces/code.txt.gz": tmp_path / "code.txt.gz"}})
    # Only the last dot's extension stays after the hash: conv.txt.<hash>.gz.
    assert data["lab"]["/pysim-data/traces/conv.txt.gz"] == Asset(f"assets/data/conv.txt.{ABC}.gz", b"abc")
    assert data["lab"]["/pysim-data/traces/code.txt.gz"].path == f"assets/data/code.txt.{EMPTY}.gz"
    # A page one folder down (lab/) reaches the root through "../".
    assert assets.data_urls(data, "../") == {"lab": {
        "/pysim-data/traces/code.txt.gz": f"../assets/data/code.txt.{EMPTY}.gz",
        "/pysim-data/traces/conv.txt.gz": f"../assets/data/conv.txt.{ABC}.gz"}}
    assert assets.data_files(data) == {f"assets/data/conv.txt.{ABC}.gz": b"abc", f"assets/data/code.txt.{EMPTY}.gz": b""}


def test_a_page_with_a_checkpoint_loads_predict_last_and_one_without_widgets_only_that():
    have = {**fake_assets(), **{n: Asset(f"assets/x/{n}", b"") for n in (assets.PREDICT_SCRIPT, assets.PREDICT_STYLE)}}
    page = assets.page_assets(["race"], have, RUNTIME, "../", predict=True)
    assert page.scripts[-1] == "../assets/x/predict.js" and page.styles[-1] == "../assets/x/predict.css"
    assert page.runtime == assets.page_assets(["race"], have, RUNTIME, "../").runtime
    alone = assets.page_assets([], have, RUNTIME, "../", predict=True)
    # No runtime settings and none of the kit: nothing on that page starts Python.
    assert (alone.scripts, alone.styles, alone.runtime) == (["../assets/x/predict.js"], ["../assets/x/predict.css"], "")


# What a widget script takes from window.PySim as it runs, and what it adds there.
TAKES = re.compile(r"const \{([^}]*)\} = window\.PySim(?:\.(\w+))?;")
GIVES = re.compile(r"(?:Object\.assign\(window\.PySim(?: \|\| \{\})?, \{([^}]*)\}|window\.PySim\.(\w+) =)")


def test_each_script_of_a_widget_page_runs_after_every_script_it_takes_from():
    """The kit is one job per file, each taking what earlier files put on window.PySim:
    on every widget's page, in the order the page runs them, nothing is taken before it is given."""
    found = assets.collect()
    by_path = {a.path: name for name, a in found.items()}
    widgets = sorted(n[:-3] for n in found if n.endswith(".js") and n.count(".") == 1
                     and "/" not in n and "PySim.widget(" in (assets.WIDGETS_DIR / n).read_text(encoding="utf-8"))
    assert widgets
    for widget in widgets:
        given = set()
        for path in assets.page_assets([widget], found, RUNTIME).scripts:
            name = by_path[path]
            if "/" in name:  # a vendored library
                continue
            source = (assets.WIDGETS_DIR / name).read_text(encoding="utf-8")
            taken = set()
            for names, part in TAKES.findall(source):  # `= window.PySim.PART;` takes PART
                taken |= {part} if part else {n.split(":")[0].strip() for n in names.split(",") if n.strip()}
            assert taken <= given, f"{widget}'s page runs {name} before what gives it {sorted(taken - given)}"
            for many, one in GIVES.findall(source):
                given |= {n.split(":")[0].strip() for n in many.split(",") if n.strip()} | ({one} if one else set())
