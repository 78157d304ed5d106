"""ResultStore: whole-file writes and reads under one root URI, over pyarrow.fs (local, file://, s3://, gs://)."""

from __future__ import annotations

import io
import json
import os
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from raybench.errors import StorageError
from raybench.results.schema import SCHEMA_VERSION

__all__ = ["ResultStore"]


class ResultStore:
    """A folder of results. Files are written whole under unique names; nothing is appended in place.

    Picklable (only the URI travels), so Ray actors write to the same store as the driver.
    """

    def __init__(self, uri: str) -> None:
        self.uri = _normalize(uri)
        try:
            self._fs, self._root = pafs.FileSystem.from_uri(self.uri)
        except (pa.ArrowInvalid, OSError) as exc:
            raise StorageError(
                f"cannot open result store {uri!r}: {exc}; give a local path, s3:// or gs:// URI"
            ) from None
        self._local = isinstance(self._fs, pafs.LocalFileSystem)

    def __reduce__(self) -> tuple[type[ResultStore], tuple[str]]:
        return (ResultStore, (self.uri,))

    def child(self, relative: str) -> ResultStore:
        """The store rooted at `relative` below this one."""
        return ResultStore(f"{self.uri.rstrip('/')}/{relative.strip('/')}")

    def path(self, relative: str) -> str:
        """Filesystem path of `relative` (for pyarrow readers)."""
        return f"{self._root.rstrip('/')}/{relative.lstrip('/')}" if relative else self._root

    @property
    def filesystem(self) -> pafs.FileSystem:
        return self._fs

    def write_bytes(self, relative: str, data: bytes) -> None:
        """Write `data` whole: a temporary name then a rename locally, a single PUT on object stores."""
        target = self.path(relative)
        parent = target.rsplit("/", 1)[0]
        try:
            self._fs.create_dir(parent, recursive=True)
            if not self._local:
                with self._fs.open_output_stream(target) as stream:
                    stream.write(data)
                return
            temp = f"{parent}/.tmp-{uuid.uuid4().hex}"
            with self._fs.open_output_stream(temp) as stream:
                stream.write(data)
            self._fs.move(temp, target)
        except OSError as exc:
            raise StorageError(f"cannot write {self.uri}/{relative}: {exc}") from None

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
        try:
            with self._fs.open_input_stream(self.path(relative)) as stream:
                data: bytes = stream.read()
                return data
        except (OSError, FileNotFoundError) as exc:
            raise StorageError(f"cannot read {self.uri}/{relative}: {exc}") from None

    def read_json(self, relative: str) -> Any:
        return json.loads(self.read_bytes(relative))

    def exists(self, relative: str) -> bool:
        info = self._fs.get_file_info(self.path(relative))
        return bool(info.type != pafs.FileType.NotFound)

    def read_table(self, relative: str, columns: list[str] | None = None, schema: pa.Schema | None = None) -> pa.Table:
        """Every Parquet part under `relative` as one table (empty with `schema` when there are none)."""
        if not self.exists(relative):
            if schema is None:
                raise StorageError(f"nothing stored at {self.uri}/{relative}")
            return schema.empty_table() if columns is None else schema.empty_table().select(columns)
        dataset = ds.dataset(self.path(relative), filesystem=self._fs, format="parquet", schema=schema)
        return dataset.to_table(columns=columns)

    def list(self, relative: str = "") -> list[str]:
        """Names directly under `relative` (files and folders)."""
        selector = pafs.FileSelector(self.path(relative), allow_not_found=True)
        return sorted(info.base_name for info in self._fs.get_file_info(selector))


def _normalize(uri: str) -> str:
    if "://" in uri:
        return uri
    return "file://" + os.path.abspath(os.path.expanduser(uri))
