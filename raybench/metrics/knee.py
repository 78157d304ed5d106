"""The knee of a sweep, its defensible capacity, and whether to keep extending past it.

MEASUREMENT.md: the knee is the highest-load step that holds the SLO; the defensible capacity
is that step's goodput; a sweep extends past the knee while goodput % stays at or above 50 %.
Steps are ranked by target concurrency, not by order run, so a non-monotonic sweep (a middle
step fails, a higher one holds) still picks the highest passing step. Among steps of equal
concurrency (a repeated step) the one run last (highest ``step_index``) wins. Validity flags
do not enter the knee: ``slo_held`` already includes the error-rate bound, and the summary
reports the knee step's flags next to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from raybench.metrics.step import StepMetrics

__all__ = ["EXTEND_MIN_GOODPUT_PCT", "defensible_capacity_tok_s", "find_knee", "should_extend"]

EXTEND_MIN_GOODPUT_PCT = 50.0


def find_knee(steps: Sequence[StepMetrics]) -> StepMetrics | None:
    """The highest-concurrency step that holds the SLO, or None when none does."""
    holding = [s for s in steps if s.slo_held]
    if not holding:
        return None
    return max(holding, key=lambda s: (s.concurrency, s.step_index))


def defensible_capacity_tok_s(knee: StepMetrics | None) -> float | None:
    """The knee's goodput (tok/s); None without a knee."""
    return None if knee is None else knee.goodput_tok_s


def should_extend(step: StepMetrics) -> bool:
    """Run another step past the knee: true while this step's goodput % is at least 50."""
    return step.goodput_pct is not None and step.goodput_pct >= EXTEND_MIN_GOODPUT_PCT
