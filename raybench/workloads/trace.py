"""Request traces (JSON Lines) replayed open loop: each request at its trace instant, time-scaled to the step's rate.

One request per line, a JSON object:

- a timestamp: `timestamp_ms` (milliseconds) or `timestamp` (seconds, or milliseconds with
  `timestamp_unit: ms`). Absolute (epoch) or relative, it does not matter: instants are taken relative to
  the earliest one, so the first request goes at the step's start. Lines are replayed in time order
  (ties keep file order).
- the input: `input_tokens` (or `input_length`) — a prompt of exactly that many tokens is generated from
  the seed — or the prompt itself as `text` (or `prompt`), counted with the job's tokenizer.
- `output_tokens` (or `output_length`): the output length asked for.
- optional `session_id`: recorded with each request (and its `turn`, the request's position in its session).

Prompts generated from an input length differ from step to step (seeded by the step), so a replay at a
higher rate never hits the prefix cache filled by the previous step; prompts given as `text` are the
trace's own and repeat at every step, as the trace does.

Replay (`load.mode: rate`): request i is sent at `start + t_i / speed_up`, an absolute instant, where a
step at `rate_per_s` replays the trace at `speed_up = rate_per_s / natural rate` (the natural rate is the
trace's own mean: (requests - 1) / span), so the trace's burst shape is kept at every step's load. The
natural rate is in the preview and provenance; list it as the rate for a 1x replay. In `mode: concurrency`
the timestamps are ignored and the requests are sent closed loop in trace order.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from raybench.config.workload import TraceWorkloadSpec
from raybench.errors import ConfigError, Problem
from raybench.results.store import ResultStore
from raybench.workloads.base import Prompt, fingerprint_text, register_source
from raybench.workloads.prepare import Prepared, cache_key, cached, prepare_rows, read_dataset
from raybench.workloads.tokenizer import TokenCounter

__all__ = ["TraceSource", "parse_trace"]

_ROWS = pa.schema(
    [("line", pa.int64()), ("t_ns", pa.int64()), ("text", pa.string()), ("isl", pa.int64()),
     ("osl", pa.int64()), ("session", pa.string())]
)  # fmt: skip


def parse_trace(raw: bytes, unit: str) -> tuple[pa.Table, int, int]:
    """(rows, lines, malformed lines) of a JSONL trace; a line is malformed when a required field is missing."""
    rows: list[dict[str, Any]] = []
    lines = malformed = 0
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines()):
        if not line.strip():
            continue
        lines += 1
        row = _row(line, number, unit)
        if row is None:
            malformed += 1
        else:
            rows.append(row)
    return pa.Table.from_pylist(rows, schema=_ROWS), lines, malformed


def _row(line: str, number: int, unit: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    t_ns = _instant_ns(entry, unit)
    osl = _count(entry, "output_tokens", "output_length")
    text = entry.get("text", entry.get("prompt"))
    isl = _count(entry, "input_tokens", "input_length")
    if t_ns is None or osl is None or (isl is None and not (isinstance(text, str) and text.strip())):
        return None
    session = entry.get("session_id")
    return {"line": number, "t_ns": t_ns, "text": text if isinstance(text, str) and text.strip() else None,
            "isl": isl, "osl": osl, "session": None if session is None else str(session)}  # fmt: skip


def _instant_ns(entry: dict[str, Any], unit: str) -> int | None:
    if "timestamp_ms" in entry:
        value, scale = entry["timestamp_ms"], 1e6
    else:
        value, scale = entry.get("timestamp"), 1e6 if unit == "ms" else 1e9
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(value * scale)


def _count(entry: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = entry.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    return None


class _Tokenize:
    """The batch step of preparation: counts the tokens of lines given as text, marks lines the filters keep."""

    def __init__(self, counter: TokenCounter, api: str, max_isl: int | None, max_osl: int | None) -> None:
        self.counter, self.api, self.max_isl, self.max_osl = counter, api, max_isl, max_osl

    def __call__(self, batch: pa.Table) -> pa.Table:
        count = self.counter.count_chat if self.api == "chat" else self.counter.count
        texts, given = batch.column("text").to_pylist(), batch.column("isl").to_pylist()
        isl = [count(t) if t is not None else n for t, n in zip(texts, given)]
        osl = batch.column("osl").to_pylist()
        keep = [(self.max_isl is None or i <= self.max_isl) and (self.max_osl is None or o <= self.max_osl)
                for i, o in zip(isl, osl)]  # fmt: skip
        batch = batch.set_column(batch.schema.get_field_index("isl"), "isl", pa.array(isl, pa.int64()))
        return batch.append_column("keep", pa.array(keep, pa.bool_()))


def _prepare(spec: TraceWorkloadSpec, counter: TokenCounter, cache: ResultStore | None) -> Prepared:
    raw = read_dataset(spec.path)
    params = {"api": spec.api, "unit": spec.timestamp_unit, "max_isl": spec.max_isl, "max_osl": spec.max_osl}
    key = cache_key("trace", raw, params, counter.identity)
    hit = cached(cache, key)
    if hit is not None:
        return hit
    rows, lines, malformed = parse_trace(raw, spec.timestamp_unit)
    if malformed and spec.on_malformed == "fail":
        msg = f"{malformed} malformed lines of {lines} in {spec.path}; fix them or set on_malformed: skip"
        raise ConfigError("workload", [Problem("workload.path", msg)])
    tokenize = _Tokenize(counter, spec.api, spec.max_isl, spec.max_osl)
    return prepare_rows(rows, tokenize, key=key, lines=lines, malformed=malformed,
                        ray_data_min_rows=spec.ray_data_min_rows, cache=cache)  # fmt: skip


@register_source("trace")
class TraceSource:
    """The trace's requests in time order; prompt `i` is request `i % n`; `arrival_offsets_ns` gives the replay."""

    kind = "trace"
    uses_cache = True  # source_for hands it the run's workload cache

    def __init__(self, spec: TraceWorkloadSpec, counter: TokenCounter, cache: ResultStore | None = None) -> None:
        self.spec = spec
        self.counter = counter
        prepared = _prepare(spec, counter, cache)
        self.report = prepared.report
        if prepared.report.malformed and spec.on_malformed == "fail":  # a cache entry prepared with `skip`
            msg = f"{prepared.report.malformed} malformed lines in {spec.path}; fix them or set on_malformed: skip"
            raise ConfigError("workload", [Problem("workload.path", msg)])
        table = prepared.table
        if table.num_rows == 0:
            msg = (
                f"no request of {spec.path} passes the filters (max_isl {spec.max_isl}, max_osl {spec.max_osl}; "
                f"{prepared.report.lines} lines, {prepared.report.malformed} malformed); widen them or fix the file"
            )
            raise ConfigError("workload", [Problem("workload", msg)])
        table = table.take(pc.sort_indices(table, [("t_ns", "ascending"), ("line", "ascending")]))
        if spec.max_prompts is not None:
            table = table.slice(0, spec.max_prompts)
        t_ns = table.column("t_ns").to_numpy()
        self._offsets_ns = (t_ns - t_ns[0]).astype(np.int64)
        self._text: list[str | None] = table.column("text").to_pylist()
        self._isl: list[int] = table.column("isl").to_pylist()
        self._osl: list[int] = table.column("osl").to_pylist()
        self._session: list[str | None] = table.column("session").to_pylist()
        self._turn = _turns(self._session)

    @property
    def natural_rate_per_s(self) -> float | None:
        """The trace's own mean request rate: (requests - 1) / span; None when every instant is the same."""
        span_ns = int(self._offsets_ns[-1])
        return (len(self._offsets_ns) - 1) / (span_ns / 1e9) if span_ns > 0 else None

    def arrival_offsets_ns(self, rate_per_s: float) -> np.ndarray:
        """Every request's send instant (ns after the step start), the trace time-scaled to `rate_per_s`."""
        natural = self.natural_rate_per_s
        if natural is None:
            msg = f"{self.spec.path}: every request has the same timestamp; replaying in load.mode rate needs a span"
            raise ConfigError("workload", [Problem("workload.path", msg)])
        offsets: np.ndarray = np.rint(self._offsets_ns * (natural / rate_per_s)).astype(np.int64)
        return offsets

    def prompt(self, index: int) -> Prompt:
        """Request `index % n`, in pass `index // n` over the trace (closed loop, previews)."""
        return self.request(index % len(self._osl), index // len(self._osl))

    def request(self, number: int, salt: int = 0) -> Prompt:
        """Trace request `number` (open-loop replay); `salt` (the step's prompt base) makes generated prompts
        differ from step to step, so an engine's prefix cache never sees a replayed step's prompts again."""
        i = number % len(self._osl)
        text = self._text[i]
        if text is None:
            rng = np.random.default_rng([self.spec.seed, i, salt])
            text = self.counter.make_text(rng, self._isl[i], lead=f"t{i}" if salt == 0 else f"t{i}r{salt}")
            tokens = self.counter.count_chat(text) if self.spec.api == "chat" else self._isl[i]
        else:
            tokens = self._isl[i]
        return Prompt(
            index=number, text=text, input_tokens=tokens, output_tokens=self._osl[i],
            fingerprint=fingerprint_text(text), session_id=self._session[i],
            turn=self._turn[i] if self._session[i] is not None else None,
        )  # fmt: skip

    def describe(self) -> dict[str, Any]:
        report = {k: v for k, v in self.report.__dict__.items() if k not in ("method", "cache_key")}
        return {"kind": self.kind, "spec": self.spec.model_dump(mode="json", exclude={"ray_data_min_rows"}),
                "version": "trace-v1", "loaded": report, "requests": len(self._osl),
                "natural_rate_per_s": self.natural_rate_per_s}  # fmt: skip

    def preparation(self) -> dict[str, Any]:
        """How the dataset was prepared (`local`, `ray_data` or `cache`) and its cache key."""
        return {"method": self.report.method, "cache_key": self.report.cache_key}


def _turns(sessions: list[str | None]) -> list[int]:
    seen: dict[str, int] = {}
    out = []
    for session in sessions:
        if session is None:
            out.append(0)
            continue
        out.append(seen.get(session, 0))
        seen[session] = out[-1] + 1
    return out
