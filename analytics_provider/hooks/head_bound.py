"""The worker's bound on an answer's head (status line and headers), which ``requests`` cannot set.

``http.client`` reads a head line by line with the socket's timeout per read and no total: a
server that drips a byte just inside each read timeout holds the worker for ever, and one that
sends a hundred 64 KiB lines is read whole. A session given :class:`BoundedAdapter` reads each
head through :class:`_HeadReader`, which counts its bytes and checks the time left before every
read of the socket; past either, it raises
:class:`~analytics_provider.api.call.limits.HeadNotRead`, which the exchange turns into the
error. The bounds are the exchange's (``Send.head_within``, ``body_limit.head``), set for the
thread's request by :func:`bounded_head`; aiohttp is given the same ones (its driver).
"""

from __future__ import annotations

import http.client
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


class _HeadReader:
    """The ``readline`` that ``http.client`` reads a head with, bounded in time and bytes."""

    def __init__(self, fp: Any, sock: Any, end: float, within: float, max_bytes: int) -> None:
        self._fp, self._sock = fp, sock
        self._end, self._within, self._max = end, within, max_bytes
        self._timeout = sock.gettimeout() if sock is not None else None
        self.received = 0

    def readline(self, limit: int = -1) -> bytes:
        line = bytearray()
        while limit < 0 or len(line) < limit:
            left = self._end - time.monotonic()
            if left <= 0:
                raise HeadNotRead("time", self._within, self.received)
            if self._sock is not None:
                self._sock.settimeout(left if self._timeout is None else min(self._timeout, left))
            try:
                data = self._fp.peek(1)  # what is buffered, or one read of the socket
            except TimeoutError:
                if time.monotonic() >= self._end:
                    raise HeadNotRead("time", self._within, self.received) from None
                raise
            if not data:
                break
            want = len(data) if limit < 0 else min(len(data), limit - len(line))
            newline = data.find(b"\n", 0, want)
            take = want if newline < 0 else newline + 1
            line += self._fp.read(take)
            self.received += take
            if self.received > self._max:
                raise HeadNotRead("size", self._max, self.received)
            if newline >= 0:
                break
        return bytes(line)

    def restore(self) -> None:
        if self._sock is not None:
            self._sock.settimeout(self._timeout)


class _BoundedResponse(http.client.HTTPResponse):
    def begin(self) -> None:
        bound = getattr(_bounds, "value", None)
        if bound is None or self.fp is None:
            return super().begin()
        fp, (within, max_bytes) = self.fp, bound
        reader = _HeadReader(fp, getattr(fp.raw, "_sock", None), time.monotonic() + within, within, max_bytes)
        self.fp = reader  # type: ignore[assignment]
        try:
            super().begin()
        except http.client.LineTooLong:  # a line past http.client's own bound (64 KiB)
            raise HeadNotRead("size", max_bytes, reader.received) from None
        except http.client.HTTPException as exc:
            if "more than" in str(exc):  # more than 100 headers
                raise HeadNotRead("size", max_bytes, reader.received) from None
            raise
        finally:
            if self.fp is reader:
                self.fp = fp
            reader.restore()


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
