"""The two kinds of reader: one who opens the downloaded site from disk, and one on the
hosted site with the network cut. Also what loads when: Pyodide only on pages with a
widget, only after the text and the pre-rendered pictures, and only once.

The download is its own build (mkdocs-offline.yml, in OFFLINE_SITE): the tests from disk
and of the zip read that one; the served ones read the hosted site (SITE)."""

from __future__ import annotations

import collections
import json
import re
import zipfile
from pathlib import Path

import pytest
from conftest import OFFLINE_SITE, SITE, page_url, widget_pages

ZIP = "download/continuous-batching-site.zip"
ZIP_FOLDER = "continuous-batching-site"


def pages(site: Path = SITE) -> list[str]:
    return sorted(p.stem for p in site.glob("*.html") if p.stem != "404")


WIDGET_PAGES = widget_pages()
PLAIN_PAGES = [p for p in pages() if p not in WIDGET_PAGES]


def is_widget_code(url: str) -> bool:
    """A widget's file (or the kit's). A page without widgets may still hold a checkpoint
    (sitebuild/predict.py), whose predict.js and predict.css start no Python."""
    return "/assets/widgets/" in url and "/assets/widgets/predict." not in url

# Records, in the page, every Worker created (Material's search worker is one too), the
# state of the widgets when a worker is told to boot Python (before that, the worker has
# fetched only our worker.js, no Pyodide file), and every text of the status lines.
SEARCH_WAIT_MS = int(re.search(r"SEARCH_WAIT_MS = (\d+)",
                                (Path(__file__).parents[2] / "widgets" / "search.js").read_text()).group(1))

PROBE = """
window.__probe = { workers: [], boots: [], statuses: [] };
const RealWorker = window.Worker;
window.Worker = class extends RealWorker {
  constructor(url, options) {
    __probe.workers.push({url: String(url), name: (options && options.name) || "",
                          python: window.PySim ? PySim.runtime.state : "", at_ms: performance.now(),
                          live: [...document.querySelectorAll('.pysim-widget')].every(w => w.dataset.live)});
    super(url, options);
  }
  postMessage(message, ...rest) {
    if (message && message.type === 'boot') {
      const widgets = [...document.querySelectorAll('.pysim-widget')];
      __probe.boots.push({
        widgets: widgets.length,
        drawn: widgets.filter(w => w.dataset.mounted && w.querySelector('.pysim-body').childElementCount > 0).length,
        fcp: performance.getEntriesByName('first-contentful-paint').length,
      });
    }
    return super.postMessage(message, ...rest);
  }
};
new MutationObserver(() => {
  for (const t of document.querySelectorAll('.pysim-status-text'))
    if (__probe.statuses[__probe.statuses.length - 1] !== t.textContent) __probe.statuses.push(t.textContent);
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def pysim_workers(page) -> list[dict]:
    return [w for w in page.evaluate("__probe.workers") if w["name"] == "pysim"]


def is_pyodide(url: str) -> bool:
    return "/assets/pyodide/" in url


def assert_prerendered_with_note(page, name: str):
    """Every widget on the page drew its pre-rendered picture and says how to go live."""
    for widget in WIDGET_PAGES[name]:
        root = page.locator(f'.pysim-widget[data-widget="{widget}"]')
        root.scroll_into_view_if_needed()
        page.wait_for_function(
            f"() => document.querySelector('.pysim-widget[data-widget=\"{widget}\"]').dataset.runtime === 'unavailable'")
        body = root.locator(".pysim-body")
        assert body.evaluate("b => b.childElementCount") > 0, f"{widget}: nothing drawn"
        assert body.bounding_box()["height"] > 100, f"{widget}: picture too small"
        note = root.locator(".pysim-offline-note")
        assert note.is_visible()
        assert "python3 -m http.server" in note.inner_text()


def search(page, query: str) -> int:
    page.locator(".md-search__input").first.click()
    page.locator(".md-search__input").press_sequentially(query, delay=20)
    page.wait_for_selector(".md-search-result__item", timeout=20000)
    return page.locator(".md-search-result__item").count()


def read_from_disk(page, folder: Path):
    """Navigation and search from file://, then every widget page."""
    base = folder.as_uri() + "/"
    page.goto(page_url(base, "index"))
    # Navigation: the sidebar link to a chapter page opens that file.
    first = next(iter(WIDGET_PAGES))
    page.locator(f'nav.md-nav a[href="{first}.html"]').first.click()
    page.wait_for_url(f"**/{first}.html")
    assert page.locator("article h1").count() == 1
    # Search: the offline plugin's inlined index, through the iframe-worker shim.
    assert search(page, "preemption") > 0
    page.locator(".md-search-result__item a").first.click()
    page.wait_for_load_state()
    assert page.url.startswith("file://") and ".html" in page.url
    for name in WIDGET_PAGES:
        page.goto(page_url(base, name))
        assert_prerendered_with_note(page, name)


# ---------------------------------------------------------------- the built files


def test_nothing_is_loaded_from_another_host():
    """No script, stylesheet, font, image or frame from outside the site: external URLs
    appear only as hyperlinks the reader may follow."""
    # (A <link rel="canonical">, the page's own address from site_url, names a URL and
    # fetches nothing.)
    tag_url = re.compile(r"<(script|link(?![^>]*\brel=\"canonical\")|img|iframe|source|audio|video)\b[^>]*\b(?:src|href)=[\"']?(https?:)?//", re.I)
    css_url = re.compile(r"(?:url\(\s*[\"']?|@import\s+[\"']?)(https?:)?//", re.I)
    for site in (SITE, OFFLINE_SITE):
        for path in site.rglob("*"):
            if path.suffix == ".html":
                assert not tag_url.search(path.read_text()), path
            elif path.suffix == ".css":
                assert not css_url.search(path.read_text()), path
        # unpkg (the offline plugin's default for its shim) appears only inside Material's
        # bundle, for a ResizeObserver polyfill (every supported browser has ResizeObserver)
        # and for Mermaid (no page has a diagram). The browser tests check nothing is fetched.
        with_unpkg = {p.relative_to(site).as_posix() for p in site.rglob("*")
                      if p.is_file() and p.suffix != ".zip" and b"unpkg" in p.read_bytes()}
        assert all(re.fullmatch(r"assets/javascripts/bundle\.[0-9a-f]+\.min\.js(\.map)?", p) for p in with_unpkg), with_unpkg
    assert "iframe-worker" in (OFFLINE_SITE / "index.html").read_text()
    assert "iframe-worker" not in (SITE / "index.html").read_text()  # the hosted site searches by fetch()
    # ...and does not carry the shim either: the hosted build, made second in the same
    # process (`python -m sitebuild`), starts from none of the download's state.
    assert not list(SITE.glob("assets/vendor/iframe-worker.*")), "the hosted site ships the download's shim"


def test_precompressed_copies_match_their_files():
    """The hosted build's .br and .gz copies (sitebuild/precompress.py) hold exactly the
    file beside them, the search index MkDocs writes at the end included: a host that
    serves them sends what the file says. The download holds none."""
    import gzip

    import brotli

    from sitebuild import precompress

    copies = sorted(SITE.rglob("*.br"))
    assert any(p.name == "pyodide.asm.wasm.br" for p in copies) and (SITE / "search" / "search_index.json.br").is_file()
    for br in copies:
        original = br.with_name(br.name[:-3]).read_bytes()
        assert brotli.decompress(br.read_bytes()) == original, br
        gz = br.with_name(br.name[:-3] + ".gz")
        assert not gz.exists() or gzip.decompress(gz.read_bytes()) == original, gz
    # Every file worth it has its copies (those too random to pay are left out).
    text = [p for p in SITE.rglob("*") if p.is_file() and precompress.wanted(p) and p.suffix in (".html", ".js", ".css", ".wasm")]
    assert all(p.with_name(p.name + ".br").is_file() for p in text), [p for p in text if not p.with_name(p.name + ".br").is_file()][:5]
    assert not any(OFFLINE_SITE.rglob("*.br"))


def test_front_end_files_are_named_by_content_or_version():
    """Everything a widget page loads from assets/ can be cached for long: a hash or a
    version number is in its path."""
    versioned = re.compile(r"(\.[0-9a-f]{8,}\.(min\.)?(js|css|json)$)|(-0h[0-9a-f]{12}-)|(/\d+\.\d+\.\d+/)")
    for name in WIDGET_PAGES:
        html = (SITE / f"{name}.html").read_text()
        urls = re.findall(r'(?:src|href)="(assets/[^"]+)"', html)
        urls += re.findall(r'"(assets/pyodide/[^"]+)"', html)
        assert urls
        for url in urls:
            if url.startswith("assets/images/"):
                continue  # Material's favicon
            assert versioned.search(url), url


# ---------------------------------------------------------------- from disk


@pytest.mark.long
def test_site_read_from_disk(make_page):
    read_from_disk(make_page(), OFFLINE_SITE)


@pytest.mark.parametrize("name", sorted(WIDGET_PAGES))
def test_from_disk_the_note_is_on_top_and_the_settings_are_off(make_page, name):
    """Issue 16: from file:// nothing can compute, yet the controls stayed live (typing
    100 in num_gpu_blocks left "100" over a picture made for 160), and the note saying how
    to go live sat at the bottom of each widget (~1,700 px down on the KV widget)."""
    page = make_page()
    page.goto(page_url(OFFLINE_SITE.as_uri() + "/", name))
    for widget in WIDGET_PAGES[name]:
        root = page.locator(f'.pysim-widget[data-widget="{widget}"]')
        root.scroll_into_view_if_needed()
        page.wait_for_function(
            f"() => document.querySelector('.pysim-widget[data-widget=\"{widget}\"]').dataset.offline === 'true'")
        # The note is the first thing in the widget, above its controls and picture.
        note = root.locator(".pysim-offline-note")
        assert note.is_visible() and "python3 -m http.server" in note.inner_text()
        top, note_box = root.bounding_box(), note.bounding_box()
        assert note_box["y"] - top["y"] < 40, (widget, note_box, top)
        assert note_box["y"] + note_box["height"] <= root.locator(".pysim-body").bounding_box()["y"] + 1
        # Every setting is disabled, and typing into one changes nothing.
        settings = root.locator(".pysim-control :is(input, select, textarea), [data-needs-python]").all()
        assert settings and all(f.is_disabled() for f in settings), widget
        box = root.locator('.pysim-control input[type="number"]').first
        if box.count():
            before = box.input_value()
            box.click(force=True)
            page.keyboard.type("100")
            assert box.input_value() == before, widget
    if name == "naive-batching":  # the pre-computed race still plays back
        page.get_by_role("button", name="Reset").click()
        page.get_by_role("button", name="Step").click()
        assert page.locator(".pysim-step-label").inner_text().startswith("Step 1 of")


@pytest.mark.long
def test_downloadable_zip_holds_the_whole_site_and_opens(make_page, tmp_path):
    archive = OFFLINE_SITE / ZIP
    # The hosted site offers the very zip the download build made.
    assert (SITE / ZIP).read_bytes() == archive.read_bytes()
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        readme = zf.read(f"{ZIP_FOLDER}/README.txt").decode()
        zf.extractall(tmp_path)
    assert all(n.startswith(ZIP_FOLDER + "/") for n in names)
    in_zip = {n[len(ZIP_FOLDER) + 1:] for n in names} - {"README.txt"}
    on_site = {p.relative_to(OFFLINE_SITE).as_posix() for p in OFFLINE_SITE.rglob("*") if p.is_file()} - {ZIP}
    assert in_zip == on_site
    assert "index.html" in readme and "python3 -m http.server" in readme
    # Every page links to it; inside the zip, where it cannot be, to the README instead.
    for name in pages():
        assert f'href="{ZIP}"' in (SITE / f"{name}.html").read_text(), name
        assert f'href="{ZIP}"' in (OFFLINE_SITE / f"{name}.html").read_text(), name
        copy = (tmp_path / ZIP_FOLDER / f"{name}.html").read_text()
        assert ZIP not in copy and 'href="README.txt">Reading offline: see README.txt</a>' in copy, name
    read_from_disk(make_page(), tmp_path / ZIP_FOLDER)
    page = make_page()
    page.goto((tmp_path / ZIP_FOLDER / "index.html").as_uri())
    page.get_by_role("link", name="Reading offline: see README.txt").click()
    page.wait_for_url("**/README.txt")
    assert "python3 -m http.server" in page.locator("body").inner_text()


# ---------------------------------------------------------------- served, network cut


def test_pages_without_widgets_never_load_python(make_page, site_url, watch):
    page = make_page()
    for name in PLAIN_PAGES:
        page.goto(page_url(site_url, name))
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.wait_for_timeout(300)
    assert PLAIN_PAGES
    loaded = [u for u in watch.requests if is_pyodide(u) or is_widget_code(u)]
    assert loaded == []


@pytest.mark.parametrize("name", WIDGET_PAGES)
def test_widget_page_text_and_pictures_before_python(make_page, site_url, watch, name):
    """The text and every pre-rendered widget are on screen before the worker (the only
    thing that fetches Pyodide) exists; Python then starts with a byte count, one
    worker for the page, and every Pyodide file downloads once."""
    page = make_page()
    page.add_init_script(PROBE)
    page.goto(page_url(site_url, name, f"#widget-{WIDGET_PAGES[name][0]}"))
    page.wait_for_function("() => document.querySelector('.pysim-widget').dataset.runtime === 'ready'", timeout=90000)
    assert len(pysim_workers(page)) == 1
    [boot] = page.evaluate("__probe.boots")
    assert boot["drawn"] == boot["widgets"] == len(WIDGET_PAGES[name])
    assert boot["fcp"] == 1, "the text was not painted before Python started"
    statuses = page.evaluate("__probe.statuses")
    assert any(re.fullmatch(r"Downloading Python: \d+\.\d of \d+\.\d MB", s) for s in statuses), statuses
    # Every widget on the page recomputes its default in that one worker.
    for widget in WIDGET_PAGES[name]:
        page.locator(f'.pysim-widget[data-widget="{widget}"]').scroll_into_view_if_needed()
        page.wait_for_function(
            f"() => document.querySelector('.pysim-widget[data-widget=\"{widget}\"]').dataset.live === 'ready'",
            timeout=30000)
    assert len(pysim_workers(page)) == 1
    fetched = [u.rsplit("/", 1)[-1] for u in watch.requests if is_pyodide(u)]
    assert sorted(fetched) == sorted(set(fetched)), f"downloaded twice: {fetched}"
    # What the page preloads in its <head> (its scripts), it uses: each fetched once
    # (README, "Deploying": a host's no-store makes the browser fetch each again).
    preloads = page.evaluate("""() => {
        const preloaded = new Set([...document.querySelectorAll('link[rel=preload]')].map(l => l.href));
        return performance.getEntriesByType('resource').map(e => e.name).filter(u => preloaded.has(u)); }""")
    twice = sorted(u for u, n in collections.Counter(preloads).items() if n > 1)
    assert preloads and twice == [], f"preloaded, then fetched again: {twice}"
    assert {"pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm"} <= set(fetched)
    # The page's standard library, as bytecode.
    assert len([f for f in fetched if re.fullmatch(r"python_stdlib\.[0-9a-f]{10}\.pyc\.zip", f)]) == 1, fetched


def search_workers(page) -> list[dict]:
    return [w for w in page.evaluate("__probe.workers") if "/workers/search." in w["url"]]


def test_search_index_is_built_after_python_on_a_widget_page(make_page, site_url):
    """Material's search worker (it builds the index: CPU that Pyodide's start needs on a
    small machine) starts only once Python is ready; search then works as usual."""
    name, widgets = next(iter(WIDGET_PAGES.items()))
    page = make_page()
    page.add_init_script(PROBE)
    page.goto(page_url(site_url, name, f"#widget-{widgets[0]}"))
    page.wait_for_function("() => document.querySelector('.pysim-widget').dataset.runtime === 'ready'", timeout=90000)
    page.wait_for_function("() => __probe.workers.some(w => w.url.includes('/workers/search.'))")
    [worker] = search_workers(page)
    # Search waits for Python at most SEARCH_WAIT_MS (widgets/search.js): a machine too
    # busy to start Python in that time gets its search anyway, and no sooner.
    waited = worker["python"] == "ready"
    assert waited or worker["at_ms"] >= SEARCH_WAIT_MS, worker
    assert search(page, "preemption") > 0


def test_search_indexes_the_chapter_not_the_widgets_data():
    """The widgets' pre-rendered models (JSON in a <template>) are data, not the
    chapter's words: each widget block carries data-search-exclude, so search never
    answers with a model's keys, and no page downloads them a second time inside the
    index (a <template>'s content is text to Material's indexer)."""
    for site in (SITE, OFFLINE_SITE):
        docs = json.loads((site / "search" / "search_index.json").read_text())["docs"]
        text = " ".join(d["text"] for d in docs)
        assert "max_context_tokens" not in text, site  # a key that only the models hold
        assert '"fields"' not in text and "&quot;" not in text, site
        assert "needs JavaScript" not in text, site  # the widgets' noscript line
        assert "preemption" in text and "max_num_seqs" in text, site  # the prose is indexed


def test_search_answers_at_once_while_python_loads(make_page, site_url):
    """A reader who reaches for search before Python is ready does not wait for it."""
    name, widgets = next(iter(WIDGET_PAGES.items()))
    page = make_page()
    page.add_init_script(PROBE)
    # Python's wasm is held back until search has answered, so Python is surely still
    # loading meanwhile (on a busy machine a race with the boot could go either way).
    held = []
    page.context.route("**/*.wasm", lambda route, request: held.append(route))
    page.goto(page_url(site_url, name, f"#widget-{widgets[0]}"))
    assert search(page, "preemption") > 0
    [worker] = search_workers(page)
    assert worker["python"] in ("idle", "loading"), worker
    assert page.evaluate("document.querySelector('.pysim-widget').dataset.runtime") in ("idle", "loading")
    page.context.unroute("**/*.wasm")
    for route in held:
        route.fallback()
    page.wait_for_function("() => document.querySelector('.pysim-widget').dataset.runtime === 'ready'", timeout=90000)
    assert len(search_workers(page)) == 1


def far_widget_page(make_page, site_url) -> str:
    """A widget page whose first widget starts well below a 700 px screen (more than
    the 600 px within which Python starts), or skip."""
    for name in WIDGET_PAGES:
        page = make_page(height=700)
        page.goto(page_url(site_url, name))
        top = page.evaluate("document.querySelector('.pysim-widget').getBoundingClientRect().top")
        page.context.close()
        if top > 700 + 600 + 200:
            return name
    pytest.skip("every widget is within 600 px of the first screen")


def test_python_waits_until_a_widget_is_near_or_touched(make_page, site_url, watch):
    """Far from any widget, nothing of Python loads; touching a control starts it."""
    far = far_widget_page(make_page, site_url)
    watch.requests.clear()
    page = make_page(height=700)
    page.goto(page_url(site_url, far))
    page.wait_for_timeout(1500)
    assert page.evaluate("document.querySelector('.pysim-widget').dataset.runtime") == "idle"
    assert not [u for u in watch.requests if is_pyodide(u)]
    # With Python not started, nothing holds Material's search back: its worker is up.
    assert [u for u in watch.requests if "/workers/search." in u]
    # Keyboard focus reaching the widget counts as touching it (without scrolling here).
    page.evaluate("document.querySelector('.pysim-widget .pysim-body').dispatchEvent(new FocusEvent('focusin', {bubbles: true}))")
    page.wait_for_function("() => document.querySelector('.pysim-widget').dataset.runtime !== 'idle'")
    page.wait_for_function("() => document.querySelector('.pysim-widget').dataset.runtime === 'ready'", timeout=90000)


@pytest.mark.long
def test_every_page_and_widget_works_with_the_network_cut(make_page, offline_site_url, watch):
    """Served from 127.0.0.1 with every other host unreachable (the fixture aborts and
    records such requests): every page of the download, served as its README says, loads
    and every widget goes live. (The hosted site's pages are each opened the same way,
    every widget live, by test_accessibility.py's check of every page.)"""
    base = offline_site_url
    page = make_page()
    for name in pages():
        page.goto(page_url(base, name))
        assert page.locator("article h1").count() == 1, name
        for widget in WIDGET_PAGES.get(name, []):
            page.locator(f'.pysim-widget[data-widget="{widget}"]').scroll_into_view_if_needed()
            page.wait_for_function(
                f"() => document.querySelector('.pysim-widget[data-widget=\"{widget}\"]').dataset.live === 'ready'",
                timeout=90000)
    assert watch.outside == []


# ---------------------------------------------------------------- small screens and paper


@pytest.mark.parametrize("name", WIDGET_PAGES)
def test_printed_page_shows_the_pictures_not_the_controls(live_page, name, tmp_path):
    page = live_page(name)
    page.emulate_media(media="print")
    for widget in WIDGET_PAGES[name]:
        root = page.locator(f'.pysim-widget[data-widget="{widget}"]')
        assert root.locator(".pysim-body").bounding_box()["height"] > 100, widget
        # The controls go (buttons may stay: in some widgets the picture is made of them).
        controls = ".pysim-toolbar, .pysim-controls, .pysim-control, input, select, .pysim-status, .pysim-offline-note"
        for hidden in root.locator(controls).all():
            assert not hidden.is_visible(), (widget, hidden.evaluate("e => e.outerHTML.slice(0, 120)"))
        # Canvases hold a drawing, not a blank bitmap.
        for canvas in root.locator(".pysim-body canvas").all():
            if canvas.is_visible():
                assert canvas.evaluate(
                    "c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
                    " for (let i = 3; i < d.length; i += 4) if (d[i]) return true; return false; }"), widget
    pdf = tmp_path / f"{name}.pdf"
    page.pdf(path=str(pdf))
    assert pdf.stat().st_size > 10000
