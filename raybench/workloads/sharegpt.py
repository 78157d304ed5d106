"""ShareGPT conversations as prompts: first human turn in, the reply's length out; filtered and seeded."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from raybench.config.workload import ShareGPTWorkloadSpec
from raybench.errors import ConfigError, Problem
from raybench.results.store import ResultStore
from raybench.workloads.base import Prompt, fingerprint_text, register_source
from raybench.workloads.lengths import sample_length
from raybench.workloads.tokenizer import TokenCounter

__all__ = ["LoadReport", "ShareGPTSource", "parse_conversations"]

_HUMAN = {"human", "user"}
_ASSISTANT = {"gpt", "assistant", "chatgpt", "bard", "model"}


@dataclass(frozen=True)
class LoadReport:
    """What loading a dataset found: entries read, malformed ones, and those the filters dropped."""

    entries: int
    malformed: int
    filtered_out: int
    kept: int


def parse_conversations(raw: bytes, path: str) -> tuple[list[Any], int]:
    """Entries of a ShareGPT file: a JSON list, or JSON Lines; returns (entries, malformed lines)."""
    text = raw.decode("utf-8", errors="replace").strip()
    if text.startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError("workload", [Problem("workload.path", f"{path} is not valid JSON: {exc}")]) from None
        return list(data), 0
    entries: list[Any] = []
    malformed = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except ValueError:
            malformed += 1
    return entries, malformed


def _pair(entry: Any) -> tuple[str, str] | None:
    turns = entry.get("conversations") if isinstance(entry, dict) else None
    if not isinstance(turns, list) or len(turns) < 2:
        return None
    first, second = turns[0], turns[1]
    if not (isinstance(first, dict) and isinstance(second, dict)):
        return None
    if first.get("from") not in _HUMAN or second.get("from") not in _ASSISTANT:
        return None
    prompt, reply = first.get("value"), second.get("value")
    if not isinstance(prompt, str) or not isinstance(reply, str) or not prompt.strip():
        return None
    return prompt, reply


@register_source("sharegpt")
class ShareGPTSource:
    """The filtered conversations in a seeded order; prompt `i` is conversation `order[i % n]`."""

    kind = "sharegpt"

    def __init__(self, spec: ShareGPTWorkloadSpec, counter: TokenCounter) -> None:
        self.spec = spec
        self.counter = counter
        raw = _read(spec.path)
        entries, malformed = parse_conversations(raw, spec.path)
        kept, bad, dropped = self._select(entries)
        malformed += bad
        if malformed and spec.on_malformed == "fail":
            msg = f"{malformed} malformed entries in {spec.path}; fix them or set on_malformed: skip"
            raise ConfigError("workload", [Problem("workload.path", msg)])
        if not kept:
            msg = (
                f"no conversation of {spec.path} passes the filters (ISL {spec.min_isl}..{spec.max_isl}, "
                f"OSL {spec.min_osl}..{spec.max_osl}; {len(entries)} entries, {malformed} malformed); widen them"
            )
            raise ConfigError("workload", [Problem("workload", msg)])
        order = np.random.default_rng(spec.seed).permutation(len(kept))
        if spec.max_prompts is not None:
            order = order[: spec.max_prompts]
        self._items = [kept[i] for i in order]
        self.report = LoadReport(len(entries), malformed, dropped, len(self._items))

    def _select(self, entries: list[Any]) -> tuple[list[tuple[str, int, int]], int, int]:
        kept: list[tuple[str, int, int]] = []
        malformed = dropped = 0
        s = self.spec
        for entry in entries:
            pair = _pair(entry)
            if pair is None:
                malformed += 1
                continue
            isl = self.counter.count_chat(pair[0]) if s.api == "chat" else self.counter.count(pair[0])
            osl = self.counter.count(pair[1])
            if s.min_isl <= isl <= s.max_isl and s.min_osl <= osl <= s.max_osl:
                kept.append((pair[0], isl, osl))
            else:
                dropped += 1
        return kept, malformed, dropped

    def prompt(self, index: int) -> Prompt:
        text, isl, osl = self._items[index % len(self._items)]
        if self.spec.osl is not None:
            osl = sample_length(self.spec.osl, np.random.default_rng([self.spec.seed, index]))
        return Prompt(index=index, text=text, input_tokens=isl, output_tokens=osl, fingerprint=fingerprint_text(text))

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "spec": self.spec.model_dump(mode="json"), "loaded": self.report.__dict__}


def _read(path: str) -> bytes:
    uri = path if "://" in path else None
    if uri is None:
        from pathlib import Path

        file = Path(path).expanduser()
        if not file.is_file():
            raise ConfigError("workload", [Problem("workload.path", f"no dataset file at {path!r}")])
        return file.read_bytes()
    parent, _, name = uri.rstrip("/").rpartition("/")
    try:
        return ResultStore(parent).read_bytes(name)
    except Exception as exc:
        raise ConfigError("workload", [Problem("workload.path", f"cannot read {uri}: {exc}")]) from None
