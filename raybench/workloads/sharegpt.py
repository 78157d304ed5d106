"""ShareGPT conversations as prompts: first human turn in, the reply's length out; filtered and seeded."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from raybench.config.workload import ShareGPTWorkloadSpec
from raybench.errors import ConfigError, Problem
from raybench.results.store import ResultStore
from raybench.workloads.base import Prompt, fingerprint_text, register_source
from raybench.workloads.lengths import sample_length
from raybench.workloads.prepare import Prepared, cache_key, cached, prepare_rows, read_dataset
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

    uses_cache = True  # source_for hands it the run's workload cache (raybench.workloads.prepare)

    def __init__(self, spec: ShareGPTWorkloadSpec, counter: TokenCounter, cache: ResultStore | None = None) -> None:
        self.spec = spec
        self.counter = counter
        prepared = self._prepare(cache)
        entries, malformed = prepared.report.lines, prepared.report.malformed
        kept = list(zip(*(prepared.table.column(c).to_pylist() for c in ("text", "isl", "osl"))))
        dropped = prepared.report.filtered_out
        self._preparation = {"method": prepared.report.method, "cache_key": prepared.report.cache_key}
        if malformed and spec.on_malformed == "fail":
            msg = f"{malformed} malformed entries in {spec.path}; fix them or set on_malformed: skip"
            raise ConfigError("workload", [Problem("workload.path", msg)])
        if not kept:
            msg = (
                f"no conversation of {spec.path} passes the filters (ISL {spec.min_isl}..{spec.max_isl}, "
                f"OSL {spec.min_osl}..{spec.max_osl}; {entries} entries, {malformed} malformed); widen them"
            )
            raise ConfigError("workload", [Problem("workload", msg)])
        order = np.random.default_rng(spec.seed).permutation(len(kept))
        if spec.max_prompts is not None:
            order = order[: spec.max_prompts]
        self._items = [kept[i] for i in order]
        self.report = LoadReport(entries, malformed, dropped, len(self._items))

    def _prepare(self, cache: ResultStore | None) -> Prepared:
        """The conversations that pass the filters, in file order: from the cache, or tokenized now."""
        s = self.spec
        raw = read_dataset(s.path)
        params = {"api": s.api, "isl": [s.min_isl, s.max_isl], "osl": [s.min_osl, s.max_osl]}
        key = cache_key("sharegpt", raw, params, self.counter.identity)
        hit = cached(cache, key)
        if hit is not None:
            return hit
        entries, malformed = parse_conversations(raw, s.path)
        pairs = [_pair(entry) for entry in entries]
        rows = [{"line": i, "text": p[0], "reply": p[1]} for i, p in enumerate(pairs) if p is not None]
        table = pa.Table.from_pylist(rows, schema=_ROWS)
        bad = malformed + sum(p is None for p in pairs)
        return prepare_rows(table, _Tokenize(self.counter, s), key=key, lines=len(entries), malformed=bad,
                            ray_data_min_rows=s.ray_data_min_rows, cache=cache)  # fmt: skip

    def prompt(self, index: int) -> Prompt:
        text, isl, osl = self._items[index % len(self._items)]
        if self.spec.osl is not None:
            osl = sample_length(self.spec.osl, np.random.default_rng([self.spec.seed, index]))
        return Prompt(index=index, text=text, input_tokens=isl, output_tokens=osl, fingerprint=fingerprint_text(text))

    def describe(self) -> dict[str, Any]:
        spec = self.spec.model_dump(mode="json", exclude={"ray_data_min_rows"})  # how, not what: same prompts
        return {"kind": self.kind, "spec": spec, "loaded": self.report.__dict__}

    def preparation(self) -> dict[str, Any]:
        """How the dataset was prepared this time (`local`, `ray_data` or `cache`) and its cache key."""
        return dict(self._preparation)


_ROWS = pa.schema([("line", pa.int64()), ("text", pa.string()), ("reply", pa.string())])


class _Tokenize:
    """The batch step of preparation: prompt and reply token counts, and whether the ISL/OSL filters keep it."""

    def __init__(self, counter: TokenCounter, spec: ShareGPTWorkloadSpec) -> None:
        self.counter, self.spec = counter, spec

    def __call__(self, batch: pa.Table) -> pa.Table:
        s = self.spec
        count_prompt = self.counter.count_chat if s.api == "chat" else self.counter.count
        isl = [count_prompt(t) for t in batch.column("text").to_pylist()]
        osl = [self.counter.count(r) for r in batch.column("reply").to_pylist()]
        keep = [s.min_isl <= i <= s.max_isl and s.min_osl <= o <= s.max_osl for i, o in zip(isl, osl)]
        return pa.table({"line": batch.column("line"), "text": batch.column("text"), "isl": pa.array(isl, pa.int64()),
                         "osl": pa.array(osl, pa.int64()), "keep": pa.array(keep, pa.bool_())})  # fmt: skip
