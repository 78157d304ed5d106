"""What every actor that supervises one server process answers: alive, why it exited, its group, its log."""

from __future__ import annotations

import contextlib
from typing import Any

from raybench.deploy.process import ServerProcess, describe_exit
from raybench.errors import StorageError
from raybench.results.store import ResultStore

__all__ = ["SupervisedProcess"]


class SupervisedProcess:
    """Base of the process-owning actors (engine replicas, Dynamo processes): they set `_process`, `_name`,
    `_store` and `_log_key` (where the process's log goes in the result store)."""

    _process: ServerProcess | None
    _name: str
    _store: ResultStore
    _log_key: str

    def alive(self) -> bool:
        return self._process is not None and self._process.alive()

    def exit_info(self) -> dict[str, Any]:
        """Why the process is gone: its exit status and last log lines (empty while it runs)."""
        process = self._process
        if process is None or process.alive():
            return {}
        return {"replica": self._name, "exit": describe_exit(process.exit_code()), "log_tail": process.log_tail()}

    def pgid(self) -> int | None:
        """The process group (the guard's pid), for tests that prove nothing is left behind."""
        return self._process.pgid if self._process is not None else None

    def sync_log(self) -> None:
        """Copy the process's log so far to the result store (a whole-file write, replacing the last copy)."""
        if self._process is None:
            return
        # the run goes on without this log; the summary still names the process
        with contextlib.suppress(OSError, StorageError):
            self._store.write_bytes(self._log_key, self._process.log_path.read_bytes())
