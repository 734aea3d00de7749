"""The triggerer's head count where aiohttp counts no header lines (before 3.14): the protocol of
``hooks/aiohttp_head.py`` fed reads of the tests' own choosing, on each aiohttp the matrix pins
(whether or not that aiohttp needs it)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from analytics_provider.hooks.aiohttp_head import _HeadCountingHandler

LINE = 4096  # the line bound the driver gives aiohttp for the default 64 KiB head: 32 lines' worth is 131,072 bytes


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


@pytest.fixture
def handler() -> Iterator[Any]:
    loop = asyncio.new_event_loop()
    protocol = _HeadCountingHandler(loop=loop)
    protocol.connection_made(Transport())
    protocol.set_response_params(read_until_eof=False, max_line_size=LINE, max_field_size=LINE)
    yield protocol
    loop.close()


def head(lines: int, line: int = 3000, body: bytes = b"") -> bytes:
    fields = b"".join(b"X-Big-%d: %s\r\n" % (n, b"b" * (line - 20)) for n in range(lines))
    return b"HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s" % (fields, len(body), body)


def parsed(protocol: Any) -> bool:
    return protocol.exception() is None and len(protocol._buffer) == 1


def test_a_head_within_the_bound_with_a_large_body_in_the_same_read_is_parsed(handler) -> None:
    handler.data_received(head(20, body=b"x" * 300_000))  # 60 KB of head, then the body: one read of 360 KB
    assert parsed(handler) and not handler.transport.closed


def test_a_head_whose_blank_line_comes_split_across_reads_just_inside_the_bound_is_parsed(handler) -> None:
    data = head(43, body=b"x" * 5000)  # 129 KB of head: its end is 2,000 bytes inside the bound
    end = data.index(b"\r\n\r\n") + 4
    handler.data_received(data[:end - 2])
    handler.data_received(data[end - 2:])  # the blank line's CRLF, then 5 KB of body: past the bytes left
    assert parsed(handler)


def test_a_body_in_reads_after_the_head_is_not_counted(handler) -> None:
    data = head(40, body=b"x" * 300_000)
    end = data.index(b"\r\n\r\n") + 4
    for start, stop in ((0, end), (end, end + 150_000), (end + 150_000, len(data))):
        handler.data_received(data[start:stop])  # the head, then the body in two reads of 150 KB
    assert parsed(handler) and not handler.transport.closed


def test_a_head_past_the_bound_is_refused_before_the_parser_reads_it(handler) -> None:
    data = head(100)  # 300 KB of header lines of 3,000 bytes: each under the line bound, together past 131,072
    handler.data_received(data[:100_000])
    assert handler.exception() is None
    handler.data_received(data[100_000:])  # the head would pass its bound within this read: not fed
    assert handler.transport.closed and "Too many headers" in str(handler.exception())
    assert handler._buffer == type(handler._buffer)()  # no answer came out


def test_a_head_past_the_bound_in_one_read_is_refused(handler) -> None:
    handler.data_received(head(100))
    assert handler.transport.closed and "Too many headers" in str(handler.exception())


def test_each_request_on_a_kept_connection_has_its_own_count(handler) -> None:
    handler.data_received(head(40, body=b"{}"))  # 120 KB: within the bound
    assert parsed(handler)
    handler._buffer.clear()
    handler.set_response_params(read_until_eof=False, max_line_size=LINE, max_field_size=LINE)
    handler.data_received(head(40, body=b"{}"))  # the first head's bytes do not count against the second's
    assert parsed(handler)


def test_an_interim_answer_does_not_end_the_count(handler) -> None:
    """A 100 Continue is a head the parser hands on: the final head after it was counted by no one
    (200 MiB of it held 530 MiB on aiohttp 3.13)."""
    handler.data_received(b"HTTP/1.1 100 Continue\r\n\r\n")
    data = head(100)
    handler.data_received(data[:100_000])
    handler.data_received(data[100_000:])
    assert handler.transport.closed and "Too many headers" in str(handler.exception())
