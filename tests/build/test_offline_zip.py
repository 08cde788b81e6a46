"""The offline zip, from a small made-up site."""

import io
import zipfile

from sitebuild import offline_zip

LINK = f'<a class="pysim-download" href="{offline_zip.PATH}" download>Download for offline reading</a>'


def make_site(root):
    (root / "assets").mkdir(parents=True)
    (root / "index.html").write_text(f"<footer>{LINK}</footer>")
    (root / "assets" / "a.js").write_bytes(b"js")
    (root / "download").mkdir()
    (root / offline_zip.PATH).write_bytes(b"an older zip")
    return root


def test_the_zip_holds_the_site_in_one_folder_with_a_readme(tmp_path):
    site = make_site(tmp_path / "site")
    zf = zipfile.ZipFile(io.BytesIO(offline_zip.site_zip(site)))
    folder = offline_zip.FOLDER
    # README first, then the site's files sorted; never the zip itself.
    assert zf.namelist() == [f"{folder}/README.txt", f"{folder}/assets/a.js", f"{folder}/index.html"]
    assert f"cd {folder}" in zf.read(f"{folder}/README.txt").decode()
    assert zf.read(f"{folder}/assets/a.js") == b"js"
    assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    # Inside the zip the footer points to the README instead of the zip.
    assert zf.read(f"{folder}/index.html").decode() == (
        '<footer><a class="pysim-download" href="README.txt">Reading offline: see README.txt</a></footer>')


def test_the_same_site_gives_the_same_bytes(tmp_path):
    first = offline_zip.site_zip(make_site(tmp_path / "a"))
    assert offline_zip.site_zip(make_site(tmp_path / "b")) == first


def test_a_page_below_the_root_keeps_its_way_up():
    page = LINK.replace('href="', 'href="../../')
    assert offline_zip.footer_in_zip(page) == ('<a class="pysim-download" href="../../README.txt">'
                                               "Reading offline: see README.txt</a>")
    assert offline_zip.footer_in_zip("<p>no link</p>") == "<p>no link</p>"
