"""How long one engine step takes on a GPU, and how many KV blocks fit: a roofline model.

A step of a V1 engine is one forward pass over every token the scheduler handed out
(decodes and prompt chunks together). On a GPU it is limited by one of two things:

- memory traffic: every weight is read once, and each scheduled request's attention
  reads the KV of its whole context (the tokens already cached plus this step's own);
- arithmetic: about 2 FLOPs per parameter per token in the batch (a prompt chunk of
  500 tokens costs as much as 500 decodes).

    t_step = max((weight_bytes + kv_tokens_read x kv_bytes_per_token) / bandwidth,
                 2 x params x tokens_in_step / peak_flops) / efficiency

`efficiency` (0 to 1) is the fraction of the roofline a real engine reaches: kernel
launches, attention's own FLOPs, sampling and the CPU-side scheduler all take their
cut. Its default, 0.6, is an assumption in the range that serving engines report for
decode's model bandwidth utilisation (MBU: achieved bytes/s over peak; the term is from
Databricks' "LLM Inference Performance Engineering: Best Practices", October 2023). It
is a model, not a measurement: the lab's calibration fits it to a reader's own
`vllm bench serve` results instead.

The KV pool comes from the batch-size calculator's memory rule (pysim.batch_size: 90%
of the GPU, minus the weights, minus a 4 GB reserve), cut into blocks of `block_size`
tokens. That count is vLLM's `num_gpu_blocks` (vllm/v1/core/kv_cache_utils.py divides
the available KV memory by the bytes of one block), and it includes block 0, which
vLLM's `BlockPool.__init__` reserves as the null block, so `num_gpu_blocks - 1` hold KV.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .batch_size import RESERVE_BYTES, usable_bytes
from .catalog import GPU, Model


@dataclass(frozen=True)
class StepTimeModel:
    """The roofline above, with every input an integer except `efficiency`."""

    weight_bytes: int
    kv_bytes_per_token: int
    bandwidth: int  # bytes/s
    flops_per_token: int  # 2 x params
    peak_flops: int
    efficiency: float

    def seconds(self, num_tokens: int, kv_tokens_read: int) -> float:
        """One step: `num_tokens` in the batch, `kv_tokens_read` KV entries read by attention."""
        memory = (self.weight_bytes + kv_tokens_read * self.kv_bytes_per_token) / self.bandwidth
        compute = self.flops_per_token * num_tokens / self.peak_flops
        return max(memory, compute) / self.efficiency

    def _decode_terms(self, batch: int, kv_tokens: int) -> tuple[float, float, float]:
        """A decode run's roofline terms, before efficiency: the memory time of a step
        reading `kv_tokens` (m0), what each further step adds to it (m1), and the
        compute time of a step, the same every step."""
        bw = self.bandwidth
        return ((self.weight_bytes + kv_tokens * self.kv_bytes_per_token) / bw,
                batch * self.kv_bytes_per_token / bw,
                self.flops_per_token * batch / self.peak_flops)

    def decode_run_seconds(self, batch: int, kv_tokens: int, steps: int) -> float:
        """Total time of `steps` plain decode steps of `batch` requests whose contexts
        hold `kv_tokens` before the first: step i (1-based) reads kv_tokens + i x batch.

        The sum of seconds(batch, kv_tokens + i x batch) for i = 1..steps, in closed
        form: the compute term is the same every step, the memory term grows by the same
        amount each step, so the steps while compute binds cost the same, and the rest
        form an arithmetic series.
        """
        if steps <= 0:
            return 0.0
        m0, m1, compute = self._decode_terms(batch, kv_tokens)
        # Steps 1..k are compute-bound (m0 + i m1 < compute), the rest memory-bound.
        k = 0 if m0 + m1 >= compute else min(steps, int((compute - m0) / m1) if m1 else steps)
        while k < steps and m0 + (k + 1) * m1 < compute:
            k += 1
        while k > 0 and m0 + k * m1 >= compute:
            k -= 1
        rest = steps - k
        memory = rest * m0 + m1 * (k + 1 + steps) * rest / 2
        return (k * compute + memory) / self.efficiency

    def decode_steps_within(self, batch: int, kv_tokens: int, seconds: float) -> int:
        """The most plain decode steps that take less than `seconds` in all: the
        largest m with decode_run_seconds(batch, kv_tokens, m) < seconds, by inverting
        that closed form (compute-bound steps cost the same; the memory-bound rest is
        a quadratic in m). Float rounding can put the answer one off at an exact tie;
        a caller that needs the exact count checks it with decode_run_seconds.
        """
        if seconds <= 0:
            return 0
        m0, m1, compute = self._decode_terms(batch, kv_tokens)
        target = seconds * self.efficiency
        # kc: the leading steps that are compute-bound (m0 + i m1 < compute).
        if m0 + m1 >= compute:
            kc = 0
        elif not m1:
            return max(0, math.ceil(target / compute) - 1)
        else:
            kc = max(0, math.ceil((compute - m0) / m1) - 1)
        if kc * compute >= target:
            return max(0, math.ceil(target / compute) - 1)
        # x more memory-bound steps: x m0 + m1 (x kc + x (x + 1) / 2) < target - kc compute.
        rest = target - kc * compute
        a, b = m1 / 2, m0 + m1 * kc + m1 / 2
        x = rest / b if not a else (math.sqrt(b * b + 4 * a * rest) - b) / (2 * a)
        return kc + max(0, math.ceil(x) - 1)

    def with_efficiency(self, efficiency: float) -> "StepTimeModel":
        return StepTimeModel(self.weight_bytes, self.kv_bytes_per_token, self.bandwidth,
                             self.flops_per_token, self.peak_flops, efficiency)


def step_time_model(gpu: GPU, model: Model, efficiency: float) -> StepTimeModel:
    """16-bit weights and KV cache, one GPU (no tensor parallelism)."""
    return StepTimeModel(weight_bytes=model.weight_bytes(False),
                         kv_bytes_per_token=model.kv_bytes_per_token(False),
                         bandwidth=gpu.bandwidth_bytes_per_s,
                         flops_per_token=2 * model.params,
                         peak_flops=gpu.peak_flops,
                         efficiency=efficiency)


def kv_pool_bytes(gpu: GPU, model: Model) -> int:
    """Bytes left for the KV cache (negative: the weights do not fit)."""
    return usable_bytes(gpu) - model.weight_bytes(False) - RESERVE_BYTES


def num_gpu_blocks(gpu: GPU, model: Model, block_size: int) -> int:
    """vLLM's `num_gpu_blocks` for this GPU and model: the null block included."""
    pool = kv_pool_bytes(gpu, model)
    return max(pool, 0) // (block_size * model.kv_bytes_per_token(False))
