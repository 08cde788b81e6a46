"""On a slow link (issue 37): the page starts Python the plain way rather than download
the 6.4 MB snapshot, and its status line says how much is left and that the text and
pictures need not wait; coming back with everything cached, it starts the same way. On
the test server's loopback it restores the snapshot.

(How fast either way is, is bench/bench_network.py's to measure, not a test's.)
"""

from __future__ import annotations

import re

from conftest import page_url, wait_for_python

# Slow enough that the page's estimate (which reads low) stays well under the snapshot's
# 100 Mbit/s and the download takes more than the status line's 4 s, fast enough that
# the test server's uncompressed files arrive in seconds.
SLOW = {"offline": False, "latency": 150, "downloadThroughput": 12e6 / 8, "uploadThroughput": 3e6 / 8}
SOURCE = re.compile(r"/python_stdlib\.[0-9a-f]{10}\.zip$")
COMPILED = re.compile(r"/python_stdlib\.[0-9a-f]{10}\.pyc\.zip$")
LEFT = re.compile(r"Downloading Python: \d+\.\d of \d+\.\d MB left\. "
                  r"The text and pictures are ready to read; only the controls wait for it\.")


def test_on_a_slow_link_python_starts_without_the_snapshot_and_says_what_is_left(make_page, site_url, watch):
    page = make_page()
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", SLOW)  # 12 Mbit/s, 150 ms
    page.add_init_script("""window.__statuses = [];
      new MutationObserver(() => { const s = document.querySelector('.pysim-status-text');
        if (s && __statuses[__statuses.length - 1] !== s.textContent) __statuses.push(s.textContent); })
        .observe(document, {subtree: true, childList: true, characterData: true});""")
    page.goto(page_url(site_url, "naive-batching", "#widget-naive_batching"), timeout=120000)
    wait_for_python(page, timeout=180000)
    link = page.evaluate("PySim.runtime.link")
    assert link["snapshot"] is False and link["mbit_s"] < 40, link
    assert page.evaluate("PySim.runtime.restored") is False
    assert not [u for u in watch.requests if u.endswith(".snapshot.gz")]  # not a byte of it
    # The standard library as bytecode (a plain start compiles nothing), not its sources.
    assert [u for u in watch.requests if COMPILED.search(u)]
    assert not [u for u in watch.requests if SOURCE.search(u)]
    statuses = page.evaluate("__statuses")
    assert any(LEFT.fullmatch(s) for s in statuses), statuses

    # The reader comes back with every file in the browser's cache: no body came over the
    # network, so there is no estimate (Resource Timing is emptied here to stand for it; the
    # test server does not let files be cached), and Python starts as it started last time
    # (the same origin's localStorage), plain: the snapshot is not fetched on a return
    # visit either. After a snapshot start, a return restores the snapshot.
    for last, restored in (("plain", False), ("snapshot", True)):
        again = page.context.new_page()
        again.add_init_script("performance.getEntriesByType = () => [];")
        asked = []
        again.on("request", lambda r: asked.append(r.url))
        again.goto(page_url(site_url, "naive-batching", "#widget-naive_batching"), timeout=120000)
        assert again.evaluate("localStorage.getItem('pysim.python-start')") == last
        wait_for_python(again, timeout=180000)
        link = again.evaluate("PySim.runtime.link")
        assert link == {"mbit_s": None, "snapshot": restored} and again.evaluate("PySim.runtime.restored") is restored
        assert bool([u for u in asked if u.endswith(".snapshot.gz")]) is restored
        if not restored:
            again.evaluate("localStorage.setItem('pysim.python-start', 'snapshot')")  # as after a fast visit
        again.close()


def test_on_loopback_the_page_restores_the_snapshot(make_page, site_url, watch):
    page = make_page()
    page.goto(page_url(site_url, "naive-batching", "#widget-naive_batching"))
    wait_for_python(page)
    link = page.evaluate("PySim.runtime.link")
    assert link["snapshot"] is True and link["mbit_s"] >= 100, link  # runtime.js's SNAPSHOT_MIN_MBIT_S
    assert page.evaluate("PySim.runtime.restored") is True
    assert [u for u in watch.requests if SOURCE.search(u)]  # the zip the snapshot was made with
    assert not [u for u in watch.requests if COMPILED.search(u)]
