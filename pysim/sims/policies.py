"""The scheduling-policy lab (page 9): real and research policies, or the reader's own, on
real two-tenant traffic, with per-tenant and per-tier figures.

One run: the traffic (pysim.traffic.tenants: Azure's conversation and coding services as two
tenants, or Mooncake's Kimi trace with prefix caching), the engine (pysim.engine via
pysim.engine.replay.Replica, vLLM 0.33's V1 rules, chunked prefill on, preemption by
recompute) with the lab's step-time model and KV pool (pysim.timing.steptime, the GPU and
model of pysim.timing.catalog), and a policy written in the interface of pysim.policy.api: a
built-in (pysim.policy.builtin) or the reader's code (`policy_code`, run by
pysim.policy.reader under a budget). A second built-in (`compare`) runs on the same
traffic, so the view holds both results side by side.

The figures, per tenant and per tier: TTFT p50/p90/p99 (as `vllm bench serve`,
pysim.traffic.slo), the longest wait in the queue before the first admission (starvation),
preemptions, request and output throughput and goodput under the SLOs; over time, the
longest wait of each tier's waiting requests; and vLLM's prefix-cache hit rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pysim import fields
from pysim.config import ConfigError, bounded, choice, data, to_mapping
from pysim.engine import vllm_defaults
from pysim.engine.replay import Replica, engine_config
from pysim.engine.scheduler import SchedulerConfig
from pysim.policy import reader as reader_policy
from pysim.policy.builtin import BUILTINS, DESCRIPTIONS, NAMES, source
from pysim.registry import Simulation
from pysim.sims.exercises import ReaderError
from pysim.timing.catalog import GPUS, MODELS
from pysim.timing.steptime import DEFAULTS, check_fits, num_gpu_blocks, step_time_model
from pysim.traffic import slo, tenants, traces
from pysim.utils import percentile

NUM_BINS = 60  # points in the waiting-time series
RATE_FIELDS = {"conv": "conv_rate_scale", "code": "code_rate_scale", "mooncake_conv": "rate_scale"}
NOTE = ("A model: step times from the lab's roofline with coefficients fitted to vllm bench serve "
        "runs; the scheduler is vLLM 0.33's V1 engine with the waiting queue ordered by the policy.")


def _check_code(value):
    if not isinstance(value, str):
        raise ConfigError("policy_code", f"expected your policy as text, got {type(value).__name__}")
    if len(value) > reader_policy.MAX_CODE_CHARS:
        raise ConfigError("policy_code", f"your policy is {len(value):,} characters long; at most "
                                         f"{reader_policy.MAX_CODE_CHARS:,} are accepted")
    return value


def policy_code():
    return fields.policy_code(_check_code)


MAX_REQUESTS = 4_500  # a window's requests, all tenants: 10 minutes of the default traffic fit


@dataclass(frozen=True)
class PoliciesConfig(SchedulerConfig):
    policy: str = fields.policy("fcfs", NAMES)
    compare: str = choice("none", ("none", *NAMES), "a second built-in policy, run on the same "
                          "traffic and shown beside the first", label="Compare with",
                          option_labels={"none": "Nothing", **{n: fields.POLICY_LABELS[n] for n in NAMES}})
    policy_code: str = policy_code()
    services: str = choice("azure", tuple(tenants.SERVICES), "whose traffic: Azure's conversation "
                           "and coding services as two tenants, or Mooncake's Kimi conversation "
                           "service (shared prefixes, prefix caching on) as one",
                           label="Services", option_labels={"azure": "Azure: conv + code",
                                                            "mooncake": "Mooncake: Kimi"})
    window_start_min: int = fields.window_start_min(10, 0, 50)
    window_minutes: int = fields.window_minutes(5, 1, 10)
    conv_rate_scale: float = bounded(1.0, 0.1, 4.0, "the conversation tenant's rate: its gaps divided "
                                     "by this", integer=False, label="conv rate", unit="x", scale="log")
    code_rate_scale: float = bounded(0.5, 0.1, 4.0, "the coding tenant's rate: its gaps divided by this",
                                     integer=False, label="code rate", unit="x", scale="log")
    rate_scale: float = fields.rate_scale(1.0, 0.05, 4.0)
    flood_tenant: str = choice("none", ("none", "conv", "code"), "a tenant that floods the server: "
                               "its rate times the flood factor", label="Flooding tenant",
                               option_labels={"none": "Nobody", "conv": "conv", "code": "code"})
    flood_factor: float = bounded(4.0, 2.0, 8.0, "how many times its usual rate the flooding tenant "
                                  "sends", integer=False, label="Flood factor", unit="x")
    batch_share: float = bounded(0.3, 0.0, 1.0, "the share of each tenant's requests in the batch tier "
                                 "(vLLM priority 1; the rest are interactive, priority 0)",
                                 integer=False, label="Batch share", step=0.05)
    seed: int = fields.seed(0, 0, 1_000_000, slider_max=100)
    gpu: str = fields.gpu("H100")
    model: str = fields.model("llama-3.1-8b")
    # vLLM's scheduler knobs are inherited (pysim.engine.scheduler.SchedulerConfig); fewer seats than
    # vllm serve's 1,024, so that who waits, and for how long, is the policy's to decide.
    max_num_seqs: int = fields.max_num_seqs(256, 16, 1024, scale="log")
    slo_ttft_ms: float = fields.slo_ttft_ms(2000.0, 10, 60_000)
    slo_tpot_ms: float = fields.slo_tpot_ms(100.0, 1, 1000)

    def check(self) -> None:
        SchedulerConfig.check(self)
        if self.flood_tenant != "none" and self.services != "azure":
            raise ConfigError("flood_tenant", f"got {self.flood_tenant}, but the {self.services} "
                                              "traffic has one tenant; expected none")
        check_fits(self.gpu, self.model)
        tenants.check(self.services, self.window_start_min, self.window_minutes, scales(self),
                      RATE_FIELDS)
        n = len(traffic_of(self))
        if n > MAX_REQUESTS:
            # A page replays every request, once per policy shown: keep a run within seconds.
            most = max(1, int(self.window_minutes * MAX_REQUESTS / n))
            raise ConfigError("window_minutes", f"the window holds {n:,} requests at these rates; at most "
                                                f"{MAX_REQUESTS:,}: expected a window of at most {most} min "
                                                f"(or lower rates)")


# The widget's fieldsets, in order (pysim.config.describe); a knob added to SchedulerConfig
# joins the server's group with no edit here. (policy_code is the widget's editor.)
PoliciesConfig.GROUPS = (
    ("Policies", ("policy", "compare")),
    ("Traffic", ("services", "window_start_min", "window_minutes", "rate_scale", "conv_rate_scale",
                 "code_rate_scale", "flood_tenant", "flood_factor", "batch_share", "seed")),
    ("Server and targets", ("gpu", "model", *SchedulerConfig.GROUP[1], "slo_ttft_ms", "slo_tpot_ms")),
)


def scales(config) -> dict:
    """Each tenant's rate scale: its own, times the overall one, times the flood."""
    out = {}
    for tenant in tenants.SERVICES[config.services]:
        own = getattr(config, RATE_FIELDS[tenant]) if tenant in ("conv", "code") else 1.0
        flood = config.flood_factor if config.flood_tenant == tenant else 1.0
        out[tenant] = own * config.rate_scale * flood
    return out


def traffic_of(config) -> tenants.Traffic:
    return tenants.mix(config.services, config.window_start_min, config.window_minutes,
                       scales(config), config.batch_share, config.seed)


# --- one run -------------------------------------------------------------------------
@dataclass
class Outcome:
    """One policy's run: per request (in the traffic's order) its times, and the totals."""

    name: str
    admitted: list  # first admission (s)
    first_token: list
    finished: list
    preemptions: list
    prefix_cache_queries: int
    prefix_cache_hits: int
    num_steps: int


def block_size(config) -> int:
    """vLLM's default block on the GPU (pysim.engine.vllm_defaults, the release the chapter follows)."""
    return vllm_defaults.defaults(GPUS[config.gpu]).block_size


def hardware(config):
    gpu, model = GPUS[config.gpu], MODELS[config.model]
    return step_time_model(gpu, model, DEFAULTS[config.gpu]), num_gpu_blocks(gpu, model, block_size(config))


def simulate(traffic: tenants.Traffic, policy, config) -> Outcome:
    """Replay the traffic under `policy` (a pysim.policy.api.Policy). A reader's policy
    raises ReaderError (pysim.policy.reader) when it fails or runs past its budget."""
    stm, blocks = hardware(config)
    bs = block_size(config)
    caching = traffic.hash_ids is not None
    longest = max(p + o for p, o in zip(traffic.prompt_tokens, traffic.output_tokens))
    if -(-longest // bs) > blocks - 1:
        raise ConfigError("model", f"the longest request ({longest:,} tokens) needs more KV blocks "
                                   f"than {MODELS[config.model].name} leaves on one "
                                   f"{GPUS[config.gpu].name} ({blocks - 1:,} usable)")
    cfg = engine_config(blocks, bs, config, enable_prefix_caching=caching)
    labels = {i: (t, tier) for i, (t, tier) in enumerate(zip(traffic.tenants, traffic.tiers))}
    server = Replica(cfg, stm, policy=policy.with_labels(labels))
    priority = tenants.PRIORITY
    for i, at in enumerate(traffic.arrivals):
        hashes = traffic.token_ids(i)
        server.engine.add_request(i, traffic.prompt_tokens[i], traffic.output_tokens[i], arrival=at,
                                  priority=priority[traffic.tiers[i]], token_ids=hashes,
                                  block_hashes=hashes.block_hashes(bs) if hashes else ())
    server.now = traffic.arrivals[0] if len(traffic) else 0.0
    server.advance()
    engine = server.engine
    n = len(traffic)
    assert len(server.done) == n, "every request finishes"
    admitted = engine.waiting.first_admitted
    return Outcome(policy.name, [admitted[i] for i in range(n)], [server.first[i] for i in range(n)],
                   [server.done[i] for i in range(n)],
                   [engine.requests[i].num_preemptions for i in range(n)],
                   engine.prefix_cache_queries, engine.prefix_cache_hits, engine.num_steps)


# --- figures -------------------------------------------------------------------------
def figures(traffic: tenants.Traffic, out: Outcome, members: list, duration: float, config) -> dict:
    """The figures of the requests `members` (indices): TTFT, waits, preemptions,
    throughput and goodput (over the whole run's duration, so groups add up)."""
    arr = traffic.arrivals
    ttfts = [out.first_token[i] - arr[i] for i in members]
    latencies = [out.finished[i] - arr[i] for i in members]
    outputs = [traffic.output_tokens[i] for i in members]
    waits = [out.admitted[i] - arr[i] for i in members]
    m = slo.summarize(ttfts, latencies, outputs, duration or 1.0, config.slo_ttft_ms, config.slo_tpot_ms)
    ttft = m["ttft_ms"]
    return {"num_requests": len(members),
            "ttft_ms": {k: ttft[k] for k in ("mean", "p50", "p90", "p99")},
            "wait_max_s": max(waits, default=0.0),
            "wait_p90_s": percentile(sorted(waits), 90) if waits else 0.0,
            "num_preemptions": sum(out.preemptions[i] for i in members),
            "request_throughput": m["request_throughput"], "output_throughput": m["output_throughput"],
            "request_goodput": m["request_goodput"], "slo_attainment": m["slo_attainment"]}


def wait_series(traffic: tenants.Traffic, out: Outcome, span: float) -> dict:
    """Per tier, at the end of each of NUM_BINS bins, how long its oldest waiting request
    (arrived, not yet admitted once) has waited (s): 0 when none waits."""
    width = max(span, 1e-9) / NUM_BINS
    t = [(k + 1) * width for k in range(NUM_BINS)]
    series = {}
    for tier in tenants.TIERS:
        oldest = [None] * NUM_BINS  # arrival of the oldest request waiting at each bin's end
        nxt = list(range(1, NUM_BINS + 1))  # the next bin not yet filled (skip pointers)

        def find(b):
            while b < NUM_BINS and oldest[b] is not None:
                nxt[b] = b = nxt[b]
            return b

        for i, a in enumerate(traffic.arrivals):  # arrival order: the first to fill a bin is its oldest
            if traffic.tiers[i] != tier:
                continue
            b = find(max(0, math.ceil(a / width - 1)))
            while b < NUM_BINS and t[b] < out.admitted[i]:
                if t[b] >= a:
                    oldest[b] = a
                b = find(b + 1)
        series[tier] = [round(t[b] - oldest[b], 3) if oldest[b] is not None else 0.0 for b in range(NUM_BINS)]
    return {"t_s": [round(x, 3) for x in t], "wait_s": series, "bin_s": width}


def result_view(traffic: tenants.Traffic, out: Outcome, config, label: str, description: str) -> dict:
    n = len(traffic)
    end = max(out.finished, default=0.0)
    duration = end - min(traffic.arrivals, default=0.0)
    by_tenant = {t: [i for i in range(n) if traffic.tenants[i] == t] for t in tenants.SERVICES[traffic.services]}
    by_tier = {t: [i for i in range(n) if traffic.tiers[i] == t] for t in tenants.TIERS}
    q, h = out.prefix_cache_queries, out.prefix_cache_hits
    return {
        "name": out.name, "label": label, "description": description,
        "summary": figures(traffic, out, list(range(n)), duration, config) | {"duration_s": duration,
                                                                             "num_steps": out.num_steps},
        "tenants": {t: figures(traffic, out, ids, duration, config) for t, ids in by_tenant.items()},
        "tiers": {t: figures(traffic, out, ids, duration, config) for t, ids in by_tier.items()},
        "prefix_cache": {"queries": q, "hits": h, "hit_rate": h / q if q else 0.0,
                         "metric_names": {"queries": "vllm:prefix_cache_queries",
                                          "hits": "vllm:prefix_cache_hits"}}
        if traffic.hash_ids is not None else None,
        "series": wait_series(traffic, out, end),
    }


def run_builtin(traffic, name: str, config) -> dict:
    out = simulate(traffic, BUILTINS[name], config)
    return result_view(traffic, out, config, fields.POLICY_LABELS[name], DESCRIPTIONS[name])


def run_code(traffic, code: str, config, **budget) -> tuple[dict | None, dict]:
    """The reader's policy on the traffic: (its result or None, {error, error_line, output})."""
    policy = None
    try:
        policy = reader_policy.load(code, **budget)
        out = simulate(traffic, policy, config)
    except ReaderError as exc:
        printed = policy.guard.output.text() if policy else ""
        return None, {"error": exc.message, "error_line": exc.line, "output": printed}
    report = {"error": None, "error_line": None, "output": policy.guard.output.text()}
    return result_view(traffic, out, config, "Your policy", "your order() and victim()"), report


def traffic_view(config, traffic: tenants.Traffic) -> dict:
    span = config.window_minutes * 60
    per = {}
    for t in tenants.SERVICES[config.services]:
        ids = [i for i in range(len(traffic)) if traffic.tenants[i] == t]
        per[t] = {"label": traces.TRACES[t], "num_requests": len(ids), "rate_scale": traffic.scales[t],
                  "rate_req_s": len(ids) / span,
                  "batch_share": sum(traffic.tiers[i] == "batch" for i in ids) / len(ids) if ids else 0.0}
    flood = (f"; {config.flood_tenant} floods at x{config.flood_factor:g} its rate"
             if config.flood_tenant != "none" else "")
    sentence = (f"{len(traffic):,} requests in {config.window_minutes} min from minute "
                f"{config.window_start_min}: " + ", ".join(
                    f"{t} {p['num_requests']:,} ({p['rate_req_s']:.2f} req/s, x{p['rate_scale']:.3g})"
                    for t, p in per.items())
                + f"{flood}; {config.batch_share:.0%} of each tenant's requests in the batch tier.")
    return {"services": config.services, "num_requests": len(traffic), "tenants": per,
            "tiers": list(tenants.TIERS), "sentence": sentence, "credit": tenants.CREDIT[config.services],
            "enable_prefix_caching": traffic.hash_ids is not None}


def _echo(config) -> dict:
    out = to_mapping(config)
    out["policy_code"] = f"<{len(config.policy_code):,} characters>" if config.policy_code else ""
    return out


def run(config: PoliciesConfig, actions: list) -> dict:
    """The `policies` simulation: the policy (a built-in or the reader's code) and, if
    asked, a second built-in, on the same traffic."""
    assert not actions
    traffic = traffic_of(config)
    if not len(traffic):
        raise ConfigError("window_start_min", "no request arrives in this window; pick another start")
    _, blocks = hardware(config)
    results, report = [], {"error": None, "error_line": None, "output": ""}
    if config.policy_code:
        mine, report = run_code(traffic, config.policy_code, config)
        if mine is not None:
            results.append(mine)
    else:
        results.append(run_builtin(traffic, config.policy, config))
    if config.compare != "none":
        results.append(run_builtin(traffic, config.compare, config))
    return {
        "config": _echo(config),
        "note": NOTE,
        "traffic": traffic_view(config, traffic),
        "hardware": {"gpu": GPUS[config.gpu].label, "model": MODELS[config.model].name,
                     "num_gpu_blocks": blocks, "block_size": block_size(config)},
        "slo": {"ttft_ms": config.slo_ttft_ms, "tpot_ms": config.slo_tpot_ms},
        "results": results,
        "error": report["error"], "error_line": report["error_line"], "output": report["output"],
        "starter_code": source(config.policy),
        "policies": {n: {"label": fields.POLICY_LABELS[n], "description": DESCRIPTIONS[n]} for n in NAMES},
    }


# --- the command line ------------------------------------------------------------------
def _row(name: str, f: dict) -> str:
    t = f["ttft_ms"]
    return (f"  {name:<12} {f['num_requests']:>6,} {t['p50']:>9.0f} {t['p90']:>9.0f} {t['p99']:>9.0f} "
            f"{f['wait_max_s']:>9.1f} {f['num_preemptions']:>7,} {f['request_throughput']:>7.2f} "
            f"{f['request_goodput']:>7.2f} {f['slo_attainment']:>7.1%}")


def text(view: dict) -> str:
    lines = [f"Scheduling policies ({view['note']})", "  traffic: " + view["traffic"]["sentence"],
             f"  credit: {view['traffic']['credit']}",
             f"  SLO: TTFT <= {view['slo']['ttft_ms']:g} ms, TPOT <= {view['slo']['tpot_ms']:g} ms"]
    if view["error"]:
        lines.append("error: " + view["error"])
    header = (f"  {'':<12} {'reqs':>6} {'TTFT p50':>9} {'TTFT p90':>9} {'TTFT p99':>9} {'wait max':>9} "
              f"{'preempt':>7} {'req/s':>7} {'good/s':>7} {'attain':>7}")
    for r in view["results"]:
        lines += ["", f"{r['label']} ({r['description']}): {r['summary']['duration_s']:.0f} s", header + "   (ms; wait in s)"]
        lines.append(_row("all", r["summary"]))
        lines += [_row(t, f) for t, f in r["tenants"].items()]
        lines += [_row(t, f) for t, f in r["tiers"].items()]
        if r["prefix_cache"]:
            lines.append(f"  prefix-cache hit rate {r['prefix_cache']['hit_rate']:.1%}")
    if view["output"]:
        lines += ["printed:", view["output"]]
    return "\n".join(lines)


# The reader's code runs with the cycle collector paused, as every simulation but the
# exercise does (pysim.bridge): its line budget bounds the garbage it can leave.
def exit_status(view: dict) -> int:
    """The command line's: 2 when the reader's policy failed (as a bad setting does)."""
    return 2 if view.get("error") else 0


# --- the page's figures (docs/priority-and-preemption.md) --------------------------------
# Each state a section of page 9 links to (its hash keys, `policies.KEY=VALUE&...`) and
# quotes figures from: the settings that differ from the defaults.
PAGE_STATES = {
    "tiers": {"policy": "priority", "compare": "fcfs"},
    "preempt": {"policy": "priority", "compare": "fcfs", "model": "qwen3-14b", "max_num_seqs": 1024,
                "rate_scale": 0.7},
    "starve": {"policy": "priority", "compare": "fcfs", "conv_rate_scale": 2.0},
    "flood": {"policy": "vtc", "compare": "fcfs", "flood_tenant": "conv", "flood_factor": 3.0,
              "conv_rate_scale": 0.5, "code_rate_scale": 0.5, "window_minutes": 2},
    "sjf": {"policy": "sjf", "compare": "fcfs"},
    "victim": {"policy": "fcfs", "compare": "priority", "model": "qwen3-14b", "max_num_seqs": 1024,
               "rate_scale": 0.7},
}


def page_figures() -> dict:
    """`{{ policies.KEY }}`: for each state, `link_STATE` (the hash that opens it) and its
    figures, `STATE_{a,b}_{group}_{figure}` (a: the policy, b: the one compared)."""
    out = {}
    for state, settings in PAGE_STATES.items():
        out[f"link_{state}"] = "&".join(f"policies.{k}={v}" for k, v in settings.items())
        view = run(PoliciesConfig(**settings), [])
        for side, r in zip("ab", view["results"]):
            groups = {"all": r["summary"], **r["tenants"], **r["tiers"]}
            for group, f in groups.items():
                stem = f"{state}_{side}_{group}"
                out[stem + "_ttft_p50_s"] = f["ttft_ms"]["p50"] / 1000
                out[stem + "_ttft_p90_s"] = f["ttft_ms"]["p90"] / 1000
                out[stem + "_ttft_mean_s"] = f["ttft_ms"]["mean"] / 1000
                out[stem + "_wait_max_s"] = f["wait_max_s"]
                out[stem + "_preemptions"] = f["num_preemptions"]
                out[stem + "_goodput"] = f["request_goodput"]
                out[stem + "_attainment_pct"] = f["slo_attainment"] * 100
        out[f"{state}_num_requests"] = view["traffic"]["num_requests"]
    return out


SIMULATION = Simulation(name="policies", config_cls=PoliciesConfig, run=run, text=text,
                        exit_status=exit_status, data_files=traces.site_files, figures=page_figures)
