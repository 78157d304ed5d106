"""Multi-turn sessions: turns whose history grows, deterministic reference replies, think time between turns.

Turn k of a session sends the whole conversation so far: the system prompt (when set), every earlier
user message with the assistant reply that followed it, and a new user message. For chat endpoints that
is a messages list; for completions, its rendered transcript (`Prompt.text` in both cases, which the
fingerprint hashes).

The assistant turns kept in the history are reference replies generated from the seed, with exactly the
output length asked for in that turn, never the text the engine under test returned. The workload is a
constant of the protocol: with the engine's own replies every engine would receive different prompts
(different lengths, different prefix-cache hits) from turn 2 on, and a comparison would no longer hold
the input fixed. Reference replies keep every turn of every session identical across engines, runs and
generators, while the growing history still exercises what multi-turn load is about (long, shared
prefixes and the think-time gaps between a session's requests).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

import numpy as np

from raybench.config.workload import MultiTurnWorkloadSpec, ThinkTimeSpec
from raybench.workloads.base import Prompt, fingerprint_text, register_source
from raybench.workloads.lengths import sample_length
from raybench.workloads.tokenizer import TokenCounter

__all__ = ["MultiTurnSource", "Session", "render_transcript", "sample_think_ns"]

_PLAN, _TEXT, _SYSTEM = 3, 4, 5  # rng streams: a session's lengths, its texts, the shared system prompt


@dataclass(frozen=True)
class Session:
    """One session: its turns in order, and the think time before each (0 before the first)."""

    session_id: str
    turns: tuple[Prompt, ...]
    think_ns: tuple[int, ...]


def sample_think_ns(spec: ThinkTimeSpec, rng: np.random.Generator) -> int:
    """One think time in ns, clipped to [min_s, max_s]."""
    if spec.distribution == "fixed":
        value = spec.mean_s
    elif spec.distribution == "uniform":
        value = float(rng.uniform(spec.min_s, spec.max_s or spec.min_s))
    else:
        value = float(rng.exponential(spec.mean_s))
    upper = spec.max_s if spec.max_s is not None else float("inf")
    return round(min(max(value, spec.min_s), upper) * 1e9)


def render_transcript(messages: tuple[tuple[str, str], ...]) -> str:
    """The completions form of a chat: each turn's transcript extends the previous one plus its reply."""
    parts = []
    for role, content in messages:
        if role == "system":
            parts.append(f"{content}\n\n")
        elif role == "user":
            parts.append(f"User: {content}\n\nAssistant:")
        else:
            parts.append(f" {content}\n\n")
    return "".join(parts)


@register_source("multi_turn")
class MultiTurnSource:
    """Session `s` depends only on (seed, s); `prompt(i)` numbers every turn of sessions 0, 1, 2, ... in order."""

    kind = "multi_turn"

    def __init__(self, spec: MultiTurnWorkloadSpec, counter: TokenCounter) -> None:
        self.spec = spec
        self.counter = counter
        self._starts = [0]  # prompt number of each session's first turn, grown on demand by prompt()
        self._last: Session | None = None
        system_rng = np.random.default_rng([spec.seed, _SYSTEM])
        self._system = counter.make_text(system_rng, spec.system_tokens, lead="sys") if spec.system_tokens else ""

    def _plan(self, index: int) -> tuple[list[int], list[int], list[int]]:
        """(user message tokens, output tokens, think ns) per turn of session `index`."""
        rng = np.random.default_rng([self.spec.seed, _PLAN, index])
        turns = sample_length(self.spec.turns, rng)
        users = [sample_length(self.spec.user_tokens, rng) for _ in range(turns)]
        outputs = [sample_length(self.spec.osl, rng) for _ in range(turns)]
        think = [0] + [sample_think_ns(self.spec.think_time, rng) for _ in range(turns - 1)]
        return users, outputs, think

    def session(self, index: int) -> Session:
        """Every turn of session `index`, each prompt carrying the history so far."""
        users, outputs, think = self._plan(index)
        rng = np.random.default_rng([self.spec.seed, _TEXT, index])
        session_id = f"s{index}"
        history: tuple[tuple[str, str], ...] = (("system", self._system),) if self._system else ()
        turns: list[Prompt] = []
        for turn, (user_tokens, output_tokens) in enumerate(zip(users, outputs)):
            history = (*history, ("user", self.counter.make_text(rng, user_tokens, lead=f"{session_id}t{turn}")))
            turns.append(self._prompt(len(turns), history, output_tokens, session_id, turn))
            history = (*history, ("assistant", self.counter.make_text(rng, output_tokens)))
        return Session(session_id, tuple(turns), tuple(think))

    def _prompt(
        self, number: int, messages: tuple[tuple[str, str], ...], output_tokens: int, session_id: str, turn: int
    ) -> Prompt:
        text = render_transcript(messages)
        if self.spec.api == "chat":
            tokens = self.counter.count_messages([{"role": r, "content": c} for r, c in messages])
        else:
            tokens = self.counter.count(text)
        return Prompt(
            index=number, text=text, input_tokens=tokens, output_tokens=output_tokens,
            fingerprint=fingerprint_text(text), messages=messages, session_id=session_id, turn=turn,
        )  # fmt: skip

    def prompt(self, index: int) -> Prompt:
        """Turn number `index` counting every turn of sessions 0, 1, 2, ... (previews and fingerprints)."""
        while self._starts[-1] <= index:
            users, _, _ = self._plan(len(self._starts) - 1)
            self._starts.append(self._starts[-1] + len(users))
        number = bisect_right(self._starts, index) - 1
        if self._last is None or self._last.session_id != f"s{number}":  # a preview walks one session at a time
            self._last = self.session(number)
        turn = self._last.turns[index - self._starts[number]]
        return Prompt(
            index=index, text=turn.text, input_tokens=turn.input_tokens, output_tokens=turn.output_tokens,
            fingerprint=turn.fingerprint, messages=turn.messages, session_id=turn.session_id, turn=turn.turn,
        )  # fmt: skip

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "spec": self.spec.model_dump(mode="json"),
            "version": "multi-turn-v1",
            "history": "reference replies of the requested length, from the seed (not the engine's text)",
        }
