"""Matrix runs: expand a MatrixSpec into cells, run each as a run under one matrix id, resume, summarize."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from raybench.config.job import JobSpec
from raybench.config.loader import apply_settings, parse_job
from raybench.config.matrix import MatrixSpec
from raybench.errors import ConfigError, Problem, RaybenchError
from raybench.results.catalog import list_runs
from raybench.results.store import ResultStore

__all__ = ["Cell", "MatrixResult", "expand", "load_matrix", "run_matrix"]


@dataclass(frozen=True)
class Cell:
    """One combination: its coordinates and the job that runs it."""

    name: str
    coords: dict[str, str]
    spec: JobSpec


@dataclass
class MatrixResult:
    matrix_id: str
    uri: str
    ran: list[str]
    skipped: list[str]
    failed: dict[str, str]
    summaries: dict[str, dict[str, Any]]


def load_matrix(path: str | Path) -> tuple[MatrixSpec, dict[str, Any]]:
    """Read and validate a matrix file; returns the spec and its base job as a mapping."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(str(path), [Problem("", f"no matrix file at {str(path)!r}")])
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
        spec = MatrixSpec.model_validate(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), [Problem("", f"not valid YAML: {exc}")]) from None
    except ValueError as exc:  # pydantic's ValidationError
        problems = [Problem(".".join(map(str, e["loc"])), e["msg"]) for e in getattr(exc, "errors", lambda: [])()]
        raise ConfigError(str(path), problems or [Problem("", str(exc))]) from None
    if isinstance(spec.base, dict):
        return spec, spec.base
    base_file = (file.parent / spec.base).resolve()
    if not base_file.is_file():
        raise ConfigError(str(path), [Problem("base", f"no base job at {base_file}")])
    return spec, yaml.safe_load(base_file.read_text(encoding="utf-8"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def expand(spec: MatrixSpec, base: dict[str, Any], source: str = "matrix") -> list[Cell]:
    """Every cell not excluded, with its config's and matching per-cell settings applied; validated now."""
    cells: list[Cell] = []
    problems: list[Problem] = []
    for model in spec.models:
        for engine in spec.engines:
            for config, settings in spec.configs.items():
                coords = {"engine": str(engine["id"]), "model": model.name, "precision": model.precision,
                          "config": config}  # fmt: skip
                if any(rule.matches(coords) for rule in spec.exclude):
                    continue
                try:
                    cells.append(_cell(spec, base, engine, model, config, {**settings, **_cell_sets(spec, coords)}))
                except ConfigError as exc:
                    problems.extend(Problem(f"{exc.source}: {p.path}", p.message) for p in exc.problems)
    if problems:
        raise ConfigError(source, problems)
    if not cells:
        raise ConfigError(source, [Problem("exclude", "every cell is excluded; nothing to run")])
    return cells


def _cell_sets(spec: MatrixSpec, coords: dict[str, str]) -> dict[str, Any]:
    return {key: value for o in spec.overrides if o.match.matches(coords) for key, value in o.set.items()}


def _cell(
    spec: MatrixSpec, base: dict[str, Any], engine: dict[str, Any], model: Any, config: str, sets: dict[str, Any]
) -> Cell:
    name = _slug(f"{spec.name}-{model.name}-{model.precision}-{engine['id']}-{config}")
    coords = {"engine": str(engine["id"]), "model": model.name, "precision": model.precision, "config": config}
    raw = {**base, "name": name, "model": model.model_dump(mode="json"), "engines": [engine],
           "output": spec.output.model_dump(mode="json")}  # fmt: skip
    data = apply_settings(raw, sets, f"cell {name}", origin="config")
    return Cell(name, coords, parse_job(data, source=f"cell {name}"))


def run_matrix(spec: MatrixSpec, cells: list[Cell], console: Console, resume: str | None = None) -> MatrixResult:
    """Run every cell not already complete under the matrix folder (one Ray session for all)."""
    from raybench.sweep.driver import run_job
    from raybench.sweep.session import ray_session

    matrix_id = resume or f"{spec.name}-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    root = ResultStore(spec.output.uri, spec.output.endpoint_url, spec.output.region).child(matrix_id)
    if resume is not None and not root.exists("matrix.json"):
        raise RaybenchError(f"no matrix {resume!r} under {spec.output.uri}; check the id with `raybench runs`")
    root.write_json("matrix.json", {"matrix_id": matrix_id, "name": spec.name, "cells": [c.name for c in cells]})
    done = {r.job: r.run_id for r in list_runs(root, status="complete")}
    # newest first: an interrupted cell continues its latest run instead of starting over
    unfinished = {r.job: r.run_id for r in reversed(list_runs(root, status="incomplete"))}
    result = MatrixResult(matrix_id, root.uri, [], [], {}, {})
    needed = max(c.spec.fleet.generators for c in cells) + 2
    with ray_session(needed):
        for index, cell in enumerate(cells, 1):
            if cell.name in done:
                result.skipped.append(cell.name)
                engine_dir = root.child(done[cell.name]).child(f"engines/{cell.coords['engine']}")
                if engine_dir.exists("summary.json"):  # the cross-cell table covers every cell, not just this pass
                    result.summaries[cell.name] = engine_dir.read_json("summary.json")
                console.print(f"[dim]cell {index}/{len(cells)} {cell.name}: complete in an earlier attempt, skipped[/]")
                continue
            console.print(f"[bold]cell {index}/{len(cells)}[/] {cell.name} ({_coords(cell.coords)})")
            job = cell.spec.model_copy(update={"output": cell.spec.output.model_copy(update={"uri": root.uri})})
            run = run_job(job, console=console, resume=unfinished.get(cell.name))
            result.ran.append(cell.name)
            for summary in run.summaries.values():  # one engine per cell
                result.summaries[cell.name] = summary
            if run.failures:
                result.failed[cell.name] = "; ".join(run.failures.values())
    return result


def _coords(coords: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in coords.items())
