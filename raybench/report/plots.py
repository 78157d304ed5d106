"""The report's plots (matplotlib, headless): Pareto frontier, goodput vs concurrency, ITL, per-user vs per-GPU.

Each plot is a function of the report's engine results returning a matplotlib Figure;
``write_plots`` saves all of them as PNG and SVG, ``svg_plots`` returns SVG text for the HTML
report (text kept as text, no embedded fonts, no timestamps, so the output is reproducible).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import io

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from raybench.report.pareto import gpu_count, pareto_mask
from raybench.report.tables import Report

__all__ = ["PLOTS", "svg_plots", "write_plots"]

_COLORS: tuple[Any, ...] = tuple(plt.get_cmap("tab10")(i) for i in range(10))
_THOUSANDS = FuncFormatter(lambda v, _pos: f"{v:,.0f}")


def _steps(summary: dict[str, Any], key: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.array([np.nan if s.get(key) is None else s[key] for s in summary.get("steps", [])], dtype=np.float64)


def _label_points(ax: Any, x: Any, y: Any, concurrency: Any) -> None:
    """Label points 'c<concurrency>', skipping any that would sit on a label already drawn."""
    finite = np.isfinite(x) & np.isfinite(y)
    if not finite.any():
        return
    span_x = max(float(np.ptp(x[finite])), 1e-9)
    span_y = max(float(np.ptp(y[finite])), 1e-9)
    placed: list[tuple[float, float]] = []
    for cx, cy, c in zip(x[finite], y[finite], concurrency[finite]):
        nx, ny = cx / span_x, cy / span_y
        if any(abs(nx - px) < 0.04 and abs(ny - py) < 0.04 for px, py in placed):
            continue
        placed.append((nx, ny))
        ax.annotate(f"c{c:.0f}", (cx, cy), textcoords="offset points", xytext=(4, 4), fontsize=8)


def _from_zero(ax: Any, x: Any = None, y: Any = None) -> None:
    """Axes that start at 0 and leave headroom above the largest value for labels."""
    for values, setter in ((x, ax.set_xlim), (y, ax.set_ylim)):
        if values is None:
            continue
        finite = np.asarray(values, dtype=np.float64)
        finite = finite[np.isfinite(finite)]
        top = float(finite.max()) if finite.size else 1.0
        setter(0, top * 1.12 if top > 0 else 1.0)


def _new(title: str) -> tuple[Figure, Any]:
    fig = Figure(figsize=(7, 4.4), dpi=120, layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title, loc="left")
    ax.grid(True, alpha=0.3)
    return fig, ax


def _finish(fig: Figure, ax: Any) -> Figure:
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="best", framealpha=0.9)
    return fig


def _slo(report: Report) -> dict[str, Any]:
    return report.results[0].summary.get("slo") or {}


def pareto_plot(report: Report) -> Figure:
    """Throughput vs TTFT P99, one line per engine over its sweep, the frontier and the SLO bound."""
    fig, ax = _new("Throughput vs TTFT P99 — Pareto frontier (up and left is better)")
    xs, ys = [], []
    for i, (label, r) in enumerate(zip(report.labels, report.results)):
        x, y = _steps(r.summary, "ttft_p99_ms"), _steps(r.summary, "throughput_tok_s")
        ax.plot(x, y, "o-", color=_COLORS[i % 10], label=label, markersize=5)
        _label_points(ax, x, y, _steps(r.summary, "concurrency"))
        xs.append(x)
        ys.append(y)
    x_all, y_all = np.concatenate(xs), np.concatenate(ys)
    front = pareto_mask(x_all, y_all)
    order = np.argsort(x_all[front])
    ax.step(x_all[front][order], y_all[front][order], "k--", where="post", lw=1.2, label="Pareto frontier")
    bound = _slo(report).get("ttft_p99_ms")
    if bound is not None:
        ax.axvline(bound, color="red", ls=":", lw=1.5, label=f"SLO TTFT P99 ≤ {bound:g} ms")
        right = max(np.nanmax(x_all, initial=bound) * 1.05, bound * 1.3)
        ax.axvspan(bound, right, color="red", alpha=0.06)
        ax.text(bound, 0.02, " SLO violated", transform=ax.get_xaxis_transform(), color="red", fontsize=9)
    ax.set_xlabel("TTFT P99 (ms)")
    ax.set_ylabel("Output throughput (tok/s)")
    ax.set_xlim(left=0)
    _from_zero(ax, y=y_all)
    ax.yaxis.set_major_formatter(_THOUSANDS)
    return _finish(fig, ax)


def goodput_plot(report: Report) -> Figure:
    """Throughput (solid) and goodput (dashed) vs concurrency; a star marks each engine's knee."""
    fig, ax = _new("Throughput and goodput vs concurrency (★ = knee, defensible capacity)")
    for i, (label, r) in enumerate(zip(report.labels, report.results)):
        color, c = _COLORS[i % 10], _steps(r.summary, "concurrency")
        ax.plot(c, _steps(r.summary, "throughput_tok_s"), "o-", color=color, label=f"{label} throughput")
        ax.plot(c, _steps(r.summary, "goodput_tok_s"), "s--", color=color, alpha=0.8, label=f"{label} goodput")
        knee = r.summary.get("results_at_knee")
        if knee:
            ax.plot(knee["concurrency"], knee["goodput_tok_s"], "*", color=color, markersize=18, mec="black")
            ax.annotate(
                f"knee c{knee['concurrency']}: {knee['goodput_tok_s']:,.0f} tok/s",
                (knee["concurrency"], knee["goodput_tok_s"]),
                textcoords="offset points",
                xytext=(-12, -18),
                ha="right",
                fontsize=9,
            )
    ax.set_xlabel("Concurrency (in-flight requests)")
    ax.set_ylabel("Tokens per second (tok/s)")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(_THOUSANDS)
    return _finish(fig, ax)


def itl_plot(report: Report) -> Figure:
    """ITL P50 vs concurrency per engine, with the SLO bound."""
    fig, ax = _new("ITL P50 vs concurrency (lower is better)")
    for i, (label, r) in enumerate(zip(report.labels, report.results)):
        x, y = _steps(r.summary, "concurrency"), _steps(r.summary, "itl_p50_ms")
        ax.plot(x, y, "o-", color=_COLORS[i % 10], label=label)
    bound = _slo(report).get("itl_p50_ms")
    if bound is not None:
        ax.axhline(bound, color="red", ls=":", lw=1.5, label=f"SLO ITL P50 ≤ {bound:g} ms")
    ax.set_xlabel("Concurrency (in-flight requests)")
    ax.set_ylabel("ITL P50 (ms)")
    ax.set_ylim(bottom=0)
    return _finish(fig, ax)


def per_user_plot(report: Report) -> Figure:
    """Tokens/s per user (1000 / TPOT P50) against tokens/s per GPU, one point per step."""
    fig, ax = _new("Per-user speed vs per-GPU throughput (up and right is better)")
    xs, ys = [], []
    for i, (label, r) in enumerate(zip(report.labels, report.results)):
        gpus, known = gpu_count(r.summary)
        tpot = np.array([((s.get("tpot_ms") or {}).get("p50") or np.nan) for s in r.summary.get("steps", [])], float)
        per_user = np.divide(1000.0, tpot, out=np.full_like(tpot, np.nan), where=tpot > 0)
        per_gpu = _steps(r.summary, "throughput_tok_s") / gpus
        suffix = f" ({gpus} GPU{'s' if gpus > 1 else ''}{'' if known else ', assumed'})"
        ax.plot(per_gpu, per_user, "o-", color=_COLORS[i % 10], label=label + suffix)
        _label_points(ax, per_gpu, per_user, _steps(r.summary, "concurrency"))
        xs.append(per_gpu)
        ys.append(per_user)
    ax.set_xlabel("Output throughput per GPU (tok/s/GPU)")
    ax.set_ylabel("Per-user speed (tok/s/user)\n= 1000 / TPOT P50 (ms)")
    _from_zero(ax, x=np.concatenate(xs) if xs else None, y=np.concatenate(ys) if ys else None)
    ax.xaxis.set_major_formatter(_THOUSANDS)
    return _finish(fig, ax)


PLOTS: dict[str, tuple[str, Callable[[Report], Figure]]] = {
    "pareto": ("Throughput vs TTFT P99 with the Pareto frontier and the SLO bound", pareto_plot),
    "goodput": ("Throughput and goodput vs concurrency, knee marked", goodput_plot),
    "itl": ("ITL P50 vs concurrency", itl_plot),
    "per_user_vs_per_gpu": ("Tokens/s per user vs tokens/s per GPU", per_user_plot),
}

_SVG_META = {"Date": None, "Creator": None}
# Sized to stay legible when the HTML report shows two plots side by side.
_RC: dict[Any, Any] = {"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "legend.fontsize": 9}


def write_plots(report: Report, directory: str | Path) -> list[Path]:
    """Every plot as ``<name>.png`` and ``<name>.svg`` in ``directory``; returns the files written."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with matplotlib.rc_context(_RC):
        for name, (_, make) in PLOTS.items():
            fig = make(report)
            fig.savefig(out / f"{name}.png", format="png")
            fig.savefig(out / f"{name}.svg", format="svg", metadata=_SVG_META)
            written += [out / f"{name}.png", out / f"{name}.svg"]
    return written


def svg_plots(report: Report) -> dict[str, str]:
    """Every plot as an inline ``<svg>`` element (XML prolog and DOCTYPE stripped)."""
    out = {}
    with matplotlib.rc_context({**_RC, "svg.fonttype": "none", "svg.hashsalt": "raybench"}):
        for name, (_, make) in PLOTS.items():
            buf = io.StringIO()
            make(report).savefig(buf, format="svg", metadata=_SVG_META)
            text = buf.getvalue()
            out[name] = text[text.index("<svg") :]
    return out
