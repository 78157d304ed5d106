"""The engine's process-group leader: runs the engine, and kills the whole group when raybench goes away.

`python -m raybench.deploy.guard --parent PID --grace-s S -- ENGINE ARGV...` is what a replica actually
launches (in a new session, so the guard leads the process group). It starts the engine as its child in
the same group and polls, every `--poll-s`: when the engine exits, the guard reports the exit status,
kills what is left of the group (the engine's own workers) and exits with the engine's status; when the
parent (the replica actor) dies — the driver died, Ray killed the actor — or on SIGTERM, it terminates
the group, waits `--grace-s`, then SIGKILLs it. A reparented guard (its parent pid changed) means the
parent died; no thread-bound PR_SET_PDEATHSIG is used, because Ray may start it from a worker thread.

The guard itself may be SIGKILLed: Ray kills a worker's direct children when the worker exits. So the guard
first forks a watchdog into the group, which ignores SIGTERM and, as soon as the guard is gone (it is
reparented), terminates the group and then SIGKILLs it, itself included.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time

__all__ = ["main"]


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: python -m raybench.deploy.guard --parent PID [--grace-s S] -- ENGINE ARGV...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="raybench.deploy.guard")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--grace-s", type=float, default=10.0)
    parser.add_argument("--poll-s", type=float, default=0.2)
    return parser.parse_args(argv[:split]), argv[split + 1 :]


def _signal_group(sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(os.getpgrp(), sig)


def _terminate_group(child: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM everyone in the group but this guard, wait up to `grace_s` for the engine, then SIGKILL all."""
    _signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _signal_group(signal.SIGKILL)  # takes the guard too: nothing of the group outlives this line


def _watchdog(grace_s: float, poll_s: float) -> None:  # pragma: no cover - runs in a forked child
    """In the group, outliving a SIGKILLed guard: when the guard is gone, take the whole group down."""
    guard = os.getppid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while os.getppid() == guard:
        time.sleep(poll_s)
    _signal_group(signal.SIGTERM)
    time.sleep(grace_s)
    _signal_group(signal.SIGKILL)
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    args, command = _parse(list(sys.argv[1:] if argv is None else argv))
    if os.fork() == 0:
        _watchdog(args.grace_s, args.poll_s)
    stop = {"requested": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(requested=True))  # also shields the guard from its own
    signal.signal(signal.SIGINT, lambda *_: stop.update(requested=True))
    child = subprocess.Popen(command)
    print(f"[raybench-guard] engine pid {child.pid} in process group {os.getpgrp()}", file=sys.stderr, flush=True)
    while True:
        code = child.poll()
        if code is not None:
            print(f"[raybench-guard] engine exited with status {code}", file=sys.stderr, flush=True)
            _signal_group(signal.SIGTERM)  # the engine's orphaned workers; the guard ignores its own signal
            return code if code >= 0 else 128 - code
        if stop["requested"] or os.getppid() != args.parent:
            reason = "stop requested" if stop["requested"] else "parent died"
            print(f"[raybench-guard] {reason}: terminating process group", file=sys.stderr, flush=True)
            _terminate_group(child, args.grace_s)
            return 143
        time.sleep(args.poll_s)


if __name__ == "__main__":
    sys.exit(main())
