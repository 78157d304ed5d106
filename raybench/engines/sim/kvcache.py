"""The paged KV cache: fixed-size blocks, per-sequence block tables, and a prefix cache with LRU.

A full block of prompt tokens is identified by a chain hash of every token up to its end, so two
prompts share a cached block only when all tokens before it match too. Blocks no sequence holds
any more stay cached (evictable, least recently freed first) until space is needed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["BlockTable", "KvCache", "block_hashes"]

Token = str | int


def block_hashes(tokens: Sequence[Token], block_size: int) -> list[int]:
    """Chain hashes of the full blocks of `tokens`: hash i covers tokens[0 : (i+1) * block_size]."""
    hashes: list[int] = []
    previous = 0
    for start in range(0, len(tokens) - block_size + 1, block_size):
        previous = hash((previous, tuple(tokens[start : start + block_size])))
        hashes.append(previous)
    return hashes


@dataclass
class BlockTable:
    """The blocks one sequence holds: shared (hashed, prefix-cacheable) ones first, then private."""

    hashed: list[int] = field(default_factory=list)
    private: int = 0

    @property
    def num_blocks(self) -> int:
        return len(self.hashed) + self.private


class KvCache:
    """Block accounting for one engine instance; `usage` is the fraction of blocks held by sequences."""

    def __init__(self, num_blocks: int, block_size: int, *, prefix_caching: bool) -> None:
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"need num_blocks >= 1 and block_size >= 1, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.prefix_caching = prefix_caching
        self._refs: dict[int, int] = {}  # hashed block -> sequences holding it (>= 1)
        self._evictable: OrderedDict[int, None] = OrderedDict()  # cached, held by none; LRU first
        self._private = 0
        self.queries_tokens = 0
        self.hits_tokens = 0

    @property
    def used_blocks(self) -> int:
        return len(self._refs) + self._private

    @property
    def free_blocks(self) -> int:
        """Blocks an allocation may take (evicting cached ones if it must)."""
        return self.num_blocks - self.used_blocks

    @property
    def usage(self) -> float:
        return self.used_blocks / self.num_blocks

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def cached_prefix_blocks(self, hashes: Sequence[int]) -> int:
        """How many leading blocks of `hashes` are cached (held or evictable)."""
        if not self.prefix_caching:
            return 0
        hit = 0
        for h in hashes:
            if h not in self._refs and h not in self._evictable:
                break
            hit += 1
        return hit

    def evictable_among(self, hashes: Sequence[int]) -> int:
        """How many of `hashes` sit unheld in the cache (acquiring them takes free blocks)."""
        return sum(1 for h in hashes if h in self._evictable)

    def record_query(self, query_tokens: int, hit_blocks: int) -> None:
        """Count one prefix-cache lookup of `query_tokens` that hit `hit_blocks` blocks."""
        self.queries_tokens += query_tokens
        self.hits_tokens += hit_blocks * self.block_size

    def acquire(self, table: BlockTable, hashes: Sequence[int]) -> None:
        """Let `table` share the cached blocks `hashes` (all cached: see `cached_prefix_blocks`)."""
        for h in hashes:
            self._evictable.pop(h, None)
            self._refs[h] = self._refs.get(h, 0) + 1
            table.hashed.append(h)

    def allocate(self, table: BlockTable, blocks: int) -> bool:
        """Give `table` `blocks` new private blocks, evicting cached ones LRU; False if they don't fit."""
        if blocks > self.free_blocks:
            return False
        shortfall = blocks - (self.free_blocks - len(self._evictable))
        for _ in range(max(shortfall, 0)):
            self._evictable.popitem(last=False)
        self._private += blocks
        table.private += blocks
        return True

    def seal(self, table: BlockTable, hashes: Sequence[int]) -> None:
        """Private blocks of `table` that are now full of prompt tokens become cacheable as `hashes`."""
        if not self.prefix_caching:
            return
        for h in hashes[len(table.hashed) :]:
            if table.private == 0:
                return
            table.private -= 1
            self._private -= 1
            self.acquire(table, [h])

    def release(self, table: BlockTable) -> None:
        """Free every block of `table`; its cacheable blocks stay cached, tail blocks evicted first."""
        for h in reversed(table.hashed):
            refs = self._refs[h] - 1
            if refs:
                self._refs[h] = refs
            else:
                del self._refs[h]
                self._evictable[h] = None
        self._private -= table.private
        table.hashed.clear()
        table.private = 0
