"""The build steps' tests: plain CPython, no MkDocs, no browser, and not run in Pyodide
(the wheel holds pysim only). They import this tree's sitebuild, wherever pytest runs."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if sys.path[:1] != [str(ROOT)]:
    sys.path.insert(0, str(ROOT))

# The figures the last site build computed on these same files (sitebuild/figure_cache.py):
# the pages' checks read them instead of replaying the serving lab's runs again.
from sitebuild import figure_cache  # noqa: E402

import pysim.figures  # noqa: E402

figure_cache.load(pysim.figures)
