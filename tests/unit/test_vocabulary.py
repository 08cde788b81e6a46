"""One word for one thing: every setting a reader sees reads the same on every page.

The fields come from the registry (every simulation's `describe`), so a new simulation is
checked without being listed here. pysim/fields.py writes the shared ones once.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import pytest

from pysim import config, fields, registry

WORDS = ("label", "help", "unit", "kind")  # what a reader reads, and what the value is


def described() -> list[tuple[str, dict]]:
    return [(name, f) for name, sim in registry.simulations().items() for f in config.describe(sim.config_cls)]


def test_one_name_has_one_label_help_and_unit():
    seen = defaultdict(set)
    for sim, f in described():
        seen[f["name"]].add(tuple(f.get(w) or "" for w in WORDS))
    clashes = {name: sorted(words) for name, words in seen.items() if len(words) > 1}
    assert not clashes, f"a setting described two ways (label, help, unit, kind): {clashes}"


def test_one_label_names_one_setting():
    names = defaultdict(set)
    for sim, f in described():
        names[f["label"]].add(f["name"])
    assert all(f["label"] for _, f in described()), "every setting has a label"
    shared = {label: sorted(n) for label, n in names.items() if len(n) > 1}
    assert not shared, f"one label for two settings: {shared}"


# The engine arguments pysim models under vLLM's own names: their label is that name.
VLLM_ARGS = ("max_num_seqs", "max_num_batched_tokens", "num_gpu_blocks", "block_size",
             "enable_prefix_caching", "enable_chunked_prefill")


@pytest.mark.parametrize("name", VLLM_ARGS)
def test_a_vllm_argument_is_labelled_with_its_name_and_flag(name):
    field = getattr(fields, name)(*_args(name))
    assert field.metadata["label"] == name
    assert f"(--{name.replace('_', '-')}" in field.metadata["help"] or name == "num_gpu_blocks"


def _args(name):
    return (True,) if name.startswith("enable_") else (16, 1, 64)


def test_every_shared_setting_comes_from_fields():
    """A name declared in two configs is built by pysim/fields.py, so its words live in one
    place. (A config that extends another, as the lab's sweep configs extend LabConfig,
    inherits the field itself: one declaration.)"""
    declared = defaultdict(dict)
    for sim in registry.simulations().values():
        for f in dataclasses.fields(sim.config_cls):
            declared[f.name][id(f)] = sim.config_cls.__name__
    for name, where in declared.items():
        if len(where) > 1:
            assert hasattr(fields, name), f"{name} is declared in {sorted(where.values())}: add it to pysim/fields.py"


def test_the_check_fails_on_a_second_label():
    """The first check is not vacuous: a field relabelled on one page is caught."""
    @dataclasses.dataclass(frozen=True)
    class Stray:
        max_num_seqs: int = config.bounded(4, 1, 8, "most requests at once", label="Max running")

    ours = config.describe(registry.simulation("lab").config_cls)
    theirs = config.describe(Stray)
    words = {tuple(f.get(w) or "" for w in WORDS) for f in ours + theirs if f["name"] == "max_num_seqs"}
    assert len(words) == 2


def test_a_grouped_config_places_every_control_in_exactly_one_group():
    # The lab's, the cluster's and the policy lab's widgets draw their fieldsets from
    # `group` (pysim.config.describe), so a field missing from GROUPS would sit apart from
    # every fieldset: name it here.
    for name, sim in registry.simulations().items():
        groups = getattr(sim.config_cls, "GROUPS", None)
        if not groups:
            continue
        placed = [n for _, names in groups for n in names]
        assert len(placed) == len(set(placed)), f"{name}: a field in two groups"
        described = {f["name"]: f for f in config.describe(sim.config_cls)}
        assert set(placed) <= set(described), f"{name}: GROUPS names {set(placed) - set(described)}"
        loose = [n for n, f in described.items() if f["kind"] != "data" and "group" not in f
                 and n not in getattr(sim.config_cls, "UNGROUPED", ())]
        assert not loose, f"{name}: add {loose} to a group of {sim.config_cls.__name__}.GROUPS"


def test_a_new_scheduler_knob_lands_in_the_scheduler_group():
    from pysim.engine.scheduler import SchedulerConfig
    from pysim.sims.lab.config import LabConfig

    groups = {f["name"]: f.get("group") for f in config.describe(LabConfig)}
    assert all(groups[f.name] == "Scheduler" for f in __import__("dataclasses").fields(SchedulerConfig))
