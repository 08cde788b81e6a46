"""How long one engine step takes on a GPU: a roofline with the costs it leaves out.

A step of a V1 engine is one forward pass over every token the scheduler handed out
(decodes and prompt chunks together). The roofline says what the GPU cannot beat:

- memory: every weight is read once, and each scheduled request's attention reads the
  KV of its whole context (the tokens already cached plus this step's own);
- arithmetic: 2 FLOPs per parameter a token's matrix products use (a prompt chunk of
  500 tokens costs as much as 500 decodes), plus attention's own FLOPs, which grow with
  the context each query token looks at (pysim.timing.catalog.Model.attention_flops_per_pair).
  Counted as the engine spends them: the input embedding is a table lookup, no
  matmul, and the LM head (vocabulary x hidden size) runs only at the positions vLLM
  samples, one a scheduled request (vLLM 0.34.0 computes logits at
  `logits_indices = query_start_loc[1:] - 1`, vllm/v1/worker/gpu/input_batch.py:188,
  a request's last scheduled token, a partial prompt chunk's too). So a token costs
  2 x `Model.matmul_params` and a scheduled request adds 2 x `Model.lm_head_params`
  (pysim.timing.catalog): a prompt is about 13% cheaper for Llama 3.1 8B than 2 x all its
  parameters a token. The bytes read still count every weight once (the embedding table
  of an untied model is not read whole, a few percent of the bytes: not subtracted).

A real engine reaches neither ceiling, and pays for things the roofline does not see.
Four coefficients, each with one physical meaning, close that gap:

    t_step = step_overhead                                  (fixed per step)
           + request_overhead x requests in the step        (per scheduled request)
           + max(memory bytes / (bandwidth x memory_efficiency),
                 FLOPs / (peak FLOP/s x compute_efficiency))

- `step_overhead_ms`: what every step costs whatever its size: the scheduler's CPU
  time, kernel launches, sampling, returning outputs to the API server.
- `request_overhead_us`: what each scheduled request adds beyond its bytes and FLOPs:
  its slice of input preparation, sampling and output processing (vLLM V1 moved much
  of this off the GPU's critical path, not all of it).
- `memory_efficiency`: the share of peak bandwidth a memory-bound step reaches
  (decoding; the "MBU" of Databricks' "LLM Inference Performance Engineering: Best
  Practices", October 2023).
- `compute_efficiency`: the share of peak dense FLOP/s a compute-bound step reaches
  (long prompt chunks; "MFU").

This keeps the roofline's shape (the larger of the two times) and adds what Vidur
(Agrawal et al., MLSys 2024) measures per operator and inference-lab writes as
alpha x roofline + beta: here alpha is split into a memory and a compute side, and
beta into a per-step and a per-request part. The coefficients are fitted by least
squares to real `vllm bench serve` runs (pysim.timing.fit); `DEFAULTS` holds one set per GPU,
fitted on the records in `data/realbench/` (see each entry's `source`), and
`bench/bench_time_fidelity.py` measures how far the model is from those runs.

`IDEAL` is the roofline alone: no overheads, 100% of the datasheet on both sides. Page 6
(pysim.sims.batch_size) uses it for its ceilings; the lab, the cluster and page 5 use the
fitted `DEFAULTS`.

FP8 weights or KV cache (`weights_fp8`, `kv_fp8`) store a number in 1 byte instead of 2,
which halves the bytes read and held; the FLOPs still count at the dense 16-bit peak (the
catalog's `peak_flops`), as page 6 assumes. Every fitted record ran 16-bit.

What it leaves out: tensor-parallel communication (every record fitted runs on one
GPU), CUDA-graph padding of batch sizes, speculative decoding, and any overlap of the
CPU's work with the GPU's.

The KV pool is sized by one rule (pysim.engine.vllm_defaults says how each vLLM release sizes
it, and what this rule stands for): the memory the driver reports (the catalog's
`reported_mib`: an "80 GB" H100 shows 81,559 MiB) times `--gpu-memory-utilization`
(vLLM 0.34.0's default: 1.0, with its extensible KV cache on CUDA and ROCm; a benchmark
record replays with its own release's, 0.9 before v0.21), minus the weights, minus what
the runtime holds besides (the CUDA context, CUDA graphs, the activations' peak and,
at 0.34, the safety margin vLLM keeps after measuring them): RUNTIME_BYTES, an assumption
of 2 GB. Every page that sizes a pool uses `kv_pool_bytes`. The pool is cut into blocks
of `block_size` tokens (64 at 0.34 on CUDA): vLLM's `num_gpu_blocks`
(vllm/v1/core/kv_cache_utils.py divides the available KV memory by the bytes of one
block), which includes block 0, reserved by `BlockPool.__init__` as the null block, so
`num_gpu_blocks - 1` hold KV.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pysim.engine import vllm_defaults
from pysim.timing.catalog import GB, GPU, GPUS, Model

RUNTIME_BYTES = 2 * GB  # stands for what vLLM measures besides the weights (see above)

# Where each coefficient may go in a fit: an efficiency above 1 would beat the datasheet.
BOUNDS = {"step_overhead_ms": (0.0, 100.0), "request_overhead_us": (0.0, 1000.0),
          "memory_efficiency": (0.05, 1.0), "compute_efficiency": (0.05, 1.0)}


@dataclass(frozen=True)
class Coefficients:
    """The four numbers the roofline is missing (see the module docstring)."""

    step_overhead_ms: float
    request_overhead_us: float
    memory_efficiency: float
    compute_efficiency: float
    source: str = ""  # where they came from: the records fitted, or "calibrated"

    def __post_init__(self):
        for name, (lo, hi) in BOUNDS.items():
            value = getattr(self, name)
            assert lo <= value <= hi, f"{name} = {value} outside [{lo}, {hi}]"

    def record(self) -> dict:
        return {"step_overhead_ms": self.step_overhead_ms,
                "request_overhead_us": self.request_overhead_us,
                "memory_efficiency": self.memory_efficiency,
                "compute_efficiency": self.compute_efficiency, "source": self.source}


# Fitted by `python -m pysim.timing.fit` (pysim.timing.fit.fit_defaults) on
# data/realbench/records.jsonl, every GPU on the records of its own (all models), pulled
# weakly towards pysim.timing.fit.GENERIC. A GPU with no record takes the fit of a card on
# its die where one has runs (H200 and H100 PCIe: the H100's GH100; A100 40GB: the A100's
# GA100), else the typical GPU's (L4, A10G: each coefficient's median over the GPUs with
# records, each GPU once); pysim.timing.fit.no_runs_default. Its datasheet's bandwidth and
# FLOP/s carry what differs between cards, and `pysim.timing.fidelity` measures both
# halves of the rule (`same_die`, `gpu_out`; the lab's page quotes them). L40S rests on 4 runs of a
# small model on a shared card, MI300X on 1: treat those as rough. With few runs the
# four coefficients trade off against each other (a higher memory efficiency against a
# larger per-request overhead), so one of them alone is no measurement of the GPU.
# tests/unit/test_fit.py fits them again and checks they are what is written here.
DEFAULTS: dict[str, Coefficients] = {
    "H100": Coefficients(2.145, 3.678, 0.8585, 0.3093, "fitted: 21 runs on H100"),
    "H200": Coefficients(2.145, 3.678, 0.8585, 0.3093, "H100's fit, the same GH100 die; no runs on H200"),
    "L40S": Coefficients(1.721, 2.1, 0.8972, 0.3281, "fitted: 4 runs on L40S"),
    "A100": Coefficients(4.548, 94.39, 0.9975, 0.5706, "fitted: 15 runs on A100"),
    "H100-PCIe": Coefficients(2.145, 3.678, 0.8585, 0.3093, "H100's fit, the same GH100 die; no runs on H100-PCIe"),
    "A100-40GB": Coefficients(4.548, 94.39, 0.9975, 0.5706, "A100's fit, the same GA100 die; no runs on A100-40GB"),
    "L4": Coefficients(2.085, 6.834, 0.8778, 0.3187, "median of 4 GPUs' fits (A100, H100, L40S, MI300X)"),
    "A10G": Coefficients(2.085, 6.834, 0.8778, 0.3187, "median of 4 GPUs' fits (A100, H100, L40S, MI300X)"),
    "MI300X": Coefficients(2.025, 9.989, 0.7181, 0.2249, "fitted: 1 run on MI300X"),
}
assert set(DEFAULTS) == set(GPUS)

# The roofline alone: what no engine beats (page 6's ceilings).
IDEAL = Coefficients(0.0, 0.0, 1.0, 1.0, "ideal: the roofline alone, no overheads")


@dataclass(frozen=True)
class StepTimeModel:
    """The model for one GPU and model: the roofline's integers and the coefficients."""

    weight_bytes: int
    kv_bytes_per_token: int
    bandwidth: int  # bytes/s
    flops_per_token: int  # 2 x the parameters a token's matmuls use (no embedding, no LM head)
    attention_flops_per_pair: int  # one query token meeting one cached token
    peak_flops: int
    coefficients: Coefficients
    flops_per_sample: int = 0  # 2 x the LM head's parameters: once a scheduled request

    # --- one step ----------------------------------------------------------------
    def work(self, num_tokens: int, kv_tokens_read: int, attention_pairs: int,
             num_requests: int) -> tuple[int, int]:
        """(bytes read, FLOPs) of a step, exact integers: every weight once and the KV
        its attention reads; 2 FLOPs a matmul parameter a token, the LM head once a
        request (its sampled position), and attention's own."""
        return (self.weight_bytes + kv_tokens_read * self.kv_bytes_per_token,
                self.flops_per_token * num_tokens + self.flops_per_sample * num_requests
                + self.attention_flops_per_pair * attention_pairs)

    def roofline(self, num_tokens: int, kv_tokens_read: int, attention_pairs: int,
                 num_requests: int):
        """(memory seconds, compute seconds) at 100% of the datasheet: the raw ceilings."""
        read, flops = self.work(num_tokens, kv_tokens_read, attention_pairs, num_requests)
        return read / self.bandwidth, flops / self.peak_flops

    def seconds(self, num_tokens: int, num_requests: int, kv_tokens_read: int,
                attention_pairs: int) -> float:
        """One step: its tokens, the requests they belong to, the KV entries attention
        reads (every request's context) and the query-key pairs it computes."""
        c = self.coefficients
        memory, compute = self.roofline(num_tokens, kv_tokens_read, attention_pairs, num_requests)
        return (c.step_overhead_ms / 1e3 + c.request_overhead_us / 1e6 * num_requests
                + max(memory / c.memory_efficiency, compute / c.compute_efficiency))

    def step_seconds(self, result) -> float:
        """A step of pysim.engine, from its StepResult."""
        return self.seconds(result.num_tokens, len(result.parts), result.context_tokens,
                            result.attention_pairs)

    # --- a run of plain decode steps ---------------------------------------------
    # In such a run (pysim.engine.decode_run.plan_decode_run) the same `batch` requests each
    # decode one token per step; step i (1-based) reads kv_tokens + i x batch KV entries,
    # and each decode's query meets as many keys. Both ceilings grow by a fixed amount a
    # step, so the larger of them changes side at most once, and the run's time has a
    # closed form: two arithmetic series and the per-step costs.
    def _decode_lines(self, batch: int, kv_tokens: int):
        """Memory and compute time of step i as a + b i, efficiencies applied."""
        c = self.coefficients
        em = self.bandwidth * c.memory_efficiency
        ec = self.peak_flops * c.compute_efficiency
        grow_kv = batch * self.kv_bytes_per_token
        grow_attn = batch * self.attention_flops_per_pair
        mem = ((self.weight_bytes + kv_tokens * self.kv_bytes_per_token) / em, grow_kv / em)
        comp = (((self.flops_per_token + self.flops_per_sample) * batch
                 + self.attention_flops_per_pair * kv_tokens) / ec,
                grow_attn / ec)
        return mem, comp

    def _memory_bound_steps(self, mem, comp, steps: int) -> tuple[int, int]:
        """The steps 1..steps at which memory binds (its time >= compute's), as a range
        (first, last), empty when first > last. mem - comp is linear in i, so they form
        one block at the start or at the end."""
        d0, d1 = mem[0] - comp[0], mem[1] - comp[1]
        binds = lambda i: d0 + d1 * i >= 0  # noqa: E731
        if binds(1) and binds(steps):
            return 1, steps
        if not binds(1) and not binds(steps):
            return 1, 0
        lo, hi = 1, steps  # exactly one of the ends binds: find the change by bisection
        first_binds = binds(1)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if binds(mid) == first_binds:
                lo = mid
            else:
                hi = mid
        return (1, lo) if first_binds else (hi, steps)

    def _decode_sums(self, batch: int, kv_tokens: int, steps: int):
        """(memory time of the memory-bound steps, compute time of all steps, compute time
        of the memory-bound steps), efficiencies applied: a run's time and terms from one
        split of its steps."""
        mem, comp = self._decode_lines(batch, kv_tokens)
        first, last = self._memory_bound_steps(mem, comp, steps)
        return _series(mem, first, last), _series(comp, 1, steps), _series(comp, first, last)

    def decode_run_terms(self, batch: int, kv_tokens: int, steps: int):
        """(memory seconds, compute seconds) summed over the steps each binds, at 100% of
        the datasheet, for a run of `steps` decodes: what a fit needs."""
        in_mem, comp_all, comp_in_mem = self._decode_sums(batch, kv_tokens, steps)
        c = self.coefficients
        return in_mem * c.memory_efficiency, (comp_all - comp_in_mem) * c.compute_efficiency

    def decode_run_seconds(self, batch: int, kv_tokens: int, steps: int) -> float:
        """The total time of `steps` plain decode steps of `batch` requests whose
        contexts hold `kv_tokens` before the first."""
        if steps <= 0:
            return 0.0
        c = self.coefficients
        in_mem, comp_all, comp_in_mem = self._decode_sums(batch, kv_tokens, steps)
        per_step = c.step_overhead_ms / 1e3 + c.request_overhead_us / 1e6 * batch
        return steps * per_step + (in_mem + comp_all - comp_in_mem)

    def decode_steps_within(self, batch: int, kv_tokens: int, seconds: float, most: int) -> int:
        """The most plain decode steps, up to `most`, that take less than `seconds` in
        all (the run's time grows with each step, so bisection finds it)."""
        lo, hi = 0, most
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.decode_run_seconds(batch, kv_tokens, mid) < seconds:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def with_coefficients(self, coefficients: Coefficients) -> "StepTimeModel":
        return replace(self, coefficients=coefficients)


def _series(line, first: int, last: int) -> float:
    """sum of a + b i for i = first..last (0 when the range is empty)."""
    if last < first:
        return 0.0
    n = last - first + 1
    return n * line[0] + line[1] * (first + last) * n / 2


def step_time_model(gpu: GPU, model: Model, coefficients: Coefficients | None = None, *,
                    weights_fp8: bool = False, kv_fp8: bool = False) -> StepTimeModel:
    """One GPU (no tensor parallelism), 16-bit weights and KV cache unless FP8 is asked
    for; the GPU's fitted coefficients unless others are given."""
    return StepTimeModel(weight_bytes=model.weight_bytes(weights_fp8),
                         kv_bytes_per_token=model.kv_bytes_per_token(kv_fp8),
                         bandwidth=gpu.bandwidth_bytes_per_s,
                         flops_per_token=2 * model.matmul_params,
                         attention_flops_per_pair=model.attention_flops_per_pair,
                         peak_flops=gpu.peak_flops,
                         coefficients=coefficients or DEFAULTS[gpu.id],
                         flops_per_sample=2 * model.lm_head_params)


def overheads_only(step_overhead_ms: float, request_overhead_us: float) -> StepTimeModel:
    """The model with its roofline set aside (nothing to read or compute): a fixed cost a
    step and a cost a request, page 2's t(B) = t0 + beta x B, where the reads that beta
    stands for are folded into the per-request cost."""
    return StepTimeModel(0, 0, 1, 0, 0, 1, Coefficients(step_overhead_ms, request_overhead_us,
                                                        1.0, 1.0, "page 2's t0 and beta"))


def microseconds(model: StepTimeModel):
    """A step-time function for pysim.engine.scheduler.run_timed in whole microseconds (pages that
    compare step starts with arrivals exactly)."""
    return lambda result: round(model.step_seconds(result) * 1e6)


def step_parts_ms(model: StepTimeModel, result) -> dict:
    """A step's time taken apart, in ms: its overheads, and its memory and compute times
    at the fitted efficiencies (the larger of the two is what the step pays)."""
    c = model.coefficients
    memory, compute = model.roofline(result.num_tokens, result.context_tokens,
                                     result.attention_pairs, len(result.parts))
    return {"overhead_ms": round(c.step_overhead_ms + c.request_overhead_us / 1e3 * len(result.parts), 3),
            "memory_ms": round(memory / c.memory_efficiency * 1e3, 3),
            "compute_ms": round(compute / c.compute_efficiency * 1e3, 3)}


def gpu_memory_utilization(gpu: GPU) -> float:
    """vLLM's default --gpu-memory-utilization on this GPU, at vllm_defaults.LATEST."""
    return vllm_defaults.defaults(gpu).gpu_memory_utilization


def usable_bytes(gpu: GPU, gpu_memory_utilization: float | None = None) -> int:
    """The memory vLLM may use: the driver's total times --gpu-memory-utilization
    (vLLM 0.34.0's default when None; in whole bytes, the fraction to 3 decimals, so the
    product is exact)."""
    util = _utilization(gpu, gpu_memory_utilization)
    return gpu.reported_bytes * round(util * 1000) // 1000


def _utilization(gpu: GPU, value: float | None) -> float:
    return gpu_memory_utilization(gpu) if value is None else value


def kv_pool_bytes(gpu: GPU, model: Model, gpu_memory_utilization: float | None = None,
                  weights_fp8: bool = False) -> int:
    """Bytes left for the KV cache (negative: the weights do not fit)."""
    return usable_bytes(gpu, gpu_memory_utilization) - model.weight_bytes(weights_fp8) - RUNTIME_BYTES


def check_fits(gpu_id: str, model_id: str, field: str = "model") -> None:
    """ConfigError on `field` when the model's 16-bit weights leave no room for a KV cache."""
    from pysim.config import ConfigError
    from pysim.timing.catalog import MODELS

    gpu, model = GPUS[gpu_id], MODELS[model_id]
    if kv_pool_bytes(gpu, model) <= 0:
        raise ConfigError(field, f"{model.name}'s 16-bit weights do not fit one {gpu.name} with "
                                 f"room for a KV cache; pick a smaller model or a larger GPU")


def num_gpu_blocks(gpu: GPU, model: Model, block_size: int,
                   gpu_memory_utilization: float | None = None) -> int:
    """vLLM's `num_gpu_blocks` for this GPU and model: the null block included."""
    pool = kv_pool_bytes(gpu, model, gpu_memory_utilization)
    return max(pool, 0) // (block_size * model.kv_bytes_per_token(False))
