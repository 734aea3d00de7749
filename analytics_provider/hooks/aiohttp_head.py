"""The triggerer's bound on a head's header count where aiohttp takes none (before aiohttp 3.14).

aiohttp 3.14 takes ``max_headers`` per request; 3.12 and 3.13 (the constraints of Airflow 2.11
to 3.2) take only a line's length, and their C parser has no count at all: a server that sends
header lines of just under the line bound, for as long as the head's time allows, was held
whole. There, :func:`bound_heads` gives the session's connector a protocol that counts the bytes
a head has taken while no answer has come out of it, and refuses, before its parser reads them,
bytes that take the head past ``MAX_HEADERS`` lines' worth (twice ``max_header_bytes``, as
3.14's count), in the words of aiohttp's own refusal, so that the driver reports both alike.
This leans on aiohttp's connector and protocol internals, unchanged from 3.12 to 3.14; the
hostile tests run on each aiohttp the supported Airflows pin.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.http_exceptions import HttpProcessingError

TAKES_MAX_HEADERS = "max_headers" in inspect.signature(aiohttp.ClientSession._request).parameters
"""Whether this aiohttp bounds a head's header count itself (3.14 and later)."""


class _HeadCountingHandler(ResponseHandler):
    """aiohttp's protocol, refusing a head past ``lines`` times the request's longest line."""

    lines = 32
    _head_left: int | None = None  # bytes the current head may still take; None once an answer came out
    _seen = b""  # the last bytes of the head so far (its blank line may come split)

    def set_response_params(self, *args: Any, **kwargs: Any) -> None:
        super().set_response_params(*args, **kwargs)
        self._head_left, self._seen = self.lines * int(kwargs.get("max_field_size") or 8190), b""

    def feed_data(self, data: Any, size: int = 0) -> None:  # an answer's head, parsed whole
        if getattr(data[0] if isinstance(data, tuple) and data else None, "code", 200) >= 200:
            self._head_left = None  # (an interim 1xx answer's head counts against the final head's bound)
        super().feed_data(data, size)

    def data_received(self, data: bytes) -> None:
        left = self._head_left
        if left is not None and len(data) > left and not _ends_a_head(self._seen + data[:left + 4]):
            self._head_left = None  # refused before the parser holds a byte past the bound
            if self.transport is not None:
                self.transport.close()
            self.set_exception(HttpProcessingError(code=400, message=f"Too many headers: past {self.lines} lines' "
                                                                     "worth"))
            return
        if left is not None:
            self._head_left, self._seen = left - len(data), data[-3:]
        super().data_received(data)


def _ends_a_head(data: bytes) -> bool:
    """Whether ``data`` holds the blank line that ends a head (CRLF or, as some servers send, bare LF)."""
    return b"\n\r\n" in data or b"\n\n" in data


def bound_heads(connector: aiohttp.TCPConnector, lines: int) -> aiohttp.TCPConnector:
    """``connector``, its connections counting each head's bytes where aiohttp does not count its lines."""
    if not TAKES_MAX_HEADERS:
        handler = type("HeadCountingHandler", (_HeadCountingHandler,), {"lines": lines})
        connector._factory = functools.partial(handler, loop=connector._loop)
    return connector
