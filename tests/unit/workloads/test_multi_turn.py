"""Multi-turn sessions: history growth with exact token counts, determinism, think time on a fake clock,
session_id/turn in records, chat payloads as messages lists, and older record parts read back."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from raybench.config import parse_job
from raybench.config.workload import MultiTurnWorkloadSpec, ThinkTimeSpec
from raybench.loadgen.client import RequestOutcome
from raybench.loadgen.closed_loop import Shard, run_closed_loop, turn_payload
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.open_loop import run_open_loop
from raybench.loadgen.schedule import arrival_offsets_ns
from raybench.results.schema import RECORD_SCHEMA
from raybench.results.store import ResultStore
from raybench.testing import FakeClock
from raybench.testing.tiny_model import build_tiny_model_dir
from raybench.workloads import MultiTurnSource, source_for, workload_fingerprint
from raybench.workloads.multi_turn import sample_think_ns

ROOT = Path(__file__).resolve().parents[3]
S = 1_000_000_000


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_model_dir(tmp_path_factory.mktemp("tiny")))


def _spec(**kw: Any) -> MultiTurnWorkloadSpec:
    base: dict[str, Any] = {"kind": "multi_turn", "turns": {"distribution": "uniform", "min": 3, "max": 5},
                            "user_tokens": {"distribution": "uniform", "min": 4, "max": 30},
                            "osl": {"distribution": "uniform", "min": 3, "max": 20}}  # fmt: skip
    return MultiTurnWorkloadSpec.model_validate({**base, **kw})


def _source(tokenizer: str | None = None, **kw: Any) -> MultiTurnSource:
    source = source_for(_spec(**kw), tokenizer)
    assert isinstance(source, MultiTurnSource)
    return source


def test_history_grows_by_the_reply_and_the_new_message_exactly(tokenizer: str) -> None:
    source = _source(tokenizer, system_tokens=12)
    counter = source.counter
    for s in range(6):
        turns = source.session(s).turns
        assert 3 <= len(turns) <= 5
        for k, turn in enumerate(turns):
            assert turn.session_id == f"s{s}" and turn.turn == k
            assert counter.count(turn.text) == turn.input_tokens  # exact, with the local tokenizer
            assert turn.messages is not None and turn.messages[-1][0] == "user"
            if k == 0:
                assert [r for r, _ in turn.messages] == ["system", "user"]
                continue
            prev = turns[k - 1]
            assert prev.messages is not None
            role, reply = turn.messages[len(prev.messages)]
            assert role == "assistant" and turn.messages[: len(prev.messages)] == prev.messages
            assert counter.count(reply) == prev.output_tokens  # the reference reply has the length asked for
            assert turn.text.startswith(prev.text + " " + reply + "\n\n"), "strictly extends prompt + reply"
            assert turn.input_tokens > prev.input_tokens + prev.output_tokens


def test_chat_counts_the_whole_messages_list_with_the_template(tokenizer: str) -> None:
    plain, chat = _source(tokenizer), _source(tokenizer, api="chat")
    for a, b in zip(plain.session(2).turns, chat.session(2).turns):
        assert a.messages == b.messages and a.text == b.text
        assert b.messages is not None
        as_dicts = [{"role": r, "content": c} for r, c in b.messages]
        assert b.input_tokens == chat.counter.count_messages(as_dicts)
        assert b.input_tokens > sum(chat.counter.count(c) for _, c in b.messages)  # the template's role markers
    body = turn_payload(Endpoint(("http://x",), "m", api="chat"), chat.session(2).turns[2])
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    completions = turn_payload(Endpoint(("http://x",), "m"), plain.session(2).turns[2])
    assert completions["prompt"] == plain.session(2).turns[2].text and "messages" not in completions


def test_approximate_counts_match_word_counts() -> None:
    source = _source()
    for turn in source.session(1).turns:
        assert turn.input_tokens == len(turn.text.split())


def test_same_seed_same_sessions_and_fingerprint(tokenizer: str) -> None:
    a, b, c = _source(tokenizer, seed=3), _source(tokenizer, seed=3), _source(tokenizer, seed=4)
    assert a.session(7) == b.session(7)
    assert workload_fingerprint(a) == workload_fingerprint(b) != workload_fingerprint(c)
    flat = [t for s in range(4) for t in a.session(s).turns]
    for i, turn in enumerate(flat):  # prompt(i) numbers the turns of sessions 0, 1, 2, ... in order
        p = a.prompt(i)
        assert (p.text, p.session_id, p.turn, p.output_tokens) == (turn.text, turn.session_id, turn.turn,
                                                                    turn.output_tokens)  # fmt: skip


def test_think_time_distributions_and_their_errors() -> None:
    rng = np.random.default_rng(0)
    assert sample_think_ns(ThinkTimeSpec(mean_s=1.5), rng) == 1_500_000_000
    uniform = ThinkTimeSpec(distribution="uniform", min_s=1, max_s=2)
    assert all(S <= sample_think_ns(uniform, rng) <= 2 * S for _ in range(200))
    expo = [sample_think_ns(ThinkTimeSpec(distribution="exponential", mean_s=2.0), rng) for _ in range(4000)]
    assert np.mean(expo) / 1e9 == pytest.approx(2.0, rel=0.08)
    with pytest.raises(ValidationError, match="needs `min_s` and `max_s`"):
        ThinkTimeSpec(distribution="uniform", min_s=1)
    with pytest.raises(ValidationError, match="mean_s` > 0"):
        ThinkTimeSpec(distribution="exponential")
    with pytest.raises(ValidationError, match="write max_s >= min_s"):
        ThinkTimeSpec(min_s=3, max_s=1)
    with pytest.raises(ValidationError, match="extra"):
        _spec(think_s=3)


class FakeSender:
    """Answers each request after `service_ns` of fake time, keeping every body it was sent."""

    def __init__(self, clock: FakeClock, service_ns: int) -> None:
        self.clock, self.service_ns, self.bodies = clock, service_ns, []

    async def __call__(self, _s: Any, _e: Endpoint, _url: str, body: Any, _t: float) -> RequestOutcome:
        self.bodies.append(body)
        out = RequestOutcome(sent_ns=self.clock.now_ns())
        await self.clock.sleep_until(out.sent_ns + self.service_ns)
        out.first_token_ns = out.last_token_ns = out.done_ns = self.clock.now_ns()
        return out


def _shard(concurrency: int, requests: int | None = None, duration_s: float | None = None, **kw: Any) -> Shard:
    return Shard(concurrency, duration_s, requests, prompt_base=100, prompt_stride=2, prompt_offset=1,
                 timeout_s=5.0, request_id_prefix="e:0:", **kw)  # fmt: skip


async def _closed(shard: Shard, source: Any, service_ns: int = 100_000_000) -> list[dict[str, Any]]:
    clock, rows = FakeClock(), []
    sender = FakeSender(clock, service_ns)
    ep = Endpoint(("http://127.0.0.1:1",), "m")
    result = await run_closed_loop(None, ep, source, shard, 0, rows.append, clock=clock, send=sender)  # type: ignore[arg-type]
    assert result.issued == len(rows)
    return rows


async def test_closed_loop_runs_sessions_in_order_with_think_time() -> None:
    source = _source(turns={"mean": 3}, think_time={"mean_s": 2.0})
    rows = await _closed(_shard(2, requests=12), source)
    assert len(rows) == 12  # two slots, two sessions each, three turns per session
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_session.setdefault(row["session_id"], []).append(row)
    assert sorted(by_session) == sorted(f"s{100 + 2 * n + 1}" for n in range(4))  # this generator's sessions
    for session, turns in by_session.items():
        assert [r["turn"] for r in turns] == [0, 1, 2]
        assert [r["request_id"] for r in turns] == [f"e:0:{session[1:]}.{k}" for k in range(3)]
        for prev, nxt in itertools.pairwise(turns):
            assert nxt["scheduled_ns"] == prev["done_ns"] + 2 * S  # think time after the reply, exactly
            assert nxt["sent_ns"] == nxt["scheduled_ns"]
        assert turns[0]["requested_output_tokens"] == source.session(int(session[1:])).turns[0].output_tokens


async def test_closed_loop_deadline_ends_a_session_without_waiting_out_its_think_time() -> None:
    source = _source(turns={"mean": 4}, think_time={"mean_s": 10.0})
    rows = await _closed(_shard(1, duration_s=15.0), source)
    assert [r["turn"] for r in rows] == [0, 1]  # turn 2 would be due at ~20.2 s, past the 15 s deadline
    assert max(r["done_ns"] for r in rows) < 11 * S


async def test_open_loop_starts_sessions_on_the_schedule() -> None:
    source = _source(turns={"mean": 2}, think_time={"mean_s": 0.5}, api="chat")
    clock, rows = FakeClock(), []
    sender = FakeSender(clock, 50_000_000)
    ep = Endpoint(("http://127.0.0.1:1",), "m", api="chat")
    shard = Shard(0, None, 20, prompt_base=0, prompt_stride=1, prompt_offset=0, timeout_s=5.0,
                  request_id_prefix="e:0:", rate_per_s=4.0, arrival="poisson", seed=9)  # fmt: skip
    result = await run_open_loop(None, ep, source, shard, S, rows.append, clock=clock, send=sender)  # type: ignore[arg-type]
    assert len(rows) == 20 == result.issued
    firsts = sorted(r["scheduled_ns"] for r in rows if r["turn"] == 0)
    assert firsts == (S + arrival_offsets_ns(4.0, "poisson", 10, seed=9)).tolist()
    seconds = {r["session_id"]: r for r in rows if r["turn"] == 1}
    for first in (r for r in rows if r["turn"] == 0):
        assert seconds[first["session_id"]]["scheduled_ns"] == first["done_ns"] + S // 2
    bodies = [json.loads(body) for body in sender.bodies]
    assert sorted(len(b["messages"]) for b in bodies) == [1] * 10 + [3] * 10  # a second turn carries the history
    assert all(
        [m["role"] for m in b["messages"]] == ["user", "assistant", "user"] for b in bodies if len(b["messages"]) > 1
    )


def test_records_older_than_sessions_read_back_with_null_columns(tmp_path: Path) -> None:
    old = pa.schema([f for f in RECORD_SCHEMA if f.name not in ("session_id", "turn")])
    row = {f.name: None for f in old}
    row.update(run_id="r", engine_id="e", step_index=0, generator_id="g0", request_id="1", phase="measure",
               scheduled_ns=1, sent_ns=1, done_ns=2, status="ok", wall_offset_ns=0)  # fmt: skip
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([row], schema=old), sink)
    store = ResultStore(str(tmp_path))
    store.write_bytes("records/part-0.parquet", sink.getvalue())
    table = store.read_table("records", schema=RECORD_SCHEMA)
    assert table.column("session_id").to_pylist() == [None] and table.column("turn").to_pylist() == [None]


def test_the_multi_turn_job_validates() -> None:
    import yaml

    spec = parse_job(yaml.safe_load((ROOT / "jobs" / "multi-turn.yaml").read_text()))
    assert spec.workload.kind == "multi_turn"
