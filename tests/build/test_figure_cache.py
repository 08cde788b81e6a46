"""sitebuild/figure_cache.py: the build's figures are read back only by the same code."""

from __future__ import annotations

import types

from sitebuild import figure_cache


def tree(tmp_path, source: str):
    for rel, text in (("pysim/__init__.py", source), ("pysim/sims/lab.py", "x = 1\n"), ("data/records.jsonl", "{}\n")):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def figures_module(groups: dict | None = None):
    """A stand-in for pysim.figures: what it computed, and what it was given."""
    module = types.SimpleNamespace(adopted=None)
    module.computed = lambda: dict(groups or {})
    module.adopt = lambda g: setattr(module, "adopted", g)
    return module


def test_the_same_files_read_back_what_the_build_computed(tmp_path):
    root = tree(tmp_path, "A = 1\n")
    assert not figure_cache.load(figures_module(), root)  # nothing built yet
    figure_cache.save(figures_module({"lab": {"capacity": 2.5}}), root)
    reader = figures_module()
    assert figure_cache.load(reader, root)
    assert reader.adopted == {"lab": {"capacity": 2.5}}


def test_a_change_to_pysim_or_its_data_reads_nothing(tmp_path):
    root = tree(tmp_path, "A = 1\n")
    figure_cache.save(figures_module({"lab": {"capacity": 2.5}}), root)
    before = figure_cache.digest(root)
    (root / "pysim" / "__init__.py").write_text("A = 2\n")
    assert figure_cache.digest(root) != before
    assert not figure_cache.load(figures_module(), root)
    (root / "pysim" / "__init__.py").write_text("A = 1\n")
    assert figure_cache.digest(root) == before
    (root / "data" / "records.jsonl").write_text("{\"a\": 1}\n")
    assert not figure_cache.load(figures_module(), root)


def test_a_new_build_leaves_only_its_own_figures(tmp_path):
    root = tree(tmp_path, "A = 1\n")
    figure_cache.save(figures_module({"g": {"k": 1}}), root)
    (root / "pysim" / "__init__.py").write_text("A = 2\n")
    figure_cache.save(figures_module({"g": {"k": 2}}), root)
    assert len(list((root / ".cache" / "figures").glob("*.pickle"))) == 1


def test_pysim_figures_adopts_groups_it_has_not_computed():
    import pysim.figures as figures

    was = figures.computed()
    try:
        figures.adopt({"zz_test": {"k": 7}})
        assert figures.figure("zz_test.k") == 7
        assert figures.figure("little.w_s") == figures._formula_groups()["little"]["w_s"]
    finally:
        figures._CACHE = was or None
