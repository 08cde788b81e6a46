"""On a slow link (issue 37): the status line says how much of Python is left to download
and that the text and pictures need not wait for it.

(How fast the page is, is bench/bench_network.py's to measure, not a test's.)
"""

from __future__ import annotations

import re

from conftest import page_url, wait_for_python

# Slow enough that the download takes more than the status line's 4 s, fast enough that
# the test server's uncompressed files arrive in seconds.
SLOW = {"offline": False, "latency": 150, "downloadThroughput": 12e6 / 8, "uploadThroughput": 3e6 / 8}
LEFT = re.compile(r"Downloading Python: \d+\.\d of \d+\.\d MB left\. "
                  r"The text and pictures are ready to read; only the controls wait for it\.")


def test_on_a_slow_link_the_status_line_says_what_is_left(make_page, site_url):
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
    statuses = page.evaluate("__statuses")
    assert any(LEFT.fullmatch(s) for s in statuses), statuses
