"""Simulation 3, the token budget and chunked prefill (--max-num-batched-tokens).

The page is docs/chunked-prefill.md; the scheduling itself is pysim.engine (vLLM V1's
sync `Scheduler`, vllm/v1/core/sched/scheduler.py), so every rule there holds here: each step,
running requests first in admission order (decodes take 1 token, a prompt in progress
takes a chunk), then the head of the waiting queue while it fits; a prompt whose last
chunk runs in a step gets its first token in that step.

What this module adds is time. A step lasts what the serving lab's clock says
(pysim.timing.steptime, the chapter's one step-time model: a roofline plus four coefficients
fitted to published `vllm bench serve` runs) for the GPU and model chosen, Llama 3.1 8B
on one H100 by default:

    t_step = step overhead + per request x requests
             + max(memory bytes / effective bandwidth, FLOPs / effective peak)

Time is kept in whole microseconds (each step's duration is rounded to 1 us), so step
starts and arrivals compare exactly. A request arriving while a step runs waits for
the next step; when nothing is running or waiting, time jumps to the next arrival.

Users already streaming at t = 0 (`streaming_at_start`) had their prompt prefilled and
their first token sampled before step 0 (counted as step -1), so their first step is
a decode. Their `max_tokens` includes that first token; they have no TTFT.

Metrics (all in milliseconds):
- TTFT of a request: from its arrival to the end of the step that samples its first token.
- Inter-token gaps of a request: between the ends of the steps that sample its
  consecutive tokens, counted from its first token sampled in the simulation. A stream
  that was already going at t = 0 has no time for its earlier token, so its first gap
  starts at its first token in step 0.
- "Streaming users" in the summary are all requests once they have their first token:
  `itl_p50_ms` and `itl_max_ms` are over every gap of every request (p50 as
  `vllm bench serve` takes it: `pysim.utils.percentile`). This counts a new prompt's own
  answer as well as the users already streaming, so "Burst of chats", which has no
  streams at t = 0, shows the trade too.
"""

from __future__ import annotations

from dataclasses import dataclass

from pysim import fields
from pysim.config import ConfigError, choice, to_mapping
from pysim.engine.scheduler import Engine, EngineConfig, run_timed
from pysim.prng import SplitMix64
from pysim.registry import Simulation
from pysim.timing.catalog import GPUS, MODELS
from pysim.timing.steptime import StepTimeModel, check_fits, microseconds, step_parts_ms, step_time_model
from pysim.utils import cdiv, percentile

BLOCK_SIZE = 16
BUDGET_PRESETS = (512, 2048, 8192, 16384)
# A shared system prompt at the start of every chat: only prefix caching notices it.
SYSTEM_PROMPT_TOKENS = 64


@dataclass(frozen=True)
class Spec:
    """One request of a scenario."""

    id: str
    label: str
    arrival_ms: int
    num_prompt_tokens: int
    max_tokens: int  # answer length, including a stream's token sampled before t = 0
    streaming_at_start: bool = False
    priority: int = 0  # lower is served first under the priority policy
    shared_prefix: int = 0  # leading prompt tokens identical across the scenario


def _long_document() -> list[Spec]:
    prompts = (1200, 900, 2000, 600, 1500, 1100)
    answers = (120, 96, 150, 80, 110, 140)
    streams = [Spec(f"s{i + 1}", f"stream {i + 1}", 0, p, a, streaming_at_start=True)
               for i, (p, a) in enumerate(zip(prompts, answers))]
    return streams + [Spec("doc", "long document", 20, 16_000, 32)]


def _burst_of_chats() -> list[Spec]:
    rng = SplitMix64(3)
    return [Spec(f"c{i + 1}", f"chat {i + 1}", 0, rng.randint(100, 400), rng.randint(16, 64),
                 shared_prefix=SYSTEM_PROMPT_TOKENS)
            for i in range(24)]


def _mixed() -> list[Spec]:
    rng = SplitMix64(7)
    specs = [Spec(f"s{i + 1}", f"stream {i + 1}", 0, rng.randint(600, 1500), rng.randint(150, 250),
                  streaming_at_start=True) for i in range(4)]
    arrivals = []
    t = 0
    for i in range(12):  # chats every 10..90 ms
        t += rng.randint(10, 90)
        arrivals.append(Spec(f"c{i + 1}", f"chat {i + 1}", t, rng.randint(100, 400),
                             rng.randint(16, 64), shared_prefix=SYSTEM_PROMPT_TOKENS))
    for i, (at, prompt) in enumerate(((50, 3000), (250, 6000), (450, 10_000))):
        arrivals.append(Spec(f"d{i + 1}", f"document {i + 1}", at, prompt, 48, priority=1))
    arrivals.sort(key=lambda s: s.arrival_ms)  # stable: ties keep the listed order
    return specs + arrivals


SCENARIOS = {
    "long_document": ("Long document", _long_document,
                      "Six users are already streaming answers when a 16,000-token "
                      "document arrives at 20 ms."),
    "burst_of_chats": ("Burst of chats", _burst_of_chats,
                       "Twenty-four short chat prompts (100 to 400 tokens, sharing a "
                       "64-token system prompt) arrive at once."),
    "mixed": ("Mixed", _mixed,
              "Four users streaming, twelve chats arriving over about half a second and "
              "three documents (3,000, 6,000 and 10,000 tokens, priority 1: served after "
              "chats under the priority policy)."),
}


def scenario_requests(name: str) -> list[Spec]:
    return SCENARIOS[name][1]()


@dataclass(frozen=True)
class ChunkedPrefillConfig:
    scenario: str = choice("long_document", tuple(SCENARIOS), "the workload", label="Scenario",
                           option_labels={k: v[0] for k, v in SCENARIOS.items()})
    max_num_batched_tokens: int = fields.max_num_batched_tokens(2048, 64, 65_536, scale="log")
    max_num_seqs: int = fields.max_num_seqs(128, 1, 512)
    gpu: str = fields.gpu("H100")
    model: str = fields.model("llama-3.1-8b")
    num_gpu_blocks: int = fields.num_gpu_blocks(4096, 64, 65_536)
    enable_prefix_caching: bool = fields.enable_prefix_caching(False)
    enable_chunked_prefill: bool = fields.enable_chunked_prefill(True)
    policy: str = fields.policy("fcfs", ("fcfs", "priority"))

    def check(self) -> None:
        # vLLM refuses this pair at start-up: SchedulerConfig.verify_max_model_len
        # (vllm/config/scheduler.py) raises unless max_num_batched_tokens >= max_num_seqs,
        # since a full batch of decodes needs one token of budget per running request.
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ConfigError("max_num_batched_tokens", f"got {self.max_num_batched_tokens:,}, but vLLM requires "
                              f"max_num_batched_tokens >= max_num_seqs ({self.max_num_seqs:,}); "
                              f"expected a whole number from {max(64, self.max_num_seqs):,} "
                              f"to 65,536")
        check_fits(self.gpu, self.model)
        specs = scenario_requests(self.scenario)
        label = SCENARIOS[self.scenario][0]
        streams = [s for s in specs if s.streaming_at_start]
        if len(streams) > self.max_num_seqs:
            raise ConfigError("max_num_seqs", f"got {self.max_num_seqs}, but {label} starts "
                              f"with {len(streams)} users streaming; expected a whole number "
                              f"from {len(streams)} to 512")
        longest = max(s.num_prompt_tokens + s.max_tokens - 1 for s in specs)
        # + 1: block 0 is vLLM's null block, never handed out.
        need = 1 + max(cdiv(longest, BLOCK_SIZE),
                       sum(cdiv(s.num_prompt_tokens, BLOCK_SIZE) for s in streams))
        if self.num_gpu_blocks < need:
            raise ConfigError("num_gpu_blocks", f"got {self.num_gpu_blocks:,}, but {label} needs at "
                              f"least {need:,} blocks; expected a whole number from {need:,} "
                              f"to 65,536")
        if not self.enable_chunked_prefill and self.max_num_batched_tokens < longest:
            raise ConfigError("max_num_batched_tokens", f"got {self.max_num_batched_tokens:,}, but with chunked prefill off a "
                              f"whole sequence must fit one step: {label} needs at least "
                              f"{longest:,}; expected a whole number from {longest:,} to 65,536")


def _ms(us: int) -> float:
    # Correctly rounded division of a whole number of microseconds: 20480 -> 20.48
    # exactly as printed, so no further rounding is needed for display.
    return us / 1000


def _token_ids(spec: Spec, index: int) -> list[int]:
    shared = list(range(spec.shared_prefix))
    own = (index + 1) * 1_000_000
    return shared + list(range(own, own + spec.num_prompt_tokens - spec.shared_prefix))


def clock(gpu: str = "H100", model: str = "llama-3.1-8b") -> StepTimeModel:
    """The serving lab's step-time model for this GPU and model, its default coefficients."""
    return step_time_model(GPUS[gpu], MODELS[model])


def simulate(specs: list[Spec], *, max_num_batched_tokens: int = 2048, max_num_seqs: int = 128,
             step_time: StepTimeModel | None = None, num_gpu_blocks: int = 4096,
             enable_prefix_caching: bool = False, enable_chunked_prefill: bool = True,
             policy: str = "fcfs") -> dict:
    """Run `specs` on the engine with the step-time model; return requests, steps, summary."""
    step_time = step_time or clock()
    engine = Engine(EngineConfig(max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
                                 num_gpu_blocks=num_gpu_blocks, block_size=BLOCK_SIZE,
                                 enable_prefix_caching=enable_prefix_caching,
                                 enable_chunked_prefill=enable_chunked_prefill, policy=policy))
    for i, s in enumerate(specs):
        engine.add_request(s.id, s.num_prompt_tokens, s.max_tokens, arrival=s.arrival_ms * 1000,
                           priority=s.priority,
                           token_ids=_token_ids(s, i) if enable_prefix_caching else None,
                           prefilled=s.streaming_at_start)
    token_us: dict[str, list[int]] = {s.id: [] for s in specs}
    steps = []
    end = 0
    for result, start, duration in run_timed(engine, microseconds(step_time)):
        end = start + duration
        for rid in result.sampled:
            token_us[rid].append(end)
        steps.append({
            "index": result.index,
            "start_ms": _ms(start),
            "duration_ms": _ms(duration),
            "decode_tokens": result.decode_tokens,
            "prefill_tokens": result.prefill_tokens,
            **step_parts_ms(step_time, result),
            "parts": [list(p) for p in result.parts],
            "arrived": result.arrived,
            "admitted": result.admitted,
            "preempted": result.preempted,
            "finished": result.finished,
            "num_requests_running": result.num_requests_running,
            "num_requests_waiting": result.num_requests_waiting,
        })
    requests, ttft, gaps_all = [], {}, []
    for s in specs:
        r = engine.requests[s.id]
        times = token_us[s.id]
        gaps = [b - a for a, b in zip(times, times[1:])]
        gaps_all.extend(gaps)
        first = None if s.streaming_at_start else _ms(times[0] - s.arrival_ms * 1000)
        if first is not None:
            ttft[s.id] = first
        requests.append({
            "id": s.id,
            "label": s.label,
            "arrival_ms": s.arrival_ms,
            "num_prompt_tokens": s.num_prompt_tokens,
            "max_tokens": s.max_tokens,
            "priority": s.priority,
            "streaming_at_start": s.streaming_at_start,
            "ttft_ms": first,
            "token_ms": [_ms(t) for t in times],
            "gaps_ms": [_ms(g) for g in gaps],
            "finish_ms": _ms(times[-1]),
            "preemptions": r.num_preemptions,
            "cached_tokens": r.cached_tokens,
        })
    summary = {
        "ttft_ms": ttft,
        "itl_p50_ms": None if not gaps_all else _ms(percentile(sorted(gaps_all), 50)),
        "itl_max_ms": None if not gaps_all else _ms(max(gaps_all)),
        "itl_gaps": len(gaps_all),
        "total_ms": _ms(end),
        "steps": len(steps),
        "preemptions": engine.num_preemptions,
    }
    return {"requests": requests, "steps": steps, "summary": summary}


def run(config: ChunkedPrefillConfig, actions: list) -> dict:
    assert not actions
    label, _, description = SCENARIOS[config.scenario]
    view = simulate(scenario_requests(config.scenario), max_num_batched_tokens=config.max_num_batched_tokens,
                    max_num_seqs=config.max_num_seqs,
                    step_time=clock(config.gpu, config.model),
                    num_gpu_blocks=config.num_gpu_blocks, enable_prefix_caching=config.enable_prefix_caching,
                    enable_chunked_prefill=config.enable_chunked_prefill, policy=config.policy)
    return {
        "config": to_mapping(config),
        "scenario": {"id": config.scenario, "label": label, "description": description},
        "model": model_view(config),
        "block_size": BLOCK_SIZE,
        "max_num_batched_tokens_presets": list(BUDGET_PRESETS),
        "scenarios": [{"id": k, "label": v[0], "description": v[2]} for k, v in SCENARIOS.items()],
        **view,
    }


def model_view(config: ChunkedPrefillConfig) -> dict:
    """The clock, as the page and the CLI state it."""
    c = clock(config.gpu, config.model).coefficients
    return {"label": f"{MODELS[config.model].name} on one {GPUS[config.gpu].label}",
            "coefficients": c.record(),
            "formula": (f"t_step = {c.step_overhead_ms:.3g} ms + {c.request_overhead_us:.3g} µs × "
                        f"requests + max(memory time, compute time) at {c.memory_efficiency:.2f} "
                        f"of peak bandwidth and {c.compute_efficiency:.2f} of peak FLOP/s")}


def text(view: dict) -> str:
    s = view["summary"]
    cfg = view["config"]
    lines = [
        f"Token budget: {view['scenario']['label']}, budget {cfg['max_num_batched_tokens']:,} tokens/step, "
        f"max_num_seqs {cfg['max_num_seqs']}, {cfg['policy']}"
        + ("" if cfg["enable_chunked_prefill"] else ", chunked prefill off")
        + (", prefix caching" if cfg["enable_prefix_caching"] else ""),
        f"  step time ({view['model']['label']}, the serving lab's clock): {view['model']['formula']}",
        "",
        f"{'request':<16} {'arrival ms':>10} {'prompt':>7} {'output':>7} {'TTFT ms':>9} "
        f"{'max gap ms':>10} {'finish ms':>10} {'preempt':>7}",
    ]
    for r in view["requests"]:
        ttft = "streaming" if r["ttft_ms"] is None else f"{r['ttft_ms']:.2f}"
        gap = f"{max(r['gaps_ms']):.2f}" if r["gaps_ms"] else "-"
        lines.append(f"{r['label']:<16} {r['arrival_ms']:>10,} {r['num_prompt_tokens']:>7,} "
                     f"{r['max_tokens']:>7,} {ttft:>9} {gap:>10} {r['finish_ms']:>10.2f} "
                     f"{r['preemptions']:>7}")
    p50 = "-" if s["itl_p50_ms"] is None else f"{s['itl_p50_ms']:.2f}"
    mx = "-" if s["itl_max_ms"] is None else f"{s['itl_max_ms']:.2f}"
    lines += ["", f"inter-token latency p50 {p50} ms, max {mx} ms; total {s['total_ms']:.2f} ms "
              f"in {s['steps']:,} steps; {s['preemptions']} preemptions"]
    return "\n".join(lines)


def figures() -> dict:
    """The numbers page 5 quotes ({{ chunked_prefill.KEY }}): the "Long document" scenario
    at the four budget presets, plus the clock's pieces (Llama 3.1 8B on one H100)."""
    base = run(ChunkedPrefillConfig(), [])
    reqs = base["requests"]
    streams = [r for r in reqs if r["streaming_at_start"]]
    doc = next(r for r in reqs if not r["streaming_at_start"])
    c = base["model"]["coefficients"]
    stm = clock()
    decode_step = base["steps"][0]["duration_ms"]  # the streams alone: the document comes later
    whole = run(ChunkedPrefillConfig(max_num_batched_tokens=max(BUDGET_PRESETS)), [])
    whole_step = next(s for s in whole["steps"]
                      if [doc["id"], "prefill", doc["num_prompt_tokens"]] in s["parts"])
    # What one more decoding request adds to a decode step: its overhead and the read of
    # its KV (at the streams' mean context), at the fitted memory efficiency.
    context = sum(r["num_prompt_tokens"] for r in streams) / len(streams)
    per_decode_ms = (c["request_overhead_us"] / 1e3 + context * stm.kv_bytes_per_token
                     / (stm.bandwidth * c["memory_efficiency"]) * 1e3)
    out = {
        "step_overhead_ms": c["step_overhead_ms"], "request_overhead_us": c["request_overhead_us"],
        "memory_efficiency": c["memory_efficiency"], "compute_efficiency": c["compute_efficiency"],
        "per_decode_ms": per_decode_ms, "stream_context": context,
        "streams": len(streams), "doc_tokens": doc["num_prompt_tokens"], "doc_arrival_ms": doc["arrival_ms"],
        "decode_step_ms": decode_step,
        "decode_step_memory_ms": base["steps"][0]["memory_ms"],
        # The whole document prefilled in one step beside the streams' decodes.
        "whole_step_ms": whole_step["duration_ms"],
        "whole_step_compute_ms": whole_step["compute_ms"],
        "whole_over_decode": whole_step["duration_ms"] / decode_step,
    }
    for budget in base["max_num_batched_tokens_presets"]:
        view = run(ChunkedPrefillConfig(max_num_batched_tokens=budget), [])
        summary = view["summary"]
        out[f"ttft_{budget}"] = summary["ttft_ms"][doc["id"]]
        out[f"itl_max_{budget}"] = summary["itl_max_ms"]
        out[f"itl_p50_{budget}"] = summary["itl_p50_ms"]
        out[f"total_{budget}"] = summary["total_ms"]
        out[f"steps_{budget}"] = summary["steps"]
        # Steps that carried a piece of the document's prompt.
        out[f"chunks_{budget}"] = sum(
            any(part[0] == doc["id"] and part[1] == "prefill" for part in step["parts"])
            for step in view["steps"])
        # The "Burst of chats" scenario: nobody streams at the start, so the number of
        # steps, each paying the fixed cost, depends on the budget.
        burst = run(ChunkedPrefillConfig(scenario="burst_of_chats", max_num_batched_tokens=budget), [])["summary"]
        out[f"burst_steps_{budget}"] = burst["steps"]
        out[f"burst_total_{budget}"] = burst["total_ms"]
    out["burst_extra_steps"] = out["burst_steps_512"] - out["burst_steps_16384"]
    # What the whole-document budget buys the document over the default 2,048 (page 5's
    # "Try this": little, while the streams' worst gap grows many times).
    out["ttft_gain_16384_frac"] = (out["ttft_2048"] - out["ttft_16384"]) / out["ttft_2048"]
    out["itl_max_growth_16384"] = out["itl_max_16384"] / out["itl_max_2048"]
    return out


SIMULATION = Simulation(name="chunked_prefill", config_cls=ChunkedPrefillConfig, run=run, text=text,
                        figures=figures)
