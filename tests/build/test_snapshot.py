"""The Python snapshot (sitebuild/snapshot.py): named by what made it, made once, and
restored in Node it answers as CPython does."""

import gzip
import json
import subprocess

import pytest

from pysim import bridge
from sitebuild import BuildError, pyodide_runtime, snapshot, wheel


def fake_npm(tmp_path, version):
    npm = tmp_path / f"npm-{version}"
    npm.mkdir()
    (npm / "package.json").write_text(json.dumps({"version": version}))
    return npm


def test_the_name_changes_with_the_wheel_and_with_pyodide(tmp_path):
    a, b = tmp_path / "a.whl", tmp_path / "b.whl"
    a.write_bytes(b"one")
    b.write_bytes(b"two")
    old, new = fake_npm(tmp_path, "1.0.0"), fake_npm(tmp_path, "1.0.1")
    names = {snapshot.name(w, npm) for w in (a, b) for npm in (old, new)}
    assert len(names) == 4
    assert all(n.startswith("pysim-") and n.endswith(".snapshot.gz") for n in names)
    assert snapshot.name(a, old) == snapshot.name(a, old)


def test_a_made_snapshot_is_taken_from_the_cache(tmp_path, monkeypatch):
    npm = fake_npm(tmp_path, "1.0.0")
    whl = tmp_path / "a.whl"
    whl.write_bytes(b"one")
    cached = tmp_path / "cache" / snapshot.name(whl, npm)
    cached.parent.mkdir()
    cached.write_bytes(b"made before")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("node ran again"))
    assert snapshot.make(whl, npm, tmp_path / "cache") == cached


def test_a_failed_snapshot_stops_the_build_with_node_s_reason(tmp_path):
    npm = fake_npm(tmp_path, "1.0.0")  # no pyodide.mjs in it
    whl = tmp_path / "a.whl"
    whl.write_bytes(b"one")
    with pytest.raises(BuildError, match="making the Python snapshot failed: .*pyodide.mjs"):
        snapshot.make(whl, npm, tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("*.gz"))  # nothing half-made is kept


RESTORE = """
import fs from "node:fs";
import zlib from "node:zlib";
const [npm, gz, whl, payload] = process.argv.slice(1);
const { loadPyodide } = await import(npm + "/pyodide.mjs");
const py = await loadPyodide({ indexURL: npm + "/", _loadSnapshot: zlib.gunzipSync(fs.readFileSync(gz)) });
const already = py.runPython("import sys; 'pysim.bridge' in sys.modules");
const bridge = py.pyimport("pysim.bridge");
console.log(JSON.stringify({ already, answer: bridge.call("naive_batching", payload) }));
"""


def test_restored_in_node_pysim_is_imported_and_answers_as_cpython_does(tmp_path):
    whl = wheel.build_wheel(tmp_path)
    made = snapshot.make(whl, cache=tmp_path / "cache")
    assert len(gzip.decompress(made.read_bytes())) > 10_000_000  # a whole interpreter's memory
    payload = json.dumps({"config": {"num_requests": 12, "seed": 5}})
    done = subprocess.run(["node", "--input-type=module", "-e", RESTORE, str(pyodide_runtime.NPM_DIR),
                           str(made), str(whl), payload], capture_output=True, text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["already"] is True  # restored, not imported again
    assert json.loads(out["answer"]) == json.loads(bridge.call("naive_batching", payload))
