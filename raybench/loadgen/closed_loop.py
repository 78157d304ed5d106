"""Closed-loop concurrency: N slots, each sends its next request the instant the previous one ends."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from raybench.loadgen.client import RequestOutcome, build_payload, send_streaming
from raybench.loadgen.conversation import PerfClock, SessionSource, TurnClock, run_session, session_source
from raybench.loadgen.endpoint import Balancer, Endpoint
from raybench.loadgen.session import HttpSession

__all__ = [
    "ClosedLoopResult",
    "PromptLike",
    "PromptSource",
    "Shard",
    "outcome_record",
    "run_closed_loop",
    "turn_payload",
    "turn_record",
]

_clock = time.perf_counter_ns
# how long a closed-loop slot waits after a request that could not even connect, before its next one
CONNECT_FAILURE_PAUSE_S = 0.05


class PromptLike(Protocol):
    """What the runner needs of a prompt."""

    @property
    def text(self) -> str: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def fingerprint(self) -> str: ...


class PromptSource(Protocol):
    """Anything that returns prompt number `index`, deterministically."""

    def prompt(self, index: int) -> PromptLike: ...


@dataclass(frozen=True)
class Shard:
    """One generator's part of a load level: its slots, its stop rule, and its prompt numbering."""

    concurrency: int
    duration_s: float | None
    max_requests: int | None
    prompt_base: int
    prompt_stride: int
    prompt_offset: int
    timeout_s: float
    request_id_prefix: str
    # Open loop (raybench.loadgen.open_loop) when `rate_per_s` is set: the global schedule's rate,
    # this generator sends arrivals prompt_offset, prompt_offset + prompt_stride, ...; `concurrency`
    # then caps its requests in flight (0: no cap) and queued arrivals keep their scheduled instant.
    rate_per_s: float | None = None
    arrival: str = "poisson"
    burstiness: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class ClosedLoopResult:
    """What the runner saw: requests issued, and the generator's own load window (perf clock ns)."""

    issued: int
    reached_target_ns: int | None
    stopped_issuing_ns: int | None


Sink = Callable[[dict[str, Any]], None]
TurnSend = Callable[[Any, Endpoint, str, Any, float], Awaitable[RequestOutcome]]


async def run_closed_loop(
    session: HttpSession,
    endpoint: Endpoint,
    source: PromptSource,
    shard: Shard,
    start_ns: int,
    sink: Sink,
    *,
    clock: TurnClock | None = None,
    send: TurnSend = send_streaming,
) -> ClosedLoopResult:
    """Run `shard` from `start_ns` (perf clock) until its stop rule; every request goes to `sink`.

    A multi-turn source (raybench.loadgen.conversation) runs session by session: each slot sends a session's
    turns in order, with its think times (on `clock`, with `send`: tests inject fakes), then takes the next.
    """
    if shard.concurrency == 0:
        return ClosedLoopResult(0, None, None)
    state = _LoopState(shard, start_ns, Balancer(endpoint))
    await asyncio.sleep(max(start_ns - _clock(), 0) / 1e9)
    sessions = session_source(source)
    if sessions is not None:
        run = _SessionSlot(session, endpoint, sessions, shard, state, sink, clock or PerfClock(), send)
        workers = [asyncio.create_task(run.serve()) for _ in range(shard.concurrency)]
    else:
        workers = [
            asyncio.create_task(_worker(session, endpoint, source, shard, state, sink))
            for _ in range(shard.concurrency)
        ]
    await asyncio.gather(*workers)
    reached = max(state.first_sent_ns) if len(state.first_sent_ns) == shard.concurrency else None
    return ClosedLoopResult(state.issued, reached, state.stopped_ns)


class _LoopState:
    def __init__(self, shard: Shard, start_ns: int, balancer: Balancer) -> None:
        self.balancer = balancer
        self.issued = 0
        self.first_sent_ns: list[int] = []
        self.stopped_ns: int | None = None
        self.deadline_ns = start_ns + int(shard.duration_s * 1e9) if shard.duration_s is not None else None
        self.budget = shard.max_requests
        self.sessions = 0

    def take_session(self) -> int:
        """Claim the next session number (multi-turn: each slot runs whole sessions)."""
        self.sessions += 1
        return self.sessions - 1

    def take(self, now: int) -> int | None:
        """Claim the next request number, or None (and note the instant) when issuing must stop."""
        if (self.deadline_ns is not None and now >= self.deadline_ns) or (
            self.budget is not None and self.issued >= self.budget
        ):
            if self.stopped_ns is None:
                self.stopped_ns = min(now, self.deadline_ns) if self.deadline_ns is not None else now
            return None
        number = self.issued
        self.issued += 1
        return number


async def _worker(
    session: HttpSession,
    endpoint: Endpoint,
    source: PromptSource,
    shard: Shard,
    state: _LoopState,
    sink: Sink,
) -> None:
    first = True
    scheduled = _clock()
    while True:
        number = state.take(scheduled)
        if number is None:
            return
        index = shard.prompt_base + number * shard.prompt_stride + shard.prompt_offset
        prompt = source.prompt(index)
        body = build_payload(endpoint, prompt.text, prompt.output_tokens)
        url, slot = state.balancer.acquire(index)
        try:
            out = await send_streaming(session, endpoint, url, body, shard.timeout_s)
        finally:
            state.balancer.release(slot)
        if first:
            state.first_sent_ns.append(out.sent_ns)
            first = False
        request_id = f"{shard.request_id_prefix}{index}"
        sink(turn_record(out, request_id, scheduled, prompt))  # traces may name sessions
        if out.connect_failed:
            # The server is gone: refusals return in microseconds, and a slot retrying at once would flood the
            # records and starve this host's CPU (the step is already invalid by its error rate).
            await asyncio.sleep(CONNECT_FAILURE_PAUSE_S)
        scheduled = _clock()


class _SessionSlot:
    """Closed-loop slots of a multi-turn source: each runs whole sessions, turns in order, think time between."""

    def __init__(
        self,
        http: HttpSession,
        endpoint: Endpoint,
        sessions: SessionSource,
        shard: Shard,
        state: _LoopState,
        sink: Sink,
        clock: TurnClock,
        send: TurnSend,
    ) -> None:
        self.http, self.endpoint, self.sessions, self.shard = http, endpoint, sessions, shard
        self.state, self.sink, self.clock, self.send = state, sink, clock, send

    async def serve(self) -> None:
        """One slot: take a session, run it to its end, take the next, until the stop rule."""
        slot_first_sent: list[int] = []
        due_ns = self.clock.now_ns()
        while True:
            number = self.state.take_session()
            index = self.shard.prompt_base + number * self.shard.prompt_stride + self.shard.prompt_offset
            send_turn = functools.partial(self._send_turn, index, slot_first_sent)
            prefix, plan = f"{self.shard.request_id_prefix}{index}", self.sessions.session(index)
            if not await run_session(plan, prefix, due_ns, self.clock, self._may_send, send_turn):
                return
            due_ns = self.clock.now_ns()

    async def _send_turn(
        self, index: int, slot_first_sent: list[int], prompt: Any, request_id: str, scheduled_ns: int
    ) -> int:
        out = await self._send(index, prompt)
        if not slot_first_sent:  # the slot's first request: the generator reaches its load when every slot has sent
            slot_first_sent.append(out.sent_ns)
            self.state.first_sent_ns.append(out.sent_ns)
        self.sink(turn_record(out, request_id, scheduled_ns, prompt))
        return self.clock.now_ns()

    def _may_send(self, at_ns: int) -> bool:
        return self.state.take(at_ns) is not None

    async def _send(self, index: int, prompt: Any) -> RequestOutcome:
        url, slot = self.state.balancer.acquire(index)
        try:
            body = turn_payload(self.endpoint, prompt)
            return await self.send(self.http, self.endpoint, url, body, self.shard.timeout_s)
        finally:
            self.state.balancer.release(slot)


def turn_payload(endpoint: Endpoint, prompt: Any) -> dict[str, Any]:
    """The body of a request; a multi-turn prompt goes to a chat endpoint as its whole messages list."""
    body = build_payload(endpoint, prompt.text, prompt.output_tokens)
    messages = getattr(prompt, "messages", None)
    if endpoint.api == "chat" and messages:
        body["messages"] = [{"role": role, "content": content} for role, content in messages]
    return body


def turn_record(out: RequestOutcome, request_id: str, scheduled_ns: int, prompt: Any) -> dict[str, Any]:
    """outcome_record plus the prompt's session and turn."""
    record = outcome_record(out, request_id, scheduled_ns, prompt.fingerprint, prompt.output_tokens)
    record["session_id"] = getattr(prompt, "session_id", None)
    record["turn"] = getattr(prompt, "turn", None)
    return record


def outcome_record(
    out: RequestOutcome, request_id: str, scheduled_ns: int, fingerprint: str, requested_output_tokens: int
) -> dict[str, Any]:
    """The record fields a runner owns (ids, schedule, timings); the actor adds who and where."""
    record = {k: v for k, v in out.__dict__.items() if k in _OUTCOME_FIELDS}
    record["request_id"] = request_id
    record["scheduled_ns"] = scheduled_ns
    record["prompt_fingerprint"] = fingerprint
    record["requested_output_tokens"] = requested_output_tokens
    return record


_OUTCOME_FIELDS = frozenset(
    {
        "sent_ns",
        "first_chunk_ns",
        "first_token_ns",
        "last_token_ns",
        "done_ns",
        "chunk_ns",
        "chunk_tokens",
        "input_tokens",
        "output_tokens",
        "token_count_source",
        "status",
        "http_status",
        "error_type",
        "error_message",
    }
)
