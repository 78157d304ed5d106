"""The guard: the engine's process group dies with its parent, on stop, and when the engine itself dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from raybench.deploy.process import ServerProcess, describe_exit, redact_argv, wait_group_gone
from raybench.engines.base import LaunchPlan

# An "engine" with a worker child that ignores SIGTERM (the worst case a teardown meets).
STUBBORN = textwrap.dedent("""
    import signal, subprocess, sys, time
    worker = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('worker up', flush=True); "
    subprocess.Popen([sys.executable, "-c", worker + "time.sleep(600)"])
    print("engine up", flush=True)
    time.sleep(600)
""")


def _wait_for(path: Path, text: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("up") >= 2 and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}: {path.read_text() if path.exists() else ''}")


def test_stop_kills_the_whole_group_even_a_worker_ignoring_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "r.log"
    process = ServerProcess(LaunchPlan(argv=[sys.executable, "-c", STUBBORN], port=0), log, grace_s=0.5)
    _wait_for(log, "worker up")
    process.stop()
    assert wait_group_gone(process.pgid, 1.0)


def test_engine_death_is_reported_and_its_workers_go(tmp_path: Path) -> None:
    log = tmp_path / "r.log"
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); " \
           "time.sleep(0.3); sys.exit(7)"  # fmt: skip
    process = ServerProcess(LaunchPlan(argv=[sys.executable, "-c", code], port=0), log, grace_s=0.5)
    deadline = time.monotonic() + 15
    while process.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.exit_code() == 7
    assert wait_group_gone(process.pgid, 5.0)
    process.stop()


def test_parent_death_takes_the_engine_group_down(tmp_path: Path) -> None:
    """The replica actor (here a plain parent process) is SIGKILLed, as when the driver dies: the guard
    notices it was reparented and kills the engine's whole process group."""
    log = tmp_path / "r.log"
    parent_code = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from raybench.deploy.process import ServerProcess
        from raybench.engines.base import LaunchPlan
        plan = LaunchPlan(argv=[sys.executable, "-c", {STUBBORN!r}], port=0)
        p = ServerProcess(plan, Path({str(log)!r}), grace_s=0.5)
        print(p.pgid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pgid = int(parent.stdout.readline())
    _wait_for(log, "worker up")
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    assert wait_group_gone(pgid, 10.0), "engine processes outlived their parent"
    assert "parent died" in log.read_text()


def test_redaction_and_exit_descriptions() -> None:
    assert redact_argv(["serve", "--api-key", "sk-1", "--hf-token=abc", "--port", "1"]) == [
        "serve", "--api-key", "***", "--hf-token=***", "--port", "1",
    ]  # fmt: skip
    assert describe_exit(-9) == "signal SIGKILL (status -9)"
    assert describe_exit(137) == "signal SIGKILL (status 137)"
    assert describe_exit(3) == "status 3"
