"""Dataset preparation: reading a dataset file, tokenizing and filtering its rows (in parallel with Ray Data
when large), and the Parquet cache of prepared rows that later runs and resumed runs read instead.

The cache lives next to the results, at `<output>/_workload_cache/<key>/`: `rows.parquet`, then `meta.json`
(written last: a cache entry without it is ignored). The key is content-addressed: a hash of the dataset's
bytes, the preparation parameters (filters, api), the token counter's identity and the preparation version,
so any change to one of them prepares afresh, and a resumed run (same spec, same file) finds its entry.
Both paths run the same batch function over the same rows and keep the file's order, so a dataset
prepared with Ray Data yields exactly the prompts of one prepared in-process.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from raybench.errors import ConfigError, Problem, StorageError
from raybench.results.store import ResultStore

__all__ = [
    "CACHE_DIR",
    "PREPARE_VERSION",
    "PrepareReport",
    "Prepared",
    "cache_key",
    "cached",
    "prepare_rows",
    "read_dataset",
    "workload_cache",
]

CACHE_DIR = "_workload_cache"
PREPARE_VERSION = "prepare-v1"

BatchFn = Callable[[pa.Table], pa.Table]
_BLOCK_ROWS = 2000  # rows per Ray Data block: one table would be one block, tokenized by a single task


@dataclass(frozen=True)
class PrepareReport:
    """What preparing a dataset found, and how: `local`, `ray_data`, or `cache` (read back, not re-tokenized)."""

    lines: int
    malformed: int
    filtered_out: int
    kept: int
    method: str
    cache_key: str


@dataclass(frozen=True)
class Prepared:
    """The prepared rows (file order) and the report."""

    table: pa.Table
    report: PrepareReport


def workload_cache(uri: str, endpoint_url: str | None = None, region: str | None = None) -> ResultStore:
    """The cache folder under an output URI (the job's `output`)."""
    return ResultStore(uri, endpoint_url, region).child(CACHE_DIR)


def read_dataset(path: str) -> bytes:
    """The bytes of a dataset file (local path or object-storage URI); a missing one is named."""
    if "://" not in path:
        file = Path(path).expanduser()
        if not file.is_file():
            raise ConfigError("workload", [Problem("workload.path", f"no dataset file at {path!r}")])
        return file.read_bytes()
    parent, _, name = path.rstrip("/").rpartition("/")
    try:
        return ResultStore(parent).read_bytes(name)
    except Exception as exc:
        raise ConfigError("workload", [Problem("workload.path", f"cannot read {path}: {exc}")]) from None


def cache_key(kind: str, raw: bytes, params: dict[str, Any], counter_identity: str) -> str:
    """Content address of a prepared dataset: its bytes, the parameters, the counter, the preparation code."""
    digest = hashlib.sha256(raw)
    meta = {"kind": kind, "params": params, "counter": counter_identity, "version": PREPARE_VERSION}
    digest.update(json.dumps(meta, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:32]


def prepare_rows(
    rows: pa.Table,
    batch_fn: BatchFn,
    *,
    key: str,
    lines: int,
    malformed: int,
    ray_data_min_rows: int,
    cache: ResultStore | None,
) -> Prepared:
    """Run `batch_fn` (tokenize; it adds a boolean `keep` column) over `rows`, keep the kept rows, cache them.

    `rows` needs a `line` column (file order). With `ray_data_min_rows` rows or more, batches run in
    parallel with Ray Data; below that, in this process.
    """
    if rows.num_rows >= ray_data_min_rows:
        done, method = _ray_data(rows, batch_fn), "ray_data"
    else:
        done, method = batch_fn(rows), "local"
    done = done.sort_by("line")
    kept = done.filter(done.column("keep")).drop_columns(["keep"])
    report = PrepareReport(lines, malformed, done.num_rows - kept.num_rows, kept.num_rows, method, key)
    if cache is not None and kept.num_rows:
        _store(cache, key, kept, report)
    return Prepared(kept, report)


def _store(cache: ResultStore, key: str, rows: pa.Table, report: PrepareReport) -> None:
    """Write a cache entry; best effort: a cache that cannot be written costs a later run time, not this run."""
    sink = io.BytesIO()
    pq.write_table(rows, sink)
    with contextlib.suppress(StorageError):
        cache.write_bytes(f"{key}/rows.parquet", sink.getvalue())
        cache.write_json(f"{key}/meta.json", asdict(report))  # last: marks the entry whole


def cached(cache: ResultStore | None, key: str) -> Prepared | None:
    """The prepared rows of `key` when the cache holds a whole entry for it."""
    try:
        if cache is None or not cache.exists(f"{key}/meta.json"):
            return None
        meta = cache.read_json(f"{key}/meta.json")
        table = pq.read_table(io.BytesIO(cache.read_bytes(f"{key}/rows.parquet")))
        return Prepared(table, PrepareReport(**{**meta, "method": "cache"}))
    except (StorageError, pa.ArrowException, TypeError, ValueError):
        return None  # unreadable or damaged entry: prepare again (and overwrite it)


def _ray_data(rows: pa.Table, batch_fn: BatchFn) -> pa.Table:
    """`batch_fn` over `rows` in parallel Ray tasks; joins this process's Ray, or starts an embedded one."""
    import ray

    if ray.is_initialized():
        return _map(rows, batch_fn)
    from raybench.sweep.session import ray_session

    with ray_session(min_cpus=1):
        return _map(rows, batch_fn)


def _map(rows: pa.Table, batch_fn: BatchFn) -> pa.Table:
    import ray
    import ray.data

    blocks = [rows.slice(start, _BLOCK_ROWS) for start in range(0, rows.num_rows, _BLOCK_ROWS)] or [rows]
    dataset = ray.data.from_arrow(blocks).map_batches(batch_fn, batch_format="pyarrow", batch_size=_BLOCK_ROWS)
    tables = ray.get(dataset.to_arrow_refs())
    tables = [t for t in tables if t.num_rows]
    return pa.concat_tables(tables) if tables else batch_fn(rows.slice(0, 0))
