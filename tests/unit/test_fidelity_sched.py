"""The engine against vLLM's own synchronous Scheduler, KVCacheManager and BlockPool.

Every recorded vLLM release is checked (tests/data/fidelity/vllm-*/sched). Each recorded
case (tests/data/fidelity/vllm-<version>/sched/README.md) is a scheduler config, a list
of requests with arrival steps, and vLLM's record of every step that scheduled
something. pysim's engine runs the same loop (add arrivals, schedule, one sampled token
per request whose prefill is complete, update) and must agree on every field of every
step record: tokens scheduled per request in order, admissions with their prefix-cache
hits, preemptions, finishes, the block tables right after scheduling and the free-queue
length then and at the end of the step; and on the summary.
Run this file as a script to print how many cases agree.
"""

import pytest

from pysim.engine.scheduler import Engine, EngineConfig

try:  # as a test module (pytest puts tests/unit on sys.path) or run as a script
    from fidelity import disagreement as compare, VERSIONS, load_cases
except ImportError:  # pragma: no cover
    from tests.unit.fidelity import disagreement as compare, VERSIONS, load_cases

CASES_OF = {v: load_cases("sched", v) for v in VERSIONS}
# (version, case) pairs, named like "0.34.0-small_003" in pytest's output.
CASES = [(v, c) for v in VERSIONS for c in CASES_OF[v]]
# How many workloads each release's recording holds (tools/record_vllm.py --cases).
EXPECTED_COUNT = {"0.33.0": 80}


def engine_of(case: dict) -> Engine:
    c = case["config"]
    engine = Engine(EngineConfig(
        max_num_batched_tokens=c["max_num_batched_tokens"], max_num_seqs=c["max_num_seqs"],
        num_gpu_blocks=c["num_gpu_blocks"], block_size=c["block_size"],
        enable_prefix_caching=c["enable_prefix_caching"],
        enable_chunked_prefill=c["enable_chunked_prefill"], policy=c["policy"]))
    for r in case["requests"]:  # sorted by arrival: add order = arrival_time order
        engine.add_request(r["id"], len(r["prompt"]), r["output_len"], arrival=r["arrival_step"],
                           priority=r["priority"], token_ids=r["prompt"])
    return engine


def replay(case: dict) -> tuple[list[dict], dict]:
    """pysim's step records and summary, in the recordings' format."""
    engine = engine_of(case)
    steps, clock_of = [], {}
    clock = 0
    while engine.has_unfinished():
        if engine.is_idle() and engine.next_arrival() > clock:
            clock += 1  # an idle tick: vLLM's loop schedules nothing
            continue
        result = engine.schedule(clock)
        sched = engine.scheduled()
        record = {"step": clock, "sched": sched}
        if result.admitted:  # admitted requests start at their cache hit
            record["adm"] = {i: engine.requests[i].num_computed for i in result.admitted}
        if result.preempted:
            record["pre"] = sorted(result.preempted)
        record["tables"] = {i: list(engine.kv.block_table(i)) for i in sched}
        record["free"] = engine.pool.num_free_blocks
        engine.update_from_output(result)
        if result.finished:
            record["fin"] = sorted(result.finished)
        record["free_end"] = engine.pool.num_free_blocks
        clock_of[result.index] = clock
        steps.append(record)
        clock += 1
    summary = {r.id: {"preemptions": r.num_preemptions, "finish_step": clock_of[r.finish_step]}
               for r in engine.requests.values()}
    return steps, summary


def disagreement(case: dict) -> str | None:
    """None when the engine agrees with vLLM at every step, else where it first does not."""
    return compare(case, *replay(case))


def test_every_recorded_release_is_checked():
    assert {"0.33.0", "0.34.0"} <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_recordings_cover_every_scheduler_setting(version):
    cases = CASES_OF[version]
    assert len(cases) == EXPECTED_COUNT.get(version, 96)
    assert all(not c["config"].get("async_scheduling", False) for c in cases)  # sync only
    seen = {(c["config"]["policy"], c["config"]["enable_prefix_caching"],
             c["config"]["enable_chunked_prefill"]) for c in cases}
    assert len(seen) == 8  # fcfs/priority x caching x chunking: every combination
    assert any(s.get("pre") for c in cases for s in c["steps"])  # preemption is exercised


@pytest.mark.parametrize("version,case", CASES, ids=[f"{v}-{c['id']}" for v, c in CASES])
def test_case_agrees_with_vllm(version, case):
    assert disagreement(case) is None


if __name__ == "__main__":  # python tests/unit/test_fidelity_sched.py
    for version, cases in CASES_OF.items():
        bad = [(c["id"], d) for c in cases if (d := disagreement(c))]
        print(f"scheduler recordings: {len(cases) - len(bad)} of {len(cases)} cases agree "
              f"with vLLM {version}")
        for case_id, d in bad[:10]:
            print(f"  {case_id}: {d}")
