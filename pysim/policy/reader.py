"""A reader's scheduling policy: their code, loaded and run under a budget.

The file defines `order(request, engine)` and optionally `victim(running, engine)`
(pysim.policy.api). It runs as exercise 5's code does (pysim.sims.exercises: a fresh module,
errors reported with the line of the reader's code), plus what a policy inside the
engine needs:

- every key `order` returns is checked: a number or a tuple of numbers, comparable
  with the others; `victim` must return one of the running requests it was given;
- the views are read-only: setting an attribute raises, naming it;
- a budget: before it is compiled, the reader's code gets a call to the budget at the
  top of every function, loop body and comprehension (`Instrument`), the only ways
  Python code keeps running. Each call is a step; every few thousand steps the budget
  looks at the clock. Past `MAX_STEPS` steps or `MAX_SECONDS` in one run the code is
  stopped, and it stays stopped (a bare `except:` cannot swallow the budget). The
  checks run inside the code itself, so this works where threads and signals do not
  (Pyodide in a Web Worker), and pysim's own code runs at full speed. A loop inside a
  C function (`sum(itertools.count())`) runs no Python line at all: on the page, the
  runtime's timeout restarts Python (widgets/policies.js, `RUN_MS`).
  (A trace function, `sys.settrace`, could count lines instead, but from Python 3.12
  on, switching one on and off around each call of the reader's code makes every
  function, pysim's too, re-instrument itself: the whole run slows, not just the
  reader's code. bench/bench_policies.py prints what the budget costs.)

Any failure becomes `ReaderError(message, line)`; the engine that ran it is dropped,
so nothing carries over to the next run. Python cannot make objects truly private: the
views refuse writes and hold no engine state of their own; code set on reaching around
them through Python's internals is out of scope.
"""

from __future__ import annotations

import ast
import sys
import time
import types
from contextlib import contextmanager

from pysim.policy.api import Policy, is_key
from pysim.sims.exercises import FILENAME, ReaderError, _Capped, _explain, error_line

MAX_CODE_CHARS = 20_000
MAX_STEPS = 10_000_000  # function calls and loop turns of the reader's code per run
MAX_SECONDS = 10.0  # seconds inside the reader's code per run
CHECK_EVERY = 4096  # steps between two looks at the clock (a power of two)
MODULE_NAME = "your_policy"
STEP = "_pysim_step"  # the name the instrumented code calls: reserved, a reader may not use it


class BudgetExceeded(BaseException):
    """Raised inside the reader's code by its budget (BaseException: a bare
    `except Exception` in their code does not swallow it)."""


class Instrument(ast.NodeTransformer):
    """Puts `_pysim_step(line)` first in every function body, loop body and comprehension
    of the reader's code (`line`: the first line of that body, so a stopped loop is named
    by its own line). Code without these runs once per line it has, so it is bounded by
    the file's length; everything else passes through a step."""

    @staticmethod
    def _call(line: int) -> ast.Call:
        return ast.Call(ast.Name(STEP, ast.Load()), [ast.Constant(line)], [])

    def _first(self, node, docstring: bool = False):
        self.generic_visit(node)
        body = node.body
        at = int(docstring and ast.get_docstring(node, clean=False) is not None)
        body.insert(at, ast.Expr(self._call(body[min(at, len(body) - 1)].lineno)))
        return node

    def visit_FunctionDef(self, node):
        return self._first(node, docstring=True)  # after a docstring, so __doc__ stays

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_For(self, node):
        return self._first(node)

    visit_AsyncFor = visit_While = visit_For

    def visit_Lambda(self, node):  # lambda x: body  ->  lambda x: _pysim_step(line) and body
        self.generic_visit(node)
        node.body = ast.BoolOp(ast.And(), [self._call(node.body.lineno), node.body])
        return node

    def visit_comprehension(self, node):  # for x in xs if ...  ->  for x in xs if step(line) if ...
        self.generic_visit(node)
        node.ifs.insert(0, self._call(node.target.lineno))
        return node

    def visit_Name(self, node):
        if node.id == STEP:
            raise ReaderError(f"Line {node.lineno}: the name {STEP} is pysim's (it counts your "
                              "policy's steps): choose another name", node.lineno)
        return node


def compile_counted(code: str):
    """The reader's code compiled with its steps counted (Instrument)."""
    tree = ast.parse(code, FILENAME)
    tree = ast.fix_missing_locations(Instrument().visit(tree))
    return compile(tree, FILENAME, "exec")


def _short(value) -> str:
    try:
        text = repr(value)
    except BaseException:  # a reader's __repr__ may fail too
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


class Guard:
    """Runs the reader's functions under one run's budget and checks what they return."""

    def __init__(self, code: str, max_steps: int | None = None, max_seconds: float | None = None):
        self.code = code
        self.max_steps = MAX_STEPS if max_steps is None else max_steps
        self.max_seconds = MAX_SECONDS if max_seconds is None else max_seconds
        self.steps = 0
        self.seconds = 0.0  # spent inside the reader's code
        self.last_line = None
        self.output = _Capped()
        self._limit = self.max_steps  # 0 once the budget is spent: every later step stops too
        self.stopped = None  # (line, why) where it was spent first (a reader's `except:` may go on)

    # --- the budget -------------------------------------------------------------------
    def step(self, line: int) -> bool:
        """Called by the instrumented code (Instrument); True, so it can sit in a
        comprehension's conditions and before a lambda's body."""
        self.last_line = line
        n = self.steps = self.steps + 1
        if n > self._limit:
            self._stop(line, f"more than {self.max_steps:,} steps")
        if not n & (CHECK_EVERY - 1) and self.seconds + time.perf_counter() - self._t0 > self.max_seconds:
            self._stop(line, f"more than {self.max_seconds:g} s")
        return True

    def _stop(self, line: int, why: str):
        if self.stopped is None:
            self.stopped = (line, why)
            self._limit = 0
        raise BudgetExceeded(self.stopped[1])  # the first reason, however often it is caught

    def _enter(self):
        self._stdout = sys.stdout
        sys.stdout = self.output
        self._t0 = time.perf_counter()

    def _leave(self):
        sys.stdout = self._stdout
        self.seconds += time.perf_counter() - self._t0

    def returned_from(self, fn, *args) -> int | None:
        """The line `fn(*args)` returns from: it runs once more under a line tracer. Only
        for an answer being refused, so the tracer's cost is paid once per run."""
        code, lines = getattr(fn, "__code__", None), []

        def local(frame, event, arg):
            if event == "return":
                lines.append(frame.f_lineno)
            return local

        previous = sys.gettrace()
        sys.settrace(lambda frame, event, arg: local if frame.f_code is code else None)
        try:
            fn(*args)
        except BaseException:
            pass
        finally:
            sys.settrace(previous)
        return lines[-1] if lines else self.last_line

    def fail(self, exc: BaseException, what: str) -> ReaderError:
        """The reader-facing error for an exception raised while running their code."""
        if isinstance(exc, ReaderError):
            return exc
        if isinstance(exc, BudgetExceeded):
            line = self.stopped[0]
            return ReaderError(f"Line {line}: your policy was stopped in {what} after {exc}: its budget "
                               f"for one run is {self.max_steps:,} steps (function calls and loop "
                               f"turns) and {self.max_seconds:g} s. "
                               "Is there a loop that never ends?", line)
        return ReaderError(_explain(exc, self.code), error_line(exc))

    # --- what the engine calls --------------------------------------------------------
    @contextmanager
    def window(self, what: str):
        """Around each call into the reader's code: their prints captured, their time
        counted, and whatever they raise turned into a ReaderError naming `what`."""
        self._enter()
        try:
            yield
        except BaseException as exc:
            raise self.fail(exc, what) from None
        finally:
            self._leave()

    def run(self, fn, *args, what: str):
        with self.window(what):
            return fn(*args)

    def sort(self, order, views: list, engine_view) -> list:
        with self.window("order()"):
            keyed = []
            for v in views:
                key = order(v, engine_view)
                if not is_key(key):
                    line = self.returned_from(order, v, engine_view)
                    raise ReaderError(
                        f"Line {line}, in order: order() returned {_short(key)} (a "
                        f"{type(key).__name__}); a key must be a number or a tuple of numbers",
                        line)
                keyed.append((key, v._request.seq, v))
            try:
                keyed.sort(reverse=True)
            except TypeError:
                kinds = sorted({type(k[0]).__name__ for k in keyed})
                raise ReaderError(f"order() returned keys that cannot be compared with each other "
                                  f"({' and '.join(kinds)}): return numbers always, or tuples "
                                  "of numbers always", self.last_line) from None
            return [k[2] for k in keyed]

    def victim(self, victim, running: list, engine_view):
        with self.window("victim()"):
            chosen = victim(running, engine_view)
            if not any(chosen is v for v in running):
                line = self.returned_from(victim, running, engine_view)
                raise ReaderError(f"Line {line}, in victim: victim() returned {_short(chosen)}; it "
                                  "must return one of the running requests it was given (an item "
                                  "of `running`)", line)
            return chosen


def load(code: str, max_steps: int | None = None, max_seconds: float | None = None) -> Policy:
    """The reader's policy, ready for one run (call again for the next: a fresh module
    and a fresh budget). ReaderError if the file fails or defines no `order`."""
    guard = Guard(code, max_steps, max_seconds)
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = FILENAME
    module.__dict__[STEP] = guard.step
    try:
        compiled = compile_counted(code)
    except ReaderError:
        raise
    except BaseException as exc:
        raise ReaderError(_explain(exc, code), error_line(exc)) from None
    guard.run(exec, compiled, module.__dict__, what="loading your file")
    order, victim = module.__dict__.get("order"), module.__dict__.get("victim")
    if not callable(order):
        raise ReaderError("Your policy must define order(request, engine), returning a sort key "
                          "(smaller is admitted first); victim(running, engine) is optional.")
    if victim is not None and not callable(victim):
        raise ReaderError("victim, if defined, must be a function victim(running, engine) returning "
                          "the running request to preempt.")
    return Policy("your policy", order, victim, guard=guard)
