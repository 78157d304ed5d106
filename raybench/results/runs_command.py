"""`raybench runs URI`: the run catalog as a table or JSON."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from raybench.results.catalog import RunInfo, list_runs
from raybench.results.store import ResultStore

__all__ = ["print_runs"]


def print_runs(
    uri: str, console: Console, engine: str | None, model: str | None, status: str | None, as_json: bool
) -> int:
    runs = list_runs(ResultStore(uri), engine=engine, model=model, status=status)
    if as_json:
        console.print_json(json.dumps([r.to_dict() for r in runs]))
        return 0
    if not runs:
        console.print(f"no runs under {uri}" + (" matching the filters" if engine or model or status else ""))
        return 0
    console.print(_table(runs, uri))
    return 0


def _table(runs: list[RunInfo], uri: str) -> Table:
    table = Table(title=f"runs under {uri}", title_justify="left")
    for name in ("run id", "job", "engines", "model", "precision", "status", "started", "finished", "steps done"):
        table.add_column(name, no_wrap=name in ("run id", "status"))
    colors = {"complete": "green", "failed": "red", "incomplete": "yellow"}
    for r in runs:
        steps = ", ".join(f"{e} {n}/{r.steps_planned}" for e, n in r.steps_done.items())
        table.add_row(
            r.run_id, r.job, ", ".join(r.engines), r.model, r.precision,
            f"[{colors.get(r.status, 'white')}]{r.status}[/]", r.started_at, r.finished_at or "-", steps,
        )  # fmt: skip
    return table
