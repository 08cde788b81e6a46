"""The lab's settings as the two vLLM commands that run them on a real server.

`vllm serve` with the scheduler's knobs and `vllm bench serve` with the traffic (vLLM
0.34.0's flags, vllm/engine/arg_utils.py and vllm/benchmarks/serve.py), and what a
trace window cannot say in them.
"""

from __future__ import annotations

from pysim.engine import vllm_defaults
from pysim.sims.lab.config import LabConfig, defaults
from pysim.sims.lab.workload import Traffic
from pysim.timing.catalog import GPUS, MODELS
from pysim.traffic import traces


def hf_name(model: str) -> str:
    """The model's Hugging Face name, the repo its catalog entry was read from."""
    return MODELS[model].source.split()[0]


def model_from_hf(name: str) -> str | None:
    """The catalog model a Hugging Face name serves (its -Instruct variant too), or None."""
    name = name.strip().strip("'\"").lower().removesuffix("-instruct")
    return next((m for m in MODELS if hf_name(m).lower().removesuffix("-instruct") == name), None)


# The Mooncake traces' published files (kvcache-ai/Mooncake, FAST25-release/traces/).
MOONCAKE_FILES = {"mooncake_conv": "conversation_trace.jsonl", "mooncake_synth": "synthetic_trace.jsonl"}


def commands(config: LabConfig, t: Traffic) -> dict:
    """The two command lines that run the lab's settings on a real server (vLLM 0.34.0's
    flags, vllm/engine/arg_utils.py and vllm/benchmarks/serve.py): `vllm serve` with the
    scheduler's knobs (a flag only where the lab differs from the release's default, but
    always the two knobs the lab is about) and `vllm bench serve` with the traffic. A
    trace window has no exact `vllm bench serve`: the closest is the timed_trace dataset
    on a file of the window's rows, and `cannot` says what that leaves out."""
    d = defaults(config)
    model = hf_name(config.model)
    serve = [f"vllm serve {model}", f"--max-num-seqs {config.max_num_seqs}",
             f"--max-num-batched-tokens {config.max_num_batched_tokens}"]
    if config.async_scheduling != d.async_scheduling:
        serve.append("--async-scheduling" if config.async_scheduling else "--no-async-scheduling")
    bs = d.block_size  # the lab replays the release's block size; a flag only if it ever differs
    if bs != vllm_defaults.defaults(GPUS[config.gpu]).block_size:
        serve.append(f"--block-size {bs}")
    cannot, prepare, prepare_note = [], None, None
    if t.bench is not None:
        bench = t.bench.command().replace("vllm bench serve", f"vllm bench serve --model {model}", 1)
        if t.bench.seed:
            bench += f" --seed {t.bench.seed}"
        cannot.append("vLLM draws its lengths and gaps with numpy; pysim draws the same "
                      "distributions with its own generator, so not the same draws")
    else:
        trace = t.trace
        start_ms = config.window_start_min * 60_000
        end_ms = start_ms + config.window_minutes * 60_000
        hashed = bool(trace.hash_ids)
        bench = (f"vllm bench serve --model {model} --backend openai --dataset-name timed_trace "
                 f"--dataset-path window.jsonl --num-prompts {len(t.arrivals)} "
                 f"--timed-trace-sec-multiplier {0.001 / config.rate_scale:g}"
                 + (f" --timed-trace-chunk-hash-size {traces.TRACE_BLOCK}" if hashed else ""))
        if hashed:
            prepare = (f"jq -c 'select(.timestamp >= {start_ms} and .timestamp < {end_ms}) "
                       f"| .timestamp -= {start_ms}' {MOONCAKE_FILES[config.trace]} > window.jsonl")
            prepare_note = ("window.jsonl: the window's rows of the published trace (timestamp in ms, "
                            "input_length, output_length, hash_ids), cut from the trace's own JSONL")
        else:
            prepare_note = ("window.jsonl: one JSON line per request of the window, {\"timestamp\": ms "
                            "since the window's start, \"input_length\": ..., \"output_length\": ...}, "
                            "made from the Azure trace's CSV (TIMESTAMP, ContextTokens, GeneratedTokens)")
        if config.arrivals == "poisson":
            cannot.append("Poisson arrivals: timed_trace sends at the trace's times; --no-self-timed "
                          "--request-rate R would send Poisson gaps but forget nothing else")
        cannot.append("prompt text: timed_trace makes random tokens (shared where hash_ids are shared), "
                      "so the answers' own lengths hold only with --ignore-eos, which timed_trace sets")
    return {"vllm_version": vllm_defaults.LATEST, "serve": " ".join(serve), "bench": bench,
            "prepare": prepare, "prepare_note": prepare_note, "cannot": cannot}
