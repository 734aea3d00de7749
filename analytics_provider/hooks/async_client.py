"""The triggers' transport: native async I/O over one shared ``aiohttp`` session per event loop.

It builds requests, reads answers and retries through the same pieces as the sync hook
(:mod:`analytics_provider.api`); only the I/O differs. The session (and so its kept-alive
connections) and the quota budgets are shared by every trigger of a triggerer process.
aiohttp was chosen by measurement (see the operators issue and ``benchmarks/``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import tenacity

from analytics_provider import __version__
from analytics_provider.api.budget import QuotaBudget
from analytics_provider.api.request import ApiRequest, build_request, parse_response
from analytics_provider.api.retry import RetryPolicy, is_retryable
from analytics_provider.api.settings import ConnectionSettings
from analytics_provider.exceptions import AnalyticsTransportError, RateLimitExceedError

if TYPE_CHECKING:
    import aiohttp

log = logging.getLogger(__name__)

SETTINGS_TTL = 300.0  # seconds a connection's settings are reused before being read again


class _LoopShared:
    """What the triggers of one event loop share: the session, settings and quota budgets."""

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.users = 0
        self.settings: dict[str, tuple[float, ConnectionSettings]] = {}
        self.timeouts: dict[tuple[float, float], aiohttp.ClientTimeout] = {}
        self.settings_locks: dict[str, asyncio.Lock] = {}
        self.budgets: dict[tuple[str, str], QuotaBudget] = {}


_SHARED: dict[asyncio.AbstractEventLoop, _LoopShared] = {}


def _shared() -> _LoopShared:
    loop = asyncio.get_running_loop()
    for other in [lp for lp in _SHARED if lp.is_closed()]:
        del _SHARED[other]
    return _SHARED.setdefault(loop, _LoopShared())


class AsyncAnalyticsClient:
    """Calls the API from a trigger. Use as ``async with AsyncAnalyticsClient(conn_id) as client``."""

    def __init__(self, analytics_conn_id: str, retry_policy: RetryPolicy | None = None) -> None:
        self.analytics_conn_id = analytics_conn_id
        self.retry_policy = retry_policy or RetryPolicy()
        self._shared: _LoopShared | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(analytics_conn_id={self.analytics_conn_id!r})"

    async def __aenter__(self) -> AsyncAnalyticsClient:
        import aiohttp

        shared = self._shared = _shared()
        if shared.session is None or shared.session.closed:
            shared.session = aiohttp.ClientSession(
                headers={"User-Agent": f"airflow-provider-analytics/{__version__}", "Accept": "application/json"},
                connector=aiohttp.TCPConnector(limit=100, keepalive_timeout=60),
            )
        shared.users += 1
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        shared, self._shared = self._shared, None
        if shared is None:
            return
        shared.users -= 1
        if shared.users == 0 and shared.session is not None:
            session, shared.session = shared.session, None
            await session.close()

    async def settings(self) -> ConnectionSettings:
        """The connection's settings, read once for all the waits of the loop (then every 5 min)."""
        shared = self._require()
        cached = shared.settings.get(self.analytics_conn_id)
        if cached and time.monotonic() - cached[0] < SETTINGS_TTL:
            return cached[1]
        async with shared.settings_locks.setdefault(self.analytics_conn_id, asyncio.Lock()):
            cached = shared.settings.get(self.analytics_conn_id)  # another wait may have read it meanwhile
            if cached and time.monotonic() - cached[0] < SETTINGS_TTL:
                return cached[1]
            from airflow.providers.common.compat.connection import get_async_connection

            conn = await get_async_connection(self.analytics_conn_id)
            settings = ConnectionSettings.from_connection(conn, self.analytics_conn_id)
            shared.settings[self.analytics_conn_id] = (time.monotonic(), settings)
            return settings

    def budget(self, endpoint: str) -> QuotaBudget:
        return self._require().budgets.setdefault((self.analytics_conn_id, endpoint), QuotaBudget())

    async def call(
        self,
        name: str,
        *path_args: Any,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        retry_policy: RetryPolicy | None = None,
    ) -> Any:
        """Run an operation with the hook's retry rules; waits its turn in the shared quota."""
        request = build_request(name, path_args, query, body)
        policy = retry_policy or self.retry_policy
        try:  # the common case, once per poll of every wait: one attempt, no retry machinery
            return await self._send(request)
        except Exception as exc:
            if policy.max_attempts <= 1 or not is_retryable(exc, request.operation):
                raise
            failures: list[BaseException] = [exc]

        async def attempt() -> Any:
            if failures:  # the policy sees the first failure as its first attempt (and its Retry-After)
                raise failures.pop()
            return await self._send(request)

        retrying = tenacity.AsyncRetrying(sleep=asyncio.sleep, **policy.tenacity_kwargs(request.operation))
        return await retrying(attempt)

    async def _send(self, request: ApiRequest) -> Any:
        import aiohttp

        settings = await self.settings()
        budget = self.budget(request.operation.endpoint)
        await budget.acquire()
        headers: Mapping[str, str] | None = None
        try:
            async with self._require().session.request(  # type: ignore[union-attr]
                request.method,
                settings.url(request.path),
                params=request.params or None,
                json=request.json,
                headers={settings.header_name: settings.api_key},
                timeout=self._timeout(settings),
                allow_redirects=False,
            ) as response:
                body = await response.read()
                headers = response.headers
                status = response.status
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise AnalyticsTransportError(
                f"{type(exc).__name__}: {exc}",
                sent=not isinstance(exc, _not_sent_errors()),
                method=request.method,
                path=request.path,
            ) from exc
        finally:
            budget.answered(headers)
        try:
            return parse_response(request, status, headers, body)
        except RateLimitExceedError as exc:
            budget.exhausted(exc.retry_after)
            raise

    def _timeout(self, settings: ConnectionSettings) -> aiohttp.ClientTimeout:
        import aiohttp

        key = (settings.connect_timeout, settings.read_timeout)
        timeouts = self._require().timeouts
        if key not in timeouts:
            timeouts[key] = aiohttp.ClientTimeout(connect=key[0], sock_read=key[1])
        return timeouts[key]

    def _require(self) -> _LoopShared:
        if self._shared is None:
            raise RuntimeError("use AsyncAnalyticsClient inside 'async with'")
        return self._shared


def _not_sent_errors() -> tuple[type[BaseException], ...]:
    import aiohttp

    return (aiohttp.ClientConnectorError, getattr(aiohttp, "ConnectionTimeoutError", aiohttp.ClientConnectorError))
