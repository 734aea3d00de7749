"""The triggerer's driver: carries out the events of :mod:`analytics_provider.api.call.events` with ``aiohttp``.

Twin of :class:`~analytics_provider.hooks.sync_client.AnalyticsClient` (same methods, same names);
every rule lives in the exchange, so this holds only I/O. The session, the settings, the quotas
and the batched readers are shared by every trigger of an event loop (:class:`LoopShared`), and
live as long as the loop.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import math
import re
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

import aiohttp
from yarl import URL

from analytics_provider.api.call.events import Answer, AwaitSignal, Failure, Pause, ReadJob, Send, Steps
from analytics_provider.api.call.exchange import CallPlan, Exchange
from analytics_provider.api.call.limits import HeadNotRead
from analytics_provider.api.call.quota import Quota
from analytics_provider.api.call.request import ApiRequest, build_request
from analytics_provider.api.call.retry import RetryPolicy
from analytics_provider.api.call.settings import ConnectionSettings, TransportOptions, user_agent
from analytics_provider.api.jobs.wait import ONE_LOOK
from analytics_provider.exceptions import AnalyticsApiError, AnalyticsTransportError
from analytics_provider.hooks.aiohttp_head import ANSWER_BYTES, TAKES_MAX_HEADERS, bound_heads
from analytics_provider.hooks.decoding import ACCEPTED, BoundedBody, Decoder, content_coding
from analytics_provider.hooks.job_reader import JobReader

T = TypeVar("T")


class AsyncAnalyticsClient:
    """Calls the API from a trigger. Use as ``async with AsyncAnalyticsClient(conn_id) as client``.

    ``clock`` and ``sleep`` are how it tells time and waits; a ``deadline`` is a time on ``clock``.
    """

    clock: Callable[[], float] = staticmethod(time.monotonic)
    sleep: Callable[[float], Awaitable[None]] = staticmethod(asyncio.sleep)

    def __init__(self, analytics_conn_id: str, retry_policy: RetryPolicy | None = None, *,
                 timeout: float | None = None, connect_timeout: float | None = None) -> None:
        self.analytics_conn_id = analytics_conn_id
        self.retry_policy = retry_policy or RetryPolicy()
        self.options = TransportOptions(connect_timeout=connect_timeout, read_timeout=timeout)
        self._shared: LoopShared | None = None
        self._quotas: Quotas | None = None  # the connection's quotas in the loop
        self._reader: JobReader | None = None  # the connection's batched reader in the loop
        self._settings_read: ConnectionSettings | None = None  # the connection's settings, as last read
        self._settings: ConnectionSettings | None = None  # ... with this client's options
        self._settings_at = 0.0  # when they were read, on ``clock``

    def __repr__(self) -> str:
        return f"{type(self).__name__}(analytics_conn_id={self.analytics_conn_id!r})"

    async def __aenter__(self) -> AsyncAnalyticsClient:
        self._shared = LoopShared.of_running_loop()
        self._shared.enter()
        self._quotas = self._shared.quotas_of(self.analytics_conn_id, type(self).clock)
        self._reader, self._settings = None, None  # this loop's are found at their first use
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        shared, self._shared, self._reader = self._shared, None, None
        if shared is not None:
            await shared.leave()

    async def settings(self) -> ConnectionSettings:
        """The connection's settings, read once for all the waits of the loop (then every 5 min)."""
        if self._settings is not None and self.clock() - self._settings_at < SETTINGS_TTL:
            return self._settings  # every look: what this client took from the loop's last read
        shared = self._shared or self._require()
        read_at, found = (shared.fresh_settings(self.analytics_conn_id, self.clock())
                          or await shared.read_settings(self.analytics_conn_id, self.clock))
        if found is not self._settings_read or self._settings is None:  # options applied once per read
            self._settings_read, self._settings = found, self.options.apply(found)
        self._settings_at = read_at
        return self._settings

    def quota(self, endpoint: str) -> Quota:
        """The quota of one endpoint (``"GET /jobs/{id}"``), shared by the loop's waits."""
        self._require()
        assert self._quotas is not None
        return self._quotas[endpoint]

    async def exchange(self, request: ApiRequest, retry_policy: RetryPolicy | None = None,
                       deadline: float | None = None) -> Exchange:
        plan = CallPlan(retry_policy or self.retry_policy, request, deadline, self.clock)
        settings = await self.settings()
        assert self._quotas is not None  # entered: the settings say so
        return Exchange(request, settings, plan, self._quotas.__getitem__)

    async def call(self, name: str, *path_args: Any, query: Mapping[str, Any] | None = None, body: Any = None,
                   retry_policy: RetryPolicy | None = None, deadline: float | None = None) -> Any:
        """Run the operation ``name`` of the API table and return its unwrapped result."""
        exchange = await self.exchange(build_request(name, path_args, query, body), retry_policy, deadline)
        return await self.run(exchange.call())

    async def read_job(self, job_id: int, deadline: float = math.inf) -> Any:
        """One read of a wait (no retries: the wait outlasts failures), over by ``deadline``.

        The waits of an event loop on one connection share their reads: List Jobs asks for up
        to a hundred jobs at once (:mod:`~analytics_provider.hooks.job_reader`).
        """
        return await (self._reader or self.job_reader()).read(self, job_id, deadline)

    async def read_job_alone(self, job_id: int, deadline: float = math.inf) -> Any:
        """One read with ``GET /jobs/{id}`` (a job a batch left out; a service that refuses batches)."""
        request = build_request("get_job", (job_id,))
        return await self.run((await self.exchange(request, ONE_LOOK, None if math.isinf(deadline) else deadline)
                               ).call())

    def job_reader(self) -> JobReader:
        """The batched reader of this connection in this event loop (kept by the client from then on)."""
        shared = self._require()
        key = (type(self), self.analytics_conn_id, self.options)
        reader = shared.readers.get(key)
        if reader is None:  # its sender: a copy that holds the loop's state after this client exits
            reader = shared.readers[key] = JobReader(copy.copy(self), shared.refusals)
        self._reader = reader
        return reader

    async def run(self, steps: Steps[T], *, sleep: Callable[[float], Awaitable[Any]] | None = None) -> T:
        """Carry out the events of a call or a wait; returns what it returns, raises what it
        raises. ``sleep``: how its pauses are slept (the client's ``sleep`` otherwise)."""
        sleep = sleep or self.sleep
        reply: Any = None
        try:
            while True:
                try:
                    event = steps.send(reply)
                except StopIteration as done:
                    return done.value
                reply = None
                if isinstance(event, Send):
                    reply = await self._send(event)
                elif isinstance(event, ReadJob):
                    try:
                        reply = await self.read_job(event.job_id, self.clock() + event.left)
                    except Exception as exc:  # the wait decides what a failed read means
                        reply = exc
                elif isinstance(event, Pause):
                    await sleep(event.seconds)
                elif isinstance(event, AwaitSignal):
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(event.done.wait(), event.seconds)
        finally:
            steps.close()  # an exchange's own cleanup (a quota's turn handed over) runs however it ends

    async def iter_body(self, answer: Answer, exchange: Exchange,
                        error: type[AnalyticsTransportError] = AnalyticsTransportError, limit: int | None = None,
                        decode: bool = True) -> AsyncIterator[bytes]:
        """A streamed answer's body as it arrives (the exchange's total timeout bounds it); ``decode``:
        undone its ``Content-Encoding`` (False: as sent, for a caller that checks the coding's end)."""
        decoder = Decoder(content_coding(answer.headers) if decode else "")
        received = 0
        try:
            async for chunk in _chunks(answer.raw.content):
                for piece in decoder.feed(chunk) if chunk else decoder.end():
                    yield piece if limit is None else piece[: limit - received]
                    received += len(piece)
                    if limit is not None and received >= limit:
                        return
        except AnalyticsApiError:
            raise
        except Exception as exc:
            raise exchange.failure(exc, sent=True, url=answer.url, cls=error) from None

    async def _send(self, step: Send) -> Answer | Failure:

        proxy: URL | None = None if step.proxy is None else URL(step.proxy)
        headers, proxy_headers = step.headers, None
        if proxy is not None and proxy.user is not None:  # the credentials go to the proxy only:
            token = base64.b64encode(f"{proxy.user}:{proxy.password or ''}".encode("latin1")).decode()
            proxy, auth = proxy.with_user(None), {"Proxy-Authorization": f"Basic {token}"}
            if step.url.startswith("https:"):
                proxy_headers = auth  # in the CONNECT of the tunnel
            else:
                headers = {**headers, **auth}  # in the request it forwards (and strips it from)
        connect, read = step.timeout
        shared = self._shared or self._require()
        head = step.body_limit.head
        line = head_line_bound(head)
        within = step.head_within if step.data is None else None  # an upload's time is its own (left bounds it)
        end = time.monotonic() + (within or 0)
        ANSWER_BYTES.set(None if step.stream else step.body_limit.answer)  # (where aiohttp bounds no trailers)
        try:
            response = await asyncio.wait_for(shared.session.request(  # type: ignore[union-attr]
                step.method, step.url, params=step.params, json=step.json, data=step.data, headers=headers,
                timeout=shared.timeout(step.left, connect, read if step.left is None or step.stream else None),
                allow_redirects=False, proxy=proxy, proxy_headers=proxy_headers, ssl=step.network.ssl_context,
                max_line_size=line, max_field_size=line, **_HEADER_COUNT,
            ), within)
        except Exception as exc:
            if isinstance(exc, asyncio.TimeoutError) and within is not None and time.monotonic() >= end - 0.01:
                exc = HeadNotRead("time", step.head_within)
            elif isinstance(exc, aiohttp.ClientResponseError) and _HEAD_TOO_LARGE.search(str(exc.message)):
                exc = HeadNotRead("size", head, bound=f"with a line longer than {line:,} bytes or more than "
                                  f"{MAX_HEADERS} header lines (the triggerer reads a head in lines of at most "
                                  f"1/{MAX_HEADERS // 2} of max_header_bytes)")  # aiohttp's parser said so
            return Failure(exc, sent=not isinstance(exc, _not_sent_errors()))
        received = _head_size(response)
        if received > head:
            response.close()
            return Failure(HeadNotRead("size", head, received), sent=True)
        answer = Answer(response.status, response.headers, url=step.url, raw=response)  # no redirect is followed
        if step.stream:
            return answer
        # an upload's answer (no total: its body took its time) comes whole within the head's bound of its head
        whole = step.head_within if step.left is None else None
        try:
            async with response:
                answer.body = await asyncio.wait_for(
                    _read(response, step.body_limit.to_read(response.status, response.headers)), whole)
        except asyncio.TimeoutError:  # aiohttp's total, or ours: its text was empty
            return Failure(TimeoutError("the answer did not come whole in time"), sent=True)
        except Exception as exc:
            return Failure(exc, sent=True)
        return answer

    def _require(self) -> LoopShared:
        if self._shared is None:
            raise RuntimeError("use AsyncAnalyticsClient inside 'async with'")
        return self._shared


SETTINGS_TTL = 300.0  # seconds a connection's settings are reused before being read again


class LoopShared:
    """What the clients of one event loop share: one aiohttp session (its kept-alive connections),
    each connection's settings, the quotas, the batched job readers (and the connections whose
    service refused batches), and the timeout objects of their requests. The last client out
    closes the session; the rest lives as long as the loop (nothing outlives it, so nothing
    needs forgetting between two loops)."""

    _of_loop: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopShared]] = weakref.WeakKeyDictionary()

    @classmethod
    def of_running_loop(cls) -> LoopShared:
        """The running loop's shared state, made at its first client; gone with the loop."""
        loop = asyncio.get_running_loop()
        shared = cls._of_loop.get(loop)
        if shared is None:
            shared = cls._of_loop[loop] = cls()
        return shared

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.users = 0
        self.settings: dict[str, tuple[float, ConnectionSettings]] = {}
        self.settings_locks: dict[str, asyncio.Lock] = {}
        self.quotas: dict[str, Quotas] = {}  # per connection
        self.timeouts: dict[tuple[float | None, float, float | None], aiohttp.ClientTimeout] = {}
        self.readers: dict[tuple[Any, ...], JobReader] = {}  # per client class, connection and options
        self.refusals: dict[str, str] = {}  # connections whose List Jobs the service refused, and why

    def enter(self) -> None:
        if self.session is None or self.session.closed:
            self.session = aiohttp.ClientSession(  # trust_env off: the environment is read by network.py
                headers={"User-Agent": user_agent("triggerer"), "Accept": "application/json",
                         "Accept-Encoding": ACCEPTED},
                connector=bound_heads(aiohttp.TCPConnector(limit=100, keepalive_timeout=60), MAX_HEADERS),
                auto_decompress=False,  # decoded by hooks/decoding, in bounded pieces
            )
        self.users += 1

    async def leave(self) -> None:
        self.users -= 1
        if self.users == 0 and self.session is not None:
            session, self.session = self.session, None
            await session.close()

    def quotas_of(self, conn_id: str, clock: Callable[[], float]) -> Quotas:
        """The quotas of a connection's endpoints (made on ``clock`` by its first client)."""
        quotas = self.quotas.get(conn_id)
        if quotas is None:
            quotas = self.quotas[conn_id] = Quotas(clock)
        return quotas

    def fresh_settings(self, conn_id: str, now: float) -> tuple[float, ConnectionSettings] | None:
        """A connection's settings and when they were read, unless that was ``SETTINGS_TTL`` ago."""
        cached = self.settings.get(conn_id)
        return None if cached is None or now - cached[0] >= SETTINGS_TTL else cached

    async def read_settings(self, conn_id: str, clock: Callable[[], float]) -> tuple[float, ConnectionSettings]:
        """Read the connection once however many waits ask at the same time; returns when it was read too."""
        async with self.settings_locks.setdefault(conn_id, asyncio.Lock()):
            fresh = self.fresh_settings(conn_id, clock())  # another wait may have read it meanwhile
            if fresh is not None:
                return fresh
            from airflow.providers.common.compat.connection import get_async_connection

            conn = await get_async_connection(conn_id)
            settings = ConnectionSettings.from_connection(conn, conn_id).masked()
            settings.network.warn_if_unverified(conn_id, urlsplit(settings.base_url).hostname or "")
            # the first request would build the TLS context on the loop: reading the CA bundle
            # holds it for 20 to 80 ms (measured at a process's first batched read)
            await asyncio.to_thread(lambda: settings.network.ssl_context)
            self.settings[conn_id] = read = (clock(), settings)
            return read

    def timeout(self, left: float | None, connect: float, read: float | None) -> aiohttp.ClientTimeout:
        """The connect timeout, the per-read one (None: none, the whole is bounded), and the whole
        exchange bounded by ``left``. With more than ten seconds left, the bound is rounded down
        to the second and the object reused (a poll would make one per request otherwise)."""
        if left is not None and left <= 10:
            return aiohttp.ClientTimeout(total=max(left, 0.001), sock_connect=connect, sock_read=read)
        key = (None if left is None else float(int(left)), connect, read)
        if key not in self.timeouts:
            if len(self.timeouts) >= 512:
                self.timeouts.clear()
            self.timeouts[key] = aiohttp.ClientTimeout(total=key[0], sock_connect=connect, sock_read=read)
        return self.timeouts[key]


class Quotas(dict[str, Quota]):
    """A connection's quotas in an event loop, by endpoint (``"GET /jobs/{id}"``), each made at its
    endpoint's first call: an exchange looks its quota up here with no code of ours."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__()
        self.clock = clock

    def __missing__(self, endpoint: str) -> Quota:
        quota = self[endpoint] = Quota(clock=self.clock, event=asyncio.Event)
        return quota


async def _read(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """At most ``limit`` bytes of a body, decoded (all of it when shorter): see
    :class:`~analytics_provider.hooks.decoding.BoundedBody`."""
    body = BoundedBody(content_coding(response.headers), limit)
    while not body.full:
        chunk = await response.content.read(64 * 1024)
        if not chunk or body.add(chunk):
            break
    return body.value()


_HEAD_TOO_LARGE = re.compile(r"^Got more than \d+ bytes|^Too many headers")
MAX_HEADERS = 32
"""Header lines aiohttp's parser takes at most. With :func:`head_line_bound` bytes per line, a head
holds at most twice ``max_header_bytes`` before :func:`_head_size` judges it whole (aiohttp has no
bound on a head's total: with ``max_header_bytes`` per line and 128 lines it held 126 times it)."""


# (an older aiohttp takes no max_headers: bound_heads counts the bytes of its heads instead)
_HEADER_COUNT: dict[str, Any] = {"max_headers": MAX_HEADERS} if TAKES_MAX_HEADERS else {}


def head_line_bound(head: int) -> int:
    """The longest head line (and header value) aiohttp is to take: ``head`` / 16, 4 KiB for the
    default 64 KiB (a real answer's longest line is a cookie or a policy of a few hundred bytes)."""
    return max(head // (MAX_HEADERS // 2), 256)


def _head_size(response: aiohttp.ClientResponse) -> int:
    """The bytes of an answer's head as they came over the wire (status line, header lines, blank line)."""
    status = len(f"HTTP/1.1 {response.status} {getattr(response, 'reason', '') or ''}") + 2
    return status + sum(len(name) + len(value) + 4 for name, value in getattr(response, "raw_headers", ())) + 2


async def _chunks(content: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """The body as it came over the wire, then one empty chunk: its end."""
    async for chunk in content.iter_any():
        if chunk:
            yield chunk
    yield b""


def _not_sent_errors() -> tuple[type[BaseException], ...]:
    return (
        aiohttp.ClientConnectorError,
        getattr(aiohttp, "ConnectionTimeoutError", aiohttp.ClientConnectorError),
        ValueError,  # refused before sending (an invalid header or URL)
    )
