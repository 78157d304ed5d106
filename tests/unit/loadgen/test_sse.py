"""SSE decoding: right on every legal stream, whatever the read boundaries."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from raybench.loadgen.sse import SSEDecoder, SSEEvent

STREAM = (
    b": keep-alive\n\n"
    b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\r\n\r\n'
    b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
    b'event: error\ndata: {"error": 1}\n\n'
    b"data: line one\ndata: line two\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SSEEvent("message", '{"choices":[{"delta":{"role":"assistant","content":""}}]}'),
    SSEEvent("message", '{"choices":[{"delta":{"content":"Hi"}}]}'),
    SSEEvent("error", '{"error": 1}'),
    SSEEvent("message", "line one\nline two"),
    SSEEvent("message", "[DONE]"),
]


def _decode(pieces: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for piece in pieces:
        events.extend(decoder.feed(piece))
    return events + decoder.close()


def test_whole_stream() -> None:
    assert _decode([STREAM]) == EXPECTED


def test_byte_by_byte() -> None:
    assert _decode([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=30))
def test_any_split_gives_identical_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)])]
    assert _decode(pieces) == EXPECTED


def test_stream_without_final_blank_line_still_dispatches() -> None:
    assert _decode([b"data: a\n\ndata: b"]) == [SSEEvent("message", "a"), SSEEvent("message", "b")]


def test_long_event_beyond_64k() -> None:
    payload = "x" * 200_000
    assert _decode([f"data: {payload}\n\n".encode()]) == [SSEEvent("message", payload)]


def test_no_space_after_colon() -> None:
    assert _decode([b"data:abc\n\n"]) == [SSEEvent("message", "abc")]
