"""The figures a build computed, kept for the tests that check its pages.

The serving lab's figures replay dozens of published runs and fit the lab's clock to
them: tens of seconds. `make test` builds the site, then renders every page again in
tests/build/test_predict.py to check what the build embedded. So the build leaves what
it computed in .cache/figures/, in a file named by a digest of every file under pysim/
and data/ (all that a figure can read), and a later process on the same files reads
them back instead of computing them again. A change to pysim or to its data gives
another digest: a figure from other code is never read.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def digest(root: Path = ROOT) -> str:
    """sha256 of the path and bytes of every file under pysim/ and data/."""
    h = hashlib.sha256()
    for top in ("pysim", "data"):
        for path in sorted(p for p in (root / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _path(root: Path) -> Path:
    return root / ".cache" / "figures" / f"{digest(root)}.pickle"


def load(figures: ModuleType, root: Path = ROOT) -> bool:
    """Give `figures` (pysim.figures) the groups a build on these same files computed;
    False if there are none."""
    path = _path(root)
    if not path.is_file():
        return False
    figures.adopt(pickle.loads(path.read_bytes()))
    return True


def save(figures: ModuleType, root: Path = ROOT) -> None:
    """Keep the groups `figures` has computed, for the next process on these files."""
    path = _path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.glob("*.pickle"):  # figures of other code are never read again
        old.unlink()
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(figures.computed()))
    tmp.replace(path)  # whole or not at all: a test reading it meanwhile sees no half file
