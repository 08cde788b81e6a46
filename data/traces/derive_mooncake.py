"""Derive the compact Mooncake traces from the FAST'25 JSON-lines files.

Usage (from the repository root):

    python data/traces/derive_mooncake.py /path/to/mooncake-fast25

Each input line is {"timestamp", "input_length", "output_length", "hash_ids"}: arrival
in ms, prompt and answer tokens, and the prompt's 512-token blocks named by integers.
Two facts about the published files make a lossless compact form possible (main()
asserts both before writing):
  - a block id always follows the same parent id (the ids name a prefix, not just a
    block's content), so the ids a request shares with earlier requests are a chain
    that its last shared id names alone;
  - ids never seen before are handed out in order, one more than the largest so far, and
    they come after the shared ones.
So each request becomes one line `offset_ms input_length output_length parent new`:
`parent` is its last block id already seen (-1 if none), `new` how many fresh ids follow.
pysim.traffic.traces rebuilds every request's `hash_ids` from that. gzip with mtime 0, so a rerun
reproduces the files byte for byte.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

FILES = {"mooncake_conv": ("conversation_trace.jsonl", "Kimi's conversation service"),
         "mooncake_synth": ("synthetic_trace.jsonl", "a synthetic trace with Poisson arrivals")}
HERE = Path(__file__).resolve().parent


def compact_lines(rows: list[dict]) -> list[str]:
    parent_of: dict[int, int] = {}
    next_id = 0
    lines = []
    t0 = rows[0]["timestamp"]
    for r in rows:
        ids = r["hash_ids"]
        assert len(ids) == -(-r["input_length"] // 512), "one id per started 512-token block"
        shared = [x for x in ids if x < next_id]
        fresh = ids[len(shared):]
        assert ids[:len(shared)] == shared, "shared ids come first"
        assert fresh == list(range(next_id, next_id + len(fresh))), "fresh ids in order"
        for i, x in enumerate(ids):
            p = ids[i - 1] if i else -1
            assert parent_of.setdefault(x, p) == p, f"id {x} under two parents"
        next_id += len(fresh)
        parent = shared[-1] if shared else -1
        lines.append(f"{r['timestamp'] - t0} {r['input_length']} {r['output_length']} {parent} {len(fresh)}")
    return lines


def compact(name: str, rows: list[dict]) -> bytes:
    source, what = FILES[name]
    head = [f"# Mooncake FAST'25 trace, {what} ({source})",
            "# Qin et al., Mooncake (USENIX FAST 2025); kvcache-ai/Mooncake; Apache-2.0",
            f"# {len(rows)} requests: offset_ms input_length output_length parent_id new_ids"]
    body = compact_lines(rows)
    return gzip.compress(("\n".join(head + body) + "\n").encode("ascii"), compresslevel=9, mtime=0)


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else None
    if source is None or not source.is_dir():
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    for name, (file, _) in FILES.items():
        rows = [json.loads(line) for line in (source / file).read_text().splitlines() if line]
        assert all(a["timestamp"] <= b["timestamp"] for a, b in zip(rows, rows[1:]))
        out = HERE / f"{name}.txt.gz"
        out.write_bytes(compact(name, rows))
        print(f"{out.name}: {len(rows):,} requests, {out.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
