"""The standard library the page ships (sitebuild/stdlib.py): deterministic, holding
every standard module pysim imports, and naming what it left out. (That the exact zip
runs pysim and the exercise in Pyodide is tests/pyodide/cut_stdlib.mjs's, in
`make test-pyodide`.)"""

import ast
import io
import sys
import zipfile

import pytest

from sitebuild import ROOT, pyodide_runtime, stdlib


def fake_full(names):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in names:
            z.writestr(name, f"# {name}\n")
    return out.getvalue()


def test_the_cut_keeps_what_the_page_uses_and_leaves_the_rest_out():
    full = fake_full(["os.py", "json/__init__.py", "json/decoder.py", "email/__init__.py", "smtplib.py",
                      "encodings/__init__.py", "encodings/utf_8.py", "encodings/cp1140.py"])
    names = zipfile.ZipFile(io.BytesIO(stdlib.cut(full))).namelist()
    assert {"os.py", "json/__init__.py", "json/decoder.py", "encodings/utf_8.py", "sitecustomize.py"} <= set(names)
    assert not {"smtplib.py", "encodings/cp1140.py"} & set(names)


def test_the_same_zip_cuts_to_the_same_bytes():
    full = (pyodide_runtime.NPM_DIR / stdlib.NAME).read_bytes()
    assert stdlib.cut(full) == stdlib.cut(full)
    assert len(stdlib.cut(full)) < len(full) / 2


def test_importing_a_left_out_module_says_it_was_left_out(monkeypatch):
    full = fake_full(["os.py", "nntplib_fake_cut.py"])
    finder = zipfile.ZipFile(io.BytesIO(stdlib.cut(full))).read("sitecustomize.py").decode()
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    exec(compile(finder, "sitecustomize.py", "exec"), {})
    assert sys.meta_path[-1].__name__ == "LeftOut"  # last: a reader's own module of that name wins
    with pytest.raises(ModuleNotFoundError, match="left out of this page's Python") as err:
        import nntplib_fake_cut.sub  # noqa: F401
    assert err.value.name == "nntplib_fake_cut"
    with pytest.raises(ModuleNotFoundError, match="No module named 'not_in_any_python'$"):
        import not_in_any_python  # noqa: F401  (not the standard library's: the usual message)


def stdlib_imports(source: str) -> set[str]:
    tops = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            tops |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return tops & set(sys.stdlib_module_names)


def test_every_standard_module_pysim_imports_is_kept():
    shipped = zipfile.ZipFile(io.BytesIO(pyodide_runtime.page_stdlib()))
    in_zip = {stdlib.top_name(n) for n in shipped.namelist()}
    full = {stdlib.top_name(n) for n in zipfile.ZipFile(pyodide_runtime.NPM_DIR / stdlib.NAME).namelist()}
    used = set()
    for path in (ROOT / "pysim").rglob("*.py"):
        if path.name != "__main__.py":  # the command line's, never run in the page
            used |= stdlib_imports(path.read_text(encoding="utf-8"))
    # Modules compiled into Pyodide (math, itertools, ...) are not in either zip.
    assert sorted((used & full) - in_zip) == []
    assert sorted((set(stdlib.READER) & full) - in_zip) == []
