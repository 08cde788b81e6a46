"""The paged KV-cache memory: one pool of fixed-size blocks, shared by every simulation.

Follows vLLM V1 (0.33) `BlockPool`, `FreeKVCacheBlockQueue` and `KVCacheManager`
(vllm/v1/core/block_pool.py, kv_cache_utils.py, kv_cache_manager.py), null block
included: `BlockPool.__init__` takes block 0 out of the free queue as the *null block*
(a placeholder that sliding-window and Mamba layers point at for positions they no
longer keep). A full-attention model never uses it, but it still costs one block, so a
pool of `num_gpu_blocks` blocks has `num_gpu_blocks - 1` usable ones, ids 1 and up.

The vocabulary:
- A *block* holds `block_size` token slots; a request's *block table* lists the
  blocks holding its tokens, in order.
- A block's *ref count* is the number of block tables holding it. A block is in the
  *free queue* exactly when its ref count is 0.
- With prefix caching on, every *full* block is hashed over its own token ids
  together with its parent block's hash, and is registered in the cache under that hash.
  A freed block keeps its hash (it can still be hit) until it is handed out again.
- The free queue is in eviction order: blocks are handed out from the head. Freed
  blocks that carry a hash go to the tail (evicted last); freed blocks without one go
  to the head (reused first), as vLLM 0.33's `BlockPool.free_blocks` does.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Iterable, Iterator, Sequence

from pysim.utils import cdiv

BlockHash = bytes  # a sha256 digest covering the whole prefix up to and including a block

# The parent of a sequence's first block: a fixed value, like vLLM's `NONE_HASH`.
ROOT_HASH: BlockHash = hashlib.sha256(b"pysim-root-hash").digest()


def hash_block(parent: BlockHash | None, token_ids: Sequence[int]) -> BlockHash:
    """Hash one block from its parent's hash and its own token ids (vLLM: `hash_block_tokens`).

    The encoding is fixed-width (8 signed bytes per token id after a 32-byte
    parent), so the same input gives the same digest on every Python.
    """
    data = struct.pack(f">{len(token_ids)}q", *token_ids)
    if parent is None:
        parent = ROOT_HASH
    elif type(parent) is int:  # a name given by the caller (pysim.traffic.traces.PromptTokens)
        parent = parent.to_bytes(8, "big", signed=True)
    return hashlib.sha256(parent + data).digest()


def hash_full_blocks(token_ids: Sequence[int], block_size: int, known: Sequence[BlockHash] = (),
                     start: int = 0, stop: int | None = None) -> Iterator[BlockHash]:
    """The chained hashes of full blocks start..stop-1 of `token_ids`, in order.

    `stop` defaults to every full block (a partial tail has no hash). Block i's hash is
    `known[i]` when the caller already has it (vLLM keeps them on the request:
    `Request.block_hashes`), else
    hash_block(block i-1's hash, block i's tokens). A generator, so a lookup that stops
    at its first cache miss hashes no further.
    """
    if stop is None:
        stop = len(token_ids) // block_size
    parent = known[start - 1] if start else None
    for i in range(start, stop):
        parent = known[i] if i < len(known) else \
            hash_block(parent, token_ids[i * block_size:(i + 1) * block_size])
        yield parent


NULL_BLOCK = 0  # vLLM's BlockPool.null_block: reserved at start, never handed out


class BlockPool:
    """Blocks 0..num_gpu_blocks-1 (0 is the null block), their ref counts and hashes, the
    free queue, the cache. `num_gpu_blocks` is vLLM's name."""

    def __init__(self, num_gpu_blocks: int, block_size: int, enable_prefix_caching: bool):
        assert num_gpu_blocks >= 2 and block_size >= 1, "the null block and at least one more"
        self.num_gpu_blocks = num_gpu_blocks
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self._ref = [0] * num_gpu_blocks
        self._hash: list[BlockHash | None] = [None] * num_gpu_blocks
        # hash -> the block id holding it, or, for a hash held by two blocks or more,
        # {block id: None}. Most hashes have one block, and an int costs far less than a
        # dict per block (vLLM's `BlockHashToBlockMap` keeps the same union, to spare its
        # garbage collector). A dict keeps insertion order, so the first block registered
        # under a hash that is still present is the first key (vLLM: `get_one_block`).
        self._cached: dict[BlockHash, int | dict[int, None]] = {}
        # The free queue: a circular doubly-linked list over arrays indexed by block id,
        # with a sentinel at index num_gpu_blocks, so unlinking any block is O(1).
        s = num_gpu_blocks
        self._next = list(range(1, num_gpu_blocks + 1)) + [0]
        self._prev = [s] + list(range(num_gpu_blocks))
        self._num_free = num_gpu_blocks  # all blocks, in ascending id order (vLLM: `BlockPool.__init__`)
        # vLLM: `self.null_block = self.free_block_queue.popleft()`, marked is_null. It
        # stays out of the queue with ref count 0 for the pool's whole life.
        self._unlink(NULL_BLOCK)
        self.num_evictions = 0  # cached hashes dropped because their block was handed out
        self.num_allocations = 0  # blocks handed out by get_new_blocks

    # --- reading -------------------------------------------------------------
    @property
    def num_usable_blocks(self) -> int:
        """Every block but the null block."""
        return self.num_gpu_blocks - 1

    @property
    def num_free_blocks(self) -> int:
        """Length of the free queue, free-but-cached blocks included (vLLM:
        `BlockPool.get_num_free_blocks`)."""
        return self._num_free

    def ref_count(self, block_id: int) -> int:
        return self._ref[block_id]

    def block_hash(self, block_id: int) -> BlockHash | None:
        return self._hash[block_id]

    def get_cached_block(self, h: BlockHash) -> int | None:
        """A block holding the content of hash `h`, or None (the first inserted, as vLLM `BlockPool.get_cached_block`)."""
        blocks = self._cached.get(h)
        return blocks if blocks is None or type(blocks) is int else next(iter(blocks))

    def free_queue(self) -> list[int]:
        """Block ids from head (handed out next) to tail (evicted last)."""
        out, b = [], self._next[self.num_gpu_blocks]
        while b != self.num_gpu_blocks:
            out.append(b)
            b = self._next[b]
        return out

    # --- the free queue's linked list ------------------------------------------
    def _unlink(self, b: int) -> None:
        p, n = self._prev[b], self._next[b]
        self._next[p], self._prev[n] = n, p
        self._num_free -= 1

    # --- changing --------------------------------------------------------------
    def touch(self, block_ids: Iterable[int]) -> None:
        """Cache hits: one more table holds each block; a free one leaves the queue (vLLM:
        `BlockPool.touch`)."""
        ref, nxt, prev = self._ref, self._next, self._prev
        for b in block_ids:
            if ref[b] == 0:  # `_unlink(b)`, inlined: most hits are on free cached blocks
                p, n = prev[b], nxt[b]
                nxt[p], prev[n] = n, p
                self._num_free -= 1
            ref[b] += 1

    def get_new_blocks(self, n: int) -> list[int]:
        """Hand out `n` blocks from the head of the free queue (vLLM: `BlockPool.get_new_blocks`).

        A handed-out block that still had a hash loses it: its cached content is
        evicted, and it can no longer be hit.
        """
        assert 0 <= n <= self._num_free, f"asked for {n} blocks, {self._num_free} free"
        # The n blocks at the head leave together: walk past them, then link the
        # sentinel to the block after them (their own links are rewritten on return).
        # Every queued block has ref count 0 (`check_invariants` asserts it).
        s, nxt, ref, hashes, cached = self.num_gpu_blocks, self._next, self._ref, self._hash, self._cached
        out = [0] * n  # filled in place: ~0.7 million blocks pass here in a cluster replay
        evicted = 0
        b = s
        for i in range(n):
            b = nxt[b]
            out[i] = b
            ref[b] = 1
            h = hashes[b]
            if h is not None:  # evict: the block's content is no longer cached
                entry = cached[h]
                if entry == b:  # the one block under h (several are a dict, never equal to an id)
                    del cached[h]
                else:
                    del entry[b]
                    if not entry:
                        del cached[h]
                hashes[b] = None
                evicted += 1
        self.num_evictions += evicted
        b = nxt[b]  # the first block left in the queue
        nxt[s] = b
        self._prev[b] = s
        self._num_free -= n
        self.num_allocations += n
        return out

    def cache_full_blocks(self, block_ids: Sequence[int], block_hashes: Sequence[BlockHash]) -> None:
        """Register full, in-use blocks under their hashes, in order. No de-duplication:
        a second block with the same content is registered beside the first (vLLM:
        `BlockPool.cache_full_blocks`)."""
        assert self.enable_prefix_caching
        ref, hashes, cached = self._ref, self._hash, self._cached
        for b, h in zip(block_ids, block_hashes):
            assert ref[b] and hashes[b] is None, "a block never changes its hash while in use"
            hashes[b] = h
            if h not in cached:
                cached[h] = b
            else:
                entry = cached[h]
                if type(entry) is int:
                    cached[h] = {entry: None, b: None}
                else:
                    entry[b] = None

    def free_blocks(self, ordered_block_ids: Iterable[int]) -> None:
        """Drop one reference from each block; place those reaching 0 in the queue (vLLM: `BlockPool.free_blocks`).

        Callers pass a request's block table reversed (last block first). Hashed
        blocks go to the tail in that order, so a request's last block is evicted
        before its shared prefix; unhashed blocks go to the head, the request's last
        block at the very head. With caching off no block has a hash: all go to the head.
        """
        ref, hashes = self._ref, self._hash
        blocks = list(ordered_block_ids)  # a table's blocks: each once
        to_head = []  # with caching on, few: a request's last, partial block
        for b in blocks:
            n = ref[b] - 1
            assert n >= 0, f"block {b} freed more often than held"
            ref[b] = n
            if not n and hashes[b] is None:
                to_head.append(b)
        # The many hashed ones, in a second pass without a call per block.
        to_tail = [b for b in blocks if not ref[b] and hashes[b] is not None]
        s = self.num_gpu_blocks
        if to_tail:
            self._link_chain(self._prev[s], to_tail)
        if to_head:
            self._link_chain(s, to_head)

    def _link_chain(self, p: int, blocks: list[int]) -> None:
        """Insert `blocks`, in their order, right after block (or sentinel) p."""
        nxt, prev = self._next, self._prev
        after = nxt[p]
        for b in blocks:
            nxt[p] = b
            prev[b] = p
            p = b
        nxt[p] = after
        prev[after] = p
        self._num_free += len(blocks)

    def check_invariants(self, block_tables: Iterable[Sequence[int]] | None = None) -> None:
        """Assert the pool is consistent; with `block_tables`, also the ref counts."""
        queue = self.free_queue()
        assert len(queue) == self._num_free == len(set(queue))
        in_queue = set(queue)
        assert NULL_BLOCK not in in_queue and self._ref[NULL_BLOCK] == 0
        assert self._hash[NULL_BLOCK] is None
        for b in range(1, self.num_gpu_blocks):
            assert (b in in_queue) == (self._ref[b] == 0), f"block {b}: queue xor in use"
            assert self._ref[b] >= 0
        used = sum(1 for r in self._ref if r > 0)
        assert used + self._num_free == self.num_usable_blocks
        if block_tables is not None:
            holders = [0] * self.num_gpu_blocks
            for table in block_tables:
                assert len(set(table)) == len(table), "a table holds a block twice"
                for b in table:
                    holders[b] += 1
            assert holders == self._ref, "ref count != number of tables holding the block"
        entries = 0
        for h, blocks in self._cached.items():
            blocks = (blocks,) if type(blocks) is int else blocks
            assert blocks, "empty cache entry"
            for b in blocks:
                assert self._hash[b] == h
            entries += len(blocks)
        assert entries == sum(1 for h in self._hash if h is not None)
        assert self.enable_prefix_caching or not self._cached




class KVCacheManager:
    """Per-request block tables over one pool (vLLM's `KVCacheManager`, vllm/v1/core/kv_cache_manager.py)."""

    def __init__(self, pool: BlockPool):
        self.pool = pool
        self._tables: dict[object, list[int]] = {}
        # The chained hashes of each request's leading blocks that are already
        # cached; blocks beyond are hashed once, when they become full (never rehash).
        self._hashes: dict[object, list[BlockHash]] = {}

    def block_table(self, req_id) -> list[int]:
        return self._tables.get(req_id, [])

    def num_blocks(self, req_id) -> int:
        return len(self._tables.get(req_id, ()))

    def tables(self) -> dict:
        """req_id -> block table, for invariant checks and views (do not modify)."""
        return self._tables

    def request_hashes(self, req_id) -> list[BlockHash]:
        """Hashes of the request's cached leading blocks (parent of block i is i-1)."""
        return self._hashes.get(req_id, [])

    def num_cached_blocks(self, req_id) -> int:
        return len(self._hashes.get(req_id, ()))

    def lookup(self, token_ids: Sequence[int],
               block_hashes: Sequence[BlockHash] = ()) -> tuple[list[int], int]:
        """Longest cached run of leading full blocks: (block ids, hit tokens). Pure, as vLLM's
        `KVCacheManager.get_computed_blocks`.

        The hit is capped at len-1 tokens, rounded down to whole blocks, so the last
        token is always computed: a fully cached block-aligned prompt computes
        its whole last block again. `block_hashes`, if given, are the sequence's
        chained full-block hashes already known (vLLM's `Request.block_hashes`);
        blocks beyond them are hashed here.
        """
        pool = self.pool
        if not pool.enable_prefix_caching:
            return [], 0
        bs, cached = pool.block_size, pool._cached
        hits: list[int] = []
        stop = max(0, len(token_ids) - 1) // bs
        # Known hashes are read as they are; only blocks beyond them are hashed.
        hashes = block_hashes[:stop] if stop <= len(block_hashes) else \
            hash_full_blocks(token_ids, bs, block_hashes, stop=stop)
        for h in hashes:
            blocks = cached.get(h)
            if blocks is None:
                break  # chained: every later block misses too
            # the block, or the first inserted of several (vLLM: `BlockPool.get_cached_block`)
            hits.append(blocks if type(blocks) is int else next(iter(blocks)))
        return hits, len(hits) * bs

    def blocks_needed(self, req_id, num_tokens_total: int, hit_blocks: Sequence[int] = ()) -> int:
        """Free blocks an allocation would consume: new ones plus evictable hits (vLLM:
        `KVCacheManager.allocate_slots`)."""
        held = len(self._tables.get(req_id, ())) + len(hit_blocks)
        new = max(0, cdiv(num_tokens_total, self.pool.block_size) - held)
        if hit_blocks:  # a free cached block leaves the free queue when hit
            ref = self.pool._ref
            new += [ref[b] for b in hit_blocks].count(0)
        return new

    def allocate_slots(self, req_id, token_ids: Sequence[int], num_tokens_total: int,
                       hit_blocks: Sequence[int] = (),
                       block_hashes: Sequence[BlockHash] = ()) -> bool:
        """Make the table cover `num_tokens_total` slots; False, changing nothing, if short
        (vLLM: `KVCacheManager.allocate_slots`).

        `token_ids` are the request's known tokens; every block full within
        min(num_tokens_total, len(token_ids)) of them is hashed and cached now, at
        schedule time (vLLM: `BlockPool.cache_full_blocks`), generated tokens included. Hashes already known
        can be passed in `block_hashes` (as for `lookup`).
        """
        pool = self.pool
        table = self._tables.get(req_id)
        assert not hit_blocks or not table, "cache hits only on a request's first allocation"
        new = cdiv(num_tokens_total, pool.block_size) - len(table or ()) - len(hit_blocks)
        # Without hits (every decode and chunk) the blocks consumed are just `new`; the
        # engine asks once per block a request fills, so `blocks_needed` is called only
        # when free cached hits also leave the queue.
        need = self.blocks_needed(req_id, num_tokens_total, hit_blocks) if hit_blocks else new
        if need > pool.num_free_blocks:
            return False
        if table is None:
            table = self._tables[req_id] = []
            held = pool._hash  # the hits' hashes, read in place (a method call per block costs more)
            self._hashes[req_id] = [held[b] for b in hit_blocks]
        if hit_blocks:
            pool.touch(hit_blocks)
            table.extend(hit_blocks)
        if new > 0:
            table.extend(pool.get_new_blocks(new))
        if pool.enable_prefix_caching:
            num_tokens = min(num_tokens_total, len(token_ids))
            hashes = self._hashes[req_id]
            start, stop = len(hashes), num_tokens // pool.block_size
            known = block_hashes if len(block_hashes) > start else hashes
            new = known[start:stop] if stop <= len(known) else \
                list(hash_full_blocks(token_ids, pool.block_size, known, start, stop))
            pool.cache_full_blocks(table[start:stop], new)
            hashes += new
        return True

    def grow_all(self, grown) -> None:
        """Add blocks to running requests' tables without prefix caching, when the
        caller already knows the pool has them (the engine's decode runs): `grown` is
        (request id, new blocks) pairs, served in that order (vLLM hands blocks out in
        the same way in `KVCacheManager.allocate_slots`, one request after another)."""
        assert not self.pool.enable_prefix_caching
        pool = self.pool
        for req_id, new in grown:
            assert 0 < new <= pool.num_free_blocks, "grow_all() without the blocks: use allocate_slots"
            self._tables[req_id].extend(pool.get_new_blocks(new))

    def free(self, req_id) -> None:
        """Release the request's blocks, last block first, and forget its table (vLLM:
        `BlockPool.free_blocks`)."""
        table = self._tables.pop(req_id, [])
        self._hashes.pop(req_id, None)
        self.pool.free_blocks(reversed(table))
