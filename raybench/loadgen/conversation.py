"""Sessions and timed sources on the load generator: a session's turns in order with think time, trace instants.

A source with `session(index)` (multi-turn) is run session by session: a closed-loop slot takes a session,
sends its turns in order, each `think_ns` after the previous reply ended, then takes the next session; in
open loop a session starts at its arrival instant and its later turns follow the same rule. A turn's
`scheduled_ns` is the instant it was due (reply end + think time), so a late send shows as queue time.
A source with `arrival_offsets_ns(rate_per_s)` (a trace) gives the open-loop send instants itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Protocol, cast

import numpy as np

__all__ = [
    "Budget",
    "PerfClock",
    "SessionLike",
    "SessionSource",
    "TimedSource",
    "TurnClock",
    "run_session",
    "session_source",
    "timed_arrivals",
    "timed_source",
]


class TurnClock(Protocol):
    """What a session needs of time (the open loop's Clock, or raybench.testing.FakeClock)."""

    def now_ns(self) -> int: ...
    async def sleep_until(self, target_ns: int) -> None: ...


class PerfClock:
    """perf_counter_ns, and a wait to an absolute instant (think times are seconds: loop timers suffice)."""

    def now_ns(self) -> int:
        return time.perf_counter_ns()

    async def sleep_until(self, target_ns: int) -> None:
        while (remaining := target_ns - time.perf_counter_ns()) > 0:
            await asyncio.sleep(remaining / 1e9)


class SessionLike(Protocol):
    """A session's turns (prompts) and the think time before each (index 0: none)."""

    @property
    def turns(self) -> Sequence[Any]: ...
    @property
    def think_ns(self) -> Sequence[int]: ...


class SessionSource(Protocol):
    """A source of whole sessions: session `index` depends only on the spec and `index`."""

    def session(self, index: int) -> SessionLike: ...


class TimedSource(Protocol):
    """A source that fixes every request's send instant itself (a trace), time-scaled to a rate; request
    `number` of a step whose prompts start at `salt` is `request(number, salt)`."""

    def arrival_offsets_ns(self, rate_per_s: float) -> np.ndarray: ...
    def request(self, number: int, salt: int) -> Any: ...


def session_source(source: object) -> SessionSource | None:
    """`source` when it is run session by session, else None."""
    return cast(SessionSource, source) if callable(getattr(source, "session", None)) else None


def timed_source(source: object) -> TimedSource | None:
    """`source` when it gives its own send instants, else None."""
    return cast(TimedSource, source) if callable(getattr(source, "arrival_offsets_ns", None)) else None


def timed_arrivals(source: TimedSource, rate_per_s: float, index: int, count: int) -> Iterator[tuple[int, int]]:
    """(request number, offset ns) of the requests generator `index` of `count` sends: index, index + count, ..."""
    offsets = source.arrival_offsets_ns(rate_per_s)
    for number in range(index, len(offsets), count):
        yield number, int(offsets[number])


class Budget:
    """The issuing rule shared by a generator's sessions: no request at or past the deadline, at most `limit`."""

    def __init__(self, deadline_ns: int | None, limit: int | None) -> None:
        self.deadline_ns = deadline_ns
        self.limit = limit
        self.taken = 0

    def open(self, at_ns: int) -> bool:
        """Whether a request due at `at_ns` may still go (without claiming it)."""
        past = self.deadline_ns is not None and at_ns >= self.deadline_ns
        return not past and (self.limit is None or self.taken < self.limit)

    def take(self, at_ns: int) -> bool:
        """Claim one request due at `at_ns`; False when issuing has stopped."""
        if not self.open(at_ns):
            return False
        self.taken += 1
        return True


TurnSender = Callable[[Any, str, int], Awaitable[int]]  # (prompt, request id, scheduled ns) -> reply end ns


async def run_session(
    session: SessionLike,
    request_prefix: str,
    first_ns: int,
    clock: TurnClock,
    may_send: Callable[[int], bool],
    send_turn: TurnSender,
) -> bool:
    """Send the turns of `session` in order, turn 0 due at `first_ns`, each later one `think_ns` after the
    previous reply ended; returns False when `may_send` stopped it before its last turn."""
    due_ns = done_ns = first_ns
    for turn, prompt in enumerate(session.turns):
        if turn:
            due_ns = done_ns + int(session.think_ns[turn])
        if not may_send(due_ns):  # before the wait: a turn due past the deadline is not waited for
            return False
        await clock.sleep_until(due_ns)
        done_ns = await send_turn(prompt, f"{request_prefix}.{turn}", due_ns)
    return True
