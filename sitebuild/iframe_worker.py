"""The iframe-worker shim that makes Material's search work from file://.

Material's `offline` plugin (its docs, "Building for offline usage") lists this shim
in `extra.polyfills` and would load it from unpkg; the site serves npm's copy (pinned
in package.json) under a content-hashed name instead. On file:// the shim runs the
search worker inside a hidden iframe and writes an inline script into it; the iframe
inherits the page's Content-Security-Policy, so that script's hash must be in the
policy too. `iframe_script` gets its exact text by running the shim under Node
(iframe_worker.mjs) rather than by reading the shim's source.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path

from . import NODE_MODULES, ROOT
from .assets import Asset, hashed

SHIM = NODE_MODULES / "iframe-worker" / "shim" / "index.js"
RUN_SHIM = Path(__file__).with_name("iframe_worker.mjs")
MATERIAL_CONFIG = re.compile(r'<script id="__config" type="application/json">(?P<json>.*?)</script>', re.S)


def shim(source: Path = SHIM) -> Asset:
    """The shim, content-hashed, for `extra.polyfills` and for the site."""
    return hashed("assets/vendor", source, "iframe-worker.js")


def without_unpkg(polyfills: list, local: str) -> list:
    """`extra.polyfills` with the local shim in place of any iframe-worker URL (whether
    the offline plugin has already added its unpkg one or not)."""
    return [*(p for p in polyfills if "iframe-worker" not in str(p)), local]


def search_worker_url(page_html: str) -> str | None:
    """The search worker's URL from Material's config block, or None if it has none."""
    found = MATERIAL_CONFIG.search(page_html)
    return found and json.loads(found.group("json")).get("search")


@functools.lru_cache(maxsize=8)
def iframe_script(shim_path: Path, worker_url: str) -> str:
    """The text of the inline script the shim writes into its iframe for this worker."""
    return subprocess.run(["node", str(RUN_SHIM), str(shim_path), worker_url],
                          capture_output=True, text=True, check=True, cwd=ROOT).stdout
