"""Incremental Server-Sent Events decoding: bytes in any split, complete events out."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["SSEDecoder", "SSEEvent"]


class SSEEvent(NamedTuple):
    """One dispatched event: its `event:` type ("message" by default) and joined `data:` lines.

    A NamedTuple, not a frozen dataclass: one is built per chunk, and this is three times cheaper."""

    event: str
    data: str


class SSEDecoder:
    """Feeds on raw bytes; yields events once their terminating blank line has arrived.

    Lines end in LF or CRLF (a CR split from its LF across reads is handled); lines starting
    with ':' are comments (keep-alives); multi-line `data:` fields are joined with LF.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event = ""

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume `chunk`; return the events it completed, in order."""
        buffer = self._buffer + chunk if self._buffer else chunk
        events: list[SSEEvent] = []
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            if (  # nearly every event of an LLM stream is one "data: ...\n\n": take it whole
                buffer.startswith(b"data: ", start)
                and buffer.startswith(b"\n", end + 1)
                and not self._data
                and not self._event
                and buffer[end - 1] != 13  # a CR: the line ending is CRLF, the general path strips it
            ):
                events.append(SSEEvent("message", buffer[start + 6 : end].decode("utf-8", errors="replace")))
                start = end + 2
                continue
            line = buffer[start:end]
            start = end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            event = self._line(line)
            if event is not None:
                events.append(event)
        self._buffer = buffer[start:]
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: dispatch a final event that lacked its blank line (lenient, as browsers are not)."""
        events: list[SSEEvent] = []
        if self._buffer:
            line = self._buffer.rstrip(b"\r")
            self._buffer = b""
            event = self._line(line)
            if event is not None:
                events.append(event)
        if self._data:
            events.append(self._dispatch())
        return events

    def _line(self, line: bytes) -> SSEEvent | None:
        if line.startswith(b"data: "):  # nearly every line of an LLM stream: skip the general parse
            self._data.append(line[6:].decode("utf-8", errors="replace"))
            return None
        if not line:
            return self._dispatch() if self._data else None
        if line.startswith(b":"):
            return None
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data.append(value.decode("utf-8", errors="replace"))
        elif name == b"event":
            self._event = value.decode("utf-8", errors="replace")
        return None

    def _dispatch(self) -> SSEEvent:
        event = SSEEvent(self._event or "message", "\n".join(self._data))
        self._data = []
        self._event = ""
        return event
