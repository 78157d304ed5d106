"""The report's rows against hand-computed answers from article-shaped sweeps."""

from __future__ import annotations

import pytest
from report_samples import ARTICLE_VLLM, make_step

from raybench.report.tables import build_report

SGLANG = [
    (8, 200, 15, 6000, 6000),
    (16, 350, 20, 11000, 11000),
    (32, 390, 21, 16200, 15700),
    (48, 900, 30, 17000, 8000),
]
TRT = [(8, 220, 9, 5000, 5000), (32, 480, 10, 14800, 13800), (64, 1500, 12, 15500, 3000)]


@pytest.fixture
def three(summary, loaded):
    return build_report(
        loaded(
            summary("vllm", ARTICLE_VLLM),
            summary("sglang", SGLANG, motor="sglang", config="FP8, RadixAttention"),
            summary("trt", TRT, motor="trtllm", config="FP8, compiled engine"),
        )
    )


def test_pareto_row_is_the_knee_of_the_article_sweep(summary, loaded) -> None:
    report = build_report(loaded(summary("vllm", ARTICLE_VLLM)))
    (row,) = report.pareto
    assert row["engine"] == "vllm" and row["config"] == "FP8, chunked prefill"
    assert row["knee_concurrency"] == 32
    assert (row["throughput_tok_s"], row["ttft_p99_ms"], row["itl_p50_ms"], row["goodput_tok_s"]) == (
        12500,
        420,
        18,
        12200,
    )
    assert row["goodput_pct"] == pytest.approx(97.6)
    assert row["on_frontier"] is True and row["valid"] is True
    assert report.warnings == []


def test_saturation_rows_follow_the_sweep_and_mark_the_knee(summary, loaded) -> None:
    report = build_report(loaded(summary("vllm", ARTICLE_VLLM)))
    rows = report.saturation["vllm"]
    assert [r["concurrency"] for r in rows] == [8, 16, 32, 48, 64]
    assert [r["knee"] for r in rows] == [False, False, True, False, False]
    assert [r["slo_held"] for r in rows] == [True, True, True, False, False]
    assert rows[3]["goodput_tok_s"] == 7400 and rows[4]["ttft_p99_ms"] == 1200


def test_frontier_keeps_only_non_dominated_knees(three) -> None:
    frontier = {r["engine"]: r["on_frontier"] for r in three.pareto}
    # sglang (390 ms, 16,200 tok/s) dominates vllm (420 ms, 12,500) and trt (480 ms, 14,800).
    assert frontier == {"vllm": False, "sglang": True, "trt": False}


def test_best_engine_per_criterion_with_the_numbers_that_justify_it(three) -> None:
    best = {b["criterion"]: b for b in three.best}
    good = best["Highest goodput under SLO"]
    assert good["engine"] == "sglang" and good["value"] == 15700
    # 15,700 / 13,800 - 1 = 13.8 %
    assert good["justification"] == (
        "15,700 tok/s of goodput at its knee (concurrency 32); next best trt: 13,800 tok/s of goodput (14 % more)"
    )
    itl = best["Lowest ITL P50"]
    assert itl["engine"] == "trt"
    assert itl["justification"].endswith("next best vllm: ITL P50 18.00 ms (44 % lower)")  # 1 - 10/18
    ttft = best["Lowest TTFT P99"]
    assert ttft["engine"] == "sglang" and "TTFT P99 390.0 ms" in ttft["justification"]
    assert ttft["justification"].endswith("(7 % lower)")  # 1 - 390/420


def test_engine_without_knee_is_listed_but_never_recommended(summary, loaded) -> None:
    never = [(8, 900, 40, 1000, 0), (16, 1500, 50, 1200, 0)]
    report = build_report(loaded(summary("vllm", ARTICLE_VLLM), summary("slow", never)))
    slow = next(r for r in report.pareto if r["engine"] == "slow")
    assert slow["knee_concurrency"] is None and slow["on_frontier"] is None
    assert all(b["engine"] == "vllm" for b in report.best)
    assert all(b["justification"].endswith("the only engine with a knee") for b in report.best)
    assert "slow: no step held the SLO; no knee, no defensible capacity" in report.warnings


def test_no_knee_anywhere_says_so(summary, loaded) -> None:
    report = build_report(loaded(summary("slow", [(8, 900, 40, 1000, 0)])))
    assert [b["engine"] for b in report.best] == [None, None, None]
    assert report.best[0]["justification"] == "no engine held the SLO"


def test_validity_flags_and_unlike_comparisons_become_warnings(summary, loaded) -> None:
    flagged = summary("vllm", ARTICLE_VLLM)
    flagged["steps"][2] = make_step(
        2, 32, 420, 18, 12500, 12200, validity={"client_saturated": True}, valid=False, notes=["loop lag P99 9 ms"]
    )
    other = summary("sglang", SGLANG, hardware="8xH100")
    report = build_report(loaded(flagged, other))
    text = "\n".join(report.warnings)
    assert "vllm: the knee step (concurrency 32) is flagged: loop lag P99 9 ms" in text
    assert "vllm: 1 of 5 steps carry validity flags" in text
    assert "hardware differs between engines" in text
    assert report.pareto[0]["valid"] is False


def test_same_engine_in_two_runs_is_labelled_by_run(summary, loaded) -> None:
    first, second = loaded(summary("vllm", ARTICLE_VLLM)), loaded(summary("vllm", TRT), run_id="run-2")
    first.results += second.results
    report = build_report(first)
    assert report.labels == ["vllm @ run-1", "vllm @ run-2"]
    assert set(report.saturation) == {"vllm @ run-1", "vllm @ run-2"}
