"""Fit the step-time model (pysim.timing.steptime) to real `vllm bench serve` runs.

A run is a benchmark's traffic (pysim.traffic.bench_serve.Benchmark), the server it ran on
(GPU, model, scheduler flags) and what it measured. We replay it through the engine
and compare mean TTFT, mean TPOT and output throughput with the measured ones.

Why least squares works here: a replay is a list of segments (a step, or a run of
plain decodes), and every time the benchmark reports is a sum of segment times:
TTFT the segments from sending a request to its first token, TPOT those from its
first to its last token over its tokens, the duration all of them. A segment's time
is linear in the four coefficients once we know which ceiling binds it,

    t = step_overhead x steps + request_overhead x (requests x steps)
        + memory seconds / memory_efficiency + compute seconds / compute_efficiency,

so each reported figure is `const + theta . phi` with theta = (step_overhead,
request_overhead, 1 / memory_efficiency, 1 / compute_efficiency). The fit minimises
the squared relative errors over runs and figures, plus a pull towards prior
coefficients (ridge regression: a handful of runs cannot pin four numbers alone),
with each coefficient kept in its physical range (steptime.BOUNDS). It alternates:
solve for theta, see which ceiling binds each segment now, solve again (a few rounds).

The schedule itself (which tokens run in which step) depends on time only when
requests arrive at a finite rate; then the runs are replayed again with the new
coefficients and the fit repeated (`REPLAYS` times at most). With `--request-rate inf`
the schedule is the same for any coefficients, and one replay serves the whole fit.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass, field

from pysim.config import ConfigError
from pysim.engine import vllm_defaults
from pysim.engine.replay import engine_config, replay
from pysim.engine.scheduler import SchedulerConfig
from pysim.timing.catalog import GPUS, MODELS
from pysim.timing.steptime import BOUNDS, Coefficients, num_gpu_blocks, step_time_model
from pysim.traffic import bench_serve

FIGURES = ("mean_ttft_ms", "mean_tpot_ms", "output_throughput")
MAX_PROMPTS = 5_000  # a replay's requests: bounded so a paste cannot freeze a page
REPLAYS = 3
ROUNDS = 12
# The prior's pull: one unit of a coefficient's scale costs as much as a relative
# error of sqrt(PRIOR_WEIGHT) on one figure of one run.
SCALE = (1e-3, 20e-6, 0.3, 0.5)  # step overhead (s), request overhead (s), 1/e_mem, 1/e_comp
PRIOR_WEIGHT = 0.02
# Where the per-GPU defaults start: round figures, pulled on only weakly.
GENERIC = Coefficients(2.0, 10.0, 0.7, 0.5, "generic starting point")
GENERIC_WEIGHT = 0.002


@dataclass(frozen=True)
class ServerSetup:
    """What a benchmark ran against: the GPU and model, vLLM's scheduler knobs as one
    `SchedulerConfig`, and the vLLM release whose defaults fill in the rest (block size,
    and the memory share when `gpu_memory_utilization` is None; pysim.engine.vllm_defaults)."""

    gpu: str
    model: str
    scheduler: SchedulerConfig
    gpu_memory_utilization: float | None = None
    enable_prefix_caching: bool = True
    vllm_version: str = vllm_defaults.LATEST

    @property
    def defaults(self) -> vllm_defaults.Defaults:
        return vllm_defaults.defaults(GPUS[self.gpu], self.vllm_version)

    @property
    def block_size(self) -> int:
        return self.defaults.block_size

    @property
    def utilization(self) -> float:
        u = self.gpu_memory_utilization
        return self.defaults.gpu_memory_utilization if u is None else u

    def num_gpu_blocks(self) -> int:
        return num_gpu_blocks(GPUS[self.gpu], MODELS[self.model], self.block_size, self.utilization)


@dataclass(frozen=True)
class Run:
    """A benchmark run: its traffic, its server, what it measured (None: not reported)."""

    bench: bench_serve.Benchmark
    server: ServerSetup
    measured: dict  # FIGURES -> number or None
    label: str = ""
    notes: tuple = field(default=())


def check(run: Run, field_name: str = "bench_text", max_prompts: int | None = MAX_PROMPTS) -> None:
    """Refuse a run the engine cannot replay (or, with `max_prompts`, one too large for a
    page to replay), naming why (ConfigError on `field_name`)."""
    b, s = run.bench, run.server
    if max_prompts is not None and b.num_prompts > max_prompts:
        raise ConfigError(field_name, f"{run.label}: {b.num_prompts:,} prompts; a replay takes "
                                      f"at most {max_prompts:,}")
    longest = (int(b.random_input_len * (1 + b.random_range_ratio)) + b.random_prefix_len
               + int(b.random_output_len * (1 + b.random_range_ratio)))
    blocks = s.num_gpu_blocks()
    if -(-longest // s.block_size) > blocks - 1:
        raise ConfigError(field_name, f"{run.label}: a request of up to {longest:,} tokens does "
                                      f"not fit the KV pool of {MODELS[s.model].name} on one "
                                      f"{GPUS[s.gpu].name} ({max(blocks - 1, 0):,} blocks of "
                                      f"{s.block_size})")


def replay_run(run: Run, coefficients: Coefficients, itl: bool = True):
    """Replay `run`'s traffic on its server: (ReplayResult, Requests, StepTimeModel)."""
    s = run.server
    model = step_time_model(GPUS[s.gpu], MODELS[s.model], coefficients)
    blocks = s.num_gpu_blocks()
    reqs = bench_serve.requests(run.bench)
    # A prefix shorter than a block fills no block, so nothing can be found in the cache.
    caching = s.enable_prefix_caching and run.bench.random_prefix_len >= s.block_size
    cfg = engine_config(blocks, s.block_size, s.scheduler, enable_prefix_caching=caching)
    result = replay(reqs.arrivals, reqs.prompt_tokens, reqs.output_tokens, cfg, model, blocks,
                    max_concurrency=run.bench.max_concurrency,
                    token_ids=reqs.token_ids if caching else None, itl=itl)
    return result, reqs, model


def _replayed(run: Run, coefficients: Coefficients):
    """(ReplayResult, StepTimeModel) of `run` replayed for a fit (no inter-token gaps)."""
    result, _reqs, model = replay_run(run, coefficients, itl=False)
    return result, model


def predict(run: Run, coefficients: Coefficients) -> dict:
    """What `vllm bench serve` would report for this run under the model."""
    result, reqs, _ = replay_run(run, coefficients)
    return bench_serve.metrics(result, reqs.prompt_tokens)


# --- the linear form of a replay ------------------------------------------------------
def _theta(c: Coefficients) -> list[float]:
    return [c.step_overhead_ms / 1e3, c.request_overhead_us / 1e6,
            1 / c.memory_efficiency, 1 / c.compute_efficiency]


def _coefficients(theta: list[float], source: str) -> Coefficients:
    return Coefficients(theta[0] * 1e3, theta[1] * 1e6, 1 / theta[2], 1 / theta[3], source)


class LinearForm:
    """A replay's mean TTFT, mean TPOT and duration (seconds) as `const + theta . phi`,
    for any coefficients, on this replay's schedule.

    A request's times are anchored where it entered: sent when another finished (a
    concurrency cap) it waits through the segments after that one; arrived on its own
    clock, it waits through the rest of the segment it arrived in (the same share of
    that segment's time) and the segments after. So a request's figures depend on the
    steps it lived through, not on how long the server ran before it came: with
    arrivals at a finite rate, slower steps lengthen the queue a request meets, and
    they do not push its arrival later. The duration runs from the benchmark's start to
    the end of the last segment, through every segment since the engine last sat idle.
    At the replay's own coefficients the form is exact, and at any others under which
    the schedule holds, as it does for requests all sent at once (tests/unit/test_fit.py).

    Each figure is therefore a weighted sum of the segments' phi, with weights that
    depend on the schedule alone (how many requests waited through a segment, and for
    what share): they are computed once, here, and a fit asks `at` for dozens of
    coefficients. Of phi only the ceiling that binds moves with the coefficients: a
    step is memory-bound when memory / e_mem >= compute / e_comp, so with the steps
    sorted by memory / compute the memory-bound ones are a prefix, found by bisection.
    A run of decodes (pysim.engine.decode_run) changes sides within itself, and is
    split by the model at each call.
    """

    FIGURES = ("mean_ttft", "mean_tpot", "duration")

    def __init__(self, result, model):
        self.model = model
        self.output_tokens = sum(result.output_tokens)
        work = result.seg_work
        nseg = len(work)
        starts, ends = result.seg_start, result.seg_end
        # Each figure's weight per segment, built as a difference array (a request adds
        # its weight from its first segment to its last), plus the share of the segment
        # a request arrived in, and a constant (seconds no coefficient moves).
        diff = {f: [0.0] * (nseg + 1) for f in self.FIGURES}
        arrived_in: dict[int, float] = {}  # segment -> the shares of it that requests waited
        ttft_const = 0.0
        n = len(result.sent)
        n_tpot = 0
        for i in range(n):
            # TTFT: from its sending to the end of the segment of its first token.
            if result.sent_seg[i] >= 0:  # sent at the end of a segment
                first = result.sent_seg[i] + 1
            else:
                t = result.sent[i]
                s = _first_ending_after(ends, t)
                if starts[s] >= t:  # it found the engine between steps (or idle): a constant wait
                    ttft_const += starts[s] - t
                    first = s
                else:
                    arrived_in[s] = arrived_in.get(s, 0.0) + (ends[s] - t) / (ends[s] - starts[s])
                    first = s + 1
            diff["mean_ttft"][first] += 1
            diff["mean_ttft"][result.first_seg[i] + 1] -= 1
            # TPOT: the segments after its first token's, to its last, over its later tokens.
            out = result.output_tokens[i]
            if out > 1:
                diff["mean_tpot"][result.first_seg[i] + 1] += 1 / (out - 1)
                diff["mean_tpot"][result.finish_seg[i] + 1] -= 1 / (out - 1)
                n_tpot += 1
        # The duration: from the benchmark's start (time 0) to the end of the last segment
        # a request finished in. The engine ran without a pause from the start of that
        # segment's busy period, which began at an arrival time (the first request's, or
        # that of one that found the engine idle): a time no coefficient moves.
        end = max(result.finish_seg)
        begin = end
        while begin > 0 and starts[begin] <= ends[begin - 1]:
            begin -= 1
        diff["duration"][begin] += 1
        diff["duration"][end + 1] -= 1
        scale = {"mean_ttft": 1 / n, "mean_tpot": 1 / max(n_tpot, 1), "duration": 1.0}
        self.const = {"mean_ttft": ttft_const / n, "mean_tpot": 0.0, "duration": starts[begin]}
        weights = {}
        for f in self.FIGURES:
            w, running = [], 0.0
            for s in range(nseg):
                running += diff[f][s]
                share = arrived_in.get(s, 0.0) if f == "mean_ttft" else 0.0
                w.append((running + share) * scale[f])
            weights[f] = w

        # What does not move with the coefficients: the steps and requests per segment.
        self.fixed = {f: [0.0, 0.0] for f in self.FIGURES}
        steps, self.runs = [], []
        for s, seg in enumerate(work):
            ws = [weights[f][s] for f in self.FIGURES]
            if seg[0] == "step":
                _, tokens, reqs, kv, pairs = seg
                mem, comp = model.roofline(tokens, kv, pairs, reqs)
                steps.append((mem / comp if comp else math.inf, mem, comp, ws))
                count, per_request = 1.0, reqs
            else:
                _, batch, kv, nsteps = seg
                if any(ws):
                    self.runs.append((batch, kv, nsteps, ws))
                count, per_request = nsteps, batch * nsteps
            for f, wf in zip(self.FIGURES, ws):
                self.fixed[f][0] += wf * count
                self.fixed[f][1] += wf * per_request
        # Steps from the most memory-heavy down; a prefix of them is memory-bound.
        steps.sort(key=lambda x: -x[0])
        self.steps = [(mem, comp) for _, mem, comp, _ in steps]
        self.memory_before, self.compute_before = {}, {}  # prefix sums, by figure
        for k, f in enumerate(self.FIGURES):
            mem_sum, comp_sum = [0.0], [0.0]
            for _, mem, comp, ws in steps:
                mem_sum.append(mem_sum[-1] + ws[k] * mem)
                comp_sum.append(comp_sum[-1] + ws[k] * comp)
            self.memory_before[f], self.compute_before[f] = mem_sum, comp_sum

    def _memory_bound(self, c: Coefficients) -> int:
        """How many of the sorted steps are memory-bound under `c`."""
        lo, hi = 0, len(self.steps)
        while lo < hi:
            mid = (lo + hi) // 2
            mem, comp = self.steps[mid]
            if mem / c.memory_efficiency >= comp / c.compute_efficiency:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def at(self, c: Coefficients) -> dict:
        """figure -> (const, phi) under coefficients `c`."""
        k = self._memory_bound(c)
        out = {}
        for f in self.FIGURES:
            mem = self.memory_before[f][k]
            comp = self.compute_before[f][-1] - self.compute_before[f][k]
            out[f] = [*self.fixed[f], mem, comp]
        model = self.model.with_coefficients(c)
        for batch, kv, nsteps, ws in self.runs:
            mem, comp = model.decode_run_terms(batch, kv, nsteps)
            for f, wf in zip(self.FIGURES, ws):
                out[f][2] += wf * mem
                out[f][3] += wf * comp
        return {f: (self.const[f], out[f]) for f in self.FIGURES}


def linear_form(result, model) -> dict:
    """For each of mean TTFT, mean TPOT and the duration (seconds): (const, phi) with
    the figure = const + theta . phi, for this replay's schedule (LinearForm)."""
    return LinearForm(result, model).at(model.coefficients)


def _first_ending_after(ends: list[float], t: float) -> int:
    """The first segment that ends after time t (the one a request arriving at t meets)."""
    lo, hi = 0, len(ends) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ends[mid] > t:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _rows(run: Run, form: LinearForm, c: Coefficients) -> list[tuple[float, list[float], float]]:
    """(const, phi, measured) per reported figure of this run, all in seconds."""
    at = form.at(c)
    m = run.measured
    rows = []
    if m.get("mean_ttft_ms"):
        rows.append((*at["mean_ttft"], m["mean_ttft_ms"] / 1e3))
    if m.get("mean_tpot_ms"):
        rows.append((*at["mean_tpot"], m["mean_tpot_ms"] / 1e3))
    if m.get("output_throughput"):
        rows.append((*at["duration"], form.output_tokens / m["output_throughput"]))
    return rows


# --- the solver ------------------------------------------------------------------------
def _bounds():
    lo = [BOUNDS["step_overhead_ms"][0] / 1e3, BOUNDS["request_overhead_us"][0] / 1e6,
          1 / BOUNDS["memory_efficiency"][1], 1 / BOUNDS["compute_efficiency"][1]]
    hi = [BOUNDS["step_overhead_ms"][1] / 1e3, BOUNDS["request_overhead_us"][1] / 1e6,
          1 / BOUNDS["memory_efficiency"][0], 1 / BOUNDS["compute_efficiency"][0]]
    return lo, hi


def _normal(rows, prior, weight):
    """The normal equations G theta = h of the relative-error objective with its ridge
    pull, and the objective's constant part: objective = theta G theta - 2 h theta + c."""
    G = [[0.0] * 4 for _ in range(4)]
    h = [0.0] * 4
    terms = []
    for const, phi, y in rows:
        x = [p / y for p in phi]
        t = 1 - const / y
        terms.append(t * t)
        for a in range(4):
            h[a] += x[a] * t
            for b in range(4):
                G[a][b] += x[a] * x[b]
    for k in range(4):
        w = weight / SCALE[k] ** 2
        G[k][k] += w
        h[k] += w * prior[k]
        terms.append(w * prior[k] ** 2)
    return G, h, math.fsum(terms)


def _objective(rows, theta, prior, weight) -> float:
    """sum ((const + theta . phi) / y - 1)^2 + weight sum ((theta - prior) / SCALE)^2."""
    fit_terms = [((const + math.fsum(p * t for p, t in zip(phi, theta))) / y - 1) ** 2
                 for const, phi, y in rows]
    pull = [weight * ((t - p) / s) ** 2 for t, p, s in zip(theta, prior, SCALE)]
    return math.fsum(fit_terms + pull)


def _solve(rows, prior: list[float], weight: float) -> list[float]:
    """The minimum of the (quadratic) objective with theta in its bounds. With four
    coefficients every pattern of free / at its lower / at its upper bound is tried
    (81 small systems): exact, where a greedy active set can stop at a wrong corner."""
    lo, hi = _bounds()
    G, h, c = _normal(rows, prior, weight)
    best, best_value = None, math.inf
    for pattern in range(81):
        kinds = [(pattern // 3 ** k) % 3 for k in range(4)]  # 0 free, 1 at lo, 2 at hi
        theta = [lo[k] if kinds[k] == 1 else hi[k] if kinds[k] == 2 else 0.0 for k in range(4)]
        free = [k for k in range(4) if kinds[k] == 0]
        if free:
            A = [[G[a][b] for b in free] for a in free]
            rhs = [h[a] - math.fsum(G[a][b] * theta[b] for b in range(4) if kinds[b]) for a in free]
            for a, value in zip(free, _gauss(A, rhs)):
                theta[a] = value
            if any(not lo[k] <= theta[k] <= hi[k] for k in free):
                continue
        value = (math.fsum(theta[a] * G[a][b] * theta[b] for a in range(4) for b in range(4))
                 - 2 * math.fsum(h[a] * theta[a] for a in range(4)) + c)
        if value < best_value:
            best, best_value = theta, value
    assert best is not None  # the all-at-bounds patterns are always feasible
    return best


def _gauss(A, b) -> list[float]:
    """Solve A x = b (A symmetric positive definite, at most 4 x 4) by elimination."""
    n = len(b)
    M = [row[:] + [b[i]] for i, row in enumerate(A)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(M[r][col]))
        M[col], M[piv] = M[piv], M[col]
        assert M[col][col] != 0, "singular normal equations (the prior keeps them regular)"
        for r in range(col + 1, n):
            f = M[r][col] / M[col][col]
            for c in range(col, n + 1):
                M[r][c] -= f * M[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (M[r][n] - math.fsum(M[r][c] * x[c] for c in range(r + 1, n))) / M[r][r]
    return x


def fit(runs: list[Run], prior: Coefficients, weight: float = PRIOR_WEIGHT,
        source: str = "fitted", memo: dict | None = None) -> Coefficients:
    """The coefficients that best match `runs`, pulled towards `prior`.

    Each round solves the quadratic problem for the ceilings binding now, then moves
    towards its answer only as far as the true objective (with the ceilings that bind
    there) goes down: halving the step up to four times, as a damped Gauss-Newton.

    `memo` (a dict the caller keeps, with the runs alive) holds each run's replay at the
    prior, as its LinearForm, by run and coefficients: fits of overlapping runs from the
    same prior replay each run there only once (pysim.timing.fidelity fits dozens of such
    subsets). A form is only read here, so sharing one changes nothing.
    """
    assert runs
    prior_theta = _theta(prior)
    theta = prior_theta
    timed = any(not math.isinf(r.bench.request_rate) for r in runs)
    memo = {} if memo is None else memo
    for _ in range(REPLAYS if timed else 1):
        c = _coefficients(theta, source)
        key = (c.step_overhead_ms, c.request_overhead_us, c.memory_efficiency, c.compute_efficiency)
        if theta is not prior_theta:  # later rounds differ from fit to fit: not kept
            forms = [LinearForm(*_replayed(r, c)) for r in runs]
        else:
            forms = []
            for r in runs:
                if (id(r), key) not in memo:
                    memo[id(r), key] = LinearForm(*_replayed(r, c))
                forms.append(memo[id(r), key])

        def rows_at(th):
            c = _coefficients(th, source)
            rows = []
            for run, form in zip(runs, forms):
                rows += _rows(run, form, c)
            return rows

        rows = rows_at(theta)
        here = _objective(rows, theta, prior_theta, weight)
        for _ in range(ROUNDS):
            target = _solve(rows, prior_theta, weight)
            step = 1.0
            while True:
                trial = [a + step * (b - a) for a, b in zip(theta, target)]
                trial_rows = rows_at(trial)
                value = _objective(trial_rows, trial, prior_theta, weight)
                if value <= here or step < 1 / 16:
                    break
                step /= 2
            moved = max(abs(a - b) / max(abs(b), 1e-9) for a, b in zip(trial, theta))
            if value > here:
                break  # no step downhill: theta is as good as this schedule allows
            theta, rows, here = trial, trial_rows, value
            if moved <= 1e-6:
                break
    return _coefficients(theta, source)


def errors(run: Run, predicted: dict) -> dict:
    """Relative error of each reported figure: (predicted - measured) / measured."""
    return {k: (predicted[k] - run.measured[k]) / run.measured[k]
            for k in FIGURES if run.measured.get(k)}


# --- the defaults per GPU ---------------------------------------------------------------
COEFFICIENTS = ("step_overhead_ms", "request_overhead_us", "memory_efficiency", "compute_efficiency")


def typical_gpu(per_gpu: dict[str, Coefficients]) -> Coefficients:
    """The defaults of a GPU with no runs: each coefficient's median over the GPUs that
    have runs, each GPU counted once.

    A GPU's coefficients are what its kernels reach of its datasheet, and that share is a
    property of the card (A100's fitted compute efficiency is nearly twice H100's). A fit
    of all runs together would be the card most runs were made on (H100 and A100 hold
    36 of 41); the median is the typical card, and one GPU with odd runs moves it little.
    `pysim.timing.fidelity` measures the rule by holding each GPU's runs out in turn.
    """
    assert per_gpu
    gpus = sorted(per_gpu)
    return Coefficients(*(statistics.median(getattr(per_gpu[g], name) for g in gpus)
                          for name in COEFFICIENTS),
                        f"median of {len(gpus)} GPUs' fits ({', '.join(gpus)})")


def fit_by_gpu(runs: list[Run]) -> dict[str, Coefficients]:
    """Each GPU that has runs: its coefficients fitted on them (every model), pulled
    weakly towards GENERIC."""
    by_gpu: dict[str, list[Run]] = {}
    for r in runs:
        by_gpu.setdefault(r.server.gpu, []).append(r)
    return {gpu: fit(mine, GENERIC, GENERIC_WEIGHT,
                     f"fitted: {len(mine)} run{'s' * (len(mine) > 1)} on {gpu}")
            for gpu, mine in by_gpu.items()}


def no_runs_default(gpu: str, fitted: dict[str, Coefficients]) -> Coefficients:
    """The defaults of a GPU with no runs of its own, given the fits of the GPUs that have
    runs: the fit of the cards built on its die where there are any (an A100 40GB takes
    the A100 80GB's: one GA100, other memory), else the typical GPU's (typical_gpu).

    Why the die first: the coefficients are shares of a datasheet that the kernels reach,
    and one die runs the same kernels on the same tensor cores. `pysim.timing.fidelity`
    measures both halves of the rule: a GPU's fit carried to another publisher's runs on
    it (`same_die`), and the typical GPU's, each GPU held out in turn (`gpu_out`).
    """
    assert gpu not in fitted, f"{gpu} has runs: its own fit is its default"
    die = GPUS[gpu].die
    same = {g: c for g, c in fitted.items() if GPUS[g].die == die}
    if not same:
        return typical_gpu(fitted)
    median = typical_gpu(same)  # one card, or the median of several on the die
    return dataclasses.replace(median, source=f"{', '.join(sorted(same))}'s fit, the same {die} die; "
                                              f"no runs on {gpu}")


def fit_defaults(runs: list[Run]) -> dict[str, Coefficients]:
    """One set of coefficients per GPU of the catalog: its own fit where it has runs,
    else no_runs_default's."""
    fitted = fit_by_gpu(runs)
    return {gpu: fitted[gpu] if gpu in fitted else no_runs_default(gpu, fitted) for gpu in GPUS}


def main() -> None:
    """`python -m pysim.timing.fit [RECORDS.jsonl]`: fit the defaults and print them as
    steptime.DEFAULTS is written."""
    import sys

    from pysim.timing import realbench
    records = realbench.usable(realbench.load(sys.argv[1] if len(sys.argv) > 1 else None))
    for gpu, c in fit_defaults([r.run for r in records]).items():
        print(f'    "{gpu}": Coefficients({c.step_overhead_ms:.4g}, {c.request_overhead_us:.4g}, '
              f'{c.memory_efficiency:.4g}, {c.compute_efficiency:.4g}, "{c.source}"),')


if __name__ == "__main__":
    main()
