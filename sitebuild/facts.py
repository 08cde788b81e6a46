"""The chapter's facts about real systems, kept in one table and rendered into the pages.

pysim computes every number the chapter prints; this file does the same job for what the
chapter says about vLLM, SGLang, llama.cpp, TGI and TensorRT-LLM: a default, a flag, a
metric or a behaviour. Each such fact is one row of `docs/facts.toml`:

    [sglang_mixed_chunk]
    system = "SGLang"                 # the project the fact is about
    version = "0.5"                   # the release (or tag, or date) it was read from
    text = "a prefill chunk ..."      # the fact, a clause in the chapter's own words
    source = "https://github.com/..." # where a reader can check it: a file at a tag, a PR, a docs page
    source_title = "server_args.py"   # what that link is, in a few words
    also = [{ url = "https://...", title = "PR #123" }]   # optional: further sources

A page writes `{{ fact.sglang_mixed_chunk }}` where the fact belongs; the build replaces
it with the text followed by a small linked marker naming the system and version, so
the fact changes in one place and every mention of it says where it came from. A line
holding only `{{ fact_sources }}` becomes the list of every source in the table, grouped
by system (the Further reading page). tests/build/test_facts.py checks the table: every
row has a version and a source, every placeholder resolves, every row is used.

Like every step in sitebuild/, it has no MkDocs dependency: sitebuild/hooks.py calls
`load` once per build and `render` once per page, before the figures step.
"""

from __future__ import annotations

import html
import re
import tomllib
from pathlib import Path

from . import BuildError

REQUIRED = ("system", "version", "text", "source", "source_title")
PLACEHOLDER = re.compile(r"\{\{\s*fact\.(?P<key>[a-z0-9_]+)\s*\}\}")
SOURCES_LINE = re.compile(r"^[ \t]*\{\{\s*fact_sources\s*\}\}[ \t]*$", re.M)
# The systems the chapter states facts about, in the order Further reading lists them.
SYSTEMS = ("vLLM", "SGLang", "TensorRT-LLM", "TGI", "llama.cpp", "llm-d", "Dynamo",
           "Mooncake", "DistServe", "Splitwise", "Hardware")


class FactError(BuildError):
    """A row of the table, or a page's placeholder, that the build must refuse."""


def load(path: Path) -> dict[str, dict]:
    """Read and check the table: every row names its system, version, text and source."""
    with open(path, "rb") as f:
        table = tomllib.load(f)
    problems = [p for key, row in table.items() for p in problems_of(key, row)]
    if problems:
        raise FactError(f"{path}: " + "; ".join(problems))
    return table


def problems_of(key: str, row) -> list[str]:
    """What is wrong with one row (empty list: nothing)."""
    if not isinstance(row, dict):
        return [f"{key}: not a table"]
    out = [f"{key}: no {field}" for field in REQUIRED
           if not isinstance(row.get(field), str) or not row[field].strip()]
    if out:
        return out
    if row["system"] not in SYSTEMS:
        out.append(f"{key}: system {row['system']!r} is not one of {', '.join(SYSTEMS)}")
    # A version says which release the fact holds for: it carries a number (0.33.0, v3, 2026-03).
    if not re.search(r"\d", row["version"]):
        out.append(f"{key}: version {row['version']!r} names no release")
    also = row.get("also", [])
    if not isinstance(also, list) or not all(isinstance(a, dict) and a.get("title") for a in also):
        return out + [f"{key}: also must be a list of {{ url, title }} tables"]
    for url in [row["source"], *(a.get("url") for a in also)]:
        if not isinstance(url, str) or not url.startswith("https://"):
            out.append(f"{key}: source {url!r} is not an https link")
    if "|" in row["text"] or "\n" in row["text"].strip():
        out.append(f"{key}: text must be one line without '|' (it may sit in a table cell)")
    return out


def marker(row: dict) -> str:
    """The small linked note after a fact: which system and version, linked to the source."""
    label = html.escape(f"{row['system']} {row['version']}")
    title = html.escape(row["source_title"], quote=True)
    return (f'<sup class="fact-source"><a href="{html.escape(row["source"], quote=True)}" '
            f'title="Source: {title}">{label}</a></sup>')


def render(markdown: str, facts: dict[str, dict], where: str) -> str:
    """Fill a page's `{{ fact.KEY }}` placeholders and its `{{ fact_sources }}` line."""

    def fill(match: re.Match) -> str:
        key = match.group("key")
        if key not in facts:
            raise FactError(f"{where} names unknown fact {key!r} (docs/facts.toml)")
        return facts[key]["text"] + marker(facts[key])

    markdown = SOURCES_LINE.sub(lambda m: sources(facts), markdown)
    return PLACEHOLDER.sub(fill, markdown)


def keys_used(markdown: str) -> set[str]:
    return {m.group("key") for m in PLACEHOLDER.finditer(markdown)}


def escape_markdown(text: str) -> str:
    """A code name read as text: `BlockPool.__init__` must not turn into bold "init"."""
    return re.sub(r"([\\`*_])", r"\\\1", text)


def sources(facts: dict[str, dict]) -> str:
    """Every source of the table once, grouped by system, as a Markdown list.

    A `source_title` reads "WHERE, WHAT" (a file and the names in it that the facts come
    from); rows that share a source are listed once, with all their WHATs.
    """
    by_system: dict[str, dict[str, list[str]]] = {s: {} for s in SYSTEMS}
    for row in facts.values():
        links = by_system[row["system"]]
        where, _, what = row["source_title"].partition(", ")
        entry = links.setdefault(row["source"], [f"{where} ({row['system']} {row['version']})"])
        if what and what not in entry:
            entry.append(what)
        for extra in row.get("also", []):
            links.setdefault(extra["url"], [extra["title"]])
    lines = []
    for system, links in by_system.items():
        if not links:
            continue
        lines.append(f"**{system}**\n")
        for url, (title, *whats) in sorted(links.items(), key=lambda kv: kv[1][0].lower()):
            whats = [escape_markdown(w) for w in whats]
            lines.append(f"- [{title}]({url})" + (": " + "; ".join(whats) if whats else ""))
        lines.append("")
    return "\n".join(lines)
