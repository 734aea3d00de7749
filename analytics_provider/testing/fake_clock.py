"""A clock that moves only when a wait sleeps: hour-long waits and outages in a test that takes a second.

``FakeClock.install(monkeypatch)`` swaps the clock and the sleep of the hook (its polls, retries
and quota waits) and of the trigger and its transport (a 429 holds the shared quota on this
clock). ``clock.at(seconds, action)`` runs ``action`` (inject a fault, clear it, finish a job on
the emulator) once that much fake time has passed; actions run in order, each at its own time,
while a wait sleeps across it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any


class FakeClock:
    """Fake time, starting at the real Unix time (the trigger's deadlines are Unix times)."""

    def __init__(self, start: float | None = None) -> None:
        self.start = time.time() if start is None else float(start)
        self.now = self.start
        self.sleeps: list[float] = []
        self._actions: list[tuple[float, int, Callable[[], Any]]] = []
        self._order = itertools.count()
        self._lock = threading.RLock()

    def time(self) -> float:
        return self.now

    @property
    def elapsed(self) -> float:
        return self.now - self.start

    def at(self, seconds: float, action: Callable[[], Any]) -> None:
        """Run ``action`` when ``seconds`` of fake time have passed since the start."""
        with self._lock:
            heapq.heappush(self._actions, (self.start + seconds, next(self._order), action))

    def sleep(self, seconds: float) -> None:
        """Advance by ``seconds``, running the actions that fall due on the way."""
        if seconds < 0:
            raise ValueError(f"a sleep of {seconds} s")
        with self._lock:
            self.sleeps.append(seconds)
            target = self.now + seconds
            while self._actions and self._actions[0][0] <= target:
                due, _, action = heapq.heappop(self._actions)
                self.now = max(self.now, due)
                action()
            self.now = target

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)
        await asyncio.sleep(0)  # still a point where other tasks run

    def install(self, monkeypatch: Any, emulator: Any = None) -> FakeClock:
        """Make the hook and the trigger wait on this clock (``monkeypatch``: pytest's fixture), and
        the ``emulator``'s world (its jobs, the times its handlers read) follow it, when given."""
        if emulator is not None:
            monkeypatch.setattr(emulator.world, "clock", self.time)
        from analytics_provider.hooks.async_client import AsyncAnalyticsClient
        from analytics_provider.hooks.client import AnalyticsClientHook
        from analytics_provider.hooks.job_reader import JobReader
        from analytics_provider.triggers.analytics import AnalyticsJobTrigger

        monkeypatch.setattr(AnalyticsClientHook, "clock", staticmethod(self.time))
        monkeypatch.setattr(AnalyticsClientHook, "sleep", staticmethod(self.sleep))
        monkeypatch.setattr(AsyncAnalyticsClient, "clock", staticmethod(self.time))  # the trigger's quotas
        monkeypatch.setattr(AsyncAnalyticsClient, "sleep", staticmethod(self.async_sleep))
        monkeypatch.setattr(AnalyticsJobTrigger, "clock", staticmethod(self.time))
        monkeypatch.setattr(AnalyticsJobTrigger, "sleep", staticmethod(self.async_sleep))
        monkeypatch.setattr(JobReader, "GATHER", 0.0)  # a trigger's reads gathered within one turn of the loop
        monkeypatch.setattr(JobReader, "GATHER_MAX", 0.0)
        return self
