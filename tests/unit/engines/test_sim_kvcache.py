"""Tests of the simulated engine's paged KV cache, prefix cache, and the core's use of them."""

from __future__ import annotations

import pytest

from raybench.engines.sim import EngineCore, KvCache, SimConfig, block_hashes
from raybench.engines.sim.kvcache import BlockTable


def test_block_hashes_cover_full_blocks_and_chain_the_prefix() -> None:
    a = block_hashes(["x", "y", "z", "w", "v"], 2)
    assert len(a) == 2  # the 5th token does not fill a block
    assert block_hashes(["x", "y", "z", "w"], 2) == a
    changed_first = block_hashes(["q", "y", "z", "w"], 2)
    assert changed_first[0] != a[0] and changed_first[1] != a[1]  # same 2nd block, different prefix
    assert block_hashes([1, 2, 3, 4], 2) != block_hashes([1, 2, 3, 5], 2)


def test_released_blocks_stay_cached_until_evicted_least_recent_first() -> None:
    kv = KvCache(4, 2, prefix_caching=True)
    first, second = BlockTable(), BlockTable()
    h1, h2 = block_hashes(list(range(4)), 2), block_hashes(list(range(10, 14)), 2)
    for table, hashes in ((first, h1), (second, h2)):
        assert kv.allocate(table, 2)
        kv.seal(table, hashes)
    assert (kv.used_blocks, kv.usage) == (4, 1.0)
    kv.release(first)
    kv.release(second)
    assert (kv.used_blocks, kv.cached_prefix_blocks(h1), kv.cached_prefix_blocks(h2)) == (0, 2, 2)
    assert kv.allocate(BlockTable(), 1)  # evicts the least recently freed: first's tail block
    assert (kv.cached_prefix_blocks(h1), kv.cached_prefix_blocks(h2)) == (1, 2)
    assert not kv.allocate(BlockTable(), 4)


def test_shared_blocks_are_counted_once() -> None:
    kv = KvCache(8, 2, prefix_caching=True)
    hashes = block_hashes(list(range(6)), 2)
    owner, sharer = BlockTable(), BlockTable()
    kv.allocate(owner, 3)
    kv.seal(owner, hashes)
    kv.acquire(sharer, hashes[: kv.cached_prefix_blocks(hashes)])
    assert kv.used_blocks == 3 and sharer.num_blocks == 3
    kv.release(owner)
    assert kv.used_blocks == 3  # still held by the sharer
    kv.release(sharer)
    assert kv.used_blocks == 0


def test_without_prefix_caching_nothing_is_shared() -> None:
    kv = KvCache(8, 2, prefix_caching=False)
    table = BlockTable()
    kv.allocate(table, 2)
    kv.seal(table, block_hashes(list(range(4)), 2))
    kv.release(table)
    assert kv.cached_prefix_blocks(block_hashes(list(range(4)), 2)) == 0


def test_core_counts_prefix_queries_and_hits_in_tokens() -> None:
    core = EngineCore(SimConfig(kv_cache_tokens=4096, block_size=4).resolve())
    prompt = [f"w{i}" for i in range(10)]
    for _ in range(2):
        core.add(core.new_sequence(prompt, 1))
        core.plan()
        core.complete()
    stats = core.stats()
    assert (stats.prefix_queries_tokens, stats.prefix_hits_tokens) == (20, 8)
    assert stats.requests_finished == 2 and stats.kv_usage == 0.0


def test_chunked_prefill_splits_a_long_prompt_over_iterations() -> None:
    core = EngineCore(SimConfig(max_num_batched_tokens=256, kv_cache_tokens=1 << 16).resolve())
    core.add(core.new_sequence(1000, 2))
    shapes = []
    while core.has_work:
        shapes.append(core.plan())
        core.complete()
    assert [s.new_tokens for s in shapes] == [256, 256, 256, 232, 1]
    assert [s.context_tokens for s in shapes] == [0, 256, 512, 768, 1000]


def test_without_chunked_prefill_a_prompt_waits_until_it_fits_whole() -> None:
    core = EngineCore(SimConfig(max_num_batched_tokens=256, enable_chunked_prefill=False).resolve())
    core.add(core.new_sequence(100, 2))
    core.add(core.new_sequence(200, 1))
    assert core.plan().new_tokens == 100  # 200 more would overflow the budget: not split, deferred
    core.complete()
    assert core.plan().new_tokens == 1 + 200
    with pytest.raises(ValueError, match="must fit max_num_batched_tokens"):
        core.new_sequence(300, 1)
