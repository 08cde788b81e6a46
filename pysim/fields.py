"""The settings several simulations share, each written once: its label, help and unit.

A simulation picks only what is its own (default, range, how its slider walks the
range); the words a reader sees are fixed here, so `max_num_seqs` reads the same on
every page. Where the setting is one of vLLM's engine arguments, its name and its
label are vLLM's own (`vllm serve --help`, vLLM 0.33: `vllm/engine/arg_utils.py`), and
the help says which flag it is. `tests/unit/test_vocabulary.py` reads every
simulation's described fields from the registry and fails on a second label or help
for one name, or one label for two names.
"""

from __future__ import annotations

from pysim.config import bounded, choice, flag
from pysim.timing.catalog import GPUS, MODELS

# ----------------------------------------------------------------- vLLM's engine arguments


def max_num_seqs(default: int, lo: int, hi: int, **slider):
    return bounded(default, lo, hi, "the most requests running at once (--max-num-seqs)",
                   label="max_num_seqs", unit="requests", **slider)


def max_num_batched_tokens(default: int, lo: int, hi: int, **slider):
    return bounded(default, lo, hi, "the token budget: tokens one step may process, prompt and "
                   "answer tokens together (--max-num-batched-tokens)",
                   label="max_num_batched_tokens", unit="tokens", **slider)


def num_gpu_blocks(default: int, lo: int, hi: int, **slider):
    return bounded(default, lo, hi, "blocks in the KV-cache pool, vLLM's null block included "
                   "(--num-gpu-blocks-override)", label="num_gpu_blocks", unit="blocks", **slider)


def block_size(default: int, lo: int, hi: int, **slider):
    return bounded(default, lo, hi, "tokens per KV-cache block (--block-size)",
                   label="block_size", unit="tokens", **slider)


def async_scheduling(default: bool):
    return flag(default, "schedule each step while the one before it runs, as vLLM's default "
                "AsyncScheduler does; off: the synchronous Scheduler (--async-scheduling)",
                label="async_scheduling")


def enable_prefix_caching(default: bool):
    return flag(default, "reuse the cached KV blocks of a prompt prefix seen before "
                "(--enable-prefix-caching)", label="enable_prefix_caching")


def enable_chunked_prefill(default: bool):
    return flag(default, "cut a prompt that does not fit the step's token budget into chunks "
                "(--enable-chunked-prefill)", label="enable_chunked_prefill")


POLICY_LABELS = {"fcfs": "First come, first served", "priority": "Priority",
                 "shortest": "Shortest prompt first",
                 # the scheduling-policy lab's (pysim.policy.builtin says whose each is)
                 "lpm": "Longest prefix match", "sjf": "Shortest prefill first",
                 "aging": "Highest response ratio (aging)", "vtc": "Virtual token counter"}


def policy(default: str, options: tuple[str, ...]):
    """vLLM offers fcfs and priority (--scheduling-policy); the toy scheduler adds one more,
    the scheduling-policy lab SGLang's and a paper's."""
    return choice(default, options, "the order of the waiting queue, which also picks who is "
                  "preempted (vLLM's --scheduling-policy)", label="Policy",
                  option_labels={o: POLICY_LABELS[o] for o in options})


# ----------------------------------------------------------------- the pages' own settings


def gpu(default: str):
    return choice(default, tuple(GPUS), "the GPU: one card, no tensor parallelism", label="GPU",
                  option_labels={k: g.label for k, g in GPUS.items()})


def model(default: str):
    return choice(default, tuple(MODELS), "the model served", label="Model",
                  option_labels={k: m.name for k, m in MODELS.items()})


def seed(default: int, lo: int, hi: int, **slider):
    return bounded(default, lo, hi, "the seed of the random workload: one seed, one workload",
                   label="Seed", **slider)


def num_requests(default: int, lo: int, hi: int, **slider):
    return bounded(default, lo, hi, "how many requests the workload holds", label="Number of requests",
                   unit="requests", **slider)


TRACE_LABELS = {"conv": "Azure conversation", "code": "Azure coding",
                "mooncake_conv": "Mooncake conversation", "mooncake_synth": "Mooncake synthetic"}


def trace(default: str, options: tuple[str, ...]):
    return choice(default, options, "the production trace replayed: Azure's 2023 conversation or "
                  "coding service, or Mooncake's Kimi conversation or synthetic trace (shared "
                  "prefixes, replayed with prefix caching on)", label="Trace",
                  option_labels={o: TRACE_LABELS[o] for o in options})


def window_start_min(default: int, lo: int, hi: int):
    return bounded(default, lo, hi, "where the window starts, minutes into the trace",
                   label="Window start", unit="min")


def window_minutes(default: int, lo: int, hi: int):
    return bounded(default, lo, hi, "how many minutes of traffic to replay", label="Window", unit="min")


def rate_scale(default: float, lo: float, hi: float):
    return bounded(default, lo, hi, "arrival rate multiplier (gaps divided by it)", integer=False,
                   label="Rate scale", unit="x", scale="log")


def slo_ttft_ms(default: float, lo: float, hi: float):
    return bounded(default, lo, hi, "the TTFT target a good request meets (--goodput ttft:MS)",
                   integer=False, label="TTFT target", unit="ms", scale="log")


def slo_tpot_ms(default: float, lo: float, hi: float):
    return bounded(default, lo, hi, "the TPOT target a good request meets (--goodput tpot:MS)",
                   integer=False, label="TPOT target", unit="ms", scale="log")


def policy_code(check):
    """A scheduling policy the reader wrote (pysim.policy.reader); `check` bounds its size."""
    from pysim.config import data

    return data(str, "your policy as Python code, defining order(request, engine) and optionally "
                     "victim(running, engine); empty: the built-in policy", check,
                label="Your policy (Python)")
