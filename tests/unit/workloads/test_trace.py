"""Trace source: timestamps (ms or s, absolute or relative), lengths or text, sessions, time-scaling, sharding,
the prepared-rows cache (read back without tokenizing; ShareGPT's too), determinism, and every bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from raybench.config import parse_job
from raybench.config.workload import ShareGPTWorkloadSpec, TraceWorkloadSpec
from raybench.errors import ConfigError
from raybench.loadgen.client import RequestOutcome
from raybench.loadgen.closed_loop import Shard
from raybench.loadgen.conversation import timed_arrivals
from raybench.loadgen.endpoint import Endpoint
from raybench.loadgen.open_loop import run_open_loop
from raybench.results.store import ResultStore
from raybench.testing import FakeClock
from raybench.testing.tiny_model import build_tiny_model_dir
from raybench.workloads import ApproxCounter, ShareGPTSource, TraceSource, source_for, workload_fingerprint
from raybench.workloads.prepare import workload_cache

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_model_dir(tmp_path_factory.mktemp("tiny")))


def _write(path: Path, lines: list[Any]) -> str:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return str(path)


def _trace(path: str, tokenizer: str | None = None, cache: ResultStore | None = None, **kw: Any) -> TraceSource:
    source = source_for(TraceWorkloadSpec(kind="trace", path=path, **kw), tokenizer, cache)
    assert isinstance(source, TraceSource)
    return source


def test_instants_are_relative_sorted_and_any_unit(tmp_path: Path) -> None:
    epoch_ms = 1_700_000_000_000
    lines = [{"timestamp_ms": epoch_ms + 500, "input_tokens": 7, "output_tokens": 3, "session_id": "a"},
             {"timestamp_ms": epoch_ms, "input_length": 5, "output_length": 2, "session_id": 42},
             {"timestamp_ms": epoch_ms + 500, "input_tokens": 9, "output_tokens": 4, "session_id": "a"},
             {"timestamp_ms": epoch_ms + 1500, "input_tokens": 6, "output_tokens": 1}]  # fmt: skip
    source = _trace(_write(tmp_path / "t.jsonl", lines))
    assert source.arrival_offsets_ns(source.natural_rate_per_s or 0).tolist() == [0, 500_000_000, 500_000_000,
                                                                                 1_500_000_000]  # fmt: skip
    prompts = [source.prompt(i) for i in range(4)]
    assert [p.input_tokens for p in prompts] == [5, 7, 9, 6]  # time order, ties in file order
    assert [p.output_tokens for p in prompts] == [2, 3, 4, 1]
    assert [(p.session_id, p.turn) for p in prompts] == [("42", 0), ("a", 0), ("a", 1), (None, None)]
    assert source.natural_rate_per_s == pytest.approx(2.0)  # 3 gaps over 1.5 s
    seconds = [{"timestamp": 3.0 + x["timestamp_ms"] / 1000 - epoch_ms / 1000, **{k: v for k, v in x.items()
                if k != "timestamp_ms"}} for x in lines]  # fmt: skip
    in_s = _trace(_write(tmp_path / "s.jsonl", seconds))
    assert in_s.arrival_offsets_ns(2.0).tolist() == source.arrival_offsets_ns(2.0).tolist()
    as_ms = [{**x, "timestamp": x["timestamp"] * 1000} for x in seconds]
    in_ms = _trace(_write(tmp_path / "ms.jsonl", as_ms), timestamp_unit="ms")
    assert in_ms.arrival_offsets_ns(2.0).tolist() == source.arrival_offsets_ns(2.0).tolist()


def test_step_rate_time_scales_the_trace_and_generators_share_it(tmp_path: Path) -> None:
    lines = [{"timestamp": t, "input_tokens": 4, "output_tokens": 2} for t in (0.0, 0.1, 0.15, 0.9, 1.0)]
    source = _trace(_write(tmp_path / "t.jsonl", lines))
    natural = source.natural_rate_per_s
    assert natural == pytest.approx(4.0)
    assert source.arrival_offsets_ns(8.0).tolist() == [0, 50_000_000, 75_000_000, 450_000_000, 500_000_000]
    shards = [list(timed_arrivals(source, 8.0, g, 2)) for g in range(2)]
    assert [n for n, _ in shards[0]] == [0, 2, 4] and [n for n, _ in shards[1]] == [1, 3]


def test_text_lines_are_counted_exactly_and_lengths_generated_exactly(tmp_path: Path, tokenizer: str) -> None:
    text = "benchmarks measure latency throughput goodput under a service level objective"
    lines = [
        {"timestamp": 0, "text": text, "output_tokens": 5},
        {"timestamp": 1, "input_tokens": 33, "output_tokens": 6},
    ]
    source = _trace(_write(tmp_path / "t.jsonl", lines), tokenizer)
    counter = source.counter
    first, second = source.prompt(0), source.prompt(1)
    assert first.text == text and first.input_tokens == counter.count(text)
    assert counter.count(second.text) == second.input_tokens == 33
    chat = _trace(str(tmp_path / "t.jsonl"), tokenizer, api="chat")
    assert chat.prompt(0).input_tokens == counter.count_chat(text) > first.input_tokens
    assert source.prompt(2).text == text and source.prompt(3).text != second.text  # wraps: text kept, others new


def test_generated_prompts_differ_per_step_text_prompts_do_not(tmp_path: Path) -> None:
    lines = [{"timestamp": 0, "input_tokens": 12, "output_tokens": 2},
             {"timestamp": 1, "text": "a b c", "output_tokens": 2}]  # fmt: skip
    source = _trace(_write(tmp_path / "t.jsonl", lines))
    step0, step1 = source.request(0, 10_000_000), source.request(0, 20_000_000)
    assert step0.text != step1.text and step0.input_tokens == step1.input_tokens == 12
    assert source.request(1, 10_000_000).text == source.request(1, 20_000_000).text == "a b c"
    assert source.prompt(0) == source.request(0, 0) and source.prompt(2).text != source.prompt(0).text  # 2nd pass


def test_determinism_and_fingerprint() -> None:
    path = str(ROOT / "examples" / "data" / "trace_sample.jsonl")
    a, b = _trace(path), _trace(path)
    assert [a.prompt(i) for i in range(30)] == [b.prompt(i) for i in range(30)]
    assert workload_fingerprint(a) == workload_fingerprint(b)
    assert workload_fingerprint(_trace(path, seed=1)) != workload_fingerprint(a)
    assert a.report.kept == 600 and a.report.malformed == 0


class CountingCounter(ApproxCounter):
    """The approximate counter, counting how often it is asked to count."""

    calls = 0

    def count(self, text: str) -> int:
        CountingCounter.calls += 1
        return super().count(text)


def test_prepared_rows_are_cached_and_read_back_without_tokenizing(tmp_path: Path) -> None:
    lines = [{"timestamp": i * 0.1, "text": f"w{i} " * (3 + i % 5), "output_tokens": 2} for i in range(50)]
    spec = TraceWorkloadSpec(kind="trace", path=_write(tmp_path / "t.jsonl", lines), max_isl=6)
    cache = workload_cache(str(tmp_path / "results"))
    CountingCounter.calls = 0
    first = TraceSource(spec, CountingCounter(), cache)
    assert first.report.method == "local" and CountingCounter.calls == 50 and first.report.filtered_out == 10
    again = TraceSource(spec, CountingCounter(), cache)
    assert again.report.method == "cache" and CountingCounter.calls == 50  # read back, nothing re-tokenized
    assert [again.prompt(i) for i in range(40)] == [first.prompt(i) for i in range(40)]
    assert workload_fingerprint(again) == workload_fingerprint(first)
    assert (tmp_path / "results" / "_workload_cache" / first.report.cache_key / "meta.json").is_file()
    other = TraceSource(spec.model_copy(update={"max_isl": 7}), CountingCounter(), cache)
    assert other.report.method == "local" and other.report.cache_key != first.report.cache_key
    (tmp_path / "results" / "_workload_cache" / first.report.cache_key / "rows.parquet").write_bytes(b"damaged")
    redone = TraceSource(spec, CountingCounter(), cache)  # a damaged entry is prepared again, not trusted
    assert redone.report.method == "local" and [redone.prompt(i) for i in range(40)] == [
        first.prompt(i) for i in range(40)
    ]


def test_sharegpt_preparation_is_cached_too(tmp_path: Path) -> None:
    spec = ShareGPTWorkloadSpec(kind="sharegpt", path=str(ROOT / "examples" / "data" / "sharegpt_sample.json"),
                                max_isl=200)  # fmt: skip
    cache = workload_cache(str(tmp_path / "results"))
    CountingCounter.calls = 0
    first = ShareGPTSource(spec, CountingCounter(), cache)
    counted = CountingCounter.calls
    assert first.preparation()["method"] == "local" and counted >= 2 * first.report.kept
    again = ShareGPTSource(spec, CountingCounter(), cache)
    assert again.preparation() == {**first.preparation(), "method": "cache"} and CountingCounter.calls == counted
    assert again.report == first.report and [again.prompt(i) for i in range(50)] == [first.prompt(i) for i in range(50)]
    assert workload_fingerprint(again) == workload_fingerprint(first)


def test_malformed_lines_are_counted_skipped_or_fatal(tmp_path: Path) -> None:
    good = {"timestamp": 1, "input_tokens": 4, "output_tokens": 2}
    lines = [good, "{not json", {"timestamp": 2, "output_tokens": 3}, {"input_tokens": 4, "output_tokens": 2},
             {"timestamp": "x", "input_tokens": 4, "output_tokens": 2}, {"timestamp": 3, "input_tokens": 4},
             {"timestamp": True, "input_tokens": 4, "output_tokens": 2}, "[1, 2]", "",
             {**good, "timestamp": 4}]  # fmt: skip
    path = _write(tmp_path / "t.jsonl", lines)
    source = _trace(path)
    assert (source.report.lines, source.report.malformed, source.report.kept) == (9, 7, 2)
    with pytest.raises(ConfigError, match="7 malformed lines of 9"):
        _trace(path, on_malformed="fail")


def test_empty_after_filtering_missing_file_and_no_time_span(tmp_path: Path) -> None:
    lines = [{"timestamp": t, "input_tokens": 100, "output_tokens": 2} for t in (0, 1)]
    with pytest.raises(ConfigError, match="passes the filters"):
        _trace(_write(tmp_path / "t.jsonl", lines), max_isl=50)
    with pytest.raises(ConfigError, match="passes the filters"):
        _trace(_write(tmp_path / "bad.jsonl", ["nope", "{}"]))
    with pytest.raises(ConfigError, match=r"no dataset file at .*missing\.jsonl"):
        _trace(str(tmp_path / "missing.jsonl"))
    same = _trace(_write(tmp_path / "same.jsonl", [{**lines[0], "timestamp": 5}] * 3))
    with pytest.raises(ConfigError, match="same timestamp"):
        same.arrival_offsets_ns(1.0)


class FakeSender:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    async def __call__(self, _s: Any, _e: Endpoint, _url: str, _body: bytes, _t: float) -> RequestOutcome:
        out = RequestOutcome(sent_ns=self.clock.now_ns())
        await self.clock.sleep_until(out.sent_ns + 30_000_000)
        out.done_ns = self.clock.now_ns()
        return out


async def test_open_loop_sends_each_generators_share_at_its_trace_instants() -> None:
    source = _trace(str(ROOT / "examples" / "data" / "trace_sample.jsonl"))
    rate, start = 40.0, 1_000_000_000
    expected = source.arrival_offsets_ns(rate)
    for g in range(2):
        clock, rows = FakeClock(), []
        shard = Shard(0, 5.0, None, prompt_base=10_000_000, prompt_stride=2, prompt_offset=g, timeout_s=5.0,
                      request_id_prefix="e:0:", rate_per_s=rate)  # fmt: skip
        ep = Endpoint(("http://127.0.0.1:1",), "m")
        result = await run_open_loop(None, ep, source, shard, start, rows.append, clock=clock, send=FakeSender(clock))  # type: ignore[arg-type]
        numbers = [int(r["request_id"].split(":")[-1]) - 10_000_000 for r in rows]
        mine = [n for n in range(g, len(expected), 2) if expected[n] < 5_000_000_000]
        assert sorted(numbers) == mine and result.issued == len(mine)
        assert all(r["scheduled_ns"] == r["sent_ns"] == start + int(expected[n]) for r, n in zip(rows, numbers))
        assert {r["session_id"] for r in rows} <= {source.prompt(n).session_id for n in mine}


async def test_a_trace_that_runs_out_stops_issuing_at_its_last_request(tmp_path: Path) -> None:
    lines = [{"timestamp": t, "input_tokens": 4, "output_tokens": 2} for t in (0.0, 0.5, 1.0)]
    source = _trace(_write(tmp_path / "t.jsonl", lines))
    clock, rows = FakeClock(), []
    shard = Shard(0, 60.0, None, prompt_base=0, prompt_stride=1, prompt_offset=0, timeout_s=5.0,
                  request_id_prefix="e:0:", rate_per_s=2.0)  # fmt: skip
    result = await run_open_loop(None, Endpoint(("http://x",), "m"), source, shard, 0, rows.append, clock=clock,  # type: ignore[arg-type]
                                 send=FakeSender(clock))  # fmt: skip
    assert len(rows) == 3 and result.stopped_issuing_ns == 1_000_000_000


def test_the_sample_trace_is_what_its_script_makes() -> None:
    import runpy

    make = runpy.run_path(str(ROOT / "examples" / "make_trace_sample.py"))["make"]
    written = (ROOT / "examples" / "data" / "trace_sample.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in written] == make()


def test_the_trace_job_validates_and_its_data_loads() -> None:
    spec = parse_job(yaml.safe_load((ROOT / "jobs" / "trace-replay.yaml").read_text()))
    assert spec.workload.kind == "trace" and spec.load.mode == "rate"
    source = source_for(spec.workload, spec.model.tokenizer)
    assert isinstance(source, TraceSource)
    natural = source.natural_rate_per_s
    assert natural is not None and 9 < natural < 11  # the comment in the job says 10 is about 1x
    assert np.all(np.diff(source.arrival_offsets_ns(10.0)) >= 0)
