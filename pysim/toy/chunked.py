"""The toy scheduler with chunked prefill: pysim's own answer to exercise 5.

Same rules as pysim.toy.scheduler, plus the one idea of Sarathi-Serve's chunked prefill (chapter
page 5): a prompt no longer has to fit in one iteration. Each request tracks how many of
its tokens are computed (have KV in the cache), and every iteration

1. serves the decodes first, exactly as the toy does (one token each, growing blocks and
   preempting the newest other running request when the pool is empty);
2. lets running requests that are part-way through their prompt take the next chunk:
   as many of their remaining tokens as the budget still allows;
3. admits waiting requests from the head of the queue while budget, memory and
   `max_num_seqs` allow, giving each a first chunk cut to what is left of the budget.

A request samples a token only in an iteration where its computed tokens catch up
with its sequence, that is, with its last chunk, and then with each decode.

Memory stays as in the toy: admission reserves blocks for the whole sequence (prompt,
and for a resumed request the tokens it had generated), so chunks never need new blocks.
(vLLM allocates chunk by chunk after checking the whole sequence would fit; the
decisions differ only when memory is tight.)

The exercise checker (pysim.sims.exercises) runs a reader's version against this one.
"""

from __future__ import annotations

from dataclasses import dataclass

from pysim.toy.scheduler import FINISHED, RUNNING, Request, ToyConfig, ToyScheduler, blocks_for, iterate


# --8<-- [start:request]
@dataclass(eq=False)
class ChunkedRequest(Request):
    computed: int = 0  # tokens whose KV is in the cache; the rest still has to be computed


def decoding(r: Request) -> bool:
    """Past its (re)prefill: it only has to compute the token it sampled last."""
    return r.generated > 0 and r.tokens - r.computed == 1
# --8<-- [end:request]


class ChunkedScheduler(ToyScheduler):
    # --8<-- [start:schedule]
    def schedule(self):
        cfg = self.config
        budget = cfg.max_num_batched_tokens
        batch, preempted = [], []
        # 1. Decodes first, with block growth and preemption as in the toy.
        i = 0
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            if not decoding(r):
                i += 1  # part-way through its prompt: served in pass 2
                continue
            served = len(batch)
            batch = self.grow(r, batch, preempted)
            budget += served - len(batch)  # a victim served already gives its token back
            i = self.running.index(r)  # preemptions may have moved it
            batch.append((r, "decode", 1))
            budget -= 1
            i += 1
        # 2. Running requests part-way through their prompt: the next chunk.
        for r in self.running:
            if budget > 0 and not decoding(r):
                n = min(r.tokens - r.computed, budget)
                batch.append((r, "prefill", n))
                budget -= n
        # 3. New (or resumed) requests: a first chunk that fills what is left.
        while self.waiting and not preempted and budget > 0 and len(self.running) < cfg.max_num_seqs:
            r = self.waiting[0]
            need = blocks_for(r.tokens, cfg.block_size)
            if need > self.free_blocks:
                break  # head-of-line blocking, as in the toy
            self.waiting.pop(0)
            self.free_blocks -= need
            r.blocks, r.state = need, RUNNING
            self.running.append(r)
            n = min(r.tokens, budget)
            batch.append((r, "prefill", n))
            budget -= n
        return batch, preempted
    # --8<-- [end:schedule]

    # --8<-- [start:update]
    def update(self, batch, now):
        finished = []
        for r, kind, n in batch:
            r.computed += n
            if r.computed < r.tokens:
                continue  # a chunk that did not reach the end samples nothing
            r.generated += 1
            if r.first_token is None:
                r.first_token = now
            if r.generated == r.max_tokens:
                r.state, r.finished_at = FINISHED, now
                self.free_blocks += r.blocks
                r.blocks = 0
                self.running.remove(r)
                finished.append(r.id)
        return finished

    def preempt_for(self, requester):
        victim = super().preempt_for(requester)
        victim.computed = 0  # its KV is gone: everything is recomputed on re-admission
        return victim
    # --8<-- [end:update]


def simulate(specs, config: ToyConfig = ToyConfig()):
    """Run the requests described by `specs` to the end: (requests, iteration reports)."""
    requests = [ChunkedRequest(**spec) for spec in specs]
    return requests, list(iterate(ChunkedScheduler(config), requests))
