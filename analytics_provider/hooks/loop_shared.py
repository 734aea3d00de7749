"""What the triggers of one event loop share: one aiohttp session (its kept-alive connections),
each connection's settings, the quotas, the batched job readers, and the timeout objects of
their requests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import aiohttp

from analytics_provider.api.budget import Quota
from analytics_provider.api.settings import ConnectionSettings, user_agent

if TYPE_CHECKING:
    from analytics_provider.hooks.job_reader import JobReader

SETTINGS_TTL = 300.0  # seconds a connection's settings are reused before being read again


class LoopShared:
    """The shared state of one event loop; the last client out closes the session."""

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.users = 0
        self.settings: dict[str, tuple[float, ConnectionSettings]] = {}
        self.settings_locks: dict[str, asyncio.Lock] = {}
        self.quotas: dict[tuple[str, str], Quota] = {}
        self.timeouts: dict[tuple[float | None, float, float | None], aiohttp.ClientTimeout] = {}
        self.readers: dict[tuple[Any, ...], JobReader] = {}  # per client class, connection and options

    def enter(self) -> None:
        if self.session is None or self.session.closed:
            self.session = aiohttp.ClientSession(  # trust_env off: the environment is read by network.py
                headers={"User-Agent": user_agent("triggerer"), "Accept": "application/json"},
                connector=aiohttp.TCPConnector(limit=100, keepalive_timeout=60),
            )
        self.users += 1

    async def leave(self) -> None:
        self.users -= 1
        if self.users == 0 and self.session is not None:
            session, self.session = self.session, None
            await session.close()

    def fresh_settings(self, conn_id: str, now: float) -> ConnectionSettings | None:
        cached = self.settings.get(conn_id)
        return None if cached is None or now - cached[0] >= SETTINGS_TTL else cached[1]

    async def read_settings(self, conn_id: str, clock: Callable[[], float]) -> ConnectionSettings:
        """Read the connection once however many waits ask at the same time."""
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
            self.settings[conn_id] = (clock(), settings)
            return settings

    def quota(self, conn_id: str, endpoint: str, clock: Callable[[], float]) -> Quota:
        key = (conn_id, endpoint)
        if key not in self.quotas:
            self.quotas[key] = Quota(clock=clock, event=asyncio.Event)
        return self.quotas[key]

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


_SHARED: dict[asyncio.AbstractEventLoop, LoopShared] = {}


def of_running_loop() -> LoopShared:
    loop = asyncio.get_running_loop()
    for closed in [other for other in _SHARED if other.is_closed()]:
        del _SHARED[closed]
    return _SHARED.setdefault(loop, LoopShared())
