"""KV-cache block manager: replay time of the default scenario run to completion, and of
the largest one the config allows (64 requests, a pool of 4,096 blocks), in CPython and in Pyodide
(Node), median of several runs, through the bridge (JSON in and out) as the page calls it.
Also one action on the default scenario (what a button click costs before drawing)."""

from __future__ import annotations

import json

from common import median_seconds, run_in_pyodide, table

from pysim import bridge


def large_requests(n=64, prompt_words=64, answer=64):
    # Every fourth request shares a long system prompt, so caching has work to do.
    system = [f"sys{i}" for i in range(32)]
    reqs = []
    for i in range(n):
        own = [f"r{i}w{j}" for j in range(prompt_words - (32 if i % 4 == 0 else 0))]
        reqs.append({"name": f"R{i}", "prompt": (system if i % 4 == 0 else []) + own,
                     "max_tokens": answer})
    return reqs


CASES = {
    "default (24 blocks), one action: admit": {"config": {}, "actions": ["admit"]},
    "default (24 blocks), run to completion": {"config": {}, "actions": ["run"]},
    "largest allowed: 64 requests of 64+64 tokens, 4,096 blocks of 16, run": {
        "config": {"num_gpu_blocks": 4096, "block_size": 16, "requests": large_requests()},
        "actions": ["run"]},
    "the same, caching off": {
        "config": {"num_gpu_blocks": 4096, "block_size": 16, "enable_prefix_caching": False, "requests": large_requests()},
        "actions": ["run"]},
}


def main():
    payloads = {label: json.dumps(p) for label, p in CASES.items()}
    for label, text in payloads.items():
        answer = json.loads(bridge.call("paged_kv_cache", text))
        assert answer["ok"], (label, answer)
    cpython = {label: median_seconds(lambda t=text: bridge.call("paged_kv_cache", t), repeats=7)
               for label, text in payloads.items()}
    pyodide = run_in_pyodide(f"""
from pysim import bridge
payloads = {payloads!r}
print(json.dumps({{label: median_seconds(lambda t=text: bridge.call("paged_kv_cache", t), repeats=7)
                  for label, text in payloads.items()}}))
""")
    rows = [[label, f"{cpython[label] * 1e3:.2f}", f"{pyodide[label] * 1e3:.2f}",
             f"{pyodide[label] / cpython[label]:.2f}x"] for label in payloads]
    print("paged_kv_cache replay through bridge.call, median of 7 runs (CPython and Pyodide in Node)")
    print(table(["case", "CPython ms", "Pyodide ms", "Pyodide / CPython"], rows))


if __name__ == "__main__":
    main()
