"""The file:// search shim: served locally, and the script it writes known in advance."""

import json

from sitebuild import iframe_worker

URL = "assets/javascripts/workers/search.abc.min.js"


def test_the_script_is_what_the_shim_writes_for_this_worker():
    script = iframe_worker.iframe_script(iframe_worker.SHIM, URL)
    # The shim's template (iframe-worker 1.0.4): its postMessage and importScripts
    # functions' source, then an error forwarder naming the worker's URL.
    assert script.startswith("postMessage=function ")
    assert ";importScripts=function " in script
    assert f'filename:"{URL}"' in script
    assert "</script>" not in script and "<\\/script>" not in script
    assert iframe_worker.iframe_script(iframe_worker.SHIM, "other.js") != script


def test_the_local_shim_replaces_any_iframe_worker_polyfill():
    local = iframe_worker.shim().path
    assert local.startswith("assets/vendor/iframe-worker.") and local.endswith(".js")
    unpkg = "https://unpkg.com/iframe-worker/shim"
    assert iframe_worker.without_unpkg([unpkg, "keep.js"], local) == ["keep.js", local]
    assert iframe_worker.without_unpkg([], local) == [local]


def test_the_search_worker_url_comes_from_materials_config_block():
    config = json.dumps({"base": ".", "search": URL})
    page = f'<body><script id="__config" type="application/json">{config}</script></body>'
    assert iframe_worker.search_worker_url(page) == URL
    assert iframe_worker.search_worker_url("<body></body>") is None
