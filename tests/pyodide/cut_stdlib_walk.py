"""What a reader can make the page's Python do, walked in Pyodide by cut_stdlib.mjs
(which sets `listing` and `reader_json`); the last expression is its JSON report."""
import importlib, json, pkgutil, sys
importlib.invalidate_caches()
failures = []

def attempt(what, fn):
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001  (every failure is reported by name)
        failures.append(f"{what}: {type(exc).__name__}: {exc}")

import pysim, pysim.bridge as bridge
for info in pkgutil.walk_packages(pysim.__path__, "pysim."):
    if info.name != "pysim.__main__":
        attempt(f"import {info.name}", lambda n=info.name: importlib.import_module(n))

def answer(name, payload):
    reply = json.loads(bridge.call(name, json.dumps(payload)))
    assert reply["ok"], reply.get("error")
    return reply["result"]

attempt("describe", lambda: answer("describe", {}))
for name, sim in bridge.simulations().items():
    attempt(f"{name} default", lambda n=name, s=sim: answer(n, {"config": {}, "actions": list(s.example_actions)}))

from pysim.sims import exercises
def exercise(action, code, check):
    view = answer("exercises", {"config": {"code": code}, "actions": [action]})
    assert check(view), json.dumps(view)[:300]
starter, solution = exercises.starter_code(), exercises.solution_code()
attempt("exercise: run the starter (it explains why it is stuck)",
        lambda: exercise("run", starter, lambda v: v["ok"] is False and "scheduled nothing" in v["error"]))
attempt("exercise: run the solution",
        lambda: exercise("run", solution, lambda v: v["ok"] is True and v["summary"]["finished"] == 200))
attempt("exercise: check the solution", lambda: exercise("check", solution, lambda v: v["passed"] is True))
attempt("exercise: an error in the reader's code names its line",
        lambda: exercise("run", solution + "\nraise ValueError('mine')\n", lambda v: v["ok"] is False and v["error_line"]))

# Modules a reader's exercise code may reasonably import (sitebuild/stdlib.py READER).
READER = json.loads(reader_json)
for name in READER:
    attempt(f"import {name}", lambda n=name: importlib.import_module(n))

if not listing:
    def cut_module_says_so():
        try:
            import xml.dom.minidom  # noqa: F401  (a module this page's Python leaves out)
        except ModuleNotFoundError as exc:
            assert "left out" in str(exc), str(exc)
            assert exc.name == "xml", exc.name
        else:
            raise AssertionError("import xml worked: it should have been cut")
    attempt("a cut module says it was left out", cut_module_says_so)

zipped = sorted({(name if name.startswith("encodings.") else name.split(".")[0]) for name, module in list(sys.modules.items())
                 if ".zip/" in (getattr(module, "__file__", None) or "")})
json.dumps({"ok": not failures, "failures": failures, "stdlib": zipped})
