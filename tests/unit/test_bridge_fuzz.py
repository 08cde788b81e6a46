"""The bridge under bad input: whatever the page (or a crafted link) sends, it answers.

`pysim.bridge.call(name, text)` is the only door between the page and Python. For every
simulation name, and for names that are not one, this file sends malformed JSON, wrong
types, huge numbers (1e308, 10**400, 1e999), NaN and infinities, negative and zero
values, unknown keys, deeply nested arrays, huge strings, and random JSON from
hypothesis. The answer must always be one JSON object, `{"ok": true, "result": ...}` or
`{"ok": false, "error": {"field", "message"}}` with a short message naming the field,
never an exception. (How long the slowest allowed input takes is measured, not asserted:
bench/bench_bounds.py.)

It also checks that every bound is enforced with the bound in the message: one past
each field's range, the longest list of requests or actions, the largest program, the
largest payload. (bench/bench_bounds.py times the slowest input each range allows.)
"""

from __future__ import annotations

import json
import math
import sys

import pytest

from pysim import bridge
from pysim.config import MAX_JSON_DEPTH, describe

SIMS = bridge.simulations()
NAMES = sorted(SIMS)


def _no_constants(token):
    raise AssertionError(f"the answer contains {token}, which JSON does not allow")


def ask(name, text) -> dict:
    """Call the bridge and check the shape of its answer; return it parsed."""
    out = bridge.call(name, text)  # must not raise, whatever the input
    assert isinstance(out, str)
    answer = json.loads(out, parse_constant=_no_constants)
    assert isinstance(answer, dict) and isinstance(answer.get("ok"), bool), out[:200]
    if answer["ok"]:
        assert set(answer) == {"ok", "result"}
    else:
        assert set(answer) == {"ok", "error"}
        error = answer["error"]
        assert set(error) == {"field", "message"}
        assert isinstance(error["field"], str) and len(error["field"]) <= 40
        # Short: bad input is never echoed back whole.
        assert isinstance(error["message"], str) and 0 < len(error["message"]) <= 600
        assert not error["message"].startswith("internal error"), error
    return answer


def fields(name: str) -> dict[str, dict]:
    return {f["name"]: f for f in describe(SIMS[name].config_cls)}


# The settings under each field a test tries: a replay judges its input the same way on
# one minute of traffic as on the five a page starts from, so a field's checks need not
# replay five (the window's own bounds are tried as well).
UNDER = {name: {"window_minutes": 1} for name in NAMES if "window_minutes" in fields(name)}
# The actions a simulation cannot answer without (every other answers a config alone):
# one rate of the lab's sweep is named by its action (its registration says which).
NEEDS = {name: list(sim.example_actions) for name, sim in SIMS.items() if sim.example_actions}


def fmt(x) -> str:
    """A bound as the messages print it (pysim.config._fmt)."""
    return f"{x:,}" if isinstance(x, int) or float(x).is_integer() else f"{x:g}"


def refused(answer: dict, field: str, *words: str) -> None:
    assert answer["ok"] is False, f"accepted, expected {field} to be refused"
    assert answer["error"]["field"] == field, answer["error"]
    for w in words:
        assert w in answer["error"]["message"], answer["error"]


# ===================================================================== malformed text

DEEP = 90_000  # nesting that fits under the payload limit

MALFORMED = [
    "", " ", "{", "}", "[", "null", "true", "0", "-1", '"config"', "[]", "[1, 2]",
    '{"config": ', '{"config": {}', '{"config": {}}}', "{'config': {}}", '{"config": {},}',
    '{"config": undefined}', '{"config": NaN}', '{"config": {"x": NaN}}',
    '{"config": {"x": Infinity}}', '{"config": {"x": -Infinity}}', '{config: {}}',
    '\ufeff{"config": {}}', '{"config": {"a": "\\ud800"}}', '{"config": "\\u0000"}',
    "\x00", "\udcff", "<script>alert(1)</script>", '{"__proto__": {"x": 1}}',
    '{"config": {"constructor": {"prototype": {}}}}',
    "[" * DEEP + "]" * DEEP,
    '{"config": ' + '{"a": ' * (DEEP // 6) + "1" + "}" * (DEEP // 6) + "}",
    '{"config": {"requests": ' + "[" * DEEP + "]" * DEEP + "}}",
    '{"actions": ' + "[" * DEEP + "]" * DEEP + "}",
    # paged_kv_cache also takes its requests as JSON text (for the command line): as deep.
    '{"config": {"requests": "' + "[" * DEEP + "]" * DEEP + '"}}',
    "1" * 4400,  # more digits than Python converts to an int
    '{"config": {"x": ' + "9" * 4400 + "}}",
    '"' + "x" * 199_990 + '"',
    '{"config": {"' + "k" * 199_980 + '": 1}}',
    " " * 200_001,
]


@pytest.mark.parametrize("name", NAMES + ["describe"])
@pytest.mark.parametrize("text", MALFORMED, ids=lambda t: repr(t[:20]) + f"..{len(t)}")
def test_malformed_payloads_answer_with_an_error(name, text):
    answer = ask(name, text)
    if name != "describe":  # describe takes no payload and ignores it
        assert answer["ok"] is False or text == "null"  # null: no settings, the defaults


@pytest.mark.parametrize("name", ["", "nope", "Race", "race ", "x" * 10_000, "\ud800", "<img src=x>",
                                  "__import__('os')", "../race", "race\x00"])
def test_unknown_simulation_names(name):
    refused(ask(name, '{"config": {}}'), "name", "unknown simulation")


@pytest.mark.parametrize("name, text", [
    (None, "{}"), ("naive_batching", None), (5, "{}"), ("naive_batching", 5), ("naive_batching", b"{}"), (["naive_batching"], "{}"),
    ("naive_batching", {"config": {}}), ("naive_batching", ["{}"]), (b"naive_batching", "{}"), ("naive_batching", 1e308),
])
def test_wrong_argument_types(name, text):
    refused(ask(name, text), "", "must be strings")


def test_payload_over_the_limit_names_the_limit():
    text = json.dumps({"config": {}, "pad": "x" * bridge.MAX_PAYLOAD_CHARS})
    refused(ask("naive_batching", text), "", "payload too large", fmt(bridge.MAX_PAYLOAD_CHARS))


def test_nesting_is_bounded_before_parsing():
    # Before this bound, 90,000 nested brackets overflowed Pyodide's stack inside the
    # JSON parser: a fatal error that killed the page's Python instead of an answer.
    limit = MAX_JSON_DEPTH
    deep = '{"config": {"requests": ' + "[" * (limit - 2) + "]" * (limit - 2) + "}}"
    assert "nested" not in ask("paged_kv_cache", deep)["error"]["message"]  # parsed, then refused
    deeper = '{"config": {"requests": ' + "[" * (limit - 1) + "]" * (limit - 1) + "}}"
    refused(ask("paged_kv_cache", deeper), "", f"at most {limit}")
    # Brackets inside strings, escaped quotes included, are text, not nesting.
    text = json.dumps({"config": {"requests": '\\"[' * 1000 + "{" * 1000}})
    refused(ask("paged_kv_cache", text), "requests")


# ===================================================================== bad values

NUMBERS = [1e308, -1e308, 1e999, -1e999, 10**400, -(10**400), 2**63, 2**64 + 1, -1, 0, -0.0,
           0.5, -0.5, 1e-308, 5e-324]
NOT_NUMBERS = [None, True, False, "", "1", "abc", "<b>x</b>", [], [1], {}, {"a": 1}, "x" * 150_000]


def _encode(payload) -> str:
    return json.dumps(payload)  # NaN and infinities come out as JSON's forbidden tokens


@pytest.mark.parametrize("name", NAMES)
def test_every_field_refuses_wrong_types_and_huge_numbers(name):
    tried = 0
    for field, meta in fields(name).items():
        if meta["kind"] == "data":
            values = NUMBERS + [None, True, {}, "x" * 150_000, [None], [[[[]]]]]
        else:
            values = NUMBERS + NOT_NUMBERS + [math.nan, math.inf, -math.inf]
        for value in values:
            answer = ask(name, _encode({"config": {**UNDER.get(name, {}), field: value},
                                        "actions": NEEDS.get(name, [])}))
            tried += 1
            if answer["ok"]:
                # Only a value of the field's kind, inside its declared range, may pass.
                if meta["kind"] == "bool":
                    assert isinstance(value, bool)
                else:
                    assert meta["kind"] in ("int", "float") and not isinstance(value, bool)
                    assert meta["lo"] <= value <= meta["hi"], (field, value)
            elif isinstance(value, float) and not math.isfinite(value):
                # NaN and infinities are refused while parsing (field ""), or, for 1e999,
                # which is valid JSON but parses to infinity, by the field itself.
                assert answer["error"]["field"] in ("", field)
            elif meta["kind"] == "bool" and isinstance(value, bool):
                # A valid flag can still break a cross-field rule, which names its field.
                assert answer["error"]["field"] in fields(name), (value, answer)
            else:
                assert answer["error"]["field"] == field, (value, answer)
    assert tried > 10


@pytest.mark.parametrize("name", NAMES)
def test_unknown_keys_are_named(name):
    for key in ("pool", "<script>", "x" * 500, "", "__class__", "constructor", "a.b", "0"):
        refused(ask(name, json.dumps({"config": {key: 1}})), key[:40], "unknown setting")
    refused(ask(name, json.dumps({"config": {}, "extra": 1})), "extra", "unknown key")
    for config in ([], [1], "x", 5, True):
        refused(ask(name, json.dumps({"config": config})), "config", "expected an object")


@pytest.mark.parametrize("name", NAMES)
def test_bad_actions_name_the_actions_field(name):
    for actions in ("step", 5, {"a": 1}, [None], [["gen"]], ["<script>"], ["x" * 100_000], [1e308],
                    [10**400], ["gen"] * 25_000):
        answer = ask(name, json.dumps({"config": {}, "actions": actions}))
        refused(answer, "actions")


# Actions that are objects: what one call of a sweep asks (lab_sweep_point's
# {"sweep_index": i}; lab_capacity's and cluster_sweep's points so far, each as the
# simulation returned it). A valid list each, taken from the simulations themselves, then
# every value in it, at any depth, swapped for a bad one, dropped, or joined by a stranger.
BAD_VALUES = [None, True, -1, 0.5, 1e308, 10**400, -(10**400), "", "x" * 5000, [], [None], {}, {"a": 1}]


def object_actions() -> dict[str, tuple[dict, list]]:
    """Simulation -> (a config, valid actions). cluster_sweep's are asked on a window whose
    counts fail by a bound before any replay, so the many accepted variations stay quick."""
    def result(name, payload):
        answer = ask(name, json.dumps(payload))
        assert answer["ok"], answer
        return answer["result"]
    point = result("lab_sweep_point", {"config": {"window_minutes": 1}, "actions": [{"sweep_index": 1}]})["point"]
    count = result("cluster_sweep", {"config": {"window_minutes": 1, "gpus": 2}})
    count.pop("answer")
    return {"lab_sweep_point": ({"window_minutes": 1}, [{"sweep_index": 1}]),
            "lab_capacity": ({"window_minutes": 1}, [point]),
            "cluster_sweep": ({"window_minutes": 1, "window_start_min": 55, "gpus": 3}, [count])}


def variations(value):
    """`value` with one part changed: each value at any depth swapped for each of
    BAD_VALUES, each key dropped, an unknown key added, each list item dropped or doubled."""
    for bad in BAD_VALUES:
        yield bad
    if isinstance(value, dict):
        yield {**value, "<stranger>": 1}
        for key, inner in value.items():
            yield {k: v for k, v in value.items() if k != key}
            for changed in variations(inner):
                yield {**value, key: changed}
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield value[:i] + value[i + 1:]
            yield value[:i + 1] + value[i:]
            for changed in variations(inner):
                yield value[:i] + [changed] + value[i + 1:]


def test_object_actions_are_checked_at_any_depth():
    examples = object_actions()
    assert set(examples) <= {name for name, sim in SIMS.items() if sim.takes_actions}
    for name, (config, actions) in examples.items():
        assert ask(name, json.dumps({"config": config, "actions": actions}))["ok"]
        tried = 0
        for changed in variations(actions):
            answer = ask(name, json.dumps({"config": config, "actions": changed}))
            tried += 1
            if not answer["ok"]:
                assert answer["error"]["field"] == "actions", (name, changed, answer)
        assert tried > 10


# ===================================================================== every bound

@pytest.mark.parametrize("name", NAMES)
def test_one_past_each_bound_is_refused_with_the_range_in_the_message(name):
    checked = 0
    for field, meta in fields(name).items():
        if meta["kind"] not in ("int", "float"):
            continue
        lo, hi = meta["lo"], meta["hi"]
        step = 1 if meta["kind"] == "int" else max(1e-9, abs(hi) * 1e-9)
        for value in (hi + step, lo - step, hi * 10 + 1):
            answer = ask(name, json.dumps({"config": {field: value}}))
            refused(answer, field, fmt(lo), fmt(hi))
            checked += 1
        if meta["kind"] == "int" and hi > lo:
            # A fraction inside the range is not a whole number.
            refused(ask(name, json.dumps({"config": {field: lo + 0.5}})), field, "whole number")
    if name in ("naive_batching", "chunked_prefill", "batch_size", "toy_scheduler"):
        assert checked >= 6


@pytest.mark.parametrize("name", NAMES)
def test_each_upper_bound_alone_is_answered(name):
    # Every bounded field at its largest allowed value, the others at their defaults:
    # either a picture, or a cross-field rule that names a field and its range.
    for field, meta in fields(name).items():
        if meta["kind"] in ("int", "float"):
            ask(name, json.dumps({"config": {**UNDER.get(name, {}), field: meta["hi"]},
                                  "actions": NEEDS.get(name, [])}))


def test_kvcache_list_bounds_are_refused_with_the_bound():
    from pysim.sims import paged_kv_cache

    def req(i, words=3, answer=2):
        return {"name": f"r{i}", "prompt": ["w"] * words, "max_tokens": answer}

    n = paged_kv_cache.MAX_REQUESTS
    assert ask("paged_kv_cache", json.dumps({"config": {"requests": [req(i) for i in range(n)]}}))["ok"]
    refused(ask("paged_kv_cache", json.dumps({"config": {"requests": [req(i) for i in range(n + 1)]}})),
            "requests", f"1 to {n}")
    words = paged_kv_cache.MAX_PROMPT_WORDS
    refused(ask("paged_kv_cache", json.dumps({"config": {"requests": [req(0, words + 1)]}})),
            "requests", f"1 to {words} words")
    answer = paged_kv_cache.MAX_ANSWER_TOKENS
    refused(ask("paged_kv_cache", json.dumps({"config": {"requests": [req(0, 3, answer + 1)]}})),
            "requests", f"from 1 to {answer}")
    limit = paged_kv_cache.MAX_ACTIONS
    assert ask("paged_kv_cache", json.dumps({"config": {}, "actions": ["gen"] * limit}))["ok"]
    refused(ask("paged_kv_cache", json.dumps({"config": {}, "actions": ["gen"] * (limit + 1)})),
            "actions", f"at most {limit:,}")


def test_exercise_code_bound_and_the_readers_exits():
    from pysim.sims import exercises

    limit = exercises.MAX_CODE_CHARS
    refused(ask("exercises", json.dumps({"config": {"code": "#" * (limit + 1)}, "actions": ["run"]})),
            "code", f"at most {limit:,}")
    # The reader's own code may end the program, raise, or print without end: each is
    # reported in the answer (before the fix, sys.exit() escaped bridge.call).
    for code in ("raise SystemExit(3)", "import sys; sys.exit()", "raise KeyboardInterrupt",
                 "class X(BaseException): pass\nraise X()", "def f(: pass", "1/0",
                 "print('x' * 1_000_000)"):
        for action in exercises.ACTIONS:
            answer = ask("exercises", json.dumps({"config": {"code": code}, "actions": [action]}))
            assert answer["ok"], answer
            view = answer["result"]
            assert view["error"], (code, action)
            assert len(view["output"]) <= exercises.MAX_OUTPUT_CHARS + 100


# ===================================================================== random input

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:
    # Each run draws new examples. Pyodide's run (tests/pyodide) draws fewer: it checks
    # that the bridge answers there as it does here, where the full count runs on every
    # `make test`, and one example there costs several times what it costs here.
    FUZZ = settings(max_examples=50 if sys.platform == "emscripten" else 150,
                    deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

    SPECIAL = st.sampled_from([
        1e308, -1e308, math.inf, -math.inf, math.nan, 10**400, -(10**400), 2**64, -1, 0, -0.0,
        "", "NaN", "Infinity", "1e999", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
        "javascript:alert(1)", "\u202e", "\x00", "x" * 5000, "run", "check", "gen", "admit",
    ])
    # The keys of the sweeps' actions (lab_sweep_point's index, a point's figures).
    ACTION_KEYS = ["sweep_index", "rate_scale", "slo_attainment", "request_goodput", "request_throughput",
                   "slo_attainment_fast", "slo_attainment_slow", "gpus", "colocated", "disaggregated",
                   "meets", "attainment_at_most", "pass_ttft_ms"]
    scalars = st.one_of(st.none(), st.booleans(), st.integers(),
                        st.integers(-(10**400), 10**400), st.floats(), st.text(max_size=20),
                        SPECIAL)
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                          | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                          max_leaves=10)

    @st.composite
    def payloads(draw):
        name = draw(st.sampled_from(NAMES + ["describe", "nope"]))
        known = sorted(fields(name)) if name in SIMS else ["x"]
        config = {**UNDER.get(name, {}), **draw(st.dictionaries(
            st.one_of(st.sampled_from(known), st.text(max_size=10)), values, max_size=4))}
        if name in SIMS and SIMS[name].runs_reader_code and isinstance(config.get("code"), str):
            config["code"] = "x = 1"  # random text is never run as a program here
        payload = {"config": config} if draw(st.booleans()) else draw(values)
        if isinstance(payload, dict) and draw(st.booleans()):
            # Names (the block manager's, the exercise's) and objects (a sweep's index and points).
            objects = st.dictionaries(st.sampled_from(ACTION_KEYS) | st.text(max_size=8), values, max_size=5)
            payload["actions"] = draw(st.one_of(values, st.lists(st.one_of(
                st.sampled_from(["gen", "run", "admit", "admit:A", "admit:Z"]), scalars, objects), max_size=8)))
        text = json.dumps(payload)  # NaN and infinities become JSON's forbidden tokens
        cut = draw(st.one_of(st.none(), st.integers(0, len(text))))
        if cut is not None:  # and sometimes the text is cut short or gets a stray byte
            text = text[:cut] + draw(st.sampled_from(["", "}", "]", ",", '"', "\x00", "\ud800"]))
        return name, text

    @FUZZ
    @given(payloads())
    def test_random_payloads_always_answer(case):
        name, text = case
        ask(name, text)

    @FUZZ
    @given(st.sampled_from(NAMES), st.text(max_size=300))
    def test_random_text_always_answers(name, text):
        answer = ask(name, text)
        assert answer["ok"] is False or text.strip().startswith(("{", "null"))
