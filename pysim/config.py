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
from typing import Any, Mapping


class ConfigError(ValueError):
    """Bad input for one field. `field` is the config key ("" for the whole input)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


def _shown(label: str | None, unit: str | None = None, step: float | None = None,
           scale: str | None = None) -> dict:
    """How a widget presents a field (widgets/controls.js): its label, the unit after
    its value, the slider's step and whether the slider is "linear" or "log". Only what
    is given; the widget falls back to the field's name, no unit, a step of 1 (whole
    numbers) and a linear slider."""
    assert scale in (None, "linear", "log"), scale
    given = {"label": label, "unit": unit, "step": step, "scale": scale}
    return {key: value for key, value in given.items() if value is not None}


def bounded(default: float, lo: float, hi: float, help: str, *, integer: bool = True,
            label: str | None = None, unit: str | None = None, step: float | None = None,
            scale: str | None = None):
    """A number field allowed in [lo, hi]; integers unless `integer=False`."""
    kind = "int" if integer else "float"
    return dataclasses.field(
        default=default,
        metadata={"kind": kind, "lo": lo, "hi": hi, "help": help, **_shown(label, unit, step, scale)},
    )


def flag(default: bool, help: str, *, label: str | None = None):
    """An on/off field."""
    return dataclasses.field(default=default, metadata={"kind": "bool", "help": help, **_shown(label)})


def choice(default: str, options: tuple[str, ...], help: str, *, label: str | None = None):
    """A field that must be one of a fixed set of names."""
    assert default in options
    return dataclasses.field(
        default=default,
        metadata={"kind": "choice", "options": options, "help": help, **_shown(label)},
    )


def data(default_factory, help: str, check=None, *, label: str | None = None):
    """A structured field (a list of requests, say), validated by `check(value)`.

    `check` returns the normalised value or raises ConfigError itself.
    """
    return dataclasses.field(
        default_factory=default_factory,
        metadata={"kind": "data", "check": check, "help": help, **_shown(label)},
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
    """Each field's kind, range and help, for the widget's controls."""
    out = []
    for f in dataclasses.fields(cls):
        meta = dict(f.metadata)
        meta.pop("check", None)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        out.append({"name": f.name, "default": default, **meta,
                    "options": list(meta.get("options", ()))})
    return out
