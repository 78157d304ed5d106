"""The run catalog over run folders on local disk: status, progress and filters."""

from __future__ import annotations

from pathlib import Path

import pytest

from raybench.cli import main
from raybench.config import parse_job
from raybench.results import ResultStore
from raybench.results.catalog import list_runs, run_manifest

JOB = {
    "name": "cat", "model": {"name": "m1", "precision": "fp8"},
    "engines": [{"kind": "simulated", "id": "a"}, {"kind": "simulated", "id": "b"}],
    "workload": {"isl": {"mean": 8}, "osl": {"mean": 4}}, "load": {"steps": [1, 2, 4], "duration_s": 1},
    "slo": {"ttft_p99_ms": 500, "itl_p50_ms": 30},
}  # fmt: skip


def _run(root: ResultStore, run_id: str, started: str, done: dict[str, int], finished: bool, failed: bool = False,
         model: str = "m1") -> None:  # fmt: skip
    spec = parse_job({**JOB, "model": {"name": model, "precision": "fp8"}})
    run = root.child(run_id)
    run.write_json("run.json", run_manifest(spec, run_id, started))
    for engine, steps in done.items():
        run.write_json(f"engines/{engine}/summary.json", {"steps": [{}] * steps})
    if finished:
        run.write_json("_COMPLETE", {"finished_at": "later", "failures": {"b": "boom"} if failed else {}})


@pytest.fixture
def root(tmp_path: Path) -> ResultStore:
    store = ResultStore(str(tmp_path))
    _run(store, "r1", "2026-01-01T00:00:00", {"a": 3, "b": 3}, finished=True)
    _run(store, "r2", "2026-01-02T00:00:00", {"a": 3}, finished=True, failed=True)
    _run(store, "r3", "2026-01-03T00:00:00", {"a": 1}, finished=False, model="m2")
    (tmp_path / "not-a-run").mkdir()
    return store


def test_lists_newest_first_with_status_and_progress(root: ResultStore) -> None:
    runs = list_runs(root)
    assert [r.run_id for r in runs] == ["r3", "r2", "r1"]
    assert [r.status for r in runs] == ["incomplete", "failed", "complete"]
    assert runs[0].steps_done == {"a": 1, "b": 0} and runs[0].steps_planned == 3
    assert runs[2].engines == ["a", "b"] and runs[2].precision == "fp8"


def test_filters(root: ResultStore) -> None:
    assert [r.run_id for r in list_runs(root, status="complete")] == ["r1"]
    assert [r.run_id for r in list_runs(root, model="m2")] == ["r3"]
    assert [r.run_id for r in list_runs(root, engine="b")] == ["r3", "r2", "r1"]
    assert list_runs(root, engine="zzz") == []


def test_runs_command(root: ResultStore, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", root.uri, "--status", "incomplete", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"run_id": "r3"' in out and "r1" not in out
    assert main(["runs", root.uri]) == 0
    assert "complete" in capsys.readouterr().out
