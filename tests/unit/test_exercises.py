"""Exercise 5's runner and checker (pysim.sims.exercises, bridge name "exercises"), and pysim's
own chunked toy (pysim.toy.chunked) that the checker compares a reader's code with."""

from __future__ import annotations

import json

import pytest

from pysim import bridge
from pysim.sims import exercises
from pysim.toy import chunked as toy_chunked, scheduler as toy_scheduler
from pysim.__main__ import main
from pysim.engine.scheduler import Engine, EngineConfig, run_timed
from pysim.toy.scheduler import ToyConfig


def call(config, action: str | None = None) -> dict:
    payload = {"config": config, "actions": [action] if action else []}
    answer = json.loads(bridge.call("exercises", json.dumps(payload)))
    assert answer["ok"], answer
    return answer["result"]


def prefill_before_decodes() -> str:
    """The classic mistake: the correct solution with the prompt chunks (passes 2 and 3)
    moved in front of the decodes (pass 1), so chunks eat the budget first."""
    code = exercises.solution_code()
    cls = code.index("class ChunkedScheduler")
    a = code.index("        # 1. Decodes first", cls)
    b = code.index("        # 2. Running requests", cls)
    c = code.index("        return batch, preempted", b)
    return code[:a] + code[b:c] + code[a:b] + code[c:]


# --------------------------------------------------------------------------- pysim's answer

def test_chunked_toy_by_hand():
    # Budget 64. Iteration 0: A and B (20-token prompts) prefill 40 tokens and sample
    # their 1st. Iteration 1: A and B decode (2), C (100-token prompt, arrived) gets the
    # 62 left; no token for C yet. Iteration 2: decodes + C's last 38: C samples its 1st.
    # Iteration 3: three decodes; C samples its 2nd. Iteration 4: C's 3rd (finished),
    # A and B their 5th. Iteration 5: A and B their 6th and last.
    requests, reports = toy_chunked.simulate(exercises._tiny(), ToyConfig(max_num_batched_tokens=64, max_num_seqs=8))
    d = lambda rid: (rid, "decode", 1)  # noqa: E731
    assert [rep["batch"] for rep in reports] == [
        [(0, "prefill", 20), (1, "prefill", 20)],
        [d(0), d(1), (2, "prefill", 62)],
        [d(0), d(1), (2, "prefill", 38)],
        [d(0), d(1), d(2)],
        [d(0), d(1), d(2)],
        [d(0), d(1)],
    ]
    assert [r.first_token for r in requests] == [0, 0, 2]
    assert [r.finished_at for r in requests] == [5, 5, 4]


def test_chunked_toy_equals_the_toy_when_no_prompt_is_cut():
    # With a budget no iteration's prompts can exceed, chunking never happens and the
    # two schedulers are the same program.
    cfg = ToyConfig(max_num_batched_tokens=8192)
    specs = toy_scheduler.workload(200, cfg.seed)
    assert toy_chunked.simulate(specs, cfg)[1] == toy_scheduler.simulate(specs, cfg)[1]


@pytest.mark.parametrize("budget, seqs", [(256, 32), (128, 64), (64, 16)])
def test_chunked_toy_equals_the_engine_when_memory_is_plentiful(budget, seqs):
    # The engine with chunked prefill on allocates blocks chunk by chunk, the toy for the
    # whole sequence at admission; with memory to spare that never matters, and the two
    # hand out the same tokens to the same requests in every iteration.
    cfg = ToyConfig(max_num_batched_tokens=budget, num_gpu_blocks=10_000, max_num_seqs=seqs)
    specs = toy_scheduler.workload(120, cfg.seed)
    _, reports = toy_chunked.simulate(specs, cfg)
    e = Engine(EngineConfig(max_num_batched_tokens=budget, max_num_seqs=seqs, num_gpu_blocks=10_000,
                            block_size=cfg.block_size, enable_chunked_prefill=True))
    for s in specs:
        e.add_request(s["id"], s["num_prompt_tokens"], s["max_tokens"], arrival=s["arrival"])
    steps = list(run_timed(e, lambda res: 1))
    assert len(steps) == len(reports)
    assert any(n < r["num_prompt_tokens"] for rep in reports for rid, kind, n in rep["batch"]
               for r in [specs[rid]] if kind == "prefill")  # chunks did happen
    for rep, (res, start, _) in zip(reports, steps):
        assert rep["iteration"] == start
        assert sorted((i, n) for i, _, n in rep["batch"]) == sorted((i, n) for i, _, n in res.parts)
        assert sorted(rep["finished"]) == sorted(res.finished)


# --------------------------------------------------------------------------- the checker

def test_starter_code_is_the_toy_without_its_bridge_section():
    code = exercises.starter_code()
    assert code.startswith('"""A toy continuous-batching scheduler')
    assert "class ToyScheduler" in code and "def run_driver" in code
    assert "SIMULATION" not in code and "--8<--" not in code
    assert call({})["starter_code"] == code
    compile(code, "starter", "exec")


def test_a_correct_solution_passes_every_check():
    view = call({"code": exercises.solution_code()}, "check")
    assert view["passed"] is True
    assert view["message"] == "all checks pass"
    assert len(view["checks"]) == len(exercises.CHECKS) and all(c["passed"] for c in view["checks"])
    assert view["error"] is None


def test_the_unchanged_starter_fails_at_the_first_chunk():
    # Tiny case, iteration 1: C's 100 tokens do not fit the 62 left, so the toy leaves it
    # waiting, where pysim gives it a 62-token chunk.
    view = call({}, "check")  # empty code: the starter
    assert view["passed"] is False
    assert view["message"].startswith("Check 1 (")
    assert view["message"].endswith("step 1: request 2 expected 62 prefill tokens, got nothing (not in the batch)")


def test_prefill_before_decodes_names_the_first_differing_step():
    # Tiny case, iteration 1: C's chunk is served first and takes the whole budget (64),
    # so A and B get no decode.
    view = call({"code": prefill_before_decodes()}, "check")
    assert view["passed"] is False
    first = view["checks"][0]["message"]
    assert first == ("step 1: request 0 expected a decode (1 token), got nothing (not in the batch); "
                     "request 1 expected a decode (1 token), got nothing (not in the batch); "
                     "request 2 expected 62 prefill tokens, got 64")
    assert view["message"] == f"Check 1 ({exercises.CHECKS[0][0]}): {first}"


def side(kind, tokens=None, sampled=None):
    return {"kind": kind, "tokens": tokens, "sampled": sampled}


OUT = side(exercises.NOT_IN_BATCH)


def test_the_first_mismatch_comes_with_its_request_step_by_step():
    # The starter on the tiny case: C (request 2) arrives at iteration 1, where pysim
    # gives it 62 prompt tokens (no token sampled: the prompt is not done), then its
    # last 38 at iteration 2 (its 1st token), then a decode at 3 (its 2nd). The starter
    # never fits C's 100 tokens beside the decodes, so it is in none of those batches.
    # Before iteration 1 there is only iteration 0 (C not yet arrived).
    view = call({}, "check")
    table = view["mismatch"]
    assert table["caption"] == view["checks"][0]["message"]
    assert view["message"].endswith(table["caption"])
    assert table["request"] == 2
    assert [(r["step"], r["failing"]) for r in table["rows"]] == [(0, False), (1, True), (2, False), (3, False)]
    assert [r["expected"] for r in table["rows"]] == [OUT, side("prefill", 62, 0), side("prefill", 38, 1),
                                                      side("decode", 1, 2)]
    assert [r["actual"] for r in table["rows"]] == [OUT] * 4
    assert [r["differs"] for r in table["rows"]] == [False, True, True, True]


def test_the_mismatch_table_shows_what_the_readers_scheduler_did():
    # Prefill before decodes, tiny case: A (request 0) prefills its 20 tokens at 0 and
    # samples its 1st token; at 1 C's chunk takes the whole budget and A gets nothing
    # (pysim: a decode, its 2nd token); from 2 on A decodes again, one token behind.
    view = call({"code": prefill_before_decodes()}, "check")
    table = view["mismatch"]
    assert table["request"] == 0 and table["caption"] == view["checks"][0]["message"]
    rows = [(r["step"], r["failing"], r["expected"], r["actual"]) for r in table["rows"]]
    assert rows == [
        (0, False, side("prefill", 20, 1), side("prefill", 20, 1)),
        (1, True, side("decode", 1, 2), OUT),
        (2, False, side("decode", 1, 3), side("decode", 1, 2)),
        (3, False, side("decode", 1, 4), side("decode", 1, 3)),
    ]
    # The command line prints the same table, the failing step marked.
    printed = exercises.text(view)
    assert "request 0, step by step" in printed
    assert ">      1   decode                1       2 | not in the batch      -       -" in printed


def test_a_passing_or_broken_solution_has_no_mismatch_table():
    assert call({"code": exercises.solution_code()}, "check")["mismatch"] is None
    assert call({"code": "def broken(:\n    pass\n"}, "check")["mismatch"] is None
    assert all(set(c) == {"name", "passed", "message", "steps"}
               for c in call({}, "check")["checks"])


def test_a_syntax_error_is_reported_with_its_line():
    code = exercises.starter_code().replace("    def add(self, r: Request) -> None:",
                                           "    def add(self, r: Request) -> None", 1)
    line = code.splitlines().index("    def add(self, r: Request) -> None") + 1
    view = call({"code": code}, "check")
    assert view["passed"] is False
    assert view["message"].startswith(f"Line {line}: SyntaxError: ")
    assert "def add(self, r: Request) -> None" in view["message"]
    run = call({"code": code}, "run")
    assert run["ok"] is False and run["error"] == view["message"]


def test_an_exception_names_its_line_and_the_step():
    code = exercises.solution_code().replace("            r.computed += n\n",
                                            "            r.computed += n\n            assert r.computed < 60\n", 1)
    line = code.splitlines().index("            assert r.computed < 60") + 1
    view = call({"code": code}, "check")
    assert view["passed"] is False
    # The tiny case's C reaches 62 computed tokens in iteration 1.
    assert view["checks"][0]["message"].startswith(f"step 1: your scheduler stopped with Line {line}, in update: AssertionError")


ANSWER_IMPORTS = {
    # pysim's answer imported under the names Check drives ...
    "an import": "from pysim.toy.chunked import ChunkedRequest as Request, ChunkedScheduler as ToyScheduler\n",
    # ... under the name the module had before issue 51 (code a reader saved may use it) ...
    "an import by its old name": ("import pysim.toy_chunked\n"
                                  "Request = pysim.toy_chunked.ChunkedRequest\n"
                                  "ToyScheduler = pysim.toy_chunked.ChunkedScheduler\n"),
    # ... or wrapped in a class of the reader's that only calls it (old name too).
    "a subclass": ("from pysim import toy_chunked\n"
                   "class ToyScheduler(toy_chunked.ChunkedScheduler):\n"
                   "    def step(self):\n        return super().step()\n"
                   "Request = toy_chunked.ChunkedRequest\n"),
}


@pytest.mark.parametrize("how", sorted(ANSWER_IMPORTS))
def test_the_checker_refuses_pysims_own_answer(how):
    # Issue 16: importing pysim's answer passed all four checks, since Check compares
    # the reader's scheduler with that very answer. It is refused, and says why.
    code = exercises.starter_code() + "\n" + ANSWER_IMPORTS[how]
    view = call({"code": code}, "check")
    assert view["passed"] is False and view["checks"] == []
    assert view["message"] == view["error"]
    assert view["message"].startswith("Your ToyScheduler is pysim's own answer (pysim.toy.chunked.ChunkedScheduler)")
    assert "without testing your code" in view["message"]


def test_the_checker_refuses_a_step_written_elsewhere():
    code = exercises.starter_code() + "\nToyScheduler.step = eval('lambda self: None')\n"
    view = call({"code": code}, "check")
    assert view["passed"] is False
    assert view["message"].startswith("Your ToyScheduler.step() must be written in your code")


def test_errors_name_the_line_for_the_editor():
    # A syntax error on line 3, an exception raised in the reader's step: the view says
    # which line, for the page to mark; a mere difference in decisions names none.
    broken = "x = 1\ny = 2\nz = = 3\n"
    assert call({"code": broken}, "check")["error_line"] == 3
    assert call({"code": broken}, "run")["error_line"] == 3
    code = exercises.solution_code().replace("            r.computed += n\n",
                                            "            r.computed += n\n            assert r.computed < 60\n", 1)
    line = code.splitlines().index("            assert r.computed < 60") + 1
    assert call({"code": code}, "check")["error_line"] == line
    assert call({}, "check")["error_line"] is None  # the starter differs, raises nothing
    assert call({"code": exercises.solution_code()}, "check")["error_line"] is None


def test_missing_names_are_explained():
    view = call({"code": "print('hi')\n"}, "check")
    assert view["passed"] is False
    assert "must define Request, ToyConfig, ToyScheduler" in view["message"]
    assert view["output"] == "hi\n"


def test_run_shows_results_and_printed_output():
    code = exercises.solution_code() + "\nprint('hello from the worker')\n"
    view = call({"code": code}, "run")
    assert view["ok"] is True and view["error"] is None
    assert view["output"] == "hello from the worker\n"
    expected = toy_scheduler.summarize(*toy_chunked.simulate(toy_scheduler.workload(200, toy_scheduler.ToyConfig().seed),
                                                   ToyConfig(max_num_batched_tokens=256)))
    assert view["summary"]["finished"] == 200
    assert view["summary"]["iterations"] == expected["iterations"]
    assert view["summary"]["mean_ttft"] == round(expected["mean_ttft"], 2)


def test_run_of_the_starter_explains_why_it_is_stuck():
    view = call({}, "run")
    assert view["ok"] is False
    assert "scheduled nothing while requests were waiting" in view["error"]


def test_printing_is_capped():
    view = call({"code": "for i in range(5000): print('x' * 10)\n"}, "run")
    assert len(view["output"]) < exercises.MAX_OUTPUT_CHARS + 100
    assert view["output"].endswith("[output cut at 10,000 characters]")


def test_code_size_is_bounded_and_named():
    answer = json.loads(bridge.call("exercises", json.dumps(
        {"config": {"code": "#" * (exercises.MAX_CODE_CHARS + 1)}, "actions": ["run"]})))
    assert answer["ok"] is False and answer["error"]["field"] == "code"
    assert "50,000" in answer["error"]["message"]
    answer = json.loads(bridge.call("exercises", json.dumps({"config": {"code": 5}})))
    assert answer["ok"] is False and answer["error"]["field"] == "code"
    # The largest accepted program, JSON-escaped, still fits the bridge's payload limit.
    worst = json.dumps({"config": {"code": '"' * exercises.MAX_CODE_CHARS}, "actions": ["check"]})
    assert len(worst) <= bridge.MAX_PAYLOAD_CHARS


def test_the_readers_module_does_not_leak():
    import sys
    call({"code": exercises.solution_code()}, "run")
    assert exercises.MODULE_NAME not in sys.modules


def test_cli(capsys):
    assert main(["exercises", "--actions", "check"]) == 0
    assert "step 1: request 2 expected 62 prefill tokens" in capsys.readouterr().out


def test_an_action_is_one_of_run_and_check():
    for actions in (["go"], ["run", "check"], [3]):
        answer = json.loads(bridge.call("exercises", json.dumps({"config": {}, "actions": actions})))
        assert answer["ok"] is False and answer["error"]["field"] == "actions"
        assert "run, check" in answer["error"]["message"]
    assert call({})["action"] is None and call({})["starter_code"]


def test_reader_code_may_import_the_toy_by_its_old_names():
    # Issue 51 moved pysim/toy_scheduler.py to pysim/toy/scheduler.py: code a reader saved
    # before still runs, and the old names leave no trace once it has.
    import sys
    import pysim
    code = ("from pysim import toy_scheduler\nimport pysim.toy_self_victim\n"
            "from pysim.toy_scheduler import BLOCK_SIZE\nprint(toy_scheduler.BLOCK_SIZE)\n")
    view = call({"code": exercises.solution_code() + "\n" + code}, "run")
    assert view["ok"], view["error"]
    assert view["output"].strip().endswith("16")
    assert "pysim.toy_scheduler" not in sys.modules and not hasattr(pysim, "toy_scheduler")
