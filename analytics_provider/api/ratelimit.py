"""Reading the service's rate-limit headers, and remembering them per endpoint.

Nobody documents the value format of ``RateLimit-Reset`` and ``Retry-After``: both accept
delta-seconds and an HTTP date, and ``RateLimit-Reset`` also a Unix epoch timestamp.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

_EPOCH_THRESHOLD = 1_000_000_000  # a larger number is a timestamp, not a delay


@dataclass(frozen=True)
class RateLimit:
    """The latest quota an endpoint reported: ``reset_at`` is a Unix time."""

    limit: int | None
    remaining: int | None
    reset_at: float | None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:  # plain dicts (tests, other transports) are not case-insensitive
        lowered = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == lowered), None)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _seconds_until(value: str, now: float, *, epoch_allowed: bool) -> float | None:
    try:
        number = float(value)
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - now)
        except (TypeError, ValueError, IndexError):
            return None
    if epoch_allowed and number > _EPOCH_THRESHOLD:
        return max(0.0, number - now)
    return max(0.0, number)


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds a 429 or 503 asked to wait, or None."""
    value = _header(headers, "Retry-After")
    return None if value is None else _seconds_until(value, time.time() if now is None else now, epoch_allowed=True)


def parse_rate_limit(headers: Mapping[str, str], *, now: float) -> RateLimit | None:
    limit, remaining, reset = (_header(headers, f"RateLimit-{n}") for n in ("Limit", "Remaining", "Reset"))
    if limit is None and remaining is None and reset is None:
        return None
    delay = None if reset is None else _seconds_until(reset, now, epoch_allowed=True)
    return RateLimit(
        limit=_int(limit),
        remaining=_int(remaining),
        reset_at=None if delay is None else now + delay,
    )


def _int(value: str | None) -> int | None:
    try:
        return None if value is None else int(float(value))
    except ValueError:
        return None


class RateLimitTracker:
    """The latest ``RateLimit-*`` values per endpoint, and how long to hold back a call.

    Thread-safe: one tracker serves every thread of a hook.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._limits: dict[str, RateLimit] = {}
        self._lock = threading.Lock()

    def record(self, endpoint: str, headers: Mapping[str, str]) -> None:
        found = parse_rate_limit(headers, now=self._clock())
        if found is not None:
            with self._lock:
                self._limits[endpoint] = found

    def delay(self, endpoint: str) -> float:
        """Seconds to wait before calling ``endpoint``: until its reset when its quota is spent."""
        with self._lock:
            state = self._limits.get(endpoint)
        if state is None or state.remaining is None or state.remaining > 0 or state.reset_at is None:
            return 0.0
        return max(0.0, state.reset_at - self._clock())

    def snapshot(self) -> dict[str, RateLimit]:
        with self._lock:
            return dict(self._limits)
