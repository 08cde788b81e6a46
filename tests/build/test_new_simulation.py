"""Issue 36: a new simulation touches exactly the files CONTRIBUTING.md's "Adding a
simulation" lists, and nothing else keeps a list of simulations.

The test copies the tree into a temporary folder and adds a throwaway simulation there
as CONTRIBUTING says: its module, its line in the registry, its widget's script and
stylesheet, its page and the page's line in mkdocs.yml, its unit and page tests. The copy
then differs from this tree in those files and no others. A stand-in of the built site
holds the page (the build's own pre-render step fills its widget). In a fresh Python on
the copy, every list that must hold the new simulation does: the bridge calls and
describes it, the command line runs it, its `{{ NAME.key }}` figure fills, the build
ships its widget files to its page and pre-renders it, and the shared suites collect
it: the bridge fuzzing, the vocabulary checks, the stylesheet rules (its class prefix read from its CSS), the
live.js checks, the resize check, the random-actions test (with the default normal
check), the pre-rendered-equals-Pyodide and crafted-link checks, the offline and
accessibility pages. A list kept by hand anywhere in these would miss it, and this test
would fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from sitebuild.assets import VENDOR, VENDOR_LATER

ROOT = Path(__file__).resolve().parents[2]
NAME = "throwaway_sim"
PAGE = "throwaway-sim"
COPIED = ("pysim", "widgets", "sitebuild", "tests", "docs", "mkdocs.yml", "CONTRIBUTING.md")

MODULE = '''"""A throwaway simulation (tests/build/test_new_simulation.py): twice a number."""

from __future__ import annotations

from dataclasses import dataclass

from pysim.config import bounded, to_mapping
from pysim.registry import Simulation


@dataclass(frozen=True)
class ThrowawayConfig:
    n: int = bounded(3, 1, 9, "the number to double", label="A number", unit="items")


def run(config: ThrowawayConfig, actions: list) -> dict:
    return {"config": to_mapping(config), "total": 2 * config.n}


def text(view: dict) -> str:
    return f"twice {view['config']['n']} is {view['total']}"


def figures() -> dict:
    return {"total": run(ThrowawayConfig(), [])["total"]}


SIMULATION = Simulation(name="throwaway_sim", config_cls=ThrowawayConfig, run=run, text=text, figures=figures)
'''

SCRIPT = '''(function () {
  "use strict";
  const { h, fmt } = window.PySim;
  window.PySim.widget("throwaway_sim", {
    mount(w) {
      const controls = w.controls();
      const answer = h("p", { class: "tsim-answer" });
      const canvas = h("canvas", { class: "tsim-chart" });
      w.body.append(controls.root, w.messages, answer, canvas);
      w.observe(new ResizeObserver(() => { canvas.width = Math.round(w.body.clientWidth); }));
      return { draw(view) { answer.textContent = fmt(view.total); } };
    },
  });
})();
'''

STYLES = '''.tsim-answer { font-weight: bold; }
[data-widget="throwaway_sim"] .pysim-control { margin: 0; }
'''

DOC = '''# A throwaway page

Twice three is {{ throwaway_sim.total }}.

<div class="pysim-widget" data-widget="throwaway_sim"></div>
'''

UNIT_TEST = '''from pysim import bridge


def test_twice():
    assert bridge.run("throwaway_sim", {"config": {"n": 4}})["total"] == 8
'''

PAGE_TEST = '''from conftest import page_url


def test_the_page_opens(make_page, site_url):
    make_page().goto(page_url(site_url, "throwaway-sim"))
'''

# The new simulation's files, in CONTRIBUTING's words (NAME, NAME-with-hyphens).
TOUCHED = {
    f"pysim/sims/{NAME}.py": MODULE,
    "pysim/registry.py": None,          # one line in MODULES
    f"widgets/{NAME}.js": SCRIPT,
    f"widgets/{NAME}.css": STYLES,
    f"docs/{PAGE}.md": DOC,
    "mkdocs.yml": None,                 # the page's line in nav
    f"tests/unit/test_{NAME}.py": UNIT_TEST,
    f"tests/browser/test_{NAME}_page.py": PAGE_TEST,
}


def add_simulation(repo: Path) -> None:
    for rel, text in TOUCHED.items():
        if text is not None:
            (repo / rel).write_text(text, encoding="utf-8")
    registry = repo / "pysim" / "registry.py"
    source = registry.read_text(encoding="utf-8")
    assert "MODULES = {\n" in source
    registry.write_text(source.replace("MODULES = {\n", f'MODULES = {{\n    "{NAME}": "sims.{NAME}",\n', 1), encoding="utf-8")
    mkdocs = repo / "mkdocs.yml"
    source = mkdocs.read_text(encoding="utf-8")
    line = re.search(r"^( +)- [^\n]*: exercises\.md\n", source, re.M)
    mkdocs.write_text(source[:line.end()] + f"{line.group(1)}- A throwaway page: {PAGE}.md\n" + source[line.end():],
                      encoding="utf-8")


def changed_files(repo: Path) -> set[str]:
    """The files of the copy that this tree lacks or holds with other bytes."""
    out = set()
    for path in repo.rglob("*"):
        rel = path.relative_to(repo).as_posix()
        if path.is_file() and "__pycache__" not in rel and not rel.startswith("node_modules/"):
            original = ROOT / rel
            if not original.is_file() or original.read_bytes() != path.read_bytes():
                out.add(rel)
    return out


def copy_tree(dest: Path) -> Path:
    repo = dest / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for rel in COPIED:
        if (ROOT / rel).is_dir():
            shutil.copytree(ROOT / rel, repo / rel, ignore=ignore)
        else:
            shutil.copy2(ROOT / rel, repo / rel)
    for rel in {rel for files in [*VENDOR.values(), *VENDOR_LATER.values()] for rel in files}:
        (repo / "node_modules" / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / "node_modules" / rel).write_bytes(b"")  # npm's libraries: their bytes matter not here
    return repo


# Run in the copy, on its pysim, sitebuild and tests: every derived list, as JSON.
PROBE = r'''
import contextlib, io, json, sys
from pathlib import Path
from pysim import bridge, figures, registry
from pysim.__main__ import main
from sitebuild import assets, prerender
from sitebuild.figures import expand
import sitebuild.plots

NAME, PAGE, SITE = sys.argv[1], sys.argv[2], Path(sys.argv[3])
out = {}
out["names"] = list(registry.names())
out["call"] = json.loads(bridge.call(NAME, '{"config": {"n": 4}}'))
out["refused"] = json.loads(bridge.call(NAME, '{"config": {"n": 10}}'))
out["described"] = json.loads(bridge.call("describe", "{}"))["result"].get(NAME)
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    out["cli_status"] = main([PAGE, "--set", "n=5"])
out["cli"] = printed.getvalue()

# The build: the page's figures and widget, the files its page links, the nav's widget pages.
markdown = Path("docs", PAGE + ".md").read_text()
html = expand(markdown, figures.figure, sitebuild.plots, PAGE + ".md")
found = assets.collect()
scripts = {n[:-3] for n in found if n.endswith(".js") and "/" not in n}
html, widgets = prerender.prerender(html, bridge.call, prerender.describe(bridge.call), scripts, PAGE + ".md")
out["figure_filled"] = "Twice three is 6." in html
out["prerendered"] = widgets
out["model_is_the_bridges"] = prerender.models(html)[0]["view"] == json.loads(bridge.call(NAME, '{"config": {}}'))["result"]
runtime = {"pyodide": "p/", "lock": "p/lock.json", "sizes": {}, "stdlib": "p/s.pyc.zip", "widget_pages": []}
page = assets.page_assets(widgets, found, runtime)
out["page_scripts"], out["page_styles"] = page.scripts, page.styles
out["shipped"] = sorted(n for n in found if n.startswith(NAME))
out["nav_widget_pages"] = prerender.widget_pages([(p.stem + ".html", p.read_text()) for p in sorted(Path("docs").glob("*.md"))])
# The stand-in of the built site: this page as the build writes it, and a plain one.
SITE.mkdir()
(SITE / (PAGE + ".html")).write_text(html)
(SITE / "index.html").write_text("<p>no widget here</p>")

# The tests' own derived collections (they read the site when imported).
sys.path[:0] = ["tests/build", "tests/unit"]
import test_widget_styles, test_bridge_fuzz
sys.modules.pop("conftest", None)
sys.path[:2] = ["tests/browser"]  # whose conftest is another
import test_live, test_resize, test_robustness, test_security, test_offline
out["prefix"] = test_widget_styles.prefixes().get(NAME)
out["fuzzed"] = NAME in test_bridge_fuzz.NAMES
out["live"] = test_live.LIVE.get(NAME)
out["drawings"] = [d[:2] for d in test_resize.DRAWINGS]
out["drawing_width"] = [d[2] for d in test_resize.DRAWINGS if d[1] == NAME] == [test_resize.ANY_DRAWING]
out["robustness_pages"] = test_robustness.PAGES
out["normal_check"] = repr(test_robustness.normal_check(NAME))
out["security_pages"] = test_security.WIDGET_PAGES
out["linked"] = NAME in test_security.LINKED
out["offline_pages"] = test_offline.WIDGET_PAGES
print(json.dumps(out))
'''


def in_copy(repo: Path, *args: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=repo, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(repo), **env})


def test_a_new_simulation_needs_only_the_files_contributing_lists(tmp_path):
    repo = copy_tree(tmp_path)
    add_simulation(repo)
    assert changed_files(repo) == set(TOUCHED)

    # CONTRIBUTING names each of those files, and their number.
    guide = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = " ".join(guide.split("## Adding a simulation", 1)[1].split("\n## ", 1)[0].split())
    for rel in TOUCHED:
        assert f"`{rel.replace(PAGE, 'NAME-with-hyphens').replace(NAME, 'NAME')}`" in section, rel
    assert f"exactly these {len(TOUCHED)} files" in section

    site = tmp_path / "site"
    probe = in_copy(repo, "-c", PROBE, NAME, PAGE, str(site), PYSIM_SITE_DIR=str(site))
    assert probe.returncode == 0, probe.stderr[-3000:]
    got = json.loads(probe.stdout.splitlines()[-1])

    # pysim: the bridge, describe, the command line.
    assert NAME in got["names"]
    assert got["call"] == {"ok": True, "result": {"config": {"n": 4}, "total": 8}}
    assert got["refused"]["ok"] is False and got["refused"]["error"]["field"] == "n"
    assert [f["label"] for f in got["described"]["fields"]] == ["A number"]
    assert got["cli_status"] == 0 and got["cli"].strip() == "twice 5 is 10"
    # The build: figure, pre-render, the widget's files shipped and linked by its page.
    assert got["figure_filled"] and got["prerendered"] == [NAME] and got["model_is_the_bridges"]
    assert got["shipped"] == [f"{NAME}.css", f"{NAME}.js"]
    assert got["page_scripts"][-1].startswith(f"assets/widgets/{NAME}.") and got["page_scripts"][-1].endswith(".js")
    assert got["page_styles"][-1].startswith(f"assets/widgets/{NAME}.") and got["page_styles"][-1].endswith(".css")
    assert f"{PAGE}.html" in got["nav_widget_pages"]
    # The tests' collections.
    assert got["prefix"] == "tsim-"
    assert got["fuzzed"]
    assert got["live"] == PAGE
    assert [PAGE, NAME] in got["drawings"] and got["drawing_width"]
    assert got["normal_check"].startswith("functools.partial(<function default_answers")
    for pages in (got["robustness_pages"], got["security_pages"], got["offline_pages"]):
        assert pages == {PAGE: [NAME]}
    assert got["linked"]

    # The suites themselves: the CPython ones run on the new simulation and pass; the
    # browser ones collect a test of it wherever they collect one per widget or page.
    ran = in_copy(repo, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", "-k", f"{NAME} or widget_styles or vocabulary",
                  "tests/build/test_widget_styles.py", "tests/unit/test_bridge_fuzz.py", "tests/unit/test_vocabulary.py",
                  f"tests/unit/test_{NAME}.py")
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert re.search(r"(\d+) passed", ran.stdout) and int(re.search(r"(\d+) passed", ran.stdout).group(1)) >= 8
    browser = ["test_live", "test_resize", "test_robustness", "test_widget_pages", "test_offline",
               "test_accessibility", f"test_{NAME}_page"]
    collected = in_copy(repo, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--collect-only",
                        *(f"tests/browser/{b}.py" for b in browser), PYSIM_SITE_DIR=str(site),
                        PYSIM_OFFLINE_SITE_DIR=str(site))
    assert collected.returncode == 0, collected.stdout[-3000:]
    ids = set(collected.stdout.split())
    for name in browser:
        mine = [i for i in ids if i.startswith(f"tests/browser/{name}.py::") and (NAME in i or PAGE in i)]
        assert mine, f"{name} collects nothing for the new simulation"
