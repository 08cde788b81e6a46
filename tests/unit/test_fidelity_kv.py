"""The KV-cache widget's simulation against vLLM's own KVCacheManager/BlockPool.

Every recorded vLLM release is checked (tests/data/fidelity/vllm-*/kv). Each recorded
case (tests/data/fidelity/vllm-<version>/kv/README.md) is a setup, a list of the widget's
actions and vLLM's state after every action. pysim replays the actions and must agree
on every field of every state: statuses, written KV per request, block tables, ref
counts, the free queue in order, the cached blocks, and what each action did.
Run this file as a script to print how many cases agree.
"""

import pytest

from pysim.sims import paged_kv_cache
from pysim.config import from_mapping

try:  # as a test module (pytest puts tests/unit on sys.path) or run as a script
    from fidelity import VERSIONS, first_difference, load_cases
except ImportError:  # pragma: no cover
    from tests.unit.fidelity import VERSIONS, first_difference, load_cases

CASES_OF = {v: load_cases("kv", v) for v in VERSIONS}
# (version, case) pairs, named like "0.34.0-widget_003" in pytest's output.
CASES = [(v, c) for v in VERSIONS for c in CASES_OF[v]]


def config_of(case: dict) -> paged_kv_cache.PagedKVCacheConfig:
    c = case["config"]
    assert c["null_block"] == 0
    requests = [{"name": r["name"], "prompt": r["prompt"], "max_tokens": r["answer_tokens"]}
                for r in c["requests"]]
    return from_mapping(paged_kv_cache.PagedKVCacheConfig, {
        "num_gpu_blocks": c["num_blocks"], "block_size": c["block_size"],
        "enable_prefix_caching": c["caching"], "requests": requests})


def recorded_state(sim) -> dict:
    """The simulation's state in the recordings' format (README: `after[k]`)."""
    pool = sim.pool
    state = {
        "step": sim.steps,
        "req": [[r.status, r.num_computed, len(r.generated), r.preemptions]
                for r in sim.requests],
        "running": [r.name for r in sim.running],
        "waiting": [r.name for r in sim.waiting],
        "tables": {r.name: list(sim.kv.block_table(r.name)) for r in sim.running},
        "ref": {str(b): pool.ref_count(b) for b in range(pool.num_gpu_blocks)
                if pool.ref_count(b)},
        "free": pool.free_queue(),
        "cached": [b for b in range(pool.num_gpu_blocks) if pool.block_hash(b) is not None],
    }
    state.update(sim.last)
    return state


def disagreement(case: dict) -> str | None:
    """None when pysim agrees with vLLM after every action, else where it first does not."""
    sim = paged_kv_cache._Sim(config_of(case))
    for k, (action, theirs) in enumerate(zip(case["actions"], case["after"])):
        sim.apply(action)
        diff = first_difference(recorded_state(sim), theirs)
        if diff:
            return f"after action {k} ({action!r}): {diff}"
    return None


def test_token_ids_are_the_recordings_ids():
    # The recordings name a word's id as the first 4 bytes of its SHA-256, big-endian,
    # and X's k-th generated token as the word "xk": exactly paged_kv_cache.token_id.
    for _, case in CASES:
        for r in case["config"]["requests"]:
            assert [paged_kv_cache.token_id(w) for w in r["prompt"]] == r["prompt_ids"]
            assert [paged_kv_cache.token_id(f"{r['name'].lower()}{k}")
                    for k in range(1, r["answer_tokens"] + 1)] == r["output_ids"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_recordings_cover_the_widget_and_the_walk_through(version):
    cases = CASES_OF[version]
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids)) == 120
    assert sum(i.startswith("walk") for i in ids) == 8
    assert sum(c["config"]["default_requests"] for c in cases) > 60


@pytest.mark.parametrize("version,case", CASES, ids=[f"{v}-{c['id']}" for v, c in CASES])
def test_case_agrees_with_vllm(version, case):
    assert disagreement(case) is None


if __name__ == "__main__":  # python tests/unit/test_fidelity_kv.py
    for version, cases in CASES_OF.items():
        bad = [(c["id"], d) for c in cases if (d := disagreement(c))]
        print(f"KV recordings: {len(cases) - len(bad)} of {len(cases)} cases agree with "
              f"vLLM {version}")
        for case_id, d in bad[:10]:
            print(f"  {case_id}: {d}")
