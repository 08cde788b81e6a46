"""The block pool and KV-cache manager: one focused test per rule of vLLM's
BlockPool and KVCacheManager (vllm/v1/core/block_pool.py, kv_cache_manager.py)."""

import hashlib
import struct

import pytest
from hypothesis import given, settings, strategies as st

import pysim.engine.blockpool as bp
from pysim.engine.blockpool import ROOT_HASH, BlockPool, KVCacheManager, hash_block, hash_full_blocks


def test_hash_chain_depends_on_parent_and_is_plain_sha256():
    a = hash_block(None, [1, 2])
    # Same tokens under a different parent: a different hash (the chain covers the prefix).
    assert hash_block(a, [1, 2]) != a
    assert hash_block(hash_block(None, [9, 9]), [3, 4]) != hash_block(a, [3, 4])
    # No parent means the fixed root; the encoding is fixed-width big-endian.
    assert a == hashlib.sha256(ROOT_HASH + struct.pack(">2q", 1, 2)).digest()
    assert a == hash_block(ROOT_HASH, [1, 2])


def test_hash_full_blocks_skips_the_partial_tail():
    hs = list(hash_full_blocks([1, 2, 3, 4, 5], 2))
    assert hs == [hash_block(None, [1, 2]), hash_block(hash_block(None, [1, 2]), [3, 4])]
    assert list(hash_full_blocks([1], 2)) == []


def test_block_0_is_the_null_block_the_rest_free_ascending():
    # vLLM's BlockPool.__init__ pops block 0 off the free queue as its null block:
    # 6 blocks leave 5 usable, ids 1..5, handed out from the lowest.
    pool = BlockPool(6, 4, True)
    assert pool.free_queue() == [1, 2, 3, 4, 5]
    assert pool.num_free_blocks == pool.num_usable_blocks == 5
    assert pool.get_new_blocks(2) == [1, 2]
    assert pool.ref_count(1) == 1 and pool.free_queue() == [3, 4, 5]
    assert pool.ref_count(0) == 0  # the null block is never held, never free
    pool.check_invariants()


def _pool_with_finished_request(caching=True):
    """7 blocks of 2 (block 0 the null block); A holds 5 tokens [1..5] in blocks
    1,2,3 and finishes. Blocks 1 and 2 are full (hashed when caching), 3 holds one token.
    """
    pool = BlockPool(7, 2, caching)
    kv = KVCacheManager(pool)
    assert kv.allocate_slots("A", [1, 2, 3, 4, 5], 5)
    assert kv.block_table("A") == [1, 2, 3]
    kv.free("A")
    return pool, kv


def test_freed_hashed_blocks_go_to_tail_last_first_unhashed_to_head():
    pool, kv = _pool_with_finished_request()
    # Reversed table = [3, 2, 1]: unhashed 3 to the head; hashed 2 then 1 to the tail,
    # so A's last full block (2) is evicted before its first (1).
    assert pool.free_queue() == [3, 4, 5, 6, 2, 1]
    assert pool.block_hash(2) is not None and pool.block_hash(3) is None


def test_caching_off_every_freed_block_to_head_last_block_first():
    pool, kv = _pool_with_finished_request(caching=False)
    assert pool.free_queue() == [3, 2, 1, 4, 5, 6]
    assert all(pool.block_hash(b) is None for b in range(7))


def test_cache_hit_takes_block_out_of_free_queue():
    pool, kv = _pool_with_finished_request()
    hits, tokens = kv.lookup([1, 2, 3, 4, 7])
    assert (hits, tokens) == ([1, 2], 4)
    assert pool.free_queue() == [3, 4, 5, 6, 2, 1]  # lookup is pure (vLLM: `KVCacheManager.get_computed_blocks`)
    assert kv.allocate_slots("B", [1, 2, 3, 4, 7], 5, hits)
    # B = hits 1,2 + one new block from the head (3, unhashed: no eviction).
    assert kv.block_table("B") == [1, 2, 3]
    assert pool.free_queue() == [4, 5, 6]
    assert pool.ref_count(1) == pool.ref_count(2) == 1
    pool.check_invariants(kv.tables().values())


def test_touch_on_a_block_in_use_only_counts():
    pool = BlockPool(4, 2, True)
    [b] = pool.get_new_blocks(1)
    pool.touch([b])
    assert pool.ref_count(b) == 2 and pool.free_queue() == [2, 3]


def test_handed_out_cached_block_loses_its_hash():
    pool, kv = _pool_with_finished_request()
    h2 = pool.block_hash(2)
    got = pool.get_new_blocks(5)  # 3,4,5,6 then 2 (which still had A's hash)
    assert got == [3, 4, 5, 6, 2]
    assert pool.block_hash(2) is None and pool.get_cached_block(h2) is None
    assert pool.num_evictions == 1 and pool.block_hash(1) is not None
    # The chain is broken at block 2, so a lookup hits only block 1.
    assert kv.lookup([1, 2, 3, 4, 5]) == ([1], 2)


def test_fully_cached_two_block_prompt_computes_second_block_again():
    pool = BlockPool(9, 4, True)
    kv = KVCacheManager(pool)
    prompt = list(range(10, 18))  # exactly two blocks of 4
    assert kv.allocate_slots("A", prompt, 8)
    assert kv.block_table("A") == [1, 2]
    kv.free("A")  # queue: 3..8, then 2, 1 at the tail
    # Both blocks are cached, but the hit is capped at 8-1 = 7 tokens -> 1 block (vLLM: `KVCacheManager.get_computed_blocks`).
    hits, tokens = kv.lookup(prompt)
    assert (hits, tokens) == ([1], 4)
    assert kv.blocks_needed("B", 8, hits) == 2  # 1 new + 1 evictable hit (vLLM: `KVCacheManager.allocate_slots`)
    assert kv.allocate_slots("B", prompt, 8, hits)
    assert kv.block_table("B") == [1, 3]  # second block recomputed into a new block
    # No de-duplication (vLLM: `BlockPool.cache_full_blocks`): blocks 2 and 3 both carry the second block's hash;
    # a lookup still returns the first inserted (vLLM: `BlockPool.get_cached_block`).
    h = pool.block_hash(3)
    assert h == pool.block_hash(2) and pool.get_cached_block(h) == 2
    pool.check_invariants(kv.tables().values())
    assert pool.free_queue() == [4, 5, 6, 7, 8, 2]


def test_duplicate_entry_survives_eviction_of_the_first():
    pool = BlockPool(4, 2, True)
    kv = KVCacheManager(pool)
    kv.allocate_slots("A", [1, 2], 2)  # block 1, hashed
    kv.free("A")  # queue [2, 3, 1]
    kv.allocate_slots("B", [1, 2], 2, [])  # no hit (cap 1 token): new block 2, same hash
    h = pool.block_hash(2)
    assert pool.get_cached_block(h) == 1
    pool.get_new_blocks(2)  # 3, then 1: block 1's entry is evicted, block 2's stays
    assert pool.get_cached_block(h) == 2


def test_failed_allocation_changes_nothing_and_counts_evictable_hits():
    # allocate_slots' resume case in miniature: a resume needs 1 new block plus 1 free cached hit.
    pool = BlockPool(5, 2, True)
    kv = KVCacheManager(pool)
    assert kv.allocate_slots("A", [1, 2, 3, 4], 4)  # blocks 1, 2 (both hashed)
    kv.free("A")  # queue [3, 4, 2, 1]
    assert kv.allocate_slots("X", [9, 9, 9, 9, 9], 5)  # takes 3, 4, 2 (evicts 2)
    hits, _ = kv.lookup([1, 2, 3, 4, 5])
    assert hits == [1]
    assert pool.num_free_blocks == 1
    assert kv.blocks_needed("A", 5, hits) == 3  # 2 new + evictable block 1
    before = (pool.free_queue(), pool.ref_count(1), pool.num_allocations)
    assert not kv.allocate_slots("A", [1, 2, 3, 4, 5], 5, hits)
    assert (pool.free_queue(), pool.ref_count(1), pool.num_allocations) == before
    assert kv.block_table("A") == []


def test_generated_tokens_cached_when_their_block_fills():
    pool = BlockPool(4, 2, True)
    kv = KVCacheManager(pool)
    tokens = [1, 2, 3]
    kv.allocate_slots("A", tokens, 3)
    assert kv.num_cached_blocks("A") == 1
    tokens.append(4)  # a generated token fills block 1: hashed and cached at once (vLLM: `Request.block_hashes`, `BlockPool.cache_full_blocks`)
    kv.allocate_slots("A", tokens, 4)
    assert kv.num_cached_blocks("A") == 2
    assert pool.get_cached_block(list(hash_full_blocks(tokens, 2))[1]) == kv.block_table("A")[1]


def test_each_block_hashed_once_and_never_with_caching_off(monkeypatch):
    calls = []
    real = bp.hash_block
    monkeypatch.setattr(bp, "hash_block", lambda p, t: calls.append(1) or real(p, t))
    for caching, expected in ((True, 5), (False, 0)):
        calls.clear()
        kv = KVCacheManager(BlockPool(8, 4, caching))
        tokens = []
        for t in range(22):  # grow one token at a time: 5 blocks become full
            tokens.append(t)
            assert kv.allocate_slots("A", tokens, len(tokens))
        assert len(calls) == expected


def test_check_invariants_catches_a_wrong_table():
    pool = BlockPool(4, 2, False)
    kv = KVCacheManager(pool)
    kv.allocate_slots("A", [1, 2, 3], 3)
    pool.check_invariants(kv.tables().values())
    with pytest.raises(AssertionError):
        pool.check_invariants([[1]])  # block 2 is held but no table says so


# --- property: random allocate / grow / free against one pool ------------------------

ops = st.lists(st.tuples(st.sampled_from("agf"), st.integers(0, 3), st.integers(1, 9)),
               max_size=60)


@settings(max_examples=80, deadline=None)
@given(ops=ops, caching=st.booleans(), num_gpu_blocks=st.integers(2, 11),
       block_size=st.integers(1, 3))
def test_pool_invariants_hold_under_random_use(ops, caching, num_gpu_blocks, block_size):
    pool = BlockPool(num_gpu_blocks, block_size, caching)
    kv = KVCacheManager(pool)
    seqs: dict[int, list[int]] = {}
    for op, req, n in ops:
        if op == "a" and req not in seqs:  # admit with a prompt drawn from a tiny vocabulary
            prompt = [(req * n + i) % 3 for i in range(n)]
            hits, hit_tokens = kv.lookup(prompt)
            assert hit_tokens <= len(prompt) - 1 and hit_tokens % block_size == 0
            if kv.allocate_slots(req, prompt, len(prompt), hits):
                seqs[req] = prompt
            else:
                assert kv.block_table(req) == []
        elif op == "g" and req in seqs:
            seq = seqs[req] + [n % 3]
            if kv.allocate_slots(req, seq, len(seq)):
                seqs[req] = seq
        elif op == "f" and req in seqs:
            kv.free(req)
            del seqs[req]
        pool.check_invariants(kv.tables().values())
        for r, seq in seqs.items():
            table = kv.block_table(r)
            assert len(table) == -(-len(seq) // block_size)
            # Every cached block of the request carries the hash of its own prefix.
            for i, h in enumerate(list(hash_full_blocks(seq, block_size)) if caching else []):
                assert pool.block_hash(table[i]) == h


def test_known_hashes_are_used_instead_of_rehashing(monkeypatch):
    tokens = list(range(9))
    known = list(hash_full_blocks(tokens, 2))  # 4 full blocks
    pool = BlockPool(8, 2, True)
    kv = KVCacheManager(pool)
    kv.allocate_slots("A", tokens, 9)
    calls = []
    real = bp.hash_block
    monkeypatch.setattr(bp, "hash_block", lambda p, t: calls.append(1) or real(p, t))
    assert kv.lookup(tokens, known) == kv.lookup(tokens[:8] + [99], known) == ([1, 2, 3, 4], 8)
    assert kv.allocate_slots("B", tokens, 9, [1, 2, 3, 4], known)
    assert calls == []  # every hash came from `known`
    assert kv.request_hashes("B") == known and kv.block_table("B") == [1, 2, 3, 4, 6]
