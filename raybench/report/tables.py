"""The report's content as plain rows: Pareto table, saturation tables, best engine per criterion, warnings.

Rows hold raw values (numbers, booleans, None); formatting belongs to the renderers
(``raybench.report.render`` for text, ``raybench.report.html`` for HTML). Column lists name
each key, its header (units included) and its number of decimals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from raybench.report.pareto import pareto_mask
from raybench.report.runs import EngineResult, LoadedRuns

__all__ = [
    "BEST_COLUMNS",
    "PARETO_COLUMNS",
    "SATURATION_COLUMNS",
    "Column",
    "Report",
    "build_report",
]


@dataclass(frozen=True)
class Column:
    """One column: row key, header with units, decimals (None: text), shown in the console table."""

    key: str
    header: str
    digits: int | None = 1
    console: bool = True


PARETO_COLUMNS = (
    Column("engine", "Engine", None),
    Column("motor", "Motor", None, console=False),
    Column("config", "Config", None),
    Column("knee_concurrency", "Knee conc.", 0),
    Column("throughput_tok_s", "Throughput tok/s", 0),
    Column("ttft_p50_ms", "TTFT P50 ms"),
    Column("ttft_p99_ms", "TTFT P99 ms"),
    Column("itl_p50_ms", "ITL P50 ms", 2),
    Column("goodput_tok_s", "Goodput tok/s", 0),
    Column("goodput_pct", "Goodput % @SLO"),
    Column("on_frontier", "Frontier", None),
    Column("valid", "Valid", None),
)

SATURATION_COLUMNS = (
    Column("concurrency", "Concurrency", 0),
    Column("ttft_p99_ms", "TTFT P99 ms"),
    Column("itl_p50_ms", "ITL P50 ms", 2),
    Column("throughput_tok_s", "Throughput tok/s", 0),
    Column("goodput_tok_s", "Goodput tok/s", 0),
    Column("goodput_pct", "Goodput %"),
    Column("requests", "Requests", 0),
    Column("slo_held", "SLO held", None),
    Column("knee", "Knee", None),
    Column("flags", "Validity flags", None),
)

BEST_COLUMNS = (
    Column("criterion", "Criterion", None),
    Column("engine", "Recommended engine", None),
    Column("justification", "Quantitative justification", None),
)


@dataclass
class Report:
    """Everything a report shows, renderer-independent."""

    results: list[EngineResult]
    labels: list[str]
    pareto: list[dict[str, Any]]
    saturation: dict[str, list[dict[str, Any]]]
    best: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)


def _labels(results: list[EngineResult]) -> list[str]:
    """Engine ids, qualified by run id where one id appears in several runs."""
    ids = [r.engine_id for r in results]
    return [f"{r.engine_id} @ {r.run_id}" if ids.count(r.engine_id) > 1 else r.engine_id for r in results]


def _knee(summary: dict[str, Any]) -> dict[str, Any]:
    return summary.get("results_at_knee") or {}


def _knee_step(summary: dict[str, Any]) -> dict[str, Any]:
    knee = _knee(summary)
    matches = [s for s in summary.get("steps", []) if knee and s.get("concurrency") == knee.get("concurrency")]
    return matches[-1] if matches else {}


def _flags(step: dict[str, Any]) -> list[str]:
    return [name for name, raised in (step.get("validity") or {}).items() if raised is True]


def _pareto_rows(results: list[EngineResult], labels: list[str]) -> list[dict[str, Any]]:
    knees = [_knee(r.summary) for r in results]
    lat = np.array([np.nan if k.get("ttft_p99_ms") is None else k["ttft_p99_ms"] for k in knees], dtype=np.float64)
    thr = np.array([np.nan if k.get("throughput_tok_s") is None else k["throughput_tok_s"] for k in knees], np.float64)
    frontier = pareto_mask(lat, thr)
    rows = []
    for result, label, knee, on_frontier in zip(results, labels, knees, frontier):
        s, step = result.summary, _knee_step(result.summary)
        rows.append(
            {
                "engine": label,
                "run_id": result.run_id,
                "motor": f"{s.get('motor', '')} {s.get('motor_version', '')}".strip(),
                "config": s.get("config", ""),
                "knee_concurrency": knee.get("concurrency"),
                "throughput_tok_s": knee.get("throughput_tok_s"),
                "ttft_p50_ms": knee.get("ttft_p50_ms"),
                "ttft_p99_ms": knee.get("ttft_p99_ms"),
                "itl_p50_ms": knee.get("itl_p50_ms"),
                "goodput_tok_s": knee.get("goodput_tok_s"),
                "goodput_pct": step.get("goodput_pct") if knee else None,
                "on_frontier": bool(on_frontier) if knee else None,
                "valid": step.get("valid") if knee else None,
            }
        )
    return rows


def _saturation_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    knee_concurrency = _knee(summary).get("concurrency")
    return [
        {
            "concurrency": step.get("concurrency"),
            "ttft_p99_ms": step.get("ttft_p99_ms"),
            "itl_p50_ms": step.get("itl_p50_ms"),
            "throughput_tok_s": step.get("throughput_tok_s"),
            "goodput_tok_s": step.get("goodput_tok_s"),
            "goodput_pct": step.get("goodput_pct"),
            "requests": step.get("requests"),
            "slo_held": step.get("slo_held"),
            "knee": step.get("concurrency") == knee_concurrency,
            "flags": ", ".join(_flags(step)),
        }
        for step in summary.get("steps", [])
    ]


def _fmt(value: float, digits: int, unit: str) -> str:
    return f"{value:,.{digits}f} {unit}"


def _best(
    rows: list[dict[str, Any]], criterion: str, key: str, higher: bool, describe: Callable[[dict[str, Any]], str]
) -> dict[str, Any]:
    """The winning row on ``key`` among engines with a knee, with the runner-up for contrast."""
    ranked = sorted((r for r in rows if r.get(key) is not None), key=lambda r: r[key], reverse=higher)
    if not ranked:
        return {"criterion": criterion, "engine": None, "value": None, "justification": "no engine held the SLO"}
    win = ranked[0]
    text = f"{describe(win)} at its knee (concurrency {win['knee_concurrency']})"
    if len(ranked) > 1:
        second, a, b = ranked[1], float(win[key]), float(ranked[1][key])
        pct = abs(a / b - 1) * 100 if b else 0.0
        text += f"; next best {second['engine']}: {describe(second)} ({pct:.0f} % {'more' if higher else 'lower'})"
    else:
        text += "; the only engine with a knee"
    return {"criterion": criterion, "engine": win["engine"], "value": win[key], "justification": text}


def _best_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        _best(
            rows,
            "Highest goodput under SLO",
            "goodput_tok_s",
            True,
            lambda r: _fmt(r["goodput_tok_s"], 0, "tok/s of goodput"),
        ),
        _best(rows, "Lowest ITL P50", "itl_p50_ms", False, lambda r: "ITL P50 " + _fmt(r["itl_p50_ms"], 2, "ms")),
        _best(rows, "Lowest TTFT P99", "ttft_p99_ms", False, lambda r: "TTFT P99 " + _fmt(r["ttft_p99_ms"], 1, "ms")),
    ]


def _warnings(results: list[EngineResult], labels: list[str]) -> list[str]:
    out = []
    for key in ("model", "precision", "hardware", "dataset", "slo"):
        values = {repr(r.summary.get(key)) for r in results}
        if len(values) > 1:
            out.append(f"not a like-for-like comparison: {key} differs between engines ({', '.join(sorted(values))})")
    for result, label in zip(results, labels):
        s = result.summary
        if not _knee(s):
            out.append(f"{label}: no step held the SLO; no knee, no defensible capacity")
            continue
        step = _knee_step(s)
        if _flags(step):
            notes = "; ".join(step.get("notes", [])) or ", ".join(_flags(step))
            out.append(f"{label}: the knee step (concurrency {step.get('concurrency')}) is flagged: {notes}")
        flagged = [str(st.get("concurrency")) for st in s.get("steps", []) if _flags(st)]
        if flagged:
            out.append(f"{label}: {len(flagged)} of {len(s.get('steps', []))} steps carry validity flags")
    return out


def build_report(loaded: LoadedRuns) -> Report:
    """The tables and warnings of a report over every loaded engine result."""
    results = loaded.results
    labels = _labels(results)
    pareto = _pareto_rows(results, labels)
    return Report(
        results=results,
        labels=labels,
        pareto=pareto,
        saturation={label: _saturation_rows(r.summary) for label, r in zip(labels, results)},
        best=_best_rows([row for row in pareto if row["knee_concurrency"] is not None]),
        warnings=[*loaded.warnings, *_warnings(results, labels)],
    )
