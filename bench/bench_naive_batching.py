"""The default scheduler race simulated in CPython and in Pyodide (Node): median times
and their ratio, measured in one run. Also the largest race the config allows (every
size field at its upper bound), which bounds how long a reader's click can take."""

from __future__ import annotations

import json
import platform

from common import median_seconds, run_in_pyodide, table

from pysim import bridge
from pysim.config import describe
from pysim.sims.naive_batching import NaiveBatchingConfig

DEFAULT = json.dumps({"config": {}})
LARGEST = json.dumps({"config": {f["name"]: f["hi"] for f in describe(NaiveBatchingConfig)
                                 if f["kind"] == "int" and f["name"] != "seed"}})


def main():
    rows = []
    for label, payload in (("default race", DEFAULT), ("largest allowed race", LARGEST)):
        answer = json.loads(bridge.call("naive_batching", payload))
        assert answer["ok"], answer
        cpython = median_seconds(lambda: bridge.call("naive_batching", payload), repeats=9)
        pyodide = run_in_pyodide(f"""
from pysim import bridge
t = median_seconds(lambda: bridge.call("naive_batching", {payload!r}), repeats=9)
print(json.dumps({{"t": t}}))
""")["t"]
        rows.append([label, f"{cpython * 1e3:.2f}", f"{pyodide * 1e3:.2f}", f"{pyodide / cpython:.2f}x"])
    print(f"bridge.call('naive_batching'), JSON in and out, median of 9 runs (CPython {platform.python_version()}, Pyodide in Node)")
    print("largest allowed:", json.loads(LARGEST)["config"])
    print(table(["workload", "CPython ms", "Pyodide ms", "Pyodide / CPython"], rows))


if __name__ == "__main__":
    main()
