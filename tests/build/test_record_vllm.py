"""tools/record_vllm.py and tools/vllm_recorder.py without vLLM: the case generator,
the writer, and the two driving loops against a fake scheduler with vLLM's method
names. (Recording itself needs vLLM and runs outside the tests.)"""

import gzip
import json
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))
import record_vllm  # noqa: E402
import vllm_recorder  # noqa: E402


# ---------------------------------------------------------------- the case generator

def test_the_cases_are_the_same_on_every_run():
    assert record_vllm.sched_cases(24) == record_vllm.sched_cases(24)
    assert record_vllm.kv_cases() == record_vllm.kv_cases()
    assert record_vllm.sched_case(5, False) != record_vllm.sched_case(6, False)


def test_sched_cases_stay_within_the_readme_bounds():
    cases = record_vllm.sched_cases()
    assert len(cases) == 96 and len({c["id"] for c in cases}) == 96
    combos = set()
    for c in cases:
        cfg, reqs = c["config"], c["requests"]
        large = c["id"].startswith("large_")
        assert 30 <= len(reqs) <= 60 if large else 3 <= len(reqs) <= 12
        assert cfg["block_size"] == 16 if large else cfg["block_size"] in (2, 4, 8)
        assert cfg["max_num_batched_tokens"] >= cfg["max_num_seqs"]
        assert cfg["async_scheduling"] is False
        if not cfg["enable_chunked_prefill"]:
            assert cfg["max_num_batched_tokens"] >= cfg["max_model_len"]
        combos.add((cfg["policy"], cfg["enable_prefix_caching"], cfg["enable_chunked_prefill"]))
        assert [r["arrival_step"] for r in reqs] == sorted(r["arrival_step"] for r in reqs)
        assert [r["id"] for r in reqs] == [f"R{i}" for i in range(len(reqs))]
        for r in reqs:
            assert all(0 <= t < 100000 for t in r["prompt"]) and r["prompt"]
            assert len(r["prompt"]) + r["output_len"] < cfg["max_model_len"]
            blocks = -(-(len(r["prompt"]) + r["output_len"]) // cfg["block_size"])
            assert blocks <= cfg["num_gpu_blocks"] - 1  # fits the usable pool alone
            assert r["priority"] == 0 or cfg["policy"] == "priority"
    assert len(combos) == 8


def test_async_cases_are_the_same_workloads():
    case = record_vllm.sched_case(3, False)
    other = record_vllm.as_async(case)
    assert other["config"]["async_scheduling"] is True
    assert {**other, "config": case["config"]} == case


def test_kv_cases_follow_the_kv_readme():
    cases = record_vllm.kv_cases()
    assert len(cases) == 120 and sum(c["id"].startswith("walk") for c in cases) == 8
    for c in cases:
        cfg = c["config"]
        assert cfg["null_block"] == 0
        for r in cfg["requests"]:
            assert r["prompt_ids"] == [vllm_recorder.word_id(w) for w in r["prompt"]]
            assert len(r["output_ids"]) == r["answer_tokens"]
            assert -(-(len(r["prompt"]) + r["answer_tokens"]) // cfg["block_size"]) \
                <= cfg["num_blocks"] - 1
        names = {r["name"] for r in cfg["requests"]}
        for a in c["actions"]:
            assert a in ("admit", "gen", "run") or a.partition(":")[2] in names


# ---------------------------------------------------------------- the writer

def test_the_writer_is_deterministic_and_writes_a_readme(tmp_path):
    cases = record_vllm.sched_cases(8)
    for kind in ("kv", "sched", "sched_async"):
        text = record_vllm.readme(kind, "9.9.9", 8, "python tools/record_vllm.py 9.9.9")
        assert "9.9.9" in text and "python tools/record_vllm.py 9.9.9" in text
        assert "{" + "version}" not in text
    record_vllm.write_folder(tmp_path / "a", cases, "readme")
    record_vllm.write_folder(tmp_path / "b", cases, "readme")
    first = (tmp_path / "a" / "cases.jsonl.gz").read_bytes()
    assert first == (tmp_path / "b" / "cases.jsonl.gz").read_bytes()
    assert (tmp_path / "a" / "README.md").read_text() == "readme"
    lines = gzip.decompress(first).decode().splitlines()
    assert [json.loads(line) for line in lines] == cases
    assert list(json.loads(lines[0])) == ["id", "seed", "config", "requests"]


# ---------------------------------------------------------------- the driving loops

class FakeBatch:
    def __init__(self, n, tokens):
        self.n, self.total_num_scheduled_tokens = n, tokens


class FakeScheduler:
    """vLLM's method names; every request needs `steps` batches, one token each."""

    def __init__(self, log, steps):
        self.log, self.left, self.n = log, steps, 0

    def has_requests(self):
        return self.left > 0

    def schedule(self):
        batch = FakeBatch(self.n, 1 if self.left > self.in_flight() else 0)
        self.log.append(f"S{batch.n}")
        self.n += 1
        self.pending.append(batch)
        return batch

    def in_flight(self):
        return sum(b.total_num_scheduled_tokens for b in self.pending)

    def update_from_output(self, batch, output):
        assert output == ("out", batch.n)
        self.log.append(f"U{batch.n}")
        self.pending.remove(batch)
        self.left -= batch.total_num_scheduled_tokens

    pending: list


class FakeHooks(vllm_recorder.Hooks):
    def __init__(self, log, arrive_at=0):
        self.log, self.arrive_at = log, arrive_at

    def add_arrivals(self, clock):
        if clock == self.arrive_at:
            self.log.append("add")

    def arrivals_left(self, clock):
        return clock < self.arrive_at

    def after_schedule(self, out, clock):
        return out

    def model_output(self, out, batch):
        assert batch is out
        return ("out", out.n)


def run(loop, steps, arrive_at=0):
    log = []
    scheduler = FakeScheduler(log, steps if arrive_at == 0 else 0)
    scheduler.pending = []
    hooks = FakeHooks(log, arrive_at)
    if arrive_at:
        real_add = hooks.add_arrivals

        def add(clock):
            real_add(clock)
            if clock == arrive_at:
                scheduler.left = steps
        hooks.add_arrivals = add
    ticks = loop(scheduler, hooks)
    return log, ticks


def test_the_sync_loop_updates_each_batch_before_the_next_schedule():
    log, ticks = run(vllm_recorder.drive_sync, 3)
    assert log == ["add", "S0", "U0", "S1", "U1", "S2", "U2"]
    assert ticks == 3


def test_the_sync_loop_idles_until_the_first_arrival():
    log, ticks = run(vllm_recorder.drive_sync, 2, arrive_at=3)
    assert log == ["add", "S0", "U0", "S1", "U1"]
    assert ticks == 5


def test_the_async_loop_keeps_two_batches_in_flight():
    log, _ = run(vllm_recorder.drive_async, 4)
    # Fill the queue first, then each tick collects the oldest batch and the next one
    # schedules: S0 S1 U0 S2 U1 ...; the last batches drain once nothing is left.
    assert log[:6] == ["add", "S0", "S1", "U0", "S2", "U1"]
    updates = [x for x in log if x.startswith("U")]
    schedules = [x for x in log if x.startswith("S")]
    assert updates == [f"U{n}" for n in range(len(schedules))]  # every batch, oldest first
    for n in range(len(schedules)):  # a batch is updated after the next one is scheduled
        if n + 1 < len(schedules):
            assert log.index(f"S{n + 1}") < log.index(f"U{n}")


def test_the_async_loop_queues_a_batch_that_scheduled_nothing():
    # One request, one token: S0 schedules it; S1 has nothing left to schedule (its
    # token is in flight) but is queued, which fills the queue, so U0 runs; then U1.
    log, _ = run(vllm_recorder.drive_async, 1)
    assert log == ["add", "S0", "S1", "U0", "U1"]


def test_a_wrong_order_fails(monkeypatch):
    # The async loop must pop the OLDEST batch: a loop that took the newest would
    # hand update_from_output batch 1 first: the order check above sees U1 before U0
    # (or the fake scheduler never drains, which the loop's tick limit reports).
    log, _ = run(vllm_recorder.drive_async, 3)
    assert log.index("U0") < log.index("U1")
    monkeypatch.setattr(vllm_recorder, "deque", _NewestFirst)
    monkeypatch.setattr(vllm_recorder, "MAX_TICKS", 50)
    with pytest.raises((AssertionError, RuntimeError)):
        log, _ = run(vllm_recorder.drive_async, 3)
        assert log.index("U0") < log.index("U1")


class _NewestFirst(list):
    """A queue that pops the newest batch instead of the oldest: a broken loop."""

    def appendleft(self, item):
        self.insert(0, item)

    def pop(self):
        return list.pop(self, 0)
