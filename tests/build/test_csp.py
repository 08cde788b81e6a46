"""The policy of a finished page: which inline scripts it hashes, and where it goes."""

import re

import pytest

from sitebuild import BuildError, csp

# sha256 of the empty string, base64: the test vector e3b0c442... (FIPS 180-2) encoded.
EMPTY = "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"

PAGE = ('<!doctype html><html><head>\n<meta charset="utf-8"><title>t</title>'
        '<script>a()</script>'
        '<script type="module">b()</script>'
        '<script type="application/json" id="__config">{"x": 1}</script>'
        '<script src="assets/x.js"></script>'
        "<script TYPE='text/javascript'>c()</script>"
        "</head><body><script></script></body></html>")


def test_only_scripts_that_would_run_inline_are_found():
    # Data blocks and scripts from files are not inline code; the empty one is.
    assert csp.inline_scripts(PAGE) == ["a()", "b()", "c()", ""]


def test_the_policy_lists_each_hash_once_after_self_and_wasm():
    text = csp.policy(["", "", "x"])
    script_src = next(p for p in text.split("; ") if p.startswith("script-src"))
    assert script_src == f"script-src 'self' 'wasm-unsafe-eval' {EMPTY} {csp.source_hash('x')}"
    assert "default-src 'self'" in text and "object-src 'none'" in text and "unsafe-inline'; img" in text


def test_serve_allows_inline_scripts_instead_of_hashes():
    script_src = next(p for p in csp.policy(["x"], allow_inline=True).split("; ") if p.startswith("script-src"))
    assert script_src == "script-src 'self' 'wasm-unsafe-eval' 'unsafe-inline'"


def test_the_policy_goes_first_in_head_after_the_charset():
    out = csp.with_policy(PAGE, extra_scripts=[""])
    head = out.split("<head>", 1)[1]
    assert head.startswith('\n<meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="')
    assert out.count("Content-Security-Policy") == 1
    # Four inline scripts, of which the empty one twice (the extra one is the same text).
    assert out.count("'sha256-") == 4 and EMPTY in out
    without_charset = csp.insert_policy("<html><head><title>t</title></head></html>", "P")
    assert without_charset == '<html><head><meta http-equiv="Content-Security-Policy" content="P"><title>t</title></head></html>'


def test_a_page_without_head_is_an_error():
    with pytest.raises(BuildError, match="without <head>"):
        csp.with_policy("<p>no head</p>")


def test_every_page_gets_one_policy_for_the_scripts_of_all_pages():
    pages = {"a.html": "<head><script>a()</script></head>", "b.html": "<head><script>b()</script></head>",
             "c.html": "<head></head>"}
    out = csp.site_policy(pages, ["shim()"])
    metas = {re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)[1]
             for html in out.values()}
    assert len(metas) == 1
    [text] = metas
    for script in ("a()", "b()", "shim()"):
        assert csp.source_hash(script) in text
    assert out["c.html"].startswith("<head><meta http-equiv")
