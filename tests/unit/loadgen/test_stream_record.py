"""From raw stream bytes to the request record: any split of a legal stream yields the identical record."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hypothesis import given, settings
from hypothesis import strategies as st

from raybench.loadgen.client import RequestOutcome, _finish, read_events

ROLE = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}'
CHAT_OK = (
    b": keep-alive\r\n\r\n"
    + ROLE
    + b"\r\n\r\n"
    + b'data: {"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n'
    + b'data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}\n\n'
    + b": ping\n\n"
    + b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"hm"},"finish_reason":null}]}\r\n\r\n'
    + b'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n'
    + b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}\n\n'
    + b"data: [DONE]\n\n"
)
CONTINUOUS = (
    b'data: {"choices":[{"text":"a b","finish_reason":null}],"usage":{"prompt_tokens":2,"completion_tokens":2}}\n\n'
    b'data: {"choices":[{"text":"c d e","finish_reason":"length"}],'
    b'"usage":{"prompt_tokens":2,"completion_tokens":5}}\n\n'
    b"data: [DONE]\n\n"
)
ERROR_MID = (
    b'data: {"choices":[{"text":"a","finish_reason":null}]}\n\n'
    b'event: error\ndata: {"error":{"message":"overloaded"}}\n\n'
    b'data: {"choices":[{"text":"b","finish_reason":null}]}\n\n'
)
NO_DONE = (
    b'data: {"choices":[{"text":"a","finish_reason":null}]}\n\n'
    b'data: {"choices":[{"text":"b","finish_reason":"length"}]}'
)
TRUNCATED = b'data: {"choices":[{"text":"a","finish_reason":null}]}\n\ndata: {"choices":[{"te'
MALFORMED = b'data: {"choices":[{"text":"a","finish_reason":null}]}\n\ndata: {oops\n\ndata: [DONE]\n\n'


async def _reads(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


def _record(pieces: list[bytes], continuous: bool = False) -> RequestOutcome:
    out = RequestOutcome(continuous_usage=continuous)
    asyncio.run(read_events(_reads(pieces), out, clock=lambda: 7))  # timing is not what is compared
    _finish(out)
    return out


def _split(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    return [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]


def test_chat_stream_record() -> None:
    out = _record([CHAT_OK])
    assert out.status == "ok" and out.saw_done
    assert out.first_chunk_ns == 7 and len(out.chunk_ns) == 3  # role-only and empty chunks carry no token
    assert out.output_tokens == 3 and out.input_tokens == 5 and out.token_count_source == "server_usage"


def test_continuous_usage_counts_multi_token_chunks() -> None:
    out = _record([CONTINUOUS], continuous=True)
    assert out.chunk_tokens == [2, 3] and out.output_tokens == 5


def test_error_event_mid_stream_stops_reading() -> None:
    out = _record([ERROR_MID])
    assert out.status == "http_error" and out.error_type == "server_error_event" and len(out.chunk_ns) == 1
    assert "overloaded" in (out.error_message or "")


def test_stream_without_done_is_ok_after_finish_reason() -> None:
    out = _record([NO_DONE])
    assert out.status == "ok" and len(out.chunk_ns) == 2


def test_truncated_stream_is_a_failure() -> None:
    assert _record([TRUNCATED]).status == "protocol_error"


def test_malformed_event_is_protocol_error() -> None:
    out = _record([MALFORMED])
    assert out.status == "protocol_error" and out.error_type == "malformed_event"


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([(CHAT_OK, False), (CONTINUOUS, True), (ERROR_MID, False), (NO_DONE, False), (MALFORMED, False)]),
    st.lists(st.integers(min_value=0, max_value=2000), max_size=40),
)
def test_any_split_yields_the_identical_record(case: tuple[bytes, bool], cuts: list[int]) -> None:
    stream, continuous = case
    assert _record(_split(stream, cuts), continuous) == _record([stream], continuous)


def test_byte_at_a_time_equals_whole() -> None:
    assert _record([CHAT_OK[i : i + 1] for i in range(len(CHAT_OK))]) == _record([CHAT_OK])
