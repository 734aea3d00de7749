"""The triggerer's driver: carries out the steps of :mod:`analytics_provider.api.exchange` with ``aiohttp``.

Twin of :class:`~analytics_provider.hooks.sync_client.AnalyticsClient` (same methods, same names);
every rule lives in the exchange, so this holds only I/O. The session (and so its kept-alive
connections), the settings and the quotas are shared by every trigger of an event loop.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
from yarl import URL

from analytics_provider.api.budget import Quota
from analytics_provider.api.exchange import Exchange, Steps
from analytics_provider.api.follow import ONE_LOOK, Read
from analytics_provider.api.request import ApiRequest, build_request
from analytics_provider.api.retry import CallPlan, RetryPolicy
from analytics_provider.api.settings import ConnectionSettings, TransportOptions, user_agent
from analytics_provider.api.steps import Answer, AwaitSignal, Failure, Pause, Send, Stepper
from analytics_provider.exceptions import AnalyticsApiError, AnalyticsTransportError

T = TypeVar("T")
SETTINGS_TTL = 300.0  # seconds a connection's settings are reused before being read again


class _LoopShared:
    """What the triggers of one event loop share: the session, settings and quotas."""

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.users = 0
        self.settings: dict[str, tuple[float, ConnectionSettings]] = {}
        self.settings_locks: dict[str, asyncio.Lock] = {}
        self.quotas: dict[tuple[str, str], Quota] = {}
        self.timeouts: dict[tuple[float | None, float, float], aiohttp.ClientTimeout] = {}


_SHARED: dict[asyncio.AbstractEventLoop, _LoopShared] = {}


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
        self._shared: _LoopShared | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(analytics_conn_id={self.analytics_conn_id!r})"

    async def __aenter__(self) -> AsyncAnalyticsClient:
        loop = asyncio.get_running_loop()
        for closed in [other for other in _SHARED if other.is_closed()]:
            del _SHARED[closed]
        shared = self._shared = _SHARED.setdefault(loop, _LoopShared())
        if shared.session is None or shared.session.closed:
            shared.session = aiohttp.ClientSession(  # trust_env off: the environment is read by network.py
                headers={"User-Agent": user_agent("triggerer"), "Accept": "application/json"},
                connector=aiohttp.TCPConnector(limit=100, keepalive_timeout=60),
            )
        shared.users += 1
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.users -= 1
            if shared.users == 0 and shared.session is not None:
                session, shared.session = shared.session, None
                await session.close()

    async def settings(self) -> ConnectionSettings:
        """The connection's settings, read once for all the waits of the loop (then every 5 min)."""
        return self._fresh_settings() or await self._read_settings()

    def _fresh_settings(self) -> ConnectionSettings | None:
        cached = self._require().settings.get(self.analytics_conn_id)
        if cached is None or self.clock() - cached[0] >= SETTINGS_TTL:
            return None
        return self.options.apply(cached[1])

    async def _read_settings(self) -> ConnectionSettings:
        shared, conn_id = self._require(), self.analytics_conn_id
        async with shared.settings_locks.setdefault(conn_id, asyncio.Lock()):
            fresh = self._fresh_settings()  # another wait may have read it meanwhile
            if fresh is not None:
                return fresh
            from airflow.providers.common.compat.connection import get_async_connection

            conn = await get_async_connection(conn_id)
            settings = ConnectionSettings.from_connection(conn, conn_id).masked()
            settings.network.warn_if_unverified(conn_id, urlsplit(settings.base_url).hostname or "")
            shared.settings[conn_id] = (self.clock(), settings)
        return self.options.apply(settings)

    def quota(self, endpoint: str) -> Quota:
        """The quota of one endpoint (``"GET /jobs/{id}"``), shared by the loop's waits."""
        quotas, key = self._require().quotas, (self.analytics_conn_id, endpoint)
        if key not in quotas:
            quotas[key] = Quota(clock=type(self).clock, event=asyncio.Event)
        return quotas[key]

    async def exchange(self, request: ApiRequest, retry_policy: RetryPolicy | None = None,
                       deadline: float | None = None) -> Exchange:
        plan = CallPlan(retry_policy or self.retry_policy, request, deadline, self.clock)
        return Exchange(request, await self.settings(), plan, self.quota)

    async def call(self, name: str, *path_args: Any, query: Mapping[str, Any] | None = None, body: Any = None,
                   retry_policy: RetryPolicy | None = None, deadline: float | None = None) -> Any:
        """Run the operation ``name`` of the API table and return its unwrapped result."""
        exchange = await self.exchange(build_request(name, path_args, query, body), retry_policy, deadline)
        return await self.run(exchange.call())

    async def read_job(self, read: Read) -> Any:
        """One read of a wait (no retries: the wait outlasts failures), over by the read's deadline."""
        return await self.call("get_job", read.job_id, retry_policy=ONE_LOOK,
                               deadline=None if math.isinf(read.deadline) else read.deadline)

    async def run(self, steps: Steps[T]) -> T:
        """Carry out an exchange's steps; returns what it returns, raises what it raises."""
        stepper = Stepper(steps)
        for step in stepper:
            if isinstance(step, Send):
                stepper.reply(await self._send(step))
            elif isinstance(step, Pause):
                await self.sleep(step.seconds)
            elif isinstance(step, AwaitSignal):
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(step.done.wait(), step.seconds)
        return stepper.result

    async def iter_body(self, answer: Answer, exchange: Exchange,
                        error: type[AnalyticsTransportError] = AnalyticsTransportError, limit: int | None = None
                        ) -> AsyncIterator[bytes]:
        """A streamed answer's body as it arrives (the exchange's total timeout bounds it)."""
        received = 0
        try:
            async for chunk in answer.raw.content.iter_any():
                yield chunk
                received += len(chunk)
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
        try:
            response = await self._require().session.request(  # type: ignore[union-attr]
                step.method, step.url, params=step.params, json=step.json, data=step.data, headers=headers,
                timeout=self._timeout(step.left, connect, read),
                allow_redirects=False, proxy=proxy, proxy_headers=proxy_headers, ssl=step.network.ssl_context,
            )
        except Exception as exc:
            return Failure(exc, sent=not isinstance(exc, _not_sent_errors()))
        answer = Answer(response.status, response.headers, url=step.url, raw=response)  # no redirect is followed
        if step.stream:
            return answer
        try:
            async with response:
                limit = None if response.status < 400 else step.error_body_limit
                answer.body = await (response.read() if limit is None else response.content.read(limit))
        except Exception as exc:
            return Failure(exc, sent=True)
        return answer

    def _timeout(self, left: float | None, connect: float, read: float) -> aiohttp.ClientTimeout:
        """Connect and per-read timeouts, and the whole exchange bounded by what is left. With more
        than a minute left, the bound is rounded down to the second and the object reused (a poll
        makes one per request otherwise)."""
        if left is not None and left <= 60:
            return aiohttp.ClientTimeout(total=max(left, 0.001), sock_connect=connect, sock_read=read)
        key = (None if left is None else float(int(left)), connect, read)
        timeouts = self._require().timeouts
        if key not in timeouts:
            if len(timeouts) >= 512:
                timeouts.clear()
            timeouts[key] = aiohttp.ClientTimeout(total=key[0], sock_connect=connect, sock_read=read)
        return timeouts[key]

    def _require(self) -> _LoopShared:
        if self._shared is None:
            raise RuntimeError("use AsyncAnalyticsClient inside 'async with'")
        return self._shared


def _not_sent_errors() -> tuple[type[BaseException], ...]:
    return (
        aiohttp.ClientConnectorError,
        getattr(aiohttp, "ConnectionTimeoutError", aiohttp.ClientConnectorError),
        ValueError,  # refused before sending (an invalid header or URL)
    )
