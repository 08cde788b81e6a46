"""The steps run without MkDocs: only sitebuild/hooks.py (its events) and
sitebuild/__main__.py (which runs its builds) may import it."""

import subprocess
import sys

from conftest import ROOT

STEPS = sorted(p.stem for p in (ROOT / "sitebuild").glob("*.py") if p.stem not in ("__init__", "__main__", "hooks"))


def test_every_step_imports_without_mkdocs():
    assert {"assets", "csp", "figures", "katex", "offline_zip", "prerender", "pyodide_runtime", "wheel"} <= set(STEPS)
    code = ("import sys, importlib\n"
            f"for name in {STEPS!r}: importlib.import_module('sitebuild.' + name)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mkdocs', 'material', 'jinja2')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
