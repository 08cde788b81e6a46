"""Validated configuration objects for every simulation.

A simulation's config is a frozen dataclass whose fields carry their allowed
range in `metadata` (built with `bounded`, `flag` or `choice` below). One
function, `from_mapping`, turns untrusted input (JSON from the browser, or
`key=value` strings from the command line) into that dataclass, or raises
`ConfigError` naming the field, the bad value and what is allowed.

Keeping the range next to the field means the widget's slider limits, the
error messages and the validation can never disagree: the bridge exports the
same metadata to the page (`describe`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Mapping


class ConfigError(ValueError):
    """Bad input for one field. `field` is the config key ("" for the whole input)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


def bounded(default: float, lo: float, hi: float, help: str, *, integer: bool = True,
            label: str = "", unit: str = "", step: float | None = None, scale: str = "linear",
            slider_max: float | None = None):
    """A number field allowed in [lo, hi]; integers unless `integer=False`.

    The keywords describe the widget's control: `label` (the short text shown beside
    it), `unit` ("tokens", "ms", "" for a plain count), `step` (the slider's step: 1
    for integers unless given, any value for floats when None), `scale` ("linear", or
    "log" for a slider that walks the range by ratios) and `slider_max` (where the
    slider stops when the allowed range is too wide to drag through; a typed value
    may still go up to `hi`).
    """
    assert lo <= default <= hi, f"default {default} outside [{lo}, {hi}]"
    assert scale in SCALES, scale
    assert slider_max is None or lo <= slider_max <= hi
    kind = "int" if integer else "float"
    if step is None and integer:
        step = 1
    return dataclasses.field(default=default, metadata={
        "kind": kind, "lo": lo, "hi": hi, "help": help, "label": label, "unit": unit,
        "step": step, "scale": scale, "slider_max": slider_max})


SCALES = ("linear", "log")


def flag(default: bool, help: str, *, label: str = ""):
    """An on/off field (a checkbox labelled `label`)."""
    return dataclasses.field(default=default, metadata={"kind": "bool", "help": help, "label": label})


def choice(default: str, options: tuple[str, ...], help: str, *, label: str = "",
           option_labels: Mapping[str, str] | None = None):
    """A field that must be one of a fixed set of names; `option_labels` names each for the reader."""
    assert default in options
    assert option_labels is None or set(option_labels) == set(options)
    return dataclasses.field(default=default, metadata={
        "kind": "choice", "options": options, "help": help, "label": label,
        "option_labels": dict(option_labels) if option_labels else {o: o for o in options}})


def data(default_factory, help: str, check=None, *, label: str = ""):
    """A structured field (a list of requests, say), validated by `check(value)`.

    `check` returns the normalised value or raises ConfigError itself.
    """
    return dataclasses.field(
        default_factory=default_factory,
        metadata={"kind": "data", "check": check, "help": help, "label": label},
    )


def _describe_range(meta: Mapping[str, Any]) -> str:
    kind = meta["kind"]
    if kind == "int":
        return f"a whole number from {_fmt(meta['lo'])} to {_fmt(meta['hi'])}"
    if kind == "float":
        return f"a number from {_fmt(meta['lo'])} to {_fmt(meta['hi'])}"
    if kind == "bool":
        return "true or false"
    if kind == "choice":
        return "one of " + ", ".join(meta["options"])
    return meta["help"]


def _fmt(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) or float(x).is_integer() else f"{x:g}"


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int too long to print (over 4,300 digits)
        text = f"<a number of about {value.bit_length() * 3 // 10:,} digits>"
    return text if len(text) <= 40 else text[:37] + "..."


def _coerce(name: str, meta: Mapping[str, Any], value: Any, from_text: bool) -> Any:
    kind = meta["kind"]
    allowed = _describe_range(meta)
    bad = ConfigError(name, f"got {_short(value)}, expected {allowed}")
    if kind == "data":
        check = meta["check"]
        return check(value) if check else value
    if from_text and isinstance(value, str):
        text = value.strip().lower()
        if kind == "bool":
            if text in ("true", "1", "yes", "on"):
                return True
            if text in ("false", "0", "no", "off"):
                return False
            raise bad
        if kind in ("int", "float"):
            try:
                value = float(text.replace("_", "").replace(",", ""))
            except ValueError:
                raise bad from None
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad
        return value
    if kind == "choice":
        if not isinstance(value, str) or value not in meta["options"]:
            raise bad
        return value
    # Numbers. bool is an int subclass in Python; a checkbox value is never a count.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad
    if isinstance(value, float) and not math.isfinite(value):
        raise bad
    # Compare before converting: Python compares a huge int (10**400 from JSON) with
    # the bounds exactly, where float() of it would overflow.
    if not meta["lo"] <= value <= meta["hi"]:
        raise bad
    if kind == "int":
        if value != int(value):
            raise bad
        return int(value)
    return float(value)


def from_mapping(cls, raw: Any, *, from_text: bool = False):
    """Build config dataclass `cls` from `raw`, or raise ConfigError.

    Missing keys take their defaults; unknown keys are refused (a typo should not
    silently fall back to a default). `from_text` accepts strings such as "160"
    or "true", as typed on the command line.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError("config", f"expected an object of settings, got {type(raw).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise ConfigError(str(key)[:40], f"unknown setting; known settings are {known}")
    values = {}
    for name, f in fields.items():
        if name in raw:
            values[name] = _coerce(name, f.metadata, raw[name], from_text)
    config = cls(**values)
    check = getattr(config, "check", None)
    if check is not None:
        check()  # cross-field rules, which raise ConfigError themselves
    return config


def to_mapping(config) -> dict:
    """The config as plain JSON-ready data (the inverse of from_mapping)."""
    return dataclasses.asdict(config)


def describe(cls) -> list[dict]:
    """Each field's kind, range, help and control metadata (label, unit, step, scale),
    so a widget builds its controls from pysim instead of typing them again.

    A config that lays its controls out in groups names them in `GROUPS`, a tuple of
    (title, field names) in the order they are shown; each field in one then carries
    `group` (the title), `group_order` (the group's place) and `order_in_group` (the
    field's place in it), so the widget derives its fieldsets instead of keeping a list
    of its own (tests/unit/test_vocabulary.py checks every control field of such a config
    is in exactly one group)."""
    where = {name: (title, k, i) for k, (title, names) in enumerate(getattr(cls, "GROUPS", ()))
             for i, name in enumerate(names)}
    out = []
    for f in dataclasses.fields(cls):
        meta = dict(f.metadata)
        meta.pop("check", None)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        placed = (dict(zip(("group", "group_order", "order_in_group"), where[f.name]))
                  if f.name in where else {})
        out.append({"name": f.name, "default": default, **meta,
                    "options": list(meta.get("options", ())), **placed})
    return out


# JSON nested deeper than this is refused before parsing: no allowed input needs it (the
# deepest, paged_kv_cache's requests, is 4 levels).
MAX_JSON_DEPTH = 32


def check_json_depth(json_text: str, field: str = "") -> None:
    """Refuse JSON nested deeper than MAX_JSON_DEPTH before parsing it (ConfigError on `field`).

    The JSON parser recurses once per level; in Pyodide a few thousand levels overflow
    the WebAssembly stack, which kills the interpreter instead of raising RecursionError.
    Brackets inside strings do not count, so strings are dropped first.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", json_text))
    depth = deepest = 0
    for c in brackets:
        if c in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    raise ConfigError(field, f"{'payload' if not field else 'JSON'} is nested "
                                             f"more than {MAX_JSON_DEPTH} levels deep; at most {MAX_JSON_DEPTH}")
        else:
            depth -= 1


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)  # a JSON string, escapes included
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
