"""The hardware and model catalog behind the batch-size calculator (docs/batch-size.md).

Every figure below comes from a published source named in the entry's `source`
string and in the comment above it. Two rules keep the numbers comparable:

- GPU memory and bandwidth are decimal (1 GB = 1e9 bytes, 1 TB/s = 1e12 B/s), as
  vendors print them.
- `peak_flops` is the *dense* 16-bit (BF16/FP16) tensor figure. Datasheets also print a
  number twice as large "with sparsity"; that needs 2:4-sparse weights, which ordinary
  checkpoints do not have, so it is never used here.

Models carry only what the roofline needs: the parameter count (weights read once per
step, 2 FLOPs per parameter per token) and the attention shape (layers, KV heads, head
dimension), from which the KV cache size per token is *derived*, never typed in.
All numbers are integers, so the step-time model (`pysim.timing.steptime`) can use exact
arithmetic wherever no division is involved.
"""

from __future__ import annotations

from dataclasses import dataclass

# Bytes per stored number: 16-bit formats (BF16/FP16) take 2, FP8 takes 1.
BYTES_16BIT = 2
BYTES_FP8 = 1

GB = 1_000_000_000  # decimal gigabyte
TB = 1_000_000_000_000  # decimal terabyte (per second, for bandwidth)
TFLOPS = 1_000_000_000_000


@dataclass(frozen=True)
class GPU:
    id: str  # short id used in --set gpu=...
    name: str  # how the answer sentence names it, e.g. "H100 SXM"
    memory_bytes: int
    bandwidth_bytes_per_s: int
    peak_flops: int  # dense 16-bit tensor FLOP/s, never the sparsity figure
    source: str
    # What the driver reports as the card's memory (nvidia-smi's total, in MiB): the
    # figure vLLM multiplies by --gpu-memory-utilization. The "80 GB" of a datasheet is
    # closer to 80 GiB; every KV pool (pysim.timing.steptime.kv_pool_bytes) starts from this.
    reported_mib: int = 0
    # The software platform vLLM runs it on ("cuda" or "rocm"): it picks the attention
    # backend, and with it the default block size (pysim.engine.vllm_defaults.block_size).
    platform: str = "cuda"
    # The GPU die the card is built on. Two cards on one die run the same kernels on the
    # same tensor cores, so what their steps reach of each datasheet is alike: a card with
    # no benchmark runs takes the fit of a card on its die (pysim.timing.fit.no_runs_default).
    die: str = ""

    @property
    def reported_bytes(self) -> int:
        return self.reported_mib * 1024 * 1024

    @property
    def label(self) -> str:
        return f"{self.name} {self.memory_bytes // GB} GB"

    def record(self) -> dict:
        return {"id": self.id, "label": self.label, "name": self.name,
                "memory_bytes": self.memory_bytes,
                "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
                "peak_flops": self.peak_flops, "source": self.source}


@dataclass(frozen=True)
class Model:
    id: str  # short id used in --set model=...
    name: str  # e.g. "Llama 3.1 8B"
    params: int
    layers: int  # num_hidden_layers
    kv_heads: int  # num_key_value_heads (grouped-query attention)
    head_dim: int
    heads: int  # num_attention_heads: query heads, whose dot products with the KV are attention's FLOPs
    max_context_tokens: int  # max_position_embeddings: the longest context vLLM accepts by default
    source: str
    # The token tables (config.json): the input embedding and the LM head are each
    # vocab_size x hidden_size; with tie_word_embeddings they are one matrix, counted
    # once in `params`. The embedding is a lookup (no FLOPs); the LM head is a matmul
    # vLLM runs only at the positions it samples (pysim.timing.steptime).
    vocab_size: int = 0
    hidden_size: int = 0
    tie_word_embeddings: bool = False

    @property
    def lm_head_params(self) -> int:
        """vocab_size x hidden_size: the LM head's matrix (the embedding's, when tied)."""
        return self.vocab_size * self.hidden_size

    @property
    def matmul_params(self) -> int:
        """The parameters every token's matmuls use: all of them but the embedding table
        and the LM head (one matrix when tied, two otherwise)."""
        return self.params - self.lm_head_params * (1 if self.tie_word_embeddings else 2)

    def kv_bytes_per_token(self, kv_fp8: bool) -> int:
        """Bytes of KV cache one token occupies: a K and a V vector per KV head per layer."""
        per_number = BYTES_FP8 if kv_fp8 else BYTES_16BIT
        return 2 * self.layers * self.kv_heads * self.head_dim * per_number

    @property
    def attention_flops_per_pair(self) -> int:
        """FLOPs for one query token to attend to one cached token, over all layers:
        a dot product with the key and a weighted add of the value, 2 x head_dim
        multiply-adds (4 x head_dim FLOPs) per query head per layer."""
        return 4 * self.layers * self.heads * self.head_dim

    def weight_bytes(self, weights_fp8: bool) -> int:
        return self.params * (BYTES_FP8 if weights_fp8 else BYTES_16BIT)

    def record(self) -> dict:
        return {"id": self.id, "label": self.name, "name": self.name, "params": self.params,
                "vocab_size": self.vocab_size, "hidden_size": self.hidden_size,
                "tie_word_embeddings": self.tie_word_embeddings,
                "layers": self.layers, "kv_heads": self.kv_heads, "head_dim": self.head_dim, "heads": self.heads,
                "max_context_tokens": self.max_context_tokens, "source": self.source}


# The dies (`die`): NVIDIA's architecture whitepapers name GH100 for the H100 SXM5 and
# PCIe cards alike ("NVIDIA H100 Tensor Core GPU Architecture") and GA100 for the A100
# 40 GB and 80 GB ("NVIDIA A100 Tensor Core GPU Architecture"); the H200 is the H100's
# GH100 with HBM3e in place of HBM3 (AnandTech, "NVIDIA at SC23: H200 Accelerator with
# HBM3e", 2023-11-13). The L40S's AD102, the L4's AD104 and the A10G's GA102 are from
# TechPowerUp's GPU database: no other card here shares them.
_GPU_LIST = (
    # NVIDIA H100 Tensor Core GPU datasheet, "H100 SXM" column: 80 GB HBM3, 3.35 TB/s,
    # BF16/FP16 tensor 1,979 TFLOPS *with sparsity*, so 989 dense.
    GPU("H100", "H100 SXM", 80 * GB, 3_350 * GB, 989 * TFLOPS,
        "NVIDIA H100 datasheet (SXM): 80 GB HBM3, 3.35 TB/s, BF16 989 TFLOPS dense "
        "(1,979 with sparsity); nvidia-smi shows 81,559 MiB", 81_559, die="GH100"),
    # NVIDIA H200 Tensor Core GPU datasheet (SXM): 141 GB HBM3e, 4.8 TB/s; the same
    # Hopper compute as H100 SXM, 1,979 TFLOPS BF16 with sparsity, 989 dense.
    GPU("H200", "H200", 141 * GB, 4_800 * GB, 989 * TFLOPS,
        "NVIDIA H200 datasheet (SXM): 141 GB HBM3e, 4.8 TB/s, BF16 989 TFLOPS dense "
        "(1,979 with sparsity); nvidia-smi shows 143,771 MiB", 143_771, die="GH100"),
    # NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s, BF16/FP16 tensor 362.05 TFLOPS dense
    # (733 with sparsity); the chapter rounds it to 362, which we keep.
    GPU("L40S", "L40S", 48 * GB, 864 * GB, 362 * TFLOPS,
        "NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s, BF16 362 TFLOPS dense "
        "(733 with sparsity); nvidia-smi shows 46,068 MiB", 46_068, die="AD102"),
    # NVIDIA A100 Tensor Core GPU datasheet, "A100 80GB SXM" column: 80 GB HBM2e,
    # 2,039 GB/s, BF16 tensor 312 TFLOPS dense (624 with sparsity).
    GPU("A100", "A100 SXM", 80 * GB, 2_039 * GB, 312 * TFLOPS,
        "NVIDIA A100 datasheet (80GB SXM): 80 GB HBM2e, 2,039 GB/s, BF16 312 TFLOPS dense "
        "(624 with sparsity); nvidia-smi shows 81,920 MiB", 81_920, die="GA100"),
    # The cards readers rent most besides (no benchmark record of their own yet: they run
    # on the defaults for a GPU without runs, pysim.timing.steptime.DEFAULTS). Each memory total
    # as nvidia-smi prints it in a public log.
    # NVIDIA H100 Tensor Core GPU datasheet, "H100 PCIe" column: 80 GB HBM2e, 2 TB/s,
    # BF16 tensor 1,513 TFLOPS with sparsity, so 756 dense. nvidia-smi: 81,559 MiB
    # (TensorRT-LLM's test report for "NVIDIA H100 PCIe (81559 MiB)").
    GPU("H100-PCIe", "H100 PCIe", 80 * GB, 2_000 * GB, 756 * TFLOPS,
        "NVIDIA H100 datasheet (PCIe): 80 GB HBM2e, 2 TB/s, BF16 756 TFLOPS dense "
        "(1,513 with sparsity); nvidia-smi shows 81,559 MiB", 81_559, die="GH100"),
    # NVIDIA A100 Tensor Core GPU datasheet, "A100 40GB SXM" column: 40 GB HBM2,
    # 1,555 GB/s, BF16 312 TFLOPS dense (624 with sparsity). nvidia-smi on an
    # A100-SXM4-40GB: 40,960 MiB with recent drivers (older ones print 40,537).
    GPU("A100-40GB", "A100 SXM", 40 * GB, 1_555 * GB, 312 * TFLOPS,
        "NVIDIA A100 datasheet (40GB SXM): 40 GB HBM2, 1,555 GB/s, BF16 312 TFLOPS dense "
        "(624 with sparsity); nvidia-smi shows 40,960 MiB", 40_960, die="GA100"),
    # NVIDIA L4 Tensor Core GPU datasheet: 24 GB GDDR6, 300 GB/s, BF16 tensor 242.5
    # TFLOPS with sparsity, so 121 dense. nvidia-smi: 23,034 MiB.
    GPU("L4", "L4", 24 * GB, 300 * GB, 121 * TFLOPS,
        "NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s, BF16 121 TFLOPS dense "
        "(242 with sparsity); nvidia-smi shows 23,034 MiB", 23_034, die="AD104"),
    # The A10G is AWS's variant of the A10 (EC2 G5), with no NVIDIA datasheet of its own:
    # 24 GB GDDR6 at 600 GB/s as the A10, but fewer tensor FLOP/s, 70 TFLOPS BF16 dense
    # (Baseten, "NVIDIA A10 vs A10G for ML model inference", spec table; the A10's
    # datasheet gives 125). nvidia-smi: 23,028 MiB.
    GPU("A10G", "A10G", 24 * GB, 600 * GB, 70 * TFLOPS,
        "no NVIDIA datasheet for the A10G (AWS EC2 G5's card): Baseten's A10 vs A10G spec "
        "table, 24 GB GDDR6, 600 GB/s, BF16 70 TFLOPS dense (140 with sparsity); nvidia-smi "
        "shows 23,028 MiB", 23_028, die="GA102"),
    # AMD Instinct MI300X data sheet: 192 GB HBM3, 5.3 TB/s peak bandwidth,
    # FP16/BF16 matrix 1,307.4 TFLOPS dense (2,614.9 with sparsity).
    GPU("MI300X", "MI300X", 192 * GB, 5_300 * GB, 1_307_400_000_000_000,
        "AMD Instinct MI300X data sheet: 192 GB HBM3, 5.3 TB/s, FP16/BF16 1,307.4 TFLOPS "
        "dense (2,614.9 with sparsity); rocminfo shows a 201,310,208 KB pool", 196_592, "rocm", die="MI300X"),
)

_MODEL_LIST = (
    # meta-llama/Llama-3.1-8B config.json: num_hidden_layers 32, num_attention_heads 32,
    # num_key_value_heads 8, hidden_size 4096 (so head dim 4096 / 32 = 128),
    # max_position_embeddings 131072, vocab_size 128256, tie_word_embeddings false.
    # Parameter count 8.03B (model page), of which 2 x 128256 x 4096 = 1.05B are the
    # embedding and the LM head.
    # KV per token in 16-bit: 2 x 32 x 8 x 128 x 2 = 131,072 bytes (128 KiB).
    Model("llama-3.1-8b", "Llama 3.1 8B", 8_030_000_000, 32, 8, 128, 32, 131_072,
          "meta-llama/Llama-3.1-8B config.json: 32 layers, 8 KV heads, head dim 4096/32 = 128, "
          "max_position_embeddings 131072, vocab 128256 x hidden 4096, untied; 8.03B "
          "parameters (model page)", 128_256, 4_096),
    # meta-llama/Llama-3.1-70B config.json: num_hidden_layers 80, num_attention_heads 64,
    # num_key_value_heads 8, hidden_size 8192 (head dim 8192 / 64 = 128),
    # max_position_embeddings 131072, vocab_size 128256, tie_word_embeddings false.
    # Parameter count 70.6B (model page).
    Model("llama-3.1-70b", "Llama 3.1 70B", 70_600_000_000, 80, 8, 128, 64, 131_072,
          "meta-llama/Llama-3.1-70B config.json: 80 layers, 8 KV heads, head dim 8192/64 = 128, "
          "max_position_embeddings 131072, vocab 128256 x hidden 8192, untied; 70.6B "
          "parameters (model page)", 128_256, 8_192),
    # Qwen/Qwen3-8B config.json: num_hidden_layers 36, num_attention_heads 32,
    # num_key_value_heads 8, head_dim 128 (given explicitly), max_position_embeddings 40960,
    # hidden_size 4096, vocab_size 151936, tie_word_embeddings false.
    # The model card: 8.2B parameters (8.19B in its safetensors), 32,768 tokens natively,
    # 131,072 with YaRN rope scaling; we keep the config's 40,960, vLLM's default limit.
    Model("qwen3-8b", "Qwen3 8B", 8_190_000_000, 36, 8, 128, 32, 40_960,
          "Qwen/Qwen3-8B config.json: 36 layers, 8 KV heads, head_dim 128, "
          "max_position_embeddings 40960, vocab 151936 x hidden 4096, untied; 8.19B parameters "
          "(model card: 8.2B)", 151_936, 4_096),
    # Qwen/Qwen3-14B config.json: num_hidden_layers 40, num_attention_heads 40,
    # num_key_value_heads 8, head_dim 128, max_position_embeddings 40960, hidden_size
    # 5120, vocab_size 151936, tie_word_embeddings false (the Qwen3
    # Technical Report's model table agrees: 40 layers, 40 / 8 heads). Model card: 14.8B
    # parameters. In the catalog for the real benchmark records (data/realbench/).
    Model("qwen3-14b", "Qwen3 14B", 14_800_000_000, 40, 8, 128, 40, 40_960,
          "Qwen/Qwen3-14B config.json: 40 layers, 8 KV heads, head_dim 128, "
          "max_position_embeddings 40960, vocab 151936 x hidden 5120, untied; 14.8B "
          "parameters (model card)", 151_936, 5_120),
    # Qwen/Qwen3-32B config.json: num_hidden_layers 64, num_attention_heads 64,
    # num_key_value_heads 8, head_dim 128, max_position_embeddings 40960, hidden_size
    # 5120, vocab_size 151936, tie_word_embeddings false. Model card: 32.8B parameters; 32,768 tokens natively, 131,072 with YaRN.
    Model("qwen3-32b", "Qwen3 32B", 32_800_000_000, 64, 8, 128, 64, 40_960,
          "Qwen/Qwen3-32B config.json: 64 layers, 8 KV heads, head_dim 128, "
          "max_position_embeddings 40960, vocab 151936 x hidden 5120, untied; 32.8B "
          "parameters (model card)", 151_936, 5_120),
    # Qwen/Qwen2.5-3B-Instruct config.json: num_hidden_layers 36, num_attention_heads 16,
    # num_key_value_heads 2, hidden_size 2048 (head dim 2048 / 16 = 128),
    # max_position_embeddings 32768, vocab_size 151936, tie_word_embeddings true (one
    # matrix is the embedding and the LM head). Model card: 3.09B parameters.
    Model("qwen2.5-3b", "Qwen2.5 3B", 3_090_000_000, 36, 2, 128, 16, 32_768,
          "Qwen/Qwen2.5-3B-Instruct config.json: 36 layers, 2 KV heads, head dim 2048/16 = 128, "
          "max_position_embeddings 32768, vocab 151936 x hidden 2048, tied; 3.09B parameters "
          "(model card)", 151_936, 2_048, True),
    # mistralai/Mistral-7B-v0.3 config.json: num_hidden_layers 32, num_attention_heads 32,
    # num_key_value_heads 8, hidden_size 4096 (head dim 128), max_position_embeddings
    # 32768, no sliding window (so every token's KV is kept), vocab_size 32768,
    # tie_word_embeddings false. 7.25B parameters (model page).
    Model("mistral-7b-v0.3", "Mistral 7B v0.3", 7_250_000_000, 32, 8, 128, 32, 32_768,
          "mistralai/Mistral-7B-v0.3 config.json: 32 layers, 8 KV heads, head dim 4096/32 = 128, "
          "max_position_embeddings 32768, vocab 32768 x hidden 4096, untied; 7.25B parameters "
          "(model page)", 32_768, 4_096),
)

# Insertion order is the order the widget's selects show.
GPUS: dict[str, GPU] = {g.id: g for g in _GPU_LIST}
MODELS: dict[str, Model] = {m.id: m for m in _MODEL_LIST}

assert len(GPUS) == len(_GPU_LIST) and len(MODELS) == len(_MODEL_LIST), "duplicate catalog id"
assert all(g.reported_mib for g in _GPU_LIST)
assert all(m.vocab_size and m.hidden_size and m.matmul_params > 0 for m in _MODEL_LIST)
assert all(g.platform in ("cuda", "rocm") for g in _GPU_LIST)
