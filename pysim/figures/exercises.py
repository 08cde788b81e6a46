"""The worked answers of the exercises page (exercise 4 is traced on the page-4 toy)."""

from __future__ import annotations

from pysim.figures.throughput import batch_for_fraction, roofline_tok_s, step_ms, throughput_tok_s
from pysim.utils import cdiv


def exercise2(t0_ms=20.0, beta_ms=0.2) -> dict:
    out = {f"tok_s_b{b}": throughput_tok_s(t0_ms, beta_ms, b) for b in (8, 32, 64)}
    out["roofline_tok_s"] = roofline_tok_s(beta_ms)
    out["fraction_b64"] = out["tok_s_b64"] / out["roofline_tok_s"]
    out["b_for_half"] = batch_for_fraction(t0_ms, beta_ms, 0.5)
    for b in (8, 32, 64):
        out[f"step_ms_b{b}"] = step_ms(t0_ms, beta_ms, b)
        out[f"fraction_b{b}"] = out[f"tok_s_b{b}"] / out["roofline_tok_s"]
    # At B = 64 most of each step is the fixed cost of reading the weights.
    out["fixed_share_b64"] = t0_ms / step_ms(t0_ms, beta_ms, 64)
    out["tok_s_b1"] = throughput_tok_s(t0_ms, beta_ms, 1)
    out["gain_b8_to_b64"] = out["tok_s_b64"] / out["tok_s_b8"]
    out["step_ms_half"] = step_ms(t0_ms, beta_ms, out["b_for_half"])
    return out


def exercise3(block_size=16, num_gpu_blocks=400, max_num_seqs=64) -> dict:
    long_prompt_blocks = cdiv(600, block_size)
    short_prompt_blocks = cdiv(40, block_size)
    per_request_100 = cdiv(100, block_size)
    return {
        "long_prompt_blocks": long_prompt_blocks,
        "long_prompts_fit": num_gpu_blocks // long_prompt_blocks,
        "short_prompt_blocks": short_prompt_blocks,
        # Tokens the short prompt's last block still has room for; the next one needs a block.
        "short_free_slots": short_prompt_blocks * block_size - 40,
        "short_next_block_at_token": short_prompt_blocks * block_size - 40 + 1,
        "short_next_block_number": short_prompt_blocks + 1,
        "len100_blocks_each": per_request_100,
        "len100_blocks_total": 64 * per_request_100,
        "len100_fit": num_gpu_blocks // per_request_100,
        # Admitting ten 600-token prompts leaves this many blocks for their answers,
        # and each prompt's last block has this many free slots.
        "long_spare_blocks": num_gpu_blocks - (num_gpu_blocks // long_prompt_blocks) * long_prompt_blocks,
        "long_free_slots": long_prompt_blocks * block_size - 600,
        # Growing together, each answer gets its last block's free slots and an equal
        # share of the spare blocks before the pool is empty.
        "long_spare_each": (num_gpu_blocks - (num_gpu_blocks // long_prompt_blocks) * long_prompt_blocks)
                           // (num_gpu_blocks // long_prompt_blocks),
        "long_tokens_before_preempt": long_prompt_blocks * block_size - 600
                                      + block_size * ((num_gpu_blocks - (num_gpu_blocks // long_prompt_blocks)
                                                       * long_prompt_blocks) // (num_gpu_blocks // long_prompt_blocks)),
        # 64 x 100 tokens is exactly the pool's token capacity, yet it does not fit: each
        # request's last block is partly empty.
        "max_num_seqs": max_num_seqs,
        "pool_tokens": num_gpu_blocks * block_size,
        "len100_tokens_total": 64 * 100,
        "len100_slack_each": per_request_100 * block_size - 100,
        "len100_slack_total": 64 * (per_request_100 * block_size - 100),
        "len100_running": min(max_num_seqs, num_gpu_blocks // per_request_100),
        "binding": "KV-cache memory" if num_gpu_blocks // per_request_100 < max_num_seqs else "max_num_seqs",
        "len100_next_block_at_token": per_request_100 * block_size - 100 + 1,
    }


def exercise4() -> dict:
    """Exercise 4, traced on the page-4 toy itself (pysim/toy/self_victim.py)."""
    from pysim.toy.self_victim import figures

    return figures()
