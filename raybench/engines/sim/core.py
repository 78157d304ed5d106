"""The engine core: which tokens of which sequences each iteration computes (no clock, no asyncio).

Like vLLM's V1 scheduler, every sequence has `num_tokens` (prompt plus generated) and
`computed` (tokens already in its KV cache); an iteration schedules up to `num_tokens - computed`
tokens per sequence within a token budget (chunked prefill), running sequences first, then
waiting ones while slots, budget and KV blocks last. When a running sequence needs a block and
none is free, the newest running sequence is preempted (its blocks freed; it recomputes later).
A sequence whose computed tokens reach `num_tokens` samples one token at the iteration's end.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from raybench.engines.sim.config import Resolved
from raybench.engines.sim.cost import BatchShape
from raybench.engines.sim.kvcache import BlockTable, KvCache, Token, block_hashes

__all__ = ["CoreStats", "EngineCore", "SeqState", "Sequence_"]

_LPM_WINDOW = 32  # waiting sequences the longest-prefix-match policy looks at


class SeqState(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"


@dataclass(eq=False)
class Sequence_:  # noqa: N801 - `Sequence` is taken by collections.abc
    """One request inside the engine."""

    prompt_len: int
    max_tokens: int
    hashes: list[int] = field(default_factory=list)  # chain hashes of the prompt's full blocks
    precomputed: bool = False  # its prompt's KV arrives with it (disaggregated decode)
    generated: int = 0
    computed: int = 0
    cached_tokens: int = 0
    scheduled: int = 0
    state: SeqState = SeqState.WAITING
    table: BlockTable = field(default_factory=BlockTable)

    @property
    def num_tokens(self) -> int:
        return self.prompt_len + self.generated


@dataclass(frozen=True)
class CoreStats:
    """Gauges and counters of one engine core (counters only grow)."""

    running: int
    waiting: int
    kv_usage: float
    kv_blocks: int
    prompt_tokens_total: int
    generation_tokens_total: int
    iterations: int
    requests_finished: int
    requests_cancelled: int
    preemptions: int
    prefix_queries_tokens: int
    prefix_hits_tokens: int
    peak_running: int = 0  # the largest batch since start
    peak_waiting: int = 0
    peak_kv_usage: float = 0.0


@dataclass
class _Counters:
    prompt_tokens: int = 0
    generation_tokens: int = 0
    iterations: int = 0
    finished: int = 0
    cancelled: int = 0
    preemptions: int = 0
    peak_running: int = 0
    peak_waiting: int = 0
    peak_kv_usage: float = 0.0


class EngineCore:
    """Waiting queue, running batch and KV cache of one engine instance (one TP group)."""

    def __init__(self, resolved: Resolved) -> None:
        self.limits = resolved
        blocks = resolved.kv_cache_tokens // resolved.block_size
        self.kv = KvCache(blocks, resolved.block_size, prefix_caching=resolved.enable_prefix_caching)
        self.waiting: deque[Sequence_] = deque()
        self.running: list[Sequence_] = []
        self._n = _Counters()

    def new_sequence(self, prompt: Sequence[Token] | int, max_tokens: int, *, precomputed: bool = False) -> Sequence_:
        """A sequence for `prompt` (its tokens, or only a length: then never prefix-cached)."""
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        length = prompt if isinstance(prompt, int) else len(prompt)
        if length < 0:
            raise ValueError(f"prompt_tokens must be >= 0, got {length}")
        if self.kv.blocks_for(length + max_tokens) > self.kv.num_blocks:
            raise ValueError(
                f"prompt ({length} tokens) + max_tokens ({max_tokens}) exceed the KV cache "
                f"({self.kv.num_blocks * self.kv.block_size} tokens); send a shorter request"
            )
        if not self.limits.enable_chunked_prefill and length + max_tokens > self.limits.max_num_batched_tokens:
            raise ValueError(
                f"without chunked prefill a request must fit max_num_batched_tokens "
                f"({self.limits.max_num_batched_tokens}); this one has {length + max_tokens} tokens"
            )
        cacheable = self.kv.prefix_caching and not isinstance(prompt, int)
        hashes = block_hashes(prompt, self.kv.block_size) if not isinstance(prompt, int) and cacheable else []
        return Sequence_(prompt_len=length, max_tokens=max_tokens, hashes=hashes, precomputed=precomputed)

    def add(self, seq: Sequence_) -> None:
        self.waiting.append(seq)

    def cancel(self, seq: Sequence_) -> None:
        if seq.state is SeqState.WAITING:
            self.waiting.remove(seq)
        elif seq.state is SeqState.RUNNING:
            self.running.remove(seq)
            self.kv.release(seq.table)
        else:
            return
        seq.state = SeqState.CANCELLED
        self._n.cancelled += 1

    @property
    def has_work(self) -> bool:
        return bool(self.running or self.waiting)

    def plan(self) -> BatchShape:
        """Choose this iteration's tokens (setting each sequence's `scheduled`); the batch's shape."""
        budget = self.limits.max_num_batched_tokens
        shape = BatchShape()
        preempted = False
        for seq in list(self.running):
            if seq.state is not SeqState.RUNNING or budget == 0:
                continue
            n = min(seq.num_tokens - seq.computed, budget)
            while not self._grow(seq, n):
                preempted = True
                self._preempt(self.running[-1])
                if seq.state is not SeqState.RUNNING:
                    break
            if seq.state is SeqState.RUNNING:
                seq.scheduled = n
                budget -= n
                shape = shape.plus(n, seq.computed, decoding=seq.generated > 0 and n == 1)
        if not preempted:
            shape = self._admit(budget, shape)
        self._track_peaks()
        return shape

    def _track_peaks(self) -> None:
        n = self._n
        n.peak_running = max(n.peak_running, len(self.running))
        n.peak_waiting = max(n.peak_waiting, len(self.waiting))
        n.peak_kv_usage = max(n.peak_kv_usage, self.kv.usage)

    def complete(self) -> list[tuple[Sequence_, int, bool]]:
        """End the planned iteration: (sequence, token index, finished) for every token sampled."""
        self._n.iterations += 1
        emitted: list[tuple[Sequence_, int, bool]] = []
        for seq in list(self.running):
            if seq.scheduled == 0:
                continue
            seq.computed += seq.scheduled
            seq.scheduled = 0
            self.kv.seal(seq.table, seq.hashes[: min(seq.computed, seq.prompt_len) // self.kv.block_size])
            if seq.computed < seq.num_tokens:
                continue  # a prefill chunk that is not the last
            if seq.generated == 0:
                self._n.prompt_tokens += seq.prompt_len
            emitted.append((seq, seq.generated, seq.generated + 1 >= seq.max_tokens))
            seq.generated += 1
            if seq.generated >= seq.max_tokens:
                self._finish(seq)
        self._n.generation_tokens += len(emitted)
        return emitted

    def stats(self) -> CoreStats:
        return CoreStats(
            running=len(self.running),
            waiting=len(self.waiting),
            kv_usage=self.kv.usage,
            kv_blocks=self.kv.num_blocks,
            prompt_tokens_total=self._n.prompt_tokens,
            generation_tokens_total=self._n.generation_tokens,
            iterations=self._n.iterations,
            requests_finished=self._n.finished,
            requests_cancelled=self._n.cancelled,
            preemptions=self._n.preemptions,
            prefix_queries_tokens=self.kv.queries_tokens,
            prefix_hits_tokens=self.kv.hits_tokens,
            peak_running=self._n.peak_running,
            peak_waiting=self._n.peak_waiting,
            peak_kv_usage=self._n.peak_kv_usage,
        )

    def _finish(self, seq: Sequence_) -> None:
        self.running.remove(seq)
        self.kv.release(seq.table)
        seq.state = SeqState.FINISHED
        self._n.finished += 1

    def _grow(self, seq: Sequence_, n: int) -> bool:
        need = self.kv.blocks_for(seq.computed + n) - seq.table.num_blocks
        return need <= 0 or self.kv.allocate(seq.table, need)

    def _preempt(self, seq: Sequence_) -> None:
        """Recompute-style preemption: free its blocks, put it first in the waiting queue."""
        self.running.remove(seq)
        self.kv.release(seq.table)
        seq.computed = 0
        seq.scheduled = 0
        seq.precomputed = False  # its transferred KV is gone: it recomputes like any other
        seq.state = SeqState.WAITING
        self.waiting.appendleft(seq)
        self._n.preemptions += 1

    def _admit(self, budget: int, shape: BatchShape) -> BatchShape:
        while self.waiting and budget > 0 and len(self.running) < self.limits.max_num_seqs:
            seq = self._next_waiting()
            n = self._try_start(seq, budget)
            if n == 0:
                break  # head-of-line: later requests wait too, as in vLLM
            self.waiting.remove(seq)
            seq.state = SeqState.RUNNING
            seq.scheduled = n
            self.running.append(seq)
            budget -= n
            shape = shape.plus(n, seq.computed, decoding=seq.precomputed)
        return shape

    def _next_waiting(self) -> Sequence_:
        if self.limits.profile.policy != "lpm" or not self.kv.prefix_caching:
            return self.waiting[0]
        window = [self.waiting[i] for i in range(min(len(self.waiting), _LPM_WINDOW))]
        return max(window, key=lambda s: self.kv.cached_prefix_blocks(s.hashes))

    def _try_start(self, seq: Sequence_, budget: int) -> int:
        """Reserve the blocks `seq` needs to start now; the tokens it computes this iteration (0: not now)."""
        if seq.precomputed:
            computed, hits = seq.num_tokens - 1, []
        else:
            hits = seq.hashes[: self.kv.cached_prefix_blocks(seq.hashes[: (seq.num_tokens - 1) // self.kv.block_size])]
            computed = len(hits) * self.kv.block_size
        remaining = seq.num_tokens - computed
        n = min(remaining, budget)
        if n < remaining and not self.limits.enable_chunked_prefill:
            return 0
        end = seq.prompt_len + seq.max_tokens if self.limits.profile.policy == "reserve" else computed + n
        need = self.kv.blocks_for(end) - len(hits)
        if need + self.kv.evictable_among(hits) > self.kv.free_blocks:
            return 0
        if not seq.precomputed:
            self.kv.record_query(seq.prompt_len, len(hits))
            if seq.generated == 0:
                seq.cached_tokens = computed
        self.kv.acquire(seq.table, hits)
        self.kv.allocate(seq.table, need)
        seq.computed = computed
        return n
