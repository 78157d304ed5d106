"""Supervision of one engine server process: own process group under a guard, log file, kill the group."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from raybench.engines.base import LaunchPlan

__all__ = ["ServerProcess", "describe_exit", "free_port", "group_alive", "redact_argv", "wait_group_gone"]

_SECRET_FLAG = re.compile(r"(api[-_]?key|token|secret|password)", re.IGNORECASE)


def free_port(host: str) -> int:
    """A TCP port free on `host` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def group_alive(pgid: int) -> bool:
    """True while any process (zombies included) is left in process group `pgid`."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_group_gone(pgid: int, timeout_s: float = 5.0) -> bool:
    """Wait until process group `pgid` is empty (killed members linger as zombies until reaped)."""
    deadline = time.monotonic() + timeout_s
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def redact_argv(argv: list[str]) -> list[str]:
    """The command line as recorded: the value after any secret-looking flag (--api-key ...) is masked."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        name, eq, _ = arg.partition("=")
        if eq and name.startswith("-") and _SECRET_FLAG.search(name):
            out.append(f"{name}=***")
        elif i > 0 and argv[i - 1].startswith("-") and _SECRET_FLAG.search(argv[i - 1]) and "=" not in argv[i - 1]:
            out.append("***")
        else:
            out.append(arg)
    return out


def describe_exit(code: int | None) -> str:
    """'status 3' / 'signal SIGKILL' for an exit status as the guard reports it (128 + n for signal n)."""
    if code is None:
        return "still running"
    number = -code if code < 0 else code - 128 if code > 128 else 0
    if number:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(number).name} (status {code})"
    return f"status {code}"


class ServerProcess:
    """One launched server under raybench's guard (raybench/deploy/guard.py); output goes to `log_path`."""

    def __init__(self, plan: LaunchPlan, log_path: Path, grace_s: float = 10.0) -> None:
        self.plan = plan
        self.log_path = log_path
        self.workdir = log_path.parent / f"{log_path.stem}-files"
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name, text in plan.files.items():
            (self.workdir / name).write_text(text, encoding="utf-8")
        self.argv = [a.replace(LaunchPlan.WORKDIR, str(self.workdir)) for a in plan.argv]
        self._log = log_path.open("wb")
        guard = [sys.executable, "-m", "raybench.deploy.guard", "--parent", str(os.getpid()), "--grace-s", str(grace_s)]
        self._proc = subprocess.Popen(
            [*guard, "--", *self.argv],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **plan.env},
            start_new_session=True,  # the guard leads a new process group: one killpg reaches every engine process
        )
        self._grace_s = grace_s

    @property
    def pid(self) -> int:
        """The guard's pid, which is also the process group id."""
        return self._proc.pid

    @property
    def pgid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    def exit_code(self) -> int | None:
        return self._proc.poll()

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the server's log, for error messages."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace_s: float | None = None) -> int | None:
        """SIGTERM the group (the guard forwards it), SIGKILL it after the grace period; returns the exit code."""
        grace = self._grace_s if grace_s is None else grace_s
        code = self._proc.poll()
        if code is None:
            self._signal(signal.SIGTERM)
            deadline = time.monotonic() + grace + 2.0
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
        self._signal(signal.SIGKILL)  # whatever outlived the engine (workers that ignore SIGTERM) goes too
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)
        wait_group_gone(self._proc.pid)
        self._log.close()
        return code if code is not None else self._proc.poll()

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)
