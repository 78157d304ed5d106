"""The one exception tree of raybench: what went wrong, and what the user should do about it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ConfigError",
    "EngineError",
    "Problem",
    "RaybenchError",
    "RunAborted",
    "RunInterrupted",
    "StorageError",
    "StorageOutage",
    "UsageError",
]


class RaybenchError(Exception):
    """Base of every error raybench raises on purpose; the CLI prints these without a traceback."""

    exit_code = 1


@dataclass(frozen=True)
class Problem:
    """One problem in a job spec: where it is (dotted path) and what to write instead."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigError(RaybenchError):
    """A job spec (or a command-line override) is wrong; carries one Problem per mistake."""

    exit_code = 2

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s)\n{lines}")


class UsageError(RaybenchError):
    """The command line names something that does not exist or does not fit (a run id to resume, ...)."""

    exit_code = 2


class EngineError(RaybenchError):
    """An engine could not be launched, did not become ready, or died."""


class StorageError(RaybenchError):
    """The result store could not be written or read."""


class StorageOutage(StorageError):
    """The result store kept failing transiently (throttling, 5xx, no connection) for longer than the bound."""

    def __init__(self, what: str, max_outage_s: float, detail: str) -> None:
        self.what = what
        self.max_outage_s = max_outage_s
        self.detail = detail
        super().__init__(f"{what}: storage unavailable for over {max_outage_s:g} s (output.max_outage_s): {detail}")

    def __reduce__(self) -> tuple[type[StorageOutage], tuple[str, float, str]]:
        return (StorageOutage, (self.what, self.max_outage_s, self.detail))


class RunAborted(RaybenchError):
    """A run stopped before it finished (interrupted, or a fatal failure); says what is safe."""


class RunInterrupted(RunAborted):
    """The user stopped the run (Ctrl-C): what was written is kept and the run can be resumed."""

    exit_code = 130  # 128 + SIGINT, what shells report for a command stopped by Ctrl-C
