"""The Content-Security-Policy of a finished page: it runs only this site's own files.

The policy, a <meta> before any script, allows scripts from the site itself, WebAssembly
compilation for Pyodide ('wasm-unsafe-eval', CSP Level 3), workers and fetches from the
site, inline styles (KaTeX, Material and the widgets set style attributes), and images
from the site or data: URLs. An inline script runs only if its sha256 is listed: the
few Material writes, hashed here from the page's final HTML. So text that slipped into a
page as markup cannot run, and no page can load code from another host. JSON data
blocks (<script type="application/json">) are data, never run, and need no hash.

This step reads the finished HTML (the hashes must match the exact text the browser
sees), so it runs last, after every template and plugin.

Every page carries one and the same policy, allowing the inline scripts of all pages
(`site_policy`). With instant navigation (the hosted build) the page a reader opened
first stays in the browser while others are swapped in, and its policy with it; Material
also appends the next page's <meta> if it differs, and a browser enforces every policy a
page was given, so a script another page's policy allowed would still be refused. One
policy for the site makes the order of visits irrelevant.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Iterable

from . import BuildError

POLICY = ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{hashes}; worker-src 'self'; "
          "connect-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
          "font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'")
SCRIPT = re.compile(r"<script(?P<attrs>(?:\s[^>]*)?)>(?P<body>.*?)</script>", re.S | re.I)
SCRIPT_TYPE = re.compile(r"""\stype\s*=\s*["']?(?P<type>[^"'\s>]*)""", re.I)
SCRIPT_SRC = re.compile(r"\ssrc\s*=", re.I)
# The types a browser runs as script (HTML standard, "JavaScript MIME type"; the usual ones).
JS_TYPES = {"", "module", "text/javascript", "application/javascript", "text/ecmascript",
            "application/ecmascript"}
HEAD = re.compile(r'<head>\s*(<meta charset="[^"]*">)?')


def source_hash(text: str) -> str:
    """A CSP hash source: 'sha256-<base64 of the UTF-8 text's digest>'."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def inline_scripts(page_html: str) -> list[str]:
    """The text of every inline script the browser would run."""
    out = []
    for m in SCRIPT.finditer(page_html):
        attrs = m.group("attrs")
        kind = SCRIPT_TYPE.search(attrs)
        if SCRIPT_SRC.search(attrs) or (kind and kind.group("type").lower() not in JS_TYPES):
            continue  # a file, or a data block
        out.append(m.group("body"))
    return out


def policy(scripts: Iterable[str] = (), allow_inline: bool = False) -> str:
    """The policy allowing exactly these inline scripts, or (for `mkdocs serve`, whose
    live-reload script changes with every request) any inline script."""
    if allow_inline:
        return POLICY.format(hashes=" 'unsafe-inline'")
    return POLICY.format(hashes="".join(" " + h for h in dict.fromkeys(map(source_hash, scripts))))


def insert_policy(page_html: str, text: str) -> str:
    """The policy as the first element of <head>. Only the charset declaration goes
    before it, which must stay within the page's first 1,024 bytes."""
    head = HEAD.search(page_html)
    if not head:
        raise BuildError("a page without <head>")
    meta = f'<meta http-equiv="Content-Security-Policy" content="{text}">'
    return page_html[:head.end()] + meta + page_html[head.end():]


def with_policy(page_html: str, extra_scripts: Iterable[str] = (), allow_inline: bool = False) -> str:
    """The page with a policy for its own inline scripts and `extra_scripts` (scripts
    the page's code writes at run time, such as the iframe-worker shim's)."""
    return insert_policy(page_html, policy([*inline_scripts(page_html), *extra_scripts], allow_inline))


def site_policy(pages: dict[str, str], extra_scripts: Iterable[str] = ()) -> dict[str, str]:
    """Every page (path -> finished HTML) with the one policy that allows the inline
    scripts of all of them, and `extra_scripts`."""
    scripts = [s for page_html in pages.values() for s in inline_scripts(page_html)]
    text = policy([*scripts, *extra_scripts])
    return {path: insert_policy(page_html, text) for path, page_html in pages.items()}
