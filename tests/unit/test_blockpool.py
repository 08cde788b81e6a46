"""The block pool and KV-cache manager: one focused test per rule (vllm-v1-semantics A-E)."""

import hashlib
import struct

import pytest
from hypothesis import given, settings, strategies as st

import pysim.blockpool as bp
from pysim.blockpool import ROOT_HASH, BlockPool, KVCacheManager, hash_block, hash_full_blocks


def test_hash_chain_depends_on_parent_and_is_plain_sha256():
    a = hash_block(None, [1, 2])
    # Same tokens under a different parent: a different hash (the chain covers the prefix).
    assert hash_block(a, [1, 2]) != a
    assert hash_block(hash_block(None, [9, 9]), [3, 4]) != hash_block(a, [3, 4])
    # No parent means the fixed root; the encoding is fixed-width big-endian.
    assert a == hashlib.sha256(ROOT_HASH + struct.pack(">2q", 1, 2)).digest()
    assert a == hash_block(ROOT_HASH, [1, 2])


def test_hash_full_blocks_skips_the_partial_tail():
    hs = hash_full_blocks([1, 2, 3, 4, 5], 2)
    assert hs == [hash_block(None, [1, 2]), hash_block(hash_block(None, [1, 2]), [3, 4])]
    assert hash_full_blocks([1], 2) == []


def test_all_blocks_usable_free_queue_ascending():
    pool = BlockPool(5, 4, True)
    assert pool.free_queue() == [0, 1, 2, 3, 4]  # no null block (widgets.md)
    assert pool.num_free_blocks == 5
    assert pool.get_new_blocks(2) == [0, 1]
    assert pool.ref_count(0) == 1 and pool.free_queue() == [2, 3, 4]


def _pool_with_finished_request(caching=True):
    """6 blocks of 2; A holds 5 tokens [1..5] in blocks 0,1,2 and finishes.

    Blocks 0 and 1 are full (hashed when caching), block 2 holds one token.
    """
    pool = BlockPool(6, 2, caching)
    kv = KVCacheManager(pool)
    assert kv.allocate_slots("A", [1, 2, 3, 4, 5], 5)
    assert kv.block_table("A") == [0, 1, 2]
    kv.free("A")
    return pool, kv


def test_freed_hashed_blocks_go_to_tail_last_first_unhashed_to_head():
    pool, kv = _pool_with_finished_request()
    # Reversed table = [2, 1, 0]: unhashed 2 to the head; hashed 1 then 0 to the tail,
    # so A's last full block (1) is evicted before its first (0).
    assert pool.free_queue() == [2, 3, 4, 5, 1, 0]
    assert pool.block_hash(1) is not None and pool.block_hash(2) is None


def test_caching_off_every_freed_block_to_head_last_block_first():
    pool, kv = _pool_with_finished_request(caching=False)
    assert pool.free_queue() == [2, 1, 0, 3, 4, 5]
    assert all(pool.block_hash(b) is None for b in range(6))


def test_cache_hit_takes_block_out_of_free_queue():
    pool, kv = _pool_with_finished_request()
    hits, tokens = kv.lookup([1, 2, 3, 4, 7])
    assert (hits, tokens) == ([0, 1], 4)
    assert pool.free_queue() == [2, 3, 4, 5, 1, 0]  # lookup is pure (C1)
    assert kv.allocate_slots("B", [1, 2, 3, 4, 7], 5, hits)
    # B = hits 0,1 + one new block from the head (2, unhashed: no eviction).
    assert kv.block_table("B") == [0, 1, 2]
    assert pool.free_queue() == [3, 4, 5]
    assert pool.ref_count(0) == pool.ref_count(1) == 1
    pool.check_invariants(kv.tables().values())


def test_touch_on_a_block_in_use_only_counts():
    pool = BlockPool(3, 2, True)
    [b] = pool.get_new_blocks(1)
    pool.touch([b])
    assert pool.ref_count(b) == 2 and pool.free_queue() == [1, 2]


def test_handed_out_cached_block_loses_its_hash():
    pool, kv = _pool_with_finished_request()
    h1 = pool.block_hash(1)
    got = pool.get_new_blocks(5)  # 2,3,4,5 then 1 (which still had A's hash)
    assert got == [2, 3, 4, 5, 1]
    assert pool.block_hash(1) is None and pool.get_cached_block(h1) is None
    assert pool.num_evictions == 1 and pool.block_hash(0) is not None
    # The chain is broken at block 1, so a lookup hits only block 0.
    assert kv.lookup([1, 2, 3, 4, 5]) == ([0], 2)


def test_fully_cached_two_block_prompt_computes_second_block_again():
    pool = BlockPool(8, 4, True)
    kv = KVCacheManager(pool)
    prompt = list(range(10, 18))  # exactly two blocks of 4
    assert kv.allocate_slots("A", prompt, 8)
    assert kv.block_table("A") == [0, 1]
    kv.free("A")  # queue: 2..7, then 1, 0 at the tail
    # Both blocks are cached, but the hit is capped at 8-1 = 7 tokens -> 1 block (C2).
    hits, tokens = kv.lookup(prompt)
    assert (hits, tokens) == ([0], 4)
    assert kv.blocks_needed("B", 8, hits) == 2  # 1 new + 1 evictable hit (D1)
    assert kv.allocate_slots("B", prompt, 8, hits)
    assert kv.block_table("B") == [0, 2]  # second block recomputed into a new block
    # No de-duplication (E3): blocks 1 and 2 both carry the second block's hash;
    # a lookup still returns the first inserted (C3).
    h = pool.block_hash(2)
    assert h == pool.block_hash(1) and pool.get_cached_block(h) == 1
    pool.check_invariants(kv.tables().values())
    assert pool.free_queue() == [3, 4, 5, 6, 7, 1]


def test_duplicate_entry_survives_eviction_of_the_first():
    pool = BlockPool(3, 2, True)
    kv = KVCacheManager(pool)
    kv.allocate_slots("A", [1, 2], 2)  # block 0, hashed
    kv.free("A")  # queue [1, 2, 0]
    kv.allocate_slots("B", [1, 2], 2, [])  # no hit (cap 1 token): new block 1, same hash
    h = pool.block_hash(1)
    assert pool.get_cached_block(h) == 0
    pool.get_new_blocks(2)  # 2, then 0: block 0's entry is evicted, block 1's stays
    assert pool.get_cached_block(h) == 1


def test_failed_allocation_changes_nothing_and_counts_evictable_hits():
    # The D1 example in miniature: a resume needs 1 new block plus 1 free cached hit.
    pool = BlockPool(4, 2, True)
    kv = KVCacheManager(pool)
    assert kv.allocate_slots("A", [1, 2, 3, 4], 4)  # blocks 0, 1 (both hashed)
    kv.free("A")  # queue [2, 3, 1, 0]
    assert kv.allocate_slots("X", [9, 9, 9, 9, 9], 5)  # takes 2, 3, 1 (evicts 1)
    hits, _ = kv.lookup([1, 2, 3, 4, 5])
    assert hits == [0]
    assert pool.num_free_blocks == 1
    assert kv.blocks_needed("A", 5, hits) == 3  # 2 new + evictable block 0
    before = (pool.free_queue(), pool.ref_count(0), pool.num_allocations)
    assert not kv.allocate_slots("A", [1, 2, 3, 4, 5], 5, hits)
    assert (pool.free_queue(), pool.ref_count(0), pool.num_allocations) == before
    assert kv.block_table("A") == []


def test_generated_tokens_cached_when_their_block_fills():
    pool = BlockPool(4, 2, True)
    kv = KVCacheManager(pool)
    tokens = [1, 2, 3]
    kv.allocate_slots("A", tokens, 3)
    assert kv.num_cached_blocks("A") == 1
    tokens.append(4)  # a generated token fills block 1: hashed and cached at once (B1, D5)
    kv.allocate_slots("A", tokens, 4)
    assert kv.num_cached_blocks("A") == 2
    assert pool.get_cached_block(hash_full_blocks(tokens, 2)[1]) == kv.block_table("A")[1]


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
    pool = BlockPool(3, 2, False)
    kv = KVCacheManager(pool)
    kv.allocate_slots("A", [1, 2, 3], 3)
    pool.check_invariants(kv.tables().values())
    with pytest.raises(AssertionError):
        pool.check_invariants([[0]])  # block 1 is held but no table says so


# --- property: random allocate / grow / free against one pool ------------------------

ops = st.lists(st.tuples(st.sampled_from("agf"), st.integers(0, 3), st.integers(1, 9)),
               max_size=60)


@settings(max_examples=80, deadline=None)
@given(ops=ops, caching=st.booleans(), num_gpu_blocks=st.integers(1, 10),
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
            for i, h in enumerate(hash_full_blocks(seq, block_size) if caching else []):
                assert pool.block_hash(table[i]) == h


def test_known_hashes_are_used_instead_of_rehashing(monkeypatch):
    tokens = list(range(9))
    known = hash_full_blocks(tokens, 2)  # 4 full blocks
    pool = BlockPool(8, 2, True)
    kv = KVCacheManager(pool)
    kv.allocate_slots("A", tokens, 9)
    calls = []
    real = bp.hash_block
    monkeypatch.setattr(bp, "hash_block", lambda p, t: calls.append(1) or real(p, t))
    assert kv.lookup(tokens, known) == kv.lookup(tokens[:8] + [99], known) == ([0, 1, 2, 3], 8)
    assert kv.allocate_slots("B", tokens, 9, [0, 1, 2, 3], known)
    assert calls == []  # every hash came from `known`
    assert kv.request_hashes("B") == known and kv.block_table("B") == [0, 1, 2, 3, 5]
