"""The worker's bound on an answer's head (status line and headers), which ``requests`` cannot set.

``http.client`` reads a head line by line with the socket's timeout per read and no total: a
server that drips a byte just inside each read timeout holds the worker for ever, and one that
sends a hundred 64 KiB lines is read whole. A session given :class:`BoundedAdapter` reads each
head through :class:`_HeadReader`, which counts its bytes and checks the time left before every
read of the socket; past either, it raises
:class:`~analytics_provider.api.call.limits.HeadNotRead`, which the exchange turns into the
error. The bounds are the exchange's (``Send.head_within``, ``body_limit.head``), set for the
thread's request by :func:`bounded_head`; aiohttp is given the same ones (its driver).

The same reader then serves the body, its chunked framing included (chunk-size lines and
trailers, read inside one read of the driver): each read of the socket is bounded by the time
the driver set with :func:`read_by`, past which it raises :class:`AnswerLate`.
"""

from __future__ import annotations

import http.client
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3 import poolmanager
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from analytics_provider.api.call.limits import HeadNotRead

_bounds = threading.local()


@contextmanager
def bounded_head(within: float, max_bytes: int) -> Iterator[None]:
    """The answers read by this thread inside have their head whole within ``within`` seconds of
    the request being sent (an upload's time is its own) and at most ``max_bytes`` bytes."""
    _bounds.value = (within, max_bytes)
    try:
        yield
    finally:
        _bounds.value = None


class AnswerLate(Exception):
    """Raised inside ``http.client`` when a read of an answer's body (its chunk-size lines and
    trailers included) would pass the time set by :func:`read_by`; not an ``OSError``, so urllib3
    lets it through (closing the connection) and the driver names it."""


class _TimedReader:
    """The file ``http.client`` reads an answer from (head, chunk-size lines, data, trailers): every
    read of the socket is bounded by the time left, and the head by ``max_bytes`` too. A head is
    read within its own bound (``within`` seconds); the body within the end :func:`read_by` sets
    before each read of the driver (none: the socket's own timeout per read)."""

    def __init__(self, fp: Any, sock: Any, end: float, within: float, max_bytes: int) -> None:
        self._fp, self._sock = fp, sock
        self._end, self._within, self._max = end, within, max_bytes
        self.timeout = sock.gettimeout() if sock is not None else None
        self.received = 0
        self.in_head = True

    def body_end(self, end: float, read_timeout: float | None) -> None:
        self._end, self.timeout, self.in_head = end, read_timeout, False

    def _late(self) -> Exception:
        if self.in_head:
            return HeadNotRead("time", self._within, self.received)
        return AnswerLate("the answer did not come whole in time")

    def _socket_read(self, read: Any, *args: Any) -> Any:
        """``read(*args)``, at most one read of the socket, bounded by the time left."""
        left = self._end - time.monotonic()
        if left <= 0:
            raise self._late()
        if self._sock is not None:
            seconds = left if self.timeout is None else min(self.timeout, left)
            self._sock.settimeout(None if math.isinf(seconds) else seconds)
        try:
            return read(*args)
        except TimeoutError:
            if time.monotonic() >= self._end:
                raise self._late() from None
            raise

    def peek(self, n: int = 1) -> bytes:
        return self._socket_read(self._fp.peek, n)

    def read1(self, n: int = -1) -> bytes:
        return self._socket_read(self._fp.read1, n)

    def read(self, n: int | None = -1) -> bytes:
        data = bytearray()
        while n is None or n < 0 or len(data) < n:
            piece = self.read1(CHUNK if n is None or n < 0 else n - len(data))
            if not piece:
                break
            data += piece
        return bytes(data)

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(view):
            piece = self.read1(len(view) - filled)
            if not piece:
                break
            view[filled : filled + len(piece)] = piece
            filled += len(piece)
        return filled

    def readline(self, limit: int = -1) -> bytes:
        line = bytearray()
        while limit < 0 or len(line) < limit:
            data = self.peek(1)  # what is buffered, or one read of the socket
            if not data:
                break
            want = len(data) if limit < 0 else min(len(data), limit - len(line))
            newline = data.find(b"\n", 0, want)
            take = want if newline < 0 else newline + 1
            line += self._fp.read(take)
            if self.in_head:
                self.received += take
                if self.received > self._max:
                    raise HeadNotRead("size", self._max, self.received)
            if newline >= 0:
                break
        return bytes(line)

    def restore(self) -> None:
        if self._sock is not None:
            self._sock.settimeout(self.timeout)

    def __getattr__(self, name: str) -> Any:  # close, fileno, flush...: the file's own
        return getattr(self._fp, name)


CHUNK = 64 * 1024
MAX_INFORMATIONAL = 8
_HTTP_CLIENT_MAXLINE: int = getattr(http.client, "_MAXLINE", 65536)  # http.client's own bounds of a head
_HTTP_CLIENT_MAXHEADERS: int = getattr(http.client, "_MAXHEADERS", 100)
"""Informational answers (``103 Early Hints``) skipped before an answer; past them, it is refused."""


def read_by(raw: Any, seconds: float, read_timeout: float) -> bool:
    """Bound the reads of a streamed answer's body (``raw``: urllib3's answer) until ``seconds``
    from now, each at most ``read_timeout``; False when the answer was not read by this module."""
    reader = getattr(getattr(raw, "_fp", None), "fp", None)
    if not isinstance(reader, _TimedReader):
        return False
    reader.body_end(time.monotonic() + seconds, read_timeout)
    return True


class _BoundedResponse(http.client.HTTPResponse):
    def begin(self) -> None:
        bound = getattr(_bounds, "value", None)
        if bound is None or self.fp is None:
            return super().begin()
        fp, (within, max_bytes) = self.fp, bound
        reader = _TimedReader(fp, getattr(fp.raw, "_sock", None), time.monotonic() + within, within, max_bytes)
        self.fp = reader  # type: ignore[assignment]
        try:
            for _ in range(MAX_INFORMATIONAL + 1):
                super().begin()
                if not 100 <= self.status < 200 or self.status == 101:
                    break
                self.headers = self.msg = None  # type: ignore[assignment]  # an informational answer (103 Early
                # Hints): skipped, the answer follows on the connection, its head in the same bounds
            else:
                raise HeadNotRead("size", max_bytes, reader.received,
                                  bound=f"after more than {MAX_INFORMATIONAL} informational (1xx) answers")
        except http.client.LineTooLong:  # a line past http.client's own bound
            raise HeadNotRead("size", max_bytes, reader.received,
                              bound=f"with a line longer than {_HTTP_CLIENT_MAXLINE:,} bytes (http.client's own "
                              "bound)") from None
        except http.client.HTTPException as exc:
            if "more than" in str(exc):  # more than 100 headers
                raise HeadNotRead("size", max_bytes, reader.received,
                                  bound=f"with more than {_HTTP_CLIENT_MAXHEADERS} header lines (http.client's own "
                                  "bound)") from None
            raise
        finally:
            reader.restore()
            reader.body_end(math.inf, reader.timeout)  # the body's reads: bounded by read_by


class _Connection(HTTPConnection):
    response_class = _BoundedResponse


class _TlsConnection(HTTPSConnection):
    response_class = _BoundedResponse


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TlsPool(HTTPSConnectionPool):
    ConnectionCls = _TlsConnection


_POOLS = {"http": _Pool, "https": _TlsPool}


class BoundedAdapter(HTTPAdapter):
    """An adapter whose connections (direct or through an HTTP proxy) read heads boundedly."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if manager.pool_classes_by_scheme is poolmanager.pool_classes_by_scheme:  # not a SOCKS proxy's own
            manager.pool_classes_by_scheme = _POOLS
        return manager
