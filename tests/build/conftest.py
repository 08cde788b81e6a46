"""The build steps' tests: plain CPython, no MkDocs, no browser, and not run in Pyodide
(the wheel holds pysim only). They import this tree's sitebuild, wherever pytest runs."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if sys.path[:1] != [str(ROOT)]:
    sys.path.insert(0, str(ROOT))
