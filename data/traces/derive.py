"""Derive the lab's compact traces from the Azure LLM inference trace 2023 CSV files.

Usage (from the repository root):

    python data/traces/derive.py /path/to/azure-llm-inference-2023

For each service (conv, code) it reads `AzureLLMInferenceTrace_<name>.csv` (columns
TIMESTAMP, ContextTokens, GeneratedTokens) and writes `<name>.txt.gz` beside this
script: a few `#` comment lines (source, licence, row count), then one line per request,
in the CSV's order, `offset_ms context_tokens generated_tokens`, where offset_ms is the
arrival time after the first request, rounded to the nearest millisecond.

The timestamps carry 100 ns digits; they are read as integers (no float rounding), so
the output is the same on every machine. gzip is written with mtime 0 for the same
reason: rerunning the script reproduces the files byte for byte.
"""

from __future__ import annotations

import calendar
import csv
import gzip
import sys
from datetime import datetime
from pathlib import Path

SERVICES = {"conv": "a conversation service", "code": "a coding service"}
HERE = Path(__file__).resolve().parent


def microseconds(stamp: str) -> int:
    """'2023-11-16 18:15:46.6805900' -> microseconds since the epoch, exactly."""
    whole, _, frac = stamp.partition(".")
    base = datetime.strptime(whole, "%Y-%m-%d %H:%M:%S")
    frac = (frac + "0000000")[:7]  # 100 ns units
    tenths_of_us = int(frac)
    # Round the 100 ns digit half up to whole microseconds.
    return calendar.timegm(base.timetuple()) * 1_000_000 + (tenths_of_us + 5) // 10


def rows(csv_path: Path) -> list[tuple[int, int, int]]:
    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        out = [(microseconds(r["TIMESTAMP"]), int(r["ContextTokens"]), int(r["GeneratedTokens"]))
               for r in reader]
    assert all(a[0] <= b[0] for a, b in zip(out, out[1:])), "rows are not in time order"
    return out


def compact(name: str, data: list[tuple[int, int, int]]) -> bytes:
    t0 = data[0][0]
    lines = [
        f"# Azure LLM inference trace 2023, {SERVICES[name]} (AzureLLMInferenceTrace_{name}.csv)",
        "# Patel et al., Splitwise (ISCA 2024); Azure/AzurePublicDataset; CC BY 4.0",
        f"# {len(data)} requests: offset_ms context_tokens generated_tokens",
    ]
    lines += [f"{(t - t0 + 500) // 1000} {c} {g}" for t, c, g in data]
    return gzip.compress(("\n".join(lines) + "\n").encode("ascii"), compresslevel=9, mtime=0)


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else None
    if source is None or not source.is_dir():
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    for name in SERVICES:
        data = rows(source / f"AzureLLMInferenceTrace_{name}.csv")
        out = HERE / f"{name}.txt.gz"
        out.write_bytes(compact(name, data))
        print(f"{out.name}: {len(data):,} requests, {out.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
