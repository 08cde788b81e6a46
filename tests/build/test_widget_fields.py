"""A widget takes pysim's fields from `describe`, and any it names by hand exist.

Controls, their fieldsets and their order come from pysim (`describe`: a config's
`GROUPS`), so a field pysim adds shows with no JS change. What a widget still names by
hand (a field it skips, a signature that leaves out what a sweep sets itself, a field
its link keeps) goes stale without a sound when pysim renames or drops that field: the
control it skipped comes back, the signature counts a key no more. These tests read the
scripts as text (tests/unit/test_vocabulary.py holds every control field of a grouped
config to exactly one group)."""

import re

from pysim.config import describe
from pysim.registry import simulations
from sitebuild.assets import WIDGETS_DIR

SIMS = simulations()
# An array literal without nested brackets, and the quoted names in it.
ARRAY = re.compile(r"\[([^\[\]]*)\]")
NAME = re.compile(r"""["']([a-z][a-z0-9_]*)["']""")


def widgets() -> dict[str, str]:
    """Simulation name -> its widget's scripts (widgets/NAME.js and its parts NAME.PART.js)."""
    out = {}
    for name in SIMS:
        paths = sorted(WIDGETS_DIR.glob(f"{name}.js")) + sorted(WIDGETS_DIR.glob(f"{name}.*.js"))
        if paths:
            out[name] = "\n".join(p.read_text(encoding="utf-8") for p in paths)
    return out


def field_names(name: str) -> set[str]:
    return {f["name"] for f in describe(SIMS[name].config_cls)}


def test_a_list_of_field_names_in_a_widget_names_only_fields_pysim_has():
    checked, stale = 0, {}
    for name, script in widgets().items():
        known = field_names(name)
        for body in ARRAY.findall(script):
            names = NAME.findall(body)
            # A list of field names: one that names at least one of the widget's fields
            # (a list of view keys, colours or column titles names none).
            if not set(names) & known:
                continue
            checked += 1
            if set(names) - known:
                stale.setdefault(name, []).append(sorted(set(names) - known))
    assert stale == {}, f"names a widget lists that its simulation has no field for: {stale}"
    assert checked >= 5  # the check is not vacuous: naive_batching's FIXED, the signatures...


def test_a_widget_whose_config_has_groups_takes_its_fieldsets_from_pysim():
    # No hand-typed GROUPS: the fieldsets come from describe (PySim.groupsOf, controls.js).
    for name, script in widgets().items():
        grouped = bool(getattr(SIMS[name].config_cls, "GROUPS", None))
        assert bool(re.search(r"\bgroupsOf\(|\bfieldsets\b", script)) == grouped, name
        assert not re.search(r"\bconst GROUPS\b", script), name
