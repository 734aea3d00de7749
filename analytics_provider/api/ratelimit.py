"""Reading the service's rate-limit headers: every number finite and capped.

The API document does not show the value format of ``RateLimit-Reset`` and ``Retry-After``.
Both are read as the standards write them: delta-seconds (digits only) or an HTTP date; a
``RateLimit-Reset`` of more than 10⁹ seconds is a Unix epoch time. Any other value is ignored.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

_EPOCH_THRESHOLD = 1_000_000_000  # a larger number is a timestamp, not a delay
MAX_HEADER_SECONDS = 3600.0
"""The longest wait a header may ask for; a larger (or infinite) value is read as this."""
MAX_COUNT = 10**9


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
    """A delay in seconds, at most :data:`MAX_HEADER_SECONDS`; None when the value is neither
    delta-seconds (digits only) nor an HTTP date. ``1e400``, ``-5`` or ``2.5`` are ignored,
    never read as a number."""
    if value.isascii() and value.isdigit():
        number = float(int(value[:30]))  # 30 digits already mean far beyond the cap
        if epoch_allowed and number > _EPOCH_THRESHOLD:
            number -= now
    else:
        try:
            number = parsedate_to_datetime(value).timestamp() - now
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return min(max(0.0, number), MAX_HEADER_SECONDS)


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds a 429 or 503 asked to wait (at most :data:`MAX_HEADER_SECONDS`), or None."""
    value = _header(headers, "Retry-After")
    return None if value is None else _seconds_until(value, time.time() if now is None else now, epoch_allowed=True)


def parse_rate_limit(headers: Mapping[str, str], *, now: float) -> RateLimit | None:
    get = headers.get  # every answer passes here: the names as the service writes them first
    limit, remaining, reset = get("RateLimit-Limit"), get("RateLimit-Remaining"), get("RateLimit-Reset")
    if limit is None and remaining is None and reset is None:
        limit, remaining, reset = (_header(headers, f"RateLimit-{n}") for n in ("Limit", "Remaining", "Reset"))
        if limit is None and remaining is None and reset is None:
            return None
    delay = None if not reset else _seconds_until(reset.strip(), now, epoch_allowed=True)
    return RateLimit(
        limit=_count(limit),
        remaining=_count(remaining),
        reset_at=None if delay is None else now + delay,
    )


def _count(value: str | None) -> int | None:
    """A finite, non-negative count of at most :data:`MAX_COUNT`, or None."""
    if value is None:
        return None
    if len(value) < 12 and value.isdigit() and value.isascii():  # the usual case
        return min(int(value), MAX_COUNT)
    try:
        number = float(value)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(min(max(number, 0.0), MAX_COUNT))
