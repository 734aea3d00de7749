"""A quota shared by every wait of one process, per connection and endpoint.

The service counts requests per user and endpoint. Hundreds of triggers polling with one key
would spend the quota in a burst and then collect 429s; instead they take turns here. Turns
are first come, first served (``asyncio.Lock`` is fair), so no wait starves, and they are spaced
so that what is left of the quota lasts until the frame resets.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping

from analytics_provider.api.ratelimit import parse_rate_limit

_NEW_FRAME_SLACK = 1.0  # seconds: a reset time that moved further is a new frame


class QuotaBudget:
    """Turns for one endpoint's quota.

    Until an answer has reported the quota, one request goes first and the rest wait for its
    answer (at most ``probe_timeout``), so a crowd starting together cannot overrun it.
    """

    def __init__(self, clock: Callable[[], float] = time.time, probe_timeout: float = 10.0) -> None:
        self._clock = clock
        self._lock = asyncio.Lock()
        self._probe: asyncio.Event | None = None
        self._probe_timeout = probe_timeout
        self.limit: int | None = None
        self.remaining: int | None = None
        self.reset_at: float | None = None
        self.frame = 0.0  # longest time-to-reset seen: the frame's length, as far as we can tell
        self._next_turn = 0.0

    async def acquire(self) -> None:
        """Wait for this caller's turn; call :meth:`answered` when its answer (or failure) is in."""
        async with self._lock:
            if self.remaining is None:
                if self._probe is not None:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._probe.wait(), self._probe_timeout)
                if self.remaining is None:
                    self._probe = asyncio.Event()
                    return
            delay = self._take_turn()
            if delay > 0:
                await asyncio.sleep(delay)

    def _take_turn(self) -> float:
        now = self._clock()
        start = now
        if self.reset_at is not None and self.remaining is not None and self.remaining <= 0:
            start = max(now, self.reset_at)  # spent: the next turn is at the reset
        if self.reset_at is not None and start >= self.reset_at:
            self.remaining = self.limit
            self.reset_at = start + self.frame if self.frame else None
        if self.remaining is None or self.reset_at is None:
            return start - now
        turn = max(start, self._next_turn)
        self._next_turn = turn + max(0.0, self.reset_at - turn) / max(self.remaining, 1)
        self.remaining -= 1
        return turn - now

    def answered(self, headers: Mapping[str, str] | None = None) -> None:
        """Take in an answer's ``RateLimit-*`` headers (None: no answer came)."""
        if headers is not None:
            self._update(headers)
        if self._probe is not None:
            self._probe.set()
            self._probe = None

    def _update(self, headers: Mapping[str, str]) -> None:
        now = self._clock()
        found = parse_rate_limit(headers, now=now)
        if found is None or found.remaining is None:
            return
        if found.reset_at is not None:
            self.frame = max(self.frame, found.reset_at - now)
        new_frame = (
            self.reset_at is None
            or found.reset_at is None
            or found.reset_at > self.reset_at + _NEW_FRAME_SLACK
        )
        self.limit = found.limit if found.limit is not None else self.limit
        if new_frame or self.remaining is None:
            self.remaining, self.reset_at = found.remaining, found.reset_at
        else:  # same frame: other turns may be in flight, keep the stricter count
            self.remaining = min(self.remaining, found.remaining)

    def exhausted(self, retry_after: float | None) -> None:
        """A 429 came back: nothing is left until ``retry_after`` (or the known reset)."""
        now = self._clock()
        self.remaining = 0
        if retry_after is not None:
            self.reset_at = now + retry_after
        elif self.reset_at is None:
            self.reset_at = now + 1.0
