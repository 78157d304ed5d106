"""ResultStore: whole-file writes and reads under one root URI, over pyarrow.fs (local, file://, s3://, gs://)."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from raybench.environment import aws_region, s3_endpoint_url
from raybench.errors import StorageError, StorageOutage
from raybench.results.schema import SCHEMA_VERSION

__all__ = ["DEFAULT_MAX_OUTAGE_S", "ResultStore"]

T = TypeVar("T")
_RETRY_DELAYS_S = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)  # backoff; the last delay repeats until the outage bound
DEFAULT_MAX_OUTAGE_S = 16.0  # patience for a throttled or flapping store before the run stops


class ResultStore:
    """A folder of results. Files are written whole under unique names; nothing is appended in place.

    Picklable (URI and endpoint travel, never credentials: those come from each node's environment), so
    Ray actors write to the same store as the driver.
    """

    def __init__(
        self,
        uri: str,
        endpoint_url: str | None = None,
        region: str | None = None,
        max_outage_s: float = DEFAULT_MAX_OUTAGE_S,
    ) -> None:
        self.uri = _normalize(uri)
        self.endpoint_url = endpoint_url
        self.region = region
        self.max_outage_s = max_outage_s
        try:
            self._fs, self._root = _open(self.uri, endpoint_url, region)
        except (pa.ArrowInvalid, OSError, ValueError) as exc:
            raise StorageError(
                f"cannot open result store {uri!r}: {exc}; give a local path, s3:// or gs:// URI"
            ) from None
        self._local = isinstance(self._fs, pafs.LocalFileSystem)

    def __reduce__(self) -> tuple[type[ResultStore], tuple[str, str | None, str | None, float]]:
        return (ResultStore, (self.uri, self.endpoint_url, self.region, self.max_outage_s))

    def child(self, relative: str) -> ResultStore:
        """The store rooted at `relative` below this one."""
        uri = f"{self.uri.rstrip('/')}/{relative.strip('/')}"
        return ResultStore(uri, self.endpoint_url, self.region, self.max_outage_s)

    def path(self, relative: str) -> str:
        """Filesystem path of `relative` (for pyarrow readers)."""
        return f"{self._root.rstrip('/')}/{relative.lstrip('/')}" if relative else self._root

    @property
    def filesystem(self) -> pafs.FileSystem:
        return self._fs

    def preflight(self) -> None:
        """Write and delete a probe now, so a bad bucket, credentials or path fails in seconds, not hours."""
        probe = f".raybench-probe-{uuid.uuid4().hex}"
        try:
            self._fs.create_dir(self._root, recursive=True)
            with self._fs.open_output_stream(self.path(probe)) as stream:
                stream.write(b"probe")
            self._fs.delete_file(self.path(probe))
        except OSError as exc:
            raise StorageError(f"results location {self.uri} is not writable: {_explain(exc)}") from None

    def write_bytes(self, relative: str, data: bytes) -> None:
        """Write `data` whole: a temporary name then a rename locally, a single PUT on object stores.

        Transient failures (throttling, 5xx, dropped connections) are retried with backoff for up to
        `max_outage_s`; past that, StorageOutage.
        """
        target = self.path(relative)
        self._retry(lambda: self._write_once(target, data), relative)

    def _write_once(self, target: str, data: bytes) -> None:
        parent = target.rsplit("/", 1)[0]
        self._fs.create_dir(parent, recursive=True)
        if not self._local:
            with self._fs.open_output_stream(target) as stream:
                stream.write(data)
            return
        temp = f"{parent}/.tmp-{uuid.uuid4().hex}"
        try:
            with self._fs.open_output_stream(temp) as stream:
                stream.write(data)
            self._fs.move(temp, target)
        except OSError:  # a full disk: drop the partial temporary file, it only holds space
            with contextlib.suppress(OSError):
                self._fs.delete_file(temp)
            raise

    def write_text(self, relative: str, text: str) -> None:
        self.write_bytes(relative, text.encode("utf-8"))

    def write_json(self, relative: str, obj: Any) -> None:
        self.write_text(relative, json.dumps(obj, indent=1, sort_keys=False) + "\n")

    def write_table(self, relative: str, table: pa.Table) -> None:
        """Write `table` as one Parquet file carrying the record schema version in its metadata."""
        meta = dict(table.schema.metadata or {})
        meta[b"raybench.schema_version"] = SCHEMA_VERSION.encode()
        sink = io.BytesIO()
        pq.write_table(table.replace_schema_metadata(meta), sink, compression="zstd")
        self.write_bytes(relative, sink.getvalue())

    def read_bytes(self, relative: str) -> bytes:
        def read() -> bytes:
            with self._fs.open_input_stream(self.path(relative)) as stream:
                data: bytes = stream.read()
                return data

        return self._retry(read, relative)

    def read_json(self, relative: str) -> Any:
        return json.loads(self.read_bytes(relative))

    def exists(self, relative: str) -> bool:
        info = self._retry(lambda: self._fs.get_file_info(self.path(relative)), relative)
        return bool(info.type != pafs.FileType.NotFound)

    def read_table(self, relative: str, columns: list[str] | None = None, schema: pa.Schema | None = None) -> pa.Table:
        """Every Parquet part under `relative` as one table (empty with `schema` when there are none)."""
        if not self.exists(relative):
            if schema is None:
                raise StorageError(f"nothing stored at {self.uri}/{relative}")
            return schema.empty_table() if columns is None else schema.empty_table().select(columns)

        def read() -> pa.Table:
            dataset = ds.dataset(self.path(relative), filesystem=self._fs, format="parquet", schema=schema)
            return dataset.to_table(columns=columns)

        return self._retry(read, relative)

    def list(self, relative: str = "") -> list[str]:
        """Names directly under `relative` (files and folders)."""
        selector = pafs.FileSelector(self.path(relative), allow_not_found=True)
        infos = self._retry(lambda: self._fs.get_file_info(selector), relative)
        return sorted(info.base_name for info in infos)

    def _retry(self, action: Callable[[], T], relative: str) -> T:
        return _retry(action, f"{self.uri.rstrip('/')}/{relative.lstrip('/')}", self.max_outage_s)


def _normalize(uri: str) -> str:
    if "://" in uri:
        return uri
    return "file://" + os.path.abspath(os.path.expanduser(uri))


def _open(uri: str, endpoint_url: str | None, region: str | None) -> tuple[pafs.FileSystem, str]:
    parsed = urlparse(uri)
    if parsed.scheme != "s3":
        fs, root = pafs.FileSystem.from_uri(uri)
        return fs, root
    endpoint = endpoint_url or s3_endpoint_url()
    options: dict[str, Any] = {"region": region or aws_region() or "us-east-1"}
    if endpoint:
        target = urlparse(endpoint)
        options["endpoint_override"] = target.netloc or target.path
        options["scheme"] = target.scheme or "https"
    options["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=3)
    options["connect_timeout"] = 5
    options["request_timeout"] = 30
    return pafs.S3FileSystem(**options), f"{parsed.netloc}{parsed.path}".rstrip("/")


def _transient(exc: OSError) -> bool:
    text = str(exc).lower()
    markers = ("throttl", "slowdown", "slow down", "slow_down", "503", "500", "internal", "timeout", "timed out",
               "connection", "reset", "temporar", "unavailable")  # fmt: skip
    return any(m in text for m in markers)


def _retry(action: Callable[[], T], what: str, max_outage_s: float = DEFAULT_MAX_OUTAGE_S) -> T:
    """`action()`, retried with backoff while it fails transiently; StorageOutage once `max_outage_s` passed."""
    deadline = time.monotonic() + max_outage_s
    for attempt in itertools.count():
        try:
            return action()
        except FileNotFoundError as exc:
            raise StorageError(f"{what}: not found ({exc})") from None
        except OSError as exc:
            if not _transient(exc):
                raise StorageError(f"{what}: {_explain(exc)}") from None
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                raise StorageOutage(what, max_outage_s, _explain(exc)) from None
            time.sleep(min(_RETRY_DELAYS_S[min(attempt, len(_RETRY_DELAYS_S) - 1)], left_s))
    raise AssertionError("unreachable")


def _explain(exc: OSError) -> str:
    """The storage error, with what to do about the usual causes."""
    text = str(exc)
    low = text.lower()
    if "nosuchbucket" in low or ("does not exist" in low and "bucket" in low):
        return f"{text} — the bucket does not exist; create it or fix the URI"
    denied = ("accessdenied", "access denied", "access_denied", "forbidden", "invalidaccesskeyid",
              "invalid_access_key", "signaturedoesnotmatch", "signature_does_not_match")  # fmt: skip
    if any(m in low for m in denied):  # botocore spells codes AccessDenied, pyarrow ACCESS_DENIED
        return f"{text} — check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) and the bucket policy"
    if "no space left" in low or "disk quota exceeded" in low:
        return f"{text} — the disk is full; free space (or choose another --output), then resume the run"
    if "permission denied" in low or "read-only" in low:
        return f"{text} — the path is not writable; choose another --output"
    return text
