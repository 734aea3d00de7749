"""The triggerer's bound on a head's header count where aiohttp takes none (before aiohttp 3.14).

aiohttp 3.14 takes ``max_headers`` per request; 3.12 and 3.13 (the constraints of Airflow 2.11
to 3.2) take only a line's length, and their C parser has no count at all: a server that sends
header lines of just under the line bound, for as long as the head's time allows, was held
whole. There, :func:`bound_heads` gives the session's connector a protocol that counts the bytes
a head has taken while no answer has come out of it, and refuses, before its parser reads them,
bytes that take the head past ``MAX_HEADERS`` lines' worth (twice ``max_header_bytes``, as
3.14's count), in the words of aiohttp's own refusal, so that the driver reports both alike.
Those aiohttp also hold a chunked answer's trailers (header lines after its last chunk) without a
bound (444 MB in 30 s, parsed, from a server that kept sending short ones). There the protocol
counts what follows a head too, against what of it the body's reader got: the rest (chunk-size
lines, trailers) may be a head's worth and half the body (chunks of 16 bytes and more), and all of
it ``max_answer_bytes`` (:data:`ANSWER_BYTES`, set by the driver for each request), a head's
worth and :data:`SLACK`; past either, the answer is refused
(:class:`~analytics_provider.api.call.limits.BodyPastItsBound`, on its body's reader).
This leans on aiohttp's connector and protocol internals, unchanged from 3.12 to 3.14; the
hostile tests run on each aiohttp the supported Airflows pin.
"""

from __future__ import annotations

import functools
import inspect
from contextvars import ContextVar
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.http_exceptions import HttpProcessingError

from analytics_provider.api.call.limits import BodyPastItsBound

TAKES_MAX_HEADERS = "max_headers" in inspect.signature(aiohttp.ClientSession._request).parameters
"""Whether this aiohttp bounds a head's header count itself (3.14 and later)."""


ANSWER_BYTES: ContextVar[int | None] = ContextVar("analytics_answer_bytes", default=64 * 1_048_576)
"""The bytes the request being made may be answered with after its head (``max_answer_bytes``);
None for a download streamed to a file, whose body its own bounds count."""


SLACK = 1_048_576
"""Bytes past ``max_answer_bytes`` and a head's worth that may come after a head before it is refused
here: the driver stops reading a body one byte past its limit and refuses it in its own words; the
reads already on their way (up to 256 KiB each) arrive all the same."""


class _HeadCountingHandler(ResponseHandler):
    """aiohttp's protocol, refusing a head past ``lines`` times the request's longest line, and what
    follows the head past the request's :data:`ANSWER_BYTES` and a head's worth."""

    lines = 32
    _head_left: int | None = None  # bytes the current head may still take; None once an answer came out
    _seen = b""  # the last bytes of the head so far (its blank line may come split)
    _head_bound = 0  # bytes a head may take
    _rest_bound = 0  # bytes the answer may take after its head (its body, then trailers); 0: no bound
    _rest_left: int | None = None  # what is left of that once the head came out; None before
    _after_head = 0  # bytes received after the head (those of its last read not counted)

    def set_response_params(self, *args: Any, **kwargs: Any) -> None:
        super().set_response_params(*args, **kwargs)
        self._head_left, self._seen = self.lines * int(kwargs.get("max_field_size") or 8190), b""
        answer, self._head_bound, self._after_head = ANSWER_BYTES.get(), self._head_left, 0
        self._rest_bound, self._rest_left = (0 if answer is None else self._head_left + answer + SLACK), None

    def feed_data(self, data: Any, size: int = 0) -> None:  # an answer's head, parsed whole
        if getattr(data[0] if isinstance(data, tuple) and data else None, "code", 200) >= 200:
            self._head_left = None  # (an interim 1xx answer's head counts against the final head's bound)
            self._rest_left = self._rest_bound or None
        super().feed_data(data, size)

    def data_received(self, data: bytes) -> None:
        if self._rest_left is not None:
            self._rest_left -= len(data)
            self._after_head += len(data)
            if self._rest_left < 0:
                self._refuse_the_rest()
                return
            super().data_received(data)
            body = int(getattr(getattr(self, "_payload", None), "total_bytes", 0) or 0)
            if self._rest_left is not None and self._after_head - body > self._head_bound + body // 2:
                self._refuse_the_rest()  # (what the body's reader got is known once the parser has read)
            return
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


    def _refuse_the_rest(self) -> None:
        """The answer's body reader fails with :class:`BodyPastItsBound` before the parser holds more."""
        self._rest_left = None
        payload = getattr(self, "_payload", None)
        body = int(getattr(payload, "total_bytes", 0) or 0)
        past = BodyPastItsBound(min(self._rest_bound, body + self._head_bound + body // 2))
        if payload is not None:
            payload.set_exception(past)
            self._payload = None  # (its end, seen when the connection is lost, would say "not completed" instead)
        if self.transport is not None:
            self.transport.close()
        self.set_exception(past)


def _ends_a_head(data: bytes) -> bool:
    """Whether ``data`` holds the blank line that ends a head (CRLF or, as some servers send, bare LF)."""
    return b"\n\r\n" in data or b"\n\n" in data


def bound_heads(connector: aiohttp.TCPConnector, lines: int) -> aiohttp.TCPConnector:
    """``connector``, its connections counting each head's bytes where aiohttp does not count its lines."""
    if not TAKES_MAX_HEADERS:
        handler = type("HeadCountingHandler", (_HeadCountingHandler,), {"lines": lines})
        connector._factory = functools.partial(handler, loop=connector._loop)
    return connector
