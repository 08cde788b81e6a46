"""The engine's async mode against vLLM's own `AsyncScheduler`, step by step.

The recordings (tests/data/fidelity/<version>/sched_async/README.md) drive vLLM's
AsyncScheduler as `EngineCore.step_with_batch_queue` does with a batch queue of two:
at each clock tick the arrivals are added, then one call of that loop: schedule a batch
if the scheduler holds requests; if fewer than two batches are in flight and there is
more to do, the call ends there; otherwise the oldest batch's outputs are applied.
`replay` runs pysim's engine (`async_scheduling=True`) through the same loop, with the
same mocked model (one token for each request whose prefill a batch completes), and
must agree on every field of every step record and on the summary.
"""

from __future__ import annotations

import pytest

from pysim.engine.scheduler import Engine, EngineConfig

try:  # as a test module (pytest puts tests/unit on sys.path) or run as a script
    from fidelity import disagreement as compare, CITED_VERSION, load_cases
except ImportError:  # pragma: no cover
    from tests.unit.fidelity import disagreement as compare, CITED_VERSION, load_cases

CASES = load_cases("sched_async", CITED_VERSION)


def engine_of(case: dict) -> Engine:
    c = case["config"]
    assert c["async_scheduling"] is True
    engine = Engine(EngineConfig(
        max_num_batched_tokens=c["max_num_batched_tokens"], max_num_seqs=c["max_num_seqs"],
        num_gpu_blocks=c["num_gpu_blocks"], block_size=c["block_size"],
        enable_prefix_caching=c["enable_prefix_caching"],
        enable_chunked_prefill=c["enable_chunked_prefill"], policy=c["policy"],
        async_scheduling=True))
    for r in case["requests"]:
        engine.add_request(r["id"], len(r["prompt"]), r["output_len"], arrival=r["arrival_step"],
                           priority=r["priority"], token_ids=r["prompt"])
    return engine


def replay(case: dict) -> tuple[list[dict], dict]:
    """pysim's step records and summary, in the recordings' format."""
    engine = engine_of(case)
    records = {}  # batch index -> its record (batches that scheduled something)
    clock_of = {}  # batch index -> the clock tick it was scheduled at
    order = []
    clock = 0
    finished_since_schedule = False  # vLLM: `finished_req_ids`, cleared by `schedule`
    while engine.has_unfinished() or engine.num_inflight():
        nxt = engine.next_arrival()
        has_requests = bool(engine.running or engine.waiting) or finished_since_schedule or (
            nxt is not None and nxt <= clock)
        if has_requests:
            result = engine.schedule(clock)
            finished_since_schedule = False
            sched = engine.scheduled()
            clock_of[result.index] = clock
            if sched:
                record = {"step": clock, "sched": sched}
                if result.admitted:  # computed tokens advanced at schedule: take the batch's off
                    record["adm"] = {i: engine.requests[i].num_computed - sched[i] for i in result.admitted}
                if result.preempted:
                    record["pre"] = sorted(result.preempted)
                record["tables"] = {i: list(engine.kv.block_table(i)) for i in sched}
                record["free"] = engine.pool.num_free_blocks
                records[result.index] = record
                order.append(result.index)
            if engine.num_inflight() < 2 and (sched or engine.running or engine.waiting):
                clock += 1
                continue
        elif not engine.num_inflight():
            clock += 1  # an idle tick
            continue
        oldest = engine.oldest_inflight()
        engine.update_from_output(oldest)
        if oldest.finished:
            finished_since_schedule = True
        record = records.get(oldest.index)
        if record is not None:
            if oldest.finished:
                record["fin"] = sorted(oldest.finished)
            record["free_end"] = engine.pool.num_free_blocks
            record["upd"] = clock
        clock += 1
    summary = {r.id: {"preemptions": r.num_preemptions, "finish_step": clock_of[r.finish_step]}
               for r in engine.requests.values()}
    return [records[i] for i in order], summary


def disagreement(case: dict) -> str | None:
    """None when the engine agrees with vLLM at every step, else where it first does not."""
    return compare(case, *replay(case))


def test_the_recordings_are_there_and_vary():
    assert len(CASES) >= 80
    configs = {(c["config"]["policy"], c["config"]["enable_prefix_caching"],
                c["config"]["enable_chunked_prefill"]) for c in CASES}
    assert len(configs) >= 4
    assert sum(any("pre" in s for s in c["steps"]) for c in CASES) >= 10, "too few preemptions to test"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_engine_agrees_with_vllm_async_scheduler(case):
    assert disagreement(case) is None


if __name__ == "__main__":  # pragma: no cover
    bad = [(c["id"], disagreement(c)) for c in CASES]
    bad = [b for b in bad if b[1]]
    print(f"{len(CASES) - len(bad)}/{len(CASES)} cases agree")
    for case_id, why in bad[:20]:
        print(f"  {case_id}: {why}")
