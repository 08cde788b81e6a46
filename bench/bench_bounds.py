"""How long can one call take? The slowest input each simulation accepts, timed.

Every config field is bounded (pysim.config), so the work one call can ask for is
bounded too; this benchmark finds where that bound is reached. For each simulation it
times, once in CPython, a set of adversarial configs at the edges of the declared
ranges: every size at its upper bound, the smallest pool the cross-field rules allow
(so requests thrash and preempt), one request at a time, the longest requests, all
prompts sharing a prefix or none, every policy. The slowest of each simulation is then
timed properly (median of 3) in CPython and in Pyodide under Node, through
`bridge.call`, JSON in and out, as the page's worker runs it.

The budget this must meet: the slowest allowed input of every simulation answers in
under 1 s in CPython and under 2.5 s in Pyodide, in the page's worker (the page never
freezes: it keeps drawing while the worker computes; runtime.call gives up after 20 s).
The exercise's reader code is not bounded here: it is the reader's own program, stopped
by the page's time limit (pysim.sims.exercises.TIME_LIMIT_S).
"""

from __future__ import annotations

import gc
import json
import platform
import sys
import time

from common import median_seconds, run_in_pyodide, table

from pysim import bridge
from pysim.config import ConfigError, describe, from_mapping

SIMS = bridge.simulations()
CPYTHON_BUDGET_S = 1.0
PYODIDE_BUDGET_S = 2.5


def hi(name: str, field: str):
    return next(f for f in describe(SIMS[name].config_cls) if f["name"] == field)["hi"]


def lo(name: str, field: str):
    return next(f for f in describe(SIMS[name].config_cls) if f["name"] == field)["lo"]


def allowed(name: str, config: dict) -> bool:
    try:
        from_mapping(SIMS[name].config_cls, config)
        return True
    except ConfigError:
        return False


def smallest_allowed(name: str, field: str, config: dict) -> int | None:
    """The smallest value of `field` that the config's own rules accept with `config`."""
    a, b = lo(name, field), hi(name, field)

    def ok(v):
        try:
            from_mapping(SIMS[name].config_cls, {**config, field: v})
            return True
        except ConfigError:
            return False

    if not ok(b):
        return None
    while a < b:  # the rules are monotone in a size: more is always allowed
        m = (a + b) // 2
        a, b = (a, m) if ok(m) else (m + 1, b)
    return a


# ------------------------------------------------------------------ candidates

def race_candidates():
    n = hi("naive_batching", "num_requests")
    for pmin, pmax in ((1, hi("naive_batching", "prompt_blocks_max")), (hi("naive_batching", "prompt_blocks_max"),) * 2):
        for amin, amax in ((1, hi("naive_batching", "answer_blocks_max")), (hi("naive_batching", "answer_blocks_max"),) * 2):
            base = {"num_requests": n, "prompt_blocks_min": pmin, "prompt_blocks_max": pmax,
                    "answer_blocks_min": amin, "answer_blocks_max": amax}
            least = smallest_allowed("naive_batching", "num_gpu_blocks", base)
            for pool in sorted({least, least + pmax + amax, hi("naive_batching", "num_gpu_blocks")}):
                for running in (1, hi("naive_batching", "max_num_seqs")):
                    yield {"config": {**base, "num_gpu_blocks": pool, "max_num_seqs": running}}


def kvcache_candidates():
    from pysim.sims import paged_kv_cache

    n, words, answer = paged_kv_cache.MAX_REQUESTS, paged_kv_cache.MAX_PROMPT_WORDS, paged_kv_cache.MAX_ANSWER_TOKENS

    def word(i):  # short distinct words, so the payload stays under the bridge's limit
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"
        return digits[i // 1296 % 36] + digits[i // 36 % 36] + digits[i % 36]

    prompts = {
        "same": lambda r: [word(j) for j in range(words)],
        "distinct": lambda r: [word(r * words + j) for j in range(words)],
        "half shared": lambda r: [word(j) for j in range(words // 2)]
                                 + [word(r * words + j) for j in range(words // 2)],
    }
    for label, make in prompts.items():
        reqs = [{"name": f"r{r}", "prompt": make(r), "max_tokens": answer} for r in range(n)]
        for bs in (1, 16):
            base = {"block_size": bs, "requests": reqs}
            least = smallest_allowed("paged_kv_cache", "num_gpu_blocks", base)
            for pool in sorted({least, 4 * least, hi("paged_kv_cache", "num_gpu_blocks")}):
                for caching in (True, False):
                    yield {"config": {**base, "num_gpu_blocks": pool, "enable_prefix_caching": caching},
                           "actions": ["run"], "_label": f"{n} x ({words} words, {label}) + {answer}"}
        # The longest action list: admit everything one by one, generate, admit again...
        actions = (["admit"] * n + ["gen"] * answer) * 4
        actions = (actions + ["run"])[:paged_kv_cache.MAX_ACTIONS - 1] + ["run"]
        yield {"config": {"block_size": 1, "num_gpu_blocks": hi("paged_kv_cache", "num_gpu_blocks"),
                          "requests": reqs}, "actions": actions,
               "_label": f"{n} x ({words} words, {label}), {len(actions)} actions"}


def budget_candidates():
    fields = {f["name"]: f for f in describe(SIMS["chunked_prefill"].config_cls)}
    for scenario in fields["scenario"]["options"]:
        for budget in (lo("chunked_prefill", "max_num_batched_tokens"), 2048, hi("chunked_prefill", "max_num_batched_tokens")):
            for chunked in (True, False):
                # vLLM refuses a budget below max_num_seqs, so the smallest budget is
                # tried with max_num_seqs no larger than it.
                base = {"scenario": scenario, "max_num_batched_tokens": budget,
                        "enable_chunked_prefill": chunked,
                        "max_num_seqs": min(128, budget)}
                try:
                    from_mapping(SIMS["chunked_prefill"].config_cls, base)
                except ConfigError as exc:
                    if exc.field == "max_num_batched_tokens":
                        continue  # chunking off needs a budget that holds a whole sequence
                least = smallest_allowed("chunked_prefill", "num_gpu_blocks", base)
                # max_num_seqs is bounded on both sides (the streams below, the budget
                # above), so the search for its least value goes up from the bottom.
                seqs_least = next(v for v in range(lo("chunked_prefill", "max_num_seqs"), budget + 1)
                                  if allowed("chunked_prefill", {**base, "max_num_seqs": v}))
                for pool in sorted({least, 4096, hi("chunked_prefill", "num_gpu_blocks")}):
                    for seqs in sorted({seqs_least, min(budget, hi("chunked_prefill", "max_num_seqs"))}):
                        for caching in (True, False):
                            for policy in fields["policy"]["options"]:
                                yield {"config": {**base, "num_gpu_blocks": pool, "max_num_seqs": seqs,
                                                  "enable_prefix_caching": caching, "policy": policy}}


def batch_size_candidates():
    from pysim.timing.catalog import MODELS

    fields = {f["name"]: f for f in describe(SIMS["batch_size"].config_cls)}
    for gpu in fields["gpu"]["options"]:
        for model in fields["model"]["options"]:
            for context in (lo("batch_size", "context_tokens"), MODELS[model].max_context_tokens):
                for target in (lo("batch_size", "target_tok_s"), hi("batch_size", "target_tok_s")):
                    for fp8 in (False, True):
                        yield {"config": {"gpu": gpu, "model": model, "context_tokens": context,
                                          "target_tok_s": target, "kv_fp8": fp8, "weights_fp8": fp8}}


def toy_candidates():
    n = hi("toy_scheduler", "num_requests")
    for bs in (1, 16, hi("toy_scheduler", "block_size")):
        least = smallest_allowed("toy_scheduler", "num_gpu_blocks", {"block_size": bs})
        for blocks in sorted({least, 2 * least, hi("toy_scheduler", "num_gpu_blocks")}):
            for budget in (lo("toy_scheduler", "max_num_batched_tokens"), hi("toy_scheduler", "max_num_batched_tokens")):
                for seqs in (1, hi("toy_scheduler", "max_num_seqs")):
                    yield {"config": {"num_requests": n, "block_size": bs, "num_gpu_blocks": blocks,
                                      "max_num_batched_tokens": budget, "max_num_seqs": seqs}}


def exercise_candidates():
    from pysim.sims import exercises

    yield {"config": {}, "_label": "the starter code"}
    yield {"config": {}, "actions": ["run"], "_label": "run, the starter code"}
    yield {"config": {}, "actions": ["check"], "_label": "check, the starter code"}
    yield {"config": {"code": exercises.solution_code()}, "actions": ["check"],
           "_label": "check, the worked solution"}


def edge_candidates(name: str):
    """For a simulation without its own list below: the defaults, every number field alone
    at each end of its range, and all of them at their upper bounds, where the config's
    own rules accept it."""
    numbers = [f for f in describe(SIMS[name].config_cls) if f["kind"] in ("int", "float")]
    tries = [{}, {f["name"]: f["hi"] for f in numbers}]
    tries += [{f["name"]: f[end]} for f in numbers for end in ("lo", "hi")]
    for config in tries:
        try:
            from_mapping(SIMS[name].config_cls, config)
        except ConfigError:
            continue
        yield {"config": config}


def sweep_point_candidates():
    """lab_sweep_point, named by its one action: the edges at the sweep's highest rate,
    its longest replay."""
    from pysim.sims.lab.sweep import SWEEP_RATES

    for payload in edge_candidates("lab_sweep_point"):
        yield {**payload, "actions": [{"sweep_index": len(SWEEP_RATES) - 1}]}


# Hand-made worst cases; a simulation missing here gets edge_candidates.
CANDIDATES = {"naive_batching": race_candidates, "paged_kv_cache": kvcache_candidates,
              "chunked_prefill": budget_candidates, "batch_size": batch_size_candidates,
              "toy_scheduler": toy_candidates, "exercises": exercise_candidates,
              "lab_sweep_point": sweep_point_candidates}


def describe_payload(payload: dict) -> str:
    if "_label" in payload:
        shown = {k: v for k, v in payload["config"].items() if k not in ("requests", "code")
                 or not isinstance(v, (list, str))}
        return payload["_label"] + " " + json.dumps(shown, separators=(",", ":"))
    return json.dumps(payload["config"], separators=(",", ":"))


def once(name: str, text: str) -> tuple[float, dict]:
    """CPU time of one call (steadier than wall time on a busy machine), after a
    garbage collection, so one call does not pay for the garbage of the previous."""
    gc.collect()
    t0 = time.process_time()
    out = bridge.call(name, text)
    return time.process_time() - t0, json.loads(out)


def main():
    worst = {}
    for name in SIMS:
        make = CANDIDATES.get(name, lambda name=name: edge_candidates(name))
        timed = []
        for payload in make():
            text = json.dumps({k: v for k, v in payload.items() if not k.startswith("_")})
            seconds, answer = once(name, text)
            assert answer["ok"], (name, describe_payload(payload), answer["error"])
            timed.append((seconds, payload, text, len(json.dumps(answer))))
        # The three slowest, timed again as medians: the slowest of those is the bound.
        top = sorted(timed, key=lambda t: -t[0])[:3]
        medians = [(median_seconds(lambda t=t: bridge.call(name, t[2]), repeats=3), t) for t in top]
        worst[name] = max(medians, key=lambda m: m[0])[1]
        print(f"{name}: {len(timed)} configs at the edges of the ranges tried", file=sys.stderr)

    texts = {name: text for name, (_, _, text, _) in worst.items()}
    pyodide = run_in_pyodide(f"""
from pysim import bridge
texts = json.loads({json.dumps(json.dumps(texts))})
out = {{}}
for name, text in texts.items():
    out[name] = median_seconds(lambda: bridge.call(name, text), repeats=3)
print(json.dumps(out))
""")
    rows, over = [], []
    for name, (_, payload, text, size) in worst.items():
        cpython = median_seconds(lambda: bridge.call(name, text), repeats=3)
        rows.append([name, describe_payload(payload)[:150], f"{cpython * 1e3:.0f}",
                     f"{pyodide[name] * 1e3:.0f}", f"{size / 1e3:,.0f}"])
        if cpython > CPYTHON_BUDGET_S or pyodide[name] > PYODIDE_BUDGET_S:
            over.append(name)
    print(f"Slowest allowed input per simulation: bridge.call, JSON in and out, median of 3 "
          f"(CPython {platform.python_version()}, Pyodide in Node)")
    print(f"budget: < {CPYTHON_BUDGET_S * 1e3:.0f} ms in CPython, < {PYODIDE_BUDGET_S * 1e3:.0f} ms "
          "in Pyodide")
    print(table(["simulation", "slowest config found", "CPython ms", "Pyodide ms", "answer kB"], rows))
    if over:
        sys.exit(f"over budget: {', '.join(over)}")


if __name__ == "__main__":
    main()
