"""The facts table (docs/facts.toml) and the pages that state its facts.

Build-side only (CPython): the table is read when the site is built, never in the
browser, so these tests do not run inside Pyodide.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sitebuild import facts

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TABLE = DOCS / "facts.toml"


PAGES = {p.name: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}

GOOD_ROW = """
[a_fact]
system = "vLLM"
version = "0.33.0"
text = "blocks hold 16 tokens"
source = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/cache.py"
source_title = "vllm/config/cache.py, CacheConfig"
"""


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "facts.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_table_loads_and_every_row_names_version_and_source():
    table = facts.load(TABLE)
    assert len(table) >= 20
    for key, row in table.items():
        assert facts.problems_of(key, row) == []
        assert re.search(r"\d", row["version"]) and row["source"].startswith("https://")


@pytest.mark.parametrize("field", ["version", "source", "system", "text", "source_title"])
def test_a_row_without_a_version_or_a_source_is_refused(tmp_path, field):
    facts.load(write(tmp_path, GOOD_ROW))  # the row as written is fine
    without = "\n".join(line for line in GOOD_ROW.splitlines() if not line.startswith(f"{field} ="))
    with pytest.raises(facts.FactError, match=f"a_fact: no {field}"):
        facts.load(write(tmp_path, without))


@pytest.mark.parametrize("line, message", [
    ('version = "latest"', "names no release"),          # a version must name a release
    ('source = "see the docs"', "not an https link"),     # a source must be a link
    ('system = "Some Server"', "is not one of"),          # one of the chapter's systems
    ('text = "a | b"', "without '|'"),                    # it may sit in a table cell
])
def test_a_row_with_a_vague_version_or_source_is_refused(tmp_path, line, message):
    field = line.split(" =")[0]
    bad = "\n".join(line if l.startswith(f"{field} =") else l for l in GOOD_ROW.splitlines())
    with pytest.raises(facts.FactError, match=re.escape(message)):
        facts.load(write(tmp_path, bad))


def test_a_placeholder_becomes_the_text_with_its_version_linked_to_its_source(tmp_path):
    table = facts.load(write(tmp_path, GOOD_ROW))
    out = facts.render("In vLLM {{ fact.a_fact }}.", table, "x.md")
    assert out.startswith("In vLLM blocks hold 16 tokens<sup")
    assert 'href="https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/cache.py"' in out
    assert ">vLLM 0.33.0</a></sup>." in out
    with pytest.raises(facts.FactError, match="x.md names unknown fact 'nope'"):
        facts.render("{{ fact.nope }}", table, "x.md")


def test_every_placeholder_on_every_page_resolves():
    table = facts.load(TABLE)
    unknown = {(name, key) for name, text in PAGES.items() for key in facts.keys_used(text)
               if key not in table}
    assert not unknown


def test_every_row_of_the_table_is_stated_on_some_page():
    table = facts.load(TABLE)
    used = set().union(*(facts.keys_used(text) for text in PAGES.values()))
    assert set(table) - used == set()


def test_further_reading_lists_every_source_of_the_table():
    table = facts.load(TABLE)
    page = PAGES["further-reading.md"]
    assert facts.SOURCES_LINE.search(page), "further-reading.md has no {{ fact_sources }} line"
    rendered = facts.render(page, table, "further-reading.md")
    urls = {row["source"] for row in table.values()}
    urls |= {extra["url"] for row in table.values() for extra in row.get("also", [])}
    assert all(f"]({url})" in rendered for url in urls)


# A sentence that states a real system's default in prose, without the table, is the
# drift this table exists to stop. We can detect the plainest form: a paragraph that
# names a system and uses the word "default", with no fact in it.
SYSTEM_NAMES = re.compile(r"\b(vLLM|SGLang|TensorRT-LLM|TGI|llama\.cpp|llama-server)\b")
DEFAULT_WORDS = re.compile(r"\bdefault(?:s|ed)?\b", re.I)
FENCE = re.compile(r"^(\s*)(```|~~~).*?^\1\2", re.M | re.S)


def paragraphs(text: str):
    text = FENCE.sub("", text)
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_no_paragraph_states_a_systems_default_without_a_fact():
    offenders = []
    for name, text in PAGES.items():
        for para in paragraphs(text):
            if SYSTEM_NAMES.search(para) and DEFAULT_WORDS.search(para) and "{{ fact." not in para:
                offenders.append(f"{name}: {' '.join(para.split())[:120]}")
    assert offenders == []


def test_sources_keep_code_names_literal():
    # "BlockPool.__init__" in a source_title would otherwise be Markdown for bold "init":
    # each underscore comes out escaped, so the page shows the name as written.
    row = {"system": "vLLM", "version": "0.33.0", "text": "t",
           "source": "https://example.org/block_pool.py",
           "source_title": "block_pool.py, BlockPool.__init__"}
    listed = facts.sources({"a_fact": row})
    assert r"BlockPool.\_\_init\_\_" in listed


# Every vLLM fact is read in one release and points at the exact lines it was read from,
# so a reader can open the file at that tag and find it. The documentation is not part of
# a release; the rows that state what vLLM's docs say stay at the tag they were read at.
VLLM_VERSION = "0.34.0"
VLLM_SOURCE = re.compile(
    r"^https://github\.com/vllm-project/vllm/blob/v0\.34\.0/[\w./-]+\.py#L\d+(-L\d+)?$")
VLLM_DOCS_ROWS = {"vllm_tuning_guide", "vllm_disagg_prefill"}
VLLM_DOCS_SOURCE = re.compile(r"^https://github\.com/vllm-project/vllm/blob/v0\.\d+\.\d+/docs/")


def vllm_version_problems(table: dict) -> list[str]:
    """What in the table's vLLM rows is not pinned to 0.34.0 and a line of its source."""
    out = []
    for key, row in table.items():
        if row.get("system") != "vLLM":
            continue
        if key in VLLM_DOCS_ROWS:
            if not VLLM_DOCS_SOURCE.match(row["source"]):
                out.append(f"{key}: a docs row must cite vLLM's docs at a release tag")
            continue
        if row["version"] != VLLM_VERSION:
            out.append(f"{key}: version {row['version']!r}, not {VLLM_VERSION}")
        if not VLLM_SOURCE.match(row["source"]):
            out.append(f"{key}: source {row['source']!r} is not a file at v0.34.0 with a #L line")
    return out


def test_every_vllm_row_cites_0_34_0_and_a_line_of_its_source():
    assert vllm_version_problems(facts.load(TABLE)) == []


@pytest.mark.parametrize("version, source, message", [
    ("0.33.0", "https://github.com/vllm-project/vllm/blob/v0.34.0/vllm/config/cache.py#L185",
     "not 0.34.0"),
    ("0.34.0", "https://github.com/vllm-project/vllm/blob/v0.34.0/vllm/config/cache.py",
     "with a #L line"),
    ("0.34.0", "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/cache.py#L185",
     "with a #L line"),
    ("0.34.0", "https://github.com/vllm-project/vllm/pull/37307", "with a #L line"),
])
def test_a_vllm_row_at_another_version_or_without_a_line_is_refused(version, source, message):
    row = {"system": "vLLM", "version": version, "text": "t", "source": source,
           "source_title": "x"}
    problems = vllm_version_problems({"a_fact": row})
    assert len(problems) == 1 and message in problems[0]
    ok = dict(row, version=VLLM_VERSION,
              source="https://github.com/vllm-project/vllm/blob/v0.34.0/vllm/config/cache.py#L185-L189")
    assert vllm_version_problems({"a_fact": ok}) == []
