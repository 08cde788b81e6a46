"""A reader's scheduling policy: their code, loaded and run under a budget.

The file defines `order(request, engine)` and optionally `victim(running, engine)`
(pysim.policy.api). It runs as exercise 5's code does (pysim.sims.exercises: a fresh module,
errors reported with the line of the reader's code), plus what a policy inside the
engine needs:

- every key `order` returns is checked: a number or a tuple of numbers, comparable
  with the others; `victim` must return one of the running requests it was given;
- the views are read-only: setting an attribute raises, naming it;
- a budget: while the reader's code runs (loading the file, each sort, each victim) a
  trace function (`sys.settrace`) counts the lines it executes and, every few thousand,
  looks at the clock. Past `MAX_LINES` lines or `MAX_SECONDS` in one run the code is
  stopped. Only the reader's frames are traced: pysim's own code runs at full speed.
  Lines and the clock are checked from inside the code itself, so this works where
  threads and signals do not (Pyodide in a Web Worker).

Any failure becomes `ReaderError(message, line)`; the engine that ran it is dropped,
so nothing carries over to the next run. Python cannot make objects truly private: the
views refuse writes and hold no engine state of their own; code set on reaching around
them through Python's internals is out of scope.
"""

from __future__ import annotations

import sys
import time
import types

from pysim.policy.api import Policy, is_key
from pysim.sims.exercises import FILENAME, ReaderError, _Capped, _explain, error_line

MAX_CODE_CHARS = 20_000
MAX_LINES = 20_000_000  # lines of the reader's code per run
MAX_SECONDS = 10.0  # seconds inside the reader's code per run
CHECK_EVERY = 4096  # lines between two looks at the clock (a power of two)
MODULE_NAME = "your_policy"


class BudgetExceeded(BaseException):
    """Raised inside the reader's code by the trace function (BaseException: a bare
    `except Exception` in their code does not swallow it)."""


def _short(value) -> str:
    try:
        text = repr(value)
    except BaseException:  # a reader's __repr__ may fail too
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


class Guard:
    """Runs the reader's functions under one run's budget and checks what they return."""

    def __init__(self, code: str, max_lines: int | None = None, max_seconds: float | None = None):
        self.code = code
        self.max_lines = MAX_LINES if max_lines is None else max_lines
        self.max_seconds = MAX_SECONDS if max_seconds is None else max_seconds
        self.lines = 0
        self.seconds = 0.0  # spent inside the reader's code
        self.last_line = None
        self.output = _Capped()

    # --- tracing ------------------------------------------------------------------
    def _global(self, frame, event, arg):
        return self._local if frame.f_code.co_filename == FILENAME else None

    def _local(self, frame, event, arg):
        if event == "line":
            self.last_line = frame.f_lineno
            n = self.lines = self.lines + 1
            if n > self.max_lines:
                raise BudgetExceeded(f"more than {self.max_lines:,} lines")
            if not n & (CHECK_EVERY - 1) and self.seconds + time.perf_counter() - self._t0 > self.max_seconds:
                raise BudgetExceeded(f"more than {self.max_seconds:g} s")
        return self._local

    def _enter(self):
        self._previous = sys.gettrace()
        self._stdout = sys.stdout
        sys.stdout = self.output
        self._t0 = time.perf_counter()
        sys.settrace(self._global)

    def _leave(self):
        sys.settrace(self._previous)
        sys.stdout = self._stdout
        self.seconds += time.perf_counter() - self._t0

    def fail(self, exc: BaseException, what: str) -> ReaderError:
        """The reader-facing error for an exception raised while running their code."""
        if isinstance(exc, ReaderError):
            return exc
        if isinstance(exc, BudgetExceeded):
            line = self.last_line
            return ReaderError(f"Line {line}: your policy was stopped in {what} after {exc}: its budget "
                               f"for one run is {self.max_lines:,} lines and {self.max_seconds:g} s. "
                               "Is there a loop that never ends?", line)
        return ReaderError(_explain(exc, self.code), error_line(exc))

    # --- what the engine calls --------------------------------------------------------
    def run(self, fn, *args, what: str):
        self._enter()
        try:
            return fn(*args)
        except BaseException as exc:
            raise self.fail(exc, what) from None
        finally:
            self._leave()

    def sort(self, order, views: list, engine_view) -> list:
        self._enter()
        try:
            keyed = []
            for v in views:
                key = order(v, engine_view)
                if not is_key(key):
                    raise ReaderError(
                        f"Line {self.last_line}, in order: order() returned {_short(key)} (a "
                        f"{type(key).__name__}); a key must be a number or a tuple of numbers",
                        self.last_line)
                keyed.append((key, v._request.seq, v))
            try:
                keyed.sort(reverse=True)
            except TypeError:
                kinds = sorted({type(k[0]).__name__ for k in keyed})
                raise ReaderError(f"order() returned keys that cannot be compared with each other "
                                  f"({' and '.join(kinds)}): return numbers always, or tuples "
                                  "of numbers always", self.last_line) from None
            return [k[2] for k in keyed]
        except BaseException as exc:
            raise self.fail(exc, "order()") from None
        finally:
            self._leave()

    def victim(self, victim, running: list, engine_view):
        chosen = self.run(victim, running, engine_view, what="victim()")
        if not any(chosen is v for v in running):
            raise ReaderError(f"Line {self.last_line}, in victim: victim() returned {_short(chosen)}; it "
                              "must return one of the running requests it was given (an item "
                              "of `running`)", self.last_line)
        return chosen


def load(code: str, max_lines: int | None = None, max_seconds: float | None = None) -> Policy:
    """The reader's policy, ready for one run (call again for the next: a fresh module
    and a fresh budget). ReaderError if the file fails or defines no `order`."""
    guard = Guard(code, max_lines, max_seconds)
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = FILENAME
    try:
        compiled = compile(code, FILENAME, "exec")
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
