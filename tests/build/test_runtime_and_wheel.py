"""The Pyodide runtime's files, and the wheel with its lock file."""

import io
import json
import re
import zipfile

import pytest

from sitebuild import ROOT, pyodide_runtime, wheel

EMPTY = "e3b0c44298fc"  # sha256("") begins e3b0c442 98fc1c14 (FIPS 180-2 test vector)


def test_the_runtime_is_served_under_its_version(tmp_path):
    (tmp_path / "package.json").write_text(json.dumps({"version": "9.8.7"}))
    for i, name in enumerate(pyodide_runtime.FILES):
        (tmp_path / name).write_bytes(b"x" * (i + 1))
    with zipfile.ZipFile(tmp_path / "python_stdlib.zip", "w") as full:
        full.writestr("os.py", "")
        full.writestr("smtplib.py", "# not the page's")
    # The page's cut (what the build compiles), not npm's whole zip.
    cut = zipfile.ZipFile(io.BytesIO(pyodide_runtime.page_stdlib(tmp_path))).namelist()
    assert "os.py" in cut and "smtplib.py" not in cut
    files = pyodide_runtime.runtime_files(b"bytecode", tmp_path)
    [compiled_name] = [p for p in files if re.fullmatch(r"assets/pyodide/9\.8\.7/python_stdlib\.[0-9a-f]{10}\.pyc\.zip", p)]
    assert files.pop(compiled_name) == b"bytecode"
    # One standard library: no sources beside the bytecode.
    assert files == {f"assets/pyodide/9.8.7/{n}": tmp_path / n for n in pyodide_runtime.FILES if n != "python_stdlib.zip"}
    assert pyodide_runtime.download_sizes(b"bytecode", tmp_path) == {
        "pyodide.mjs": 1, "pyodide.asm.mjs": 2, "pyodide.asm.wasm": 3, compiled_name.rsplit("/", 1)[1]: len(b"bytecode")}


def test_a_missing_runtime_says_how_to_get_it(tmp_path):
    with pytest.raises(Exception, match="npm ci"):
        pyodide_runtime.check(tmp_path)


def test_the_wheel_name_carries_its_hash_as_a_build_tag(tmp_path):
    assert wheel.hashed_wheel_name("pysim-0.1.0-py3-none-any.whl", b"") == f"pysim-0.1.0-0h{EMPTY}-py3-none-any.whl"
    empty = tmp_path / "w.whl"
    empty.write_bytes(b"")
    assert wheel.lock_name(empty) == f"pyodide-lock.{EMPTY}.json"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return wheel.build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_pysim_and_nothing_of_the_build(built):
    names = zipfile.ZipFile(built).namelist()
    assert "pysim/bridge.py" in names
    assert all(n.startswith(("pysim/", "pysim-")) for n in names), [n for n in names if not n.startswith("pysim")]
    version = built.name.split("-")[1]
    assert built.name == wheel.hashed_wheel_name(f"pysim-{version}-py3-none-any.whl", built.read_bytes())


def test_the_same_tree_builds_the_same_wheel(built, tmp_path):
    assert wheel.build_wheel(tmp_path).read_bytes() == built.read_bytes()


@pytest.mark.skipif(not (ROOT / ".venv-lock" / "bin" / "pyodide").exists(),
                    reason="pyodide-build's venv (.venv-lock, made by `make setup`) is not here")
def test_the_lock_file_names_the_wheel_with_its_sha256(built):
    lock = json.loads(wheel.lock_file(built, pyodide_runtime.NPM_DIR / "pyodide-lock.json"))
    assert list(lock["packages"]) == ["pysim"]
    entry = lock["packages"]["pysim"]
    assert entry["file_name"] == built.name
    assert entry["sha256"].startswith(built.name.split("-0h")[1][:12])
    assert entry["imports"] == ["pysim"] and entry["depends"] == []
    # The rest is Pyodide's own lock file: the same Python and ABI as the runtime served.
    npm_lock = json.loads((pyodide_runtime.NPM_DIR / "pyodide-lock.json").read_text())
    assert lock["info"] == npm_lock["info"]
