"""Exercise 5 (chunked prefill in the toy scheduler): run a reader's code and check it.

The Exercises page holds an editor pre-filled with the toy scheduler
(pysim/toy/scheduler.py). Its buttons call this module through the bridge, in the
page's Python worker, never on the page's own thread:

- "run" executes the reader's file in a fresh module, then drives its `ToyScheduler`
  (with its `Request` and `ToyConfig`) over the driver's workload with a 256-token
  budget, and returns the summary and whatever the code printed;
- "check" drives it over several workloads beside pysim's own answer
  (pysim.toy.chunked) and reports the first iteration where they differ, naming the
  request and the tokens expected and got, or that all checks pass. It checks the
  reader's own scheduler: code that imports pysim's answer instead (its ToyScheduler or
  Request built on pysim.toy.chunked, or a step() not written in the reader's file) is
  refused with a message saying so, since comparing the answer with itself proves nothing.

Both views name `error_line`, the line of the reader's code an error points at (None
without one), so the page can mark it in the editor.

The driving loop is pysim's (`pysim.toy.scheduler.iterate`, the same loop as in the reader's
file), so a reader changes the scheduler, not the harness. An endless loop in the
reader's code is stopped by the page: its call times out and the worker is restarted.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import re
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

from pysim.config import ConfigError, data
from pysim.registry import Simulation
from pysim.toy import chunked as toy_chunked, scheduler as toy_scheduler

FILENAME = "<your code>"
MODULE_NAME = "your_toy"
MAX_CODE_CHARS = 50_000
MAX_OUTPUT_CHARS = 10_000
TIME_LIMIT_S = 5  # enforced by the page (runtime.call's timeout), stated in the view
MARKER = re.compile(r"^[ \t]*# --8<-- \[(start|end):[a-z_]+\][ \t]*\n", re.M)

# Run: the driver's workload where whole prompts no longer fit one iteration.
RUN_SETTINGS = {"max_num_batched_tokens": 256}
RUN_REQUESTS, RUN_SEED = 200, toy_scheduler.ToyConfig().seed


def _check_code(value):
    if not isinstance(value, str):
        raise ConfigError("code", f"expected the program as text, got {type(value).__name__}")
    if len(value) > MAX_CODE_CHARS:
        raise ConfigError("code", f"your code is {len(value):,} characters long; at most "
                                  f"{MAX_CODE_CHARS:,} are accepted")
    return value


@dataclass(frozen=True)
class ExercisesConfig:
    code: str = data(str, "your program (empty: the starter code)", check=_check_code,
                      label="Python code of your toy scheduler")


# ---------------------------------------------------------------- the workloads

def _tiny() -> list[dict]:
    # Budget 64. Iteration 0: A and B (20-token prompts) are prefilled. Iteration 1: A and
    # B decode, and C (100 tokens) gets the 62 tokens left; iteration 2 its last 38.
    return [{"id": 0, "arrival": 0, "num_prompt_tokens": 20, "max_tokens": 6},
            {"id": 1, "arrival": 0, "num_prompt_tokens": 20, "max_tokens": 6},
            {"id": 2, "arrival": 1, "num_prompt_tokens": 100, "max_tokens": 3}]


CHECKS = (
    ("a long prompt arrives while two requests decode, budget 64",
     {"max_num_batched_tokens": 64, "max_num_seqs": 8}, _tiny),
    ("the driver's 200 requests with a 256-token budget",
     {"max_num_batched_tokens": 256}, lambda: toy_scheduler.workload(200, RUN_SEED)),
    ("the driver's 200 requests with the default 1,024-token budget",
     {}, lambda: toy_scheduler.workload(200, RUN_SEED)),
    ("a memory-starved run with preemptions, 150 blocks and a 128-token budget",
     {"max_num_batched_tokens": 128, "num_gpu_blocks": 151, "max_num_seqs": 16}, lambda: toy_scheduler.workload(120, 5)),
)


# ---------------------------------------------------------------- the reader's code

def starter_code() -> str:
    """pysim/toy/scheduler.py (the teaching scheduler, nothing else) without the page's
    snippet markers."""
    return MARKER.sub("", Path(toy_scheduler.__file__).read_text(encoding="utf-8"))


def solution_code() -> str:
    """A complete file that passes the checker: the starter plus pysim's chunked classes.

    (The tests paste it into the page; the page's worked solution explains the same code.)
    """
    parts = [inspect.getsource(obj) for obj in SOLUTION_PARTS]
    body = MARKER.sub("", "\n\n".join(parts))
    return (starter_code() + "\n\n# Exercise 5, solved: chunked prefill.\n" + body
            + "\n\nRequest, ToyScheduler = ChunkedRequest, ChunkedScheduler\n")


# What the solution adds to the starter code, read from pysim.toy.chunked by name.
SOLUTION_PARTS = (toy_chunked.ChunkedRequest, toy_chunked.decoding, toy_chunked.ChunkedScheduler)


# pysim's answer to the exercise: a reader's scheduler built on it is not theirs.
ANSWER_MODULES = (toy_chunked.__name__,)


class ReaderError(Exception):
    """Something in the reader's code went wrong; `message` says what, in plain words,
    and `line` which line of their code (None when no line is to blame)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


class _Capped:
    """A stdout that keeps the first MAX_OUTPUT_CHARS characters printed."""

    def __init__(self):
        self.parts, self.size, self.cut = [], 0, False

    def write(self, text):
        room = MAX_OUTPUT_CHARS - self.size
        if len(text) > room:
            self.cut = True
            text = text[:max(0, room)]
        self.parts.append(text)
        self.size += len(text)
        return len(text)

    def flush(self):
        pass

    def text(self) -> str:
        out = "".join(self.parts)
        return out + ("\n[output cut at 10,000 characters]" if self.cut else "")


def error_line(exc: BaseException) -> int | None:
    """The line of the reader's code the error points at: a syntax error's, or the
    innermost frame of their file in the traceback."""
    if isinstance(exc, SyntaxError) and exc.filename == FILENAME:
        return exc.lineno
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
    return frames[-1].lineno if frames else None


def _explain(exc: BaseException, code: str) -> str:
    """The error as a reader wants it: the line of their code, the kind, the message."""
    lines = code.splitlines()
    if isinstance(exc, SyntaxError) and exc.filename == FILENAME:
        where = f"Line {exc.lineno}: " if exc.lineno else ""
        text = lines[exc.lineno - 1].strip() if exc.lineno and exc.lineno <= len(lines) else ""
        return f"{where}{type(exc).__name__}: {exc.msg}" + (f"\n    {text}" if text else "")
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
    message = f"{type(exc).__name__}: {exc}"
    if not frames:
        return message
    f = frames[-1]
    text = lines[f.lineno - 1].strip() if f.lineno and f.lineno <= len(lines) else ""
    return f"Line {f.lineno}, in {f.name}: {message}" + (f"\n    {text}" if text else "")


def load(code: str) -> types.ModuleType:
    """Run the reader's file as a fresh module; ReaderError if it does not define the toy."""
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = FILENAME
    # dataclasses look the defining module up in sys.modules.
    sys.modules[MODULE_NAME] = module
    try:
        exec(compile(code, FILENAME, "exec"), module.__dict__)
    except BaseException as exc:
        raise ReaderError(_explain(exc, code), error_line(exc)) from None
    missing = [name for name in ("Request", "ToyConfig", "ToyScheduler") if not hasattr(module, name)]
    if missing:
        raise ReaderError(f"Your code must define {', '.join(missing)} (as the starter code does): "
                          "Run and Check drive your ToyScheduler with your Request and ToyConfig.")
    return module


def require_own(module) -> None:
    """ReaderError unless the scheduler Check would drive is the reader's own: no class of
    pysim's answer under their ToyScheduler or Request (an import, an alias, a subclass),
    and a step() defined in their file. Check compares with that answer, so the answer
    would pass every check without the reader's code being tested at all."""
    for name in ("ToyScheduler", "Request"):
        for cls in getattr(getattr(module, name), "__mro__", ()):
            if cls.__module__ in ANSWER_MODULES:
                raise ReaderError(
                    f"Your {name} is pysim's own answer ({cls.__module__}.{cls.__qualname__}), imported "
                    "rather than written: Check compares your scheduler with that answer, so it would "
                    "pass without testing your code. Write chunked prefill in your own ToyScheduler.")
    step = getattr(module.ToyScheduler, "step", None)
    if getattr(getattr(step, "__code__", None), "co_filename", None) != FILENAME:
        raise ReaderError("Your ToyScheduler.step() must be written in your code (as the starter's is): "
                          "Check runs the step you wrote, and this one comes from somewhere else.")


def drive(module, settings: dict, specs: list[dict]):
    """Yield the reader's iteration reports, one by one (their code runs as we go)."""
    config = module.ToyConfig(**settings)
    requests = [module.Request(**spec) for spec in specs]
    return requests, toy_scheduler.iterate(module.ToyScheduler(config), requests)


# ---------------------------------------------------------------- comparing

def _work(entry) -> str:
    if entry is None:
        return "nothing (not in the batch)"
    kind, n = entry
    if kind == "decode" and n == 1:
        return "a decode (1 token)"
    return f"{n} {kind} token{'s' if n != 1 else ''}"


def _batch(report, step: int) -> dict:
    try:
        out = {}
        for rid, kind, n in report["batch"]:
            out[rid] = (kind, n)
        return out
    except Exception:
        raise ReaderError(f"step {step}: step() must return a dict whose 'batch' is a list of "
                          "(request id, kind, tokens), as the starter code's does") from None


def first_request(expected: dict, got: dict):
    """The request the first difference between two iteration reports is about (the one
    `compare` names first), or None if they differ only in the iteration's number."""
    step = expected["iteration"]
    want, have = _batch(expected, step), _batch(got, step)
    for rid in [*want, *(r for r in have if r not in want)]:
        if want.get(rid) != have.get(rid):
            return rid
    for key in ("preempted", "finished"):
        a, b = set(expected[key]), set(got.get(key, []))
        if a != b:
            return min(a ^ b, key=repr)
    return None


def compare(expected: dict, got: dict) -> str | None:
    """The differences between two iteration reports in words, or None if they agree."""
    step = expected["iteration"]
    want, have = _batch(expected, step), _batch(got, step)
    notes = []
    for rid in [*want, *(r for r in have if r not in want)]:
        a, b = want.get(rid), have.get(rid)
        if a == b:
            continue
        if a and b and a[0] == b[0] == "prefill":
            notes.append(f"request {rid} expected {a[1]} prefill tokens, got {b[1]}")
        else:
            notes.append(f"request {rid} expected {_work(a)}, got {_work(b)}")
    if len(notes) > 3:
        notes = notes[:3] + [f"and {len(notes) - 3} more"]
    for key, words in (("preempted", "preempted"), ("finished", "finished")):
        if not notes and sorted(expected[key]) != sorted(got.get(key, [])):
            notes.append(f"expected requests {sorted(expected[key])} to be {words}, got "
                         f"{sorted(got.get(key, []))}")
    if not notes and got.get("iteration") != step:
        notes.append(f"the iteration is numbered {got.get('iteration')!r}, expected {step}")
    return f"step {step}: " + "; ".join(notes) if notes else None


# Steps the mismatch table shows around the first differing one.
STEPS_BEFORE, STEPS_AFTER = 3, 2
NOT_IN_BATCH, NO_STEP = "not in the batch", "no such step"


def _sampled(request):
    """The tokens a request has sampled so far (its `generated`), if it says so."""
    try:
        value = getattr(request, "generated", None)
    except Exception:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _entries(report, by_id: dict, step) -> dict:
    """request id -> (kind, tokens, sampled so far) for each request in a report's batch,
    read right after the iteration ran."""
    return {rid: (kind, n, _sampled(by_id.get(rid))) for rid, (kind, n) in _batch(report, step).items()}


def _side(entries, rid) -> dict:
    if entries is None:
        return {"kind": NO_STEP, "tokens": None, "sampled": None}
    if rid not in entries:
        return {"kind": NOT_IN_BATCH, "tokens": None, "sampled": None}
    kind, n, sampled = entries[rid]
    return {"kind": str(kind), "tokens": n if isinstance(n, int) else None, "sampled": sampled}


def mismatch_table(message: str, rid, expected: list, got: list, at: int) -> dict | None:
    """The request `rid`'s work, step by step, as pysim's scheduler and the reader's did it,
    around position `at` (the first differing step): `expected` and `got` are lists of
    (iteration, entries) from STEPS_BEFORE steps before it to STEPS_AFTER after (None where
    a scheduler had no such step). The caption is the checker's message."""
    if rid is None:
        return None
    rows = []
    for i, (want, have) in enumerate(zip(expected, got)):
        step = want[0] if want else have[0]
        a = _side(want and want[1], rid)
        b = _side(have and have[1], rid)
        rows.append({"step": step, "failing": i == at, "expected": a, "actual": b, "differs": a != b})
    return {"caption": message, "request": rid, "rows": rows}


def _expected_steps(specs: list[dict], config) -> list[tuple]:
    """pysim's answer on a workload: (report, entries) per iteration."""
    requests = [toy_chunked.ChunkedRequest(**spec) for spec in specs]
    by_id = {r.id: r for r in requests}
    return [(report, _entries(report, by_id, report["iteration"]))
            for report in toy_scheduler.iterate(toy_chunked.ChunkedScheduler(config), requests)]


def check_one(module, code: str, settings: dict, specs: list[dict]):
    """Compare the reader's scheduler with pysim's on one workload: (passed, message,
    steps, the line of their code an error stopped at, the table of the first mismatch
    or None)."""
    expected = _expected_steps(specs, toy_scheduler.ToyConfig(**settings))
    requests, reports = drive(module, settings, specs)
    by_id = {getattr(r, "id", None): r for r in requests}
    recent = []  # the reader's last STEPS_BEFORE steps: (iteration, entries)

    def table(message, rid, step, got_entries):
        """The table around position `step`; the reader's code runs a few steps more."""
        after = []
        try:
            for _ in range(STEPS_AFTER):
                report = next(reports, None)
                if report is None:
                    break
                at = report.get("iteration")
                after.append((at, _entries(report, by_id, at)))
        except BaseException:  # their scheduler stops here: the table ends here too
            pass
        first = step - len(recent)
        want = [(rep["iteration"], entries) for rep, entries in expected[first:step + 1 + STEPS_AFTER]]
        have = [*recent, got_entries, *after]
        width = max(len(want), len(have))
        want += [None] * (width - len(want))
        have += [None] * (width - len(have))
        return mismatch_table(message, rid, want, have, len(recent))

    step = 0
    while True:
        try:
            got = next(reports, None)
        except ReaderError:
            raise
        except BaseException as exc:  # SystemExit too: exit() in a reader's code
            where = expected[step][0]["iteration"] if step < len(expected) else "after the last"
            detail = _explain(exc, code)
            return False, f"step {where}: your scheduler stopped with {detail}", step, error_line(exc), None
        if got is None:
            if step < len(expected):
                message = f"your run ended after {step} iterations; expected {len(expected)}"
                rid = next(iter(expected[step][1]), None)
                return False, message, step, None, table(message, rid, step, None)
            return True, f"all {step} iterations match", step, None, None
        if step >= len(expected):
            message = f"expected every request to be finished after {len(expected)} iterations, but yours went on"
            at = got.get("iteration") if isinstance(got, dict) else None
            have = (at, _entries(got, by_id, at))
            return False, message, step, None, table(message, next(iter(have[1]), None), step, have)
        want = expected[step][0]
        difference = compare(want, got)
        entries = (want["iteration"], _entries(got, by_id, want["iteration"]))
        if difference:
            return False, difference, step, None, table(difference, first_request(want, got), step, entries)
        recent = [*recent, entries][-STEPS_BEFORE:]
        step += 1


# ---------------------------------------------------------------- the simulation

# The toy's modules under the names they had before pysim's modules moved into folders
# (issue 51): code a reader saved (in this browser, or in a link) may import them so,
# `from pysim import toy_scheduler` or `import pysim.toy_chunked`. While the reader's code
# runs, each old name is the module that holds it now.
OLD_NAMES = {"toy_scheduler": "pysim.toy.scheduler", "toy_chunked": "pysim.toy.chunked",
             "toy_self_victim": "pysim.toy.self_victim"}


@contextlib.contextmanager
def old_names():
    """`pysim.OLD` importable for OLD in OLD_NAMES, for as long as the block runs."""
    package = sys.modules["pysim"]
    added = []
    for old, new in OLD_NAMES.items():
        name = f"pysim.{old}"
        if name not in sys.modules:
            sys.modules[name] = importlib.import_module(new)
            setattr(package, old, sys.modules[name])
            added.append(old)
    try:
        yield
    finally:
        for old in added:
            sys.modules.pop(f"pysim.{old}", None)
            if hasattr(package, old):
                delattr(package, old)


def _with_reader_code(code: str, action):
    """Load the reader's code and call `action(module)` with stdout captured:
    (result, error message, the error's line in their code, what they printed)."""
    out = _Capped()
    error = line = None
    result = None
    with contextlib.redirect_stdout(out), old_names():
        try:
            module = load(code)
            result = action(module)
        except ReaderError as exc:
            error, line = exc.message, exc.line
        except BaseException as exc:  # sys.exit() in their code is an error like any other
            error, line = _explain(exc, code), error_line(exc)
        finally:
            sys.modules.pop(MODULE_NAME, None)
    return result, error, line, out.text()


# What a call may ask of the reader's code: no action gives the starter code.
ACTIONS = ("run", "check")


def run(config: ExercisesConfig, actions: list) -> dict:
    """`actions` is empty (the starter code and the settings), ["run"] (drive the reader's
    scheduler once and summarise it) or ["check"] (compare it with the reference)."""
    if len(actions) > 1 or (actions and actions[0] not in ACTIONS):
        raise ConfigError("actions", f"got {str(actions)[:40]}, expected no action or one of {', '.join(ACTIONS)}")
    if not actions:
        return {"action": None, "starter_code": starter_code(), "time_limit_s": TIME_LIMIT_S,
                "checks": [name for name, _, _ in CHECKS],
                "run_settings": {**RUN_SETTINGS, "num_requests": RUN_REQUESTS, "seed": RUN_SEED}}
    code = config.code or starter_code()

    if actions == ["run"]:
        def action(module):
            requests, reports = drive(module, RUN_SETTINGS, toy_scheduler.workload(RUN_REQUESTS, RUN_SEED))
            try:
                reports = list(reports)
            except ReaderError:
                raise
            except BaseException as exc:  # SystemExit too: exit() in a reader's code
                raise ReaderError(_explain(exc, code), error_line(exc)) from None
            return {k: round(v, 2) if isinstance(v, float) else v
                    for k, v in toy_scheduler.summarize(requests, reports).items()}

        summary, error, line, output = _with_reader_code(code, action)
        return {"action": "run", "ok": error is None, "summary": summary, "error": error,
                "error_line": line, "output": output,
                "run_settings": {**RUN_SETTINGS, "num_requests": RUN_REQUESTS, "seed": RUN_SEED}}

    def check_all(module):
        require_own(module)
        results = []
        for name, settings, make in CHECKS:
            passed, message, steps, line, table = check_one(module, code, settings, make())
            results.append({"name": name, "passed": passed, "message": message, "steps": steps,
                            "line": line, "table": table})
        return results

    checks, error, line, output = _with_reader_code(code, check_all)
    mismatch = None
    if error is not None:
        message = error
    else:
        failed = [c for c in checks if not c["passed"]]
        message = ("all checks pass" if not failed else
                   f"Check {checks.index(failed[0]) + 1} ({failed[0]['name']}): {failed[0]['message']}")
        line = failed[0]["line"] if failed else None
        mismatch = failed[0]["table"] if failed else None
    for c in checks or []:
        del c["line"], c["table"]  # the first failure's line and table are the view's
    return {"action": "check", "passed": error is None and all(c["passed"] for c in checks),
            "message": message, "error": error, "error_line": line, "mismatch": mismatch,
            "checks": checks or [], "output": output}


def table_text(table: dict) -> list[str]:
    """The mismatch table as the CLI prints it."""
    def cells(side):
        none = lambda v: "-" if v is None else f"{v:,}"  # noqa: E731
        return f"{side['kind']:<16} {none(side['tokens']):>6} {none(side['sampled']):>7}"
    head = f"{'kind':<16} {'tokens':>6} {'sampled':>7}"
    lines = [f"request {table['request']}, step by step ({table['caption']}):",
             f"  {'':>6}   {'expected':<31} | yours",
             f"  {'step':>6}   {head} | {head}"]
    for row in table["rows"]:
        mark = ">" if row["failing"] else " "
        lines.append(f"{mark} {row['step'] if row['step'] is not None else '-':>6}   "
                     f"{cells(row['expected'])} | {cells(row['actual'])}")
    return lines


def text(view: dict) -> str:
    if view["action"] is None:
        return view["starter_code"]
    lines = []
    if view["action"] == "run":
        if view["summary"]:
            lines += [f"{k:22} {v}" for k, v in view["summary"].items()]
        if view["error"]:
            lines.append("error: " + view["error"])
    else:
        lines.append(view["message"])
        lines += [f"  {'pass' if c['passed'] else 'FAIL'}  {c['name']}: {c['message']}"
                  for c in view["checks"]]
        if view.get("mismatch"):
            lines += ["", *table_text(view["mismatch"])]
    if view["output"]:
        lines += ["printed:", view["output"]]
    return "\n".join(lines)


SIMULATION = Simulation(name="exercises", config_cls=ExercisesConfig, run=run, text=text,
                        takes_actions=True, runs_reader_code=True)
