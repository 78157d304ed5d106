"""Fixtures of the report tests (helpers live in report_samples.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from report_samples import make_summary

from raybench.report.runs import EngineResult, LoadedRuns


@pytest.fixture
def summary() -> Callable[..., dict[str, Any]]:
    return make_summary


@pytest.fixture
def loaded() -> Callable[..., LoadedRuns]:
    def build(*summaries: dict[str, Any], run_id: str = "run-1") -> LoadedRuns:
        return LoadedRuns([EngineResult(run_id, f"file:///runs/{run_id}", s["engine_id"], s) for s in summaries])

    return build
