"""Watching an engine while it is measured: server metrics per step, and a crash turned into a failed step."""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa

from raybench.deploy.deployment import EngineDeployment
from raybench.deploy.scrape import MetricsScraper
from raybench.engines.metrics import MetricMap, summarize_step
from raybench.results.schema import SERVER_METRICS_SCHEMA
from raybench.results.store import ResultStore

__all__ = ["StepObserver", "server_metrics_prefix"]


def server_metrics_prefix(engine_id: str, step_index: int) -> str:
    """Where one step's server-metric samples live, relative to the run (MEASUREMENT.md layout)."""
    return f"engines/{engine_id}/server_metrics/step={step_index}"


class StepObserver:
    """`begin(k)` before a step's load, `end(k)` after it: stores the scraped samples, summarizes them,
    copies the server logs, and checks the replicas; `end` returns the failure reason when one died."""

    def __init__(
        self, deployment: EngineDeployment, base_urls: list[str], metric_map: MetricMap, store: ResultStore,
        engine_id: str, interval_s: float = 1.0,
    ) -> None:  # fmt: skip
        self._deployment = deployment
        self._scraper = MetricsScraper(deployment.metrics_urls(base_urls), metric_map, interval_s)
        self._store = store
        self._engine_id = engine_id
        self.server_metrics: dict[int, dict[str, Any]] = {}
        self.failure: dict[str, Any] | None = None

    def begin(self, step_index: int) -> None:
        self._scraper.start(step_index)

    def end(self, step_index: int) -> str | None:
        rows = self._scraper.stop()
        if self._scraper.enabled:
            if rows:
                table = pa.Table.from_pylist(rows, schema=SERVER_METRICS_SCHEMA)
                name = f"part-00000-{uuid.uuid4().hex[:8]}.parquet"
                self._store.write_table(f"{server_metrics_prefix(self._engine_id, step_index)}/{name}", table)
            self.server_metrics[step_index] = {**summarize_step(rows), "scrape_errors": self._scraper.errors}
        self._deployment.sync_logs()
        if self._deployment.alive():
            return None
        reason = f"the engine server died during step {step_index}: {self._deployment.failure_reason()}"
        self.failure = {"step_index": step_index, "reason": reason}
        return reason

    def annotate(self, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each step dict with its `server_metrics` summary, and the failed step marked with its reason."""
        failed = self.failure["step_index"] if self.failure else None
        out = []
        for step in steps:
            index = step.get("step_index")
            extra: dict[str, Any] = {
                "server_metrics": self.server_metrics.get(index) if isinstance(index, int) else None
            }
            if index == failed and self.failure is not None:
                extra.update(failed=True, failure_reason=self.failure["reason"])
            out.append({**step, **extra})
        return out
