"""Run a short sweep from Python and read its results back: the same job as the quickstart, shortened.

    python examples/python_api.py [OUTPUT_DIR]

Uses the public API only: `raybench.load_job` (with `--set`-style overrides), `raybench.run`, and the
stored summary and Parquet records (with pyarrow).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.dataset as ds

import raybench

ROOT = Path(__file__).resolve().parents[1]


def main(output: str) -> int:
    spec = raybench.load_job(
        ROOT / "jobs" / "quickstart.yaml",
        ["load.steps=[4, 16, 24]", "load.duration_s=3", "load.warmup_requests=8", f"output.uri={output}"],
    )
    result = raybench.run(spec)
    for engine_id, summary in result.summaries.items():
        knee = summary["results_at_knee"]
        where = f"concurrency {knee['concurrency']}, {knee['goodput_tok_s']:.0f} tok/s of goodput" if knee else "none"
        print(f"{engine_id}: knee {where}")
        records = ds.dataset(f"{output}/{result.run_id}/engines/{engine_id}/records", format="parquet").to_table()
        print(f"{engine_id}: {records.num_rows} request records, statuses {set(records.column('status').to_pylist())}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "./results"))
