"""Finding runs and their engine summaries under URIs (local paths or object storage) for a report.

A URI may name a run folder (it holds ``engines/``), a results folder holding runs, or one
``summary.json``. Each engine of each run becomes one ``EngineResult``. Its summary is the
stored ``summary.json``; when that is missing (a run that stopped early) or ``recompute`` is
asked, it is rebuilt from the stored records (``raybench.report.records``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from raybench.errors import RaybenchError, StorageError
from raybench.report.records import summarize_engine
from raybench.results.store import ResultStore

__all__ = ["EngineResult", "LoadedRuns", "load_runs"]


@dataclass(frozen=True)
class EngineResult:
    """One engine's sweep in one run: where it came from and its summary (the summary JSON)."""

    run_id: str
    run_uri: str
    engine_id: str
    summary: dict[str, Any]
    complete: bool = True
    recomputed: bool = False

    @property
    def label(self) -> str:
        return self.engine_id


@dataclass
class LoadedRuns:
    """Every engine result found, and sentences about what was odd (incomplete runs, gaps)."""

    results: list[EngineResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def load_runs(uris: Sequence[str], recompute: bool = False) -> LoadedRuns:
    """Every engine result under ``uris``; StorageError when a URI holds no run at all."""
    loaded = LoadedRuns()
    for uri in uris:
        store = ResultStore(uri)
        if uri.rstrip("/").endswith(".json"):
            _load_summary_file(store, loaded)
            continue
        runs = _run_stores(store)
        if not runs:
            raise StorageError(
                f"no raybench run under {uri}: give a run folder (it holds engines/), "
                "a results folder holding runs, or a summary.json"
            )
        for run in runs:
            _load_run(run, loaded, recompute)
    if not loaded.results:
        raise StorageError(f"no engine summaries or records found under {', '.join(uris)}")
    return loaded


def _run_stores(store: ResultStore) -> list[ResultStore]:
    if store.exists("engines"):
        return [store]
    return [store.child(name) for name in store.list() if store.child(name).exists("engines")]


def _load_summary_file(file_store: ResultStore, loaded: LoadedRuns) -> None:
    parent, name = file_store.uri.rstrip("/").rsplit("/", 1)
    summary = ResultStore(parent).read_json(name)
    if not isinstance(summary, dict) or "steps" not in summary:
        raise StorageError(f"{file_store.uri} is not a raybench summary (no 'steps')")
    run_id = str((summary.get("provenance") or {}).get("run_id", parent.rsplit("/", 1)[-1]))
    engine_id = str(summary.get("engine_id") or summary.get("motor") or "engine")
    loaded.results.append(EngineResult(run_id, parent, engine_id, summary))


def _load_run(run: ResultStore, loaded: LoadedRuns, recompute: bool) -> None:
    run_id = run.uri.rstrip("/").rsplit("/", 1)[-1]
    complete = run.exists("_COMPLETE")
    if not complete:
        loaded.warnings.append(f"run {run_id} is incomplete (no _COMPLETE marker): it may lack steps or engines")
    for engine_id in run.list("engines"):
        stored = (
            run.read_json(f"engines/{engine_id}/summary.json")
            if run.exists(f"engines/{engine_id}/summary.json")
            else None
        )
        summary, recomputed = stored, False
        if recompute or stored is None:
            summary, recomputed = _recompute(run, engine_id, stored, loaded)
        if summary is None:
            continue
        loaded.results.append(EngineResult(run_id, run.uri, engine_id, summary, complete, recomputed))


def _recompute(
    run: ResultStore, engine_id: str, stored: dict[str, Any] | None, loaded: LoadedRuns
) -> tuple[dict[str, Any] | None, bool]:
    if not run.exists(f"engines/{engine_id}/records"):
        loaded.warnings.append(f"{run.uri}: engine {engine_id} has neither a summary nor records; skipped")
        return stored, False
    try:
        summary = summarize_engine(run, engine_id, stored=stored)
    except RaybenchError as exc:
        loaded.warnings.append(f"{run.uri}: engine {engine_id}: cannot summarize its records: {exc}")
        return stored, False
    if stored is None:
        loaded.warnings.append(
            f"engine {engine_id} of {run.uri.rsplit('/', 1)[-1]}: no summary.json; summarized from its records "
            "(measurement windows inferred)"
        )
    return summary, True
