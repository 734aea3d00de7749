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
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import tenacity

from analytics_provider.api.budget import QuotaBudget
from analytics_provider.api.ratelimit import parse_retry_after
from analytics_provider.api.request import ApiRequest, build_request, parse_response
from analytics_provider.api.retry import CallPlan, RetryPolicy, is_retryable
from analytics_provider.api.settings import USER_AGENT, ConnectionSettings, TransportOptions
from analytics_provider.exceptions import AnalyticsApiError, AnalyticsDeadlineExceeded, AnalyticsTransportError

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
    """Calls the API from a trigger. Use as ``async with AsyncAnalyticsClient(conn_id) as client``.

    ``clock`` and ``sleep`` are how it tells time and waits (retry backoff, quota turns); tests
    swap both. A ``deadline`` given to :meth:`call` is a time on ``clock``.
    """

    clock: Callable[[], float] = staticmethod(time.monotonic)
    sleep: Callable[[float], Awaitable[None]] = staticmethod(asyncio.sleep)

    def __init__(
        self,
        analytics_conn_id: str,
        retry_policy: RetryPolicy | None = None,
        *,
        timeout: float | None = None,
        connect_timeout: float | None = None,
    ) -> None:
        self.analytics_conn_id = analytics_conn_id
        self.retry_policy = retry_policy or RetryPolicy()
        self.options = TransportOptions(connect_timeout=connect_timeout, read_timeout=timeout)
        self._shared: _LoopShared | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(analytics_conn_id={self.analytics_conn_id!r})"

    async def __aenter__(self) -> AsyncAnalyticsClient:
        import aiohttp

        shared = self._shared = _shared()
        if shared.session is None or shared.session.closed:
            shared.session = aiohttp.ClientSession(
                headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
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
        if cached and self.clock() - cached[0] < SETTINGS_TTL:
            return self.options.apply(cached[1])
        async with shared.settings_locks.setdefault(self.analytics_conn_id, asyncio.Lock()):
            cached = shared.settings.get(self.analytics_conn_id)  # another wait may have read it meanwhile
            if cached and self.clock() - cached[0] < SETTINGS_TTL:
                return self.options.apply(cached[1])
            from airflow.sdk import BaseHook

            conn = await BaseHook.aget_connection(self.analytics_conn_id)
            settings = ConnectionSettings.from_connection(conn, self.analytics_conn_id)
            shared.settings[self.analytics_conn_id] = (self.clock(), settings)
            return self.options.apply(settings)

    def budget(self, endpoint: str) -> QuotaBudget:
        budgets = self._require().budgets
        key = (self.analytics_conn_id, endpoint)
        if key not in budgets:
            budgets[key] = QuotaBudget(clock=type(self).clock)
        return budgets[key]

    async def call(
        self,
        name: str,
        *path_args: Any,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        retry_policy: RetryPolicy | None = None,
        deadline: float | None = None,
    ) -> Any:
        """Run an operation with the hook's retry rules; waits its turn in the shared quota.

        ``deadline`` (a time on :attr:`clock`) bounds the whole call, retries and waits
        included: see :mod:`analytics_provider.api.retry`.
        """
        request = build_request(name, path_args, query, body)
        plan = CallPlan(retry_policy or self.retry_policy, request, deadline, self.clock)
        try:  # the common case, once per poll of every wait: one attempt, no retry machinery
            return await self._send(request, plan)
        except Exception as exc:
            if plan.policy.max_attempts == 1 or not is_retryable(exc, request.operation):
                raise
            failures: list[BaseException] = [exc]

        async def attempt() -> Any:
            if failures:  # the policy sees the first failure as its first attempt (and its Retry-After)
                raise failures.pop()
            return await self._send(request, plan)

        retrying = tenacity.AsyncRetrying(sleep=self.sleep, **plan.tenacity_kwargs())
        try:
            return await retrying(attempt)
        except AnalyticsApiError as exc:
            final = plan.final_error(exc)
            if final is exc:
                raise
            raise final from exc

    async def _send(self, request: ApiRequest, plan: CallPlan) -> Any:
        settings = await self.settings()
        budget = self.budget(request.operation.endpoint)
        await budget.acquire(plan.quota_wait_allowed, self.sleep)
        headers: Mapping[str, str] | None = None
        url = settings.url(request.path)
        try:
            async with self._require().session.request(  # type: ignore[union-attr]
                request.method,
                url,
                params=request.params or None,
                json=request.json,
                headers=settings.auth_headers(url),
                timeout=self._timeout(settings, plan.left()),
                allow_redirects=False,
            ) as response:
                body = await response.read()
                headers = response.headers
                status = response.status
        except AnalyticsDeadlineExceeded:
            raise
        except Exception as exc:  # every library error is wrapped: none may quote a header
            failure = AnalyticsTransportError.from_exception(
                exc, sent=not isinstance(exc, _not_sent_errors()), method=request.method, path=request.path,
                secrets=(settings.api_key,),
            )
            if plan.deadline is not None and self.clock() >= plan.deadline - 0.01:
                raise AnalyticsDeadlineExceeded(
                    "the deadline passed while waiting for the answer", last_error=failure,
                    method=request.method, path=request.path,
                ) from None
            raise failure from None
        finally:
            budget.answered(headers)
        if status == 429:
            budget.exhausted(parse_retry_after(headers))
        return parse_response(request, status, headers, body, secrets=(settings.api_key,))

    def _timeout(self, settings: ConnectionSettings, left: float | None) -> aiohttp.ClientTimeout:
        """Connect and per-read timeouts; with a deadline, also a total: what is left of it."""
        import aiohttp

        if left is not None:
            connect, read = settings.timeouts(left)
            return aiohttp.ClientTimeout(total=max(left, 0.001), connect=connect, sock_read=read)
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

    return (
        aiohttp.ClientConnectorError,
        getattr(aiohttp, "ConnectionTimeoutError", aiohttp.ClientConnectorError),
        ValueError,  # refused before sending (an invalid header or URL)
    )
