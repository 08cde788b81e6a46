"""Page 7's small worked examples: aging, weighted fair shares, the cost of a victim."""

from __future__ import annotations

from pysim.figures.throughput import littles_law


def priority_examples(batch_priority=10, aging_every_s=5, weights=(3, 1), budget=2048,
                      batch_answer=2000,
                      victims=(("A", 1800), ("B", 900), ("C", 120))) -> dict:
    """The small worked examples of page 7.

    Aging: a batch request's priority value (lower runs first, as in vLLM) drops by one
    for every `aging_every_s` seconds it waits, so it reaches the interactive tier's 0.
    Weighted fair queueing: each step's token budget is split in proportion to tenant
    weights. Victims: running requests in admission order with the tokens whose KV they
    hold; recompute preemption throws those tokens away.
    """
    total_weight = sum(weights)
    newest, oldest = victims[-1], victims[0]
    # Without preemption, an interactive request that finds every seat taken by batch
    # jobs waits for one of them to finish: up to a whole long answer at page 2's
    # per-stream speed (a full batch of 64 on the t0 + beta B model).
    stream = littles_law()["per_stream_tok_s"]
    return {
        "batch_answer": batch_answer, "stream_tok_s": stream,
        "worst_wait_s": batch_answer / stream,
        "batch_priority": batch_priority, "aging_every_s": aging_every_s,
        "catch_up_s": batch_priority * aging_every_s,
        "weight_a": weights[0], "weight_b": weights[1], "budget": budget,
        "share_a": budget * weights[0] // total_weight,
        "share_b": budget * weights[1] // total_weight,
        "oldest_name": oldest[0], "oldest_tokens": oldest[1],
        "middle_name": victims[1][0], "middle_tokens": victims[1][1],
        "newest_name": newest[0], "newest_tokens": newest[1],
        "waste_ratio": oldest[1] / newest[1],
    }
