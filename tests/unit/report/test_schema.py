"""docs/summary.schema.json is a valid JSON Schema, and real summaries validate against it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from report_samples import JOB, make_request, write_records

from raybench.report.records import summarize_engine
from raybench.results.store import ResultStore
from raybench.sweep.summary import KNEE_KEYS

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "docs" / "summary.schema.json").read_text())
ARTICLE_KEYS = [
    "harness",
    "harness_version",
    "model",
    "precision",
    "hardware",
    "dataset",
    "slo",
    "motor",
    "motor_version",
    "concurrency_sweep",
    "results_at_knee",
]


@pytest.fixture(scope="module")
def real_summary(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A summary built by the same code as the driver's, from stored records (through JSON)."""
    run = tmp_path_factory.mktemp("schema") / "run-s"
    run.mkdir()
    (run / "job.yaml").write_text(yaml.safe_dump(JOB))
    rows = [make_request(g, t) for g in ("g0", "g1") for t in (0, 40, 80, 120)]
    rows.append(make_request("g1", 60, status="http_error", chunk_ns=[], chunk_tokens=[], output_tokens=None))
    write_records(run, "eng", 0, rows)
    slow = [make_request(g, t, ttft_ms=800, target_concurrency=4) for g in ("g0", "g1") for t in (0, 50, 90)]
    write_records(run, "eng", 1, slow)
    return json.loads(json.dumps(summarize_engine(ResultStore(str(run)), "eng")))


def test_the_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["required"][: len(ARTICLE_KEYS)] == ARTICLE_KEYS
    assert {"steps", "definitions", "provenance"} <= set(SCHEMA["required"])
    knee = SCHEMA["properties"]["results_at_knee"]["oneOf"][1]
    assert tuple(knee["required"]) == KNEE_KEYS


def test_a_real_summary_validates_and_keeps_the_article_keys_verbatim(real_summary) -> None:
    jsonschema.validate(real_summary, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert list(real_summary)[: len(ARTICLE_KEYS)] == ARTICLE_KEYS
    assert set(real_summary["results_at_knee"]) == set(KNEE_KEYS)
    assert real_summary["steps"][0]["failed"] == 1
    assert real_summary["concurrency_sweep"] == [2, 4] and real_summary["results_at_knee"]["concurrency"] == 2


def test_a_summary_without_knee_validates(real_summary) -> None:
    none = copy.deepcopy(real_summary) | {"results_at_knee": None, "defensible_capacity_tok_s": None}
    jsonschema.validate(none, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_a_step_with_the_simulators_server_metrics_validates(real_summary) -> None:
    from raybench.engines.metrics import summarize_step

    rows = [
        {"step_index": 0, "replica": "replica-0", "scraped_ns": t, "metric": m, "source": "x", "value": v}
        for t, cpu in ((0, 1.0), (2_000_000_000, 1.1))
        for m, v in (("running_requests", 16.0), ("sim_cpu_seconds_total", cpu))
    ]
    with_metrics = copy.deepcopy(real_summary)
    with_metrics["steps"][0]["server_metrics"] = json.loads(json.dumps({**summarize_step(rows), "scrape_errors": 0}))
    assert with_metrics["steps"][0]["server_metrics"]["sim_cpu_share"] == pytest.approx(0.05)
    jsonschema.validate(with_metrics, SCHEMA, cls=jsonschema.Draft202012Validator)
    with_metrics["steps"][0]["server_metrics"]["sim_cpu_share"] = -0.1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(with_metrics, SCHEMA, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize(
    "damage",
    [
        lambda s: s.pop("motor"),
        lambda s: s["results_at_knee"].pop("goodput_tok_s"),
        lambda s: s["steps"][0].update(goodput_pct=100.5),
        lambda s: s["steps"][0]["ttft_ms"].pop("p99_9"),
        lambda s: s["slo"].update(ttft_p99_ms="500"),
        lambda s: s["provenance"].update(job_spec_sha256="not-a-hash"),
    ],
)
def test_damaged_summaries_are_rejected(real_summary, damage) -> None:
    broken = copy.deepcopy(real_summary)
    damage(broken)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA, cls=jsonschema.Draft202012Validator)
