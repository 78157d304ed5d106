"""Ctrl-C in `raybench run` cannot be swallowed: a KeyboardInterrupt that something catches on its way up
still stops the run at the driver's next check, and the previous SIGINT handler comes back afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import pytest

from raybench.sweep.interrupt import check_interrupt, interruptible


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the handler runs in this (main) thread at the next bytecode


def test_a_swallowed_keyboard_interrupt_is_raised_again_at_the_next_check() -> None:
    before = signal.getsignal(signal.SIGINT)
    with interruptible():
        check_interrupt()  # nothing pressed yet
        with contextlib.suppress(KeyboardInterrupt):  # what a careless library might do
            _ctrl_c()
        with pytest.raises(KeyboardInterrupt):
            check_interrupt()
    assert signal.getsignal(signal.SIGINT) is before
    check_interrupt()  # forgotten once the run is over


def test_the_request_does_not_leak_into_the_next_run() -> None:
    with pytest.raises(KeyboardInterrupt), interruptible():
        _ctrl_c()
    with interruptible():
        check_interrupt()


def test_off_the_main_thread_signal_handling_is_left_alone() -> None:
    before = signal.getsignal(signal.SIGINT)
    seen: list[object] = []

    def body() -> None:
        with interruptible():
            seen.append(signal.getsignal(signal.SIGINT))
            check_interrupt()

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == [before]
