"""Rate limits as the document describes: a quota per key and endpoint for each time frame.

Levels (the document's quotas; the assignment is the emulator's choice): level 3 (20) for the
calls that weigh most on the service, level 2 (60) for those that run queries, level 1 (120)
for everything else.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import formatdate

from analytics_provider.api.wire.operations import OPERATIONS, Operation

LEVEL_QUOTAS = {1: 120, 2: 60, 3: 20}
LEVEL_2 = frozenset({
    "submit_widget_export", "preload_dashboard", "execute_data_schedule", "execute_data_alert",
    "test_data_alert", "invite_users", "submit_data_set_query", "test_data_schedule", "clone_canvas_dashboard",
    "resend_user_invite", "add_object_tags", "remove_object_tags",
})
LEVEL_3 = frozenset({"publish_aml_project", "validate_aml_project", "bust_data_source_cache", "upload_dbt_manifests"})
DEFAULT_FRAME = 60.0
RETRY_AFTER_FORMATS = ("seconds", "date")


def level_of(operation: str) -> int:
    return 3 if operation in LEVEL_3 else 2 if operation in LEVEL_2 else 1


@dataclass(frozen=True)
class Verdict:
    """One request's standing in its bucket; ``reset`` is whole seconds until the frame ends."""

    allowed: bool
    limit: int
    remaining: int
    reset: int

    def headers(self) -> dict[str, str]:
        found = {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
        }
        if not self.allowed:
            found["Retry-After"] = str(self.reset)
        return found


class RateLimiter:
    """Fixed windows aligned on the clock (frame n covers ``[n * frame, (n + 1) * frame)``),
    as common server-side throttles count; one counter per key and endpoint. Thread-safe.
    """

    def __init__(self, frame: float = DEFAULT_FRAME, clock: Callable[[], float] = time.time) -> None:
        if frame <= 0:
            raise ValueError("the rate-limit frame must be positive")
        self._clock = clock
        self._lock = threading.Lock()
        self.frame = frame
        self._default_quota: int | None = None
        self._quotas: dict[str, int] = {}
        self._windows: dict[tuple[str, str], tuple[int, int]] = {}
        self.retry_after = "seconds"

    def quota(self, op: Operation) -> int:
        return self._quotas.get(op.name) or self._default_quota or LEVEL_QUOTAS[level_of(op.name)]

    def hit(self, principal: str, op: Operation) -> Verdict:
        """Count one request of ``principal`` (a key) to ``op``'s endpoint."""
        now = self._clock()
        limit = self.quota(op)
        with self._lock:
            frame_number = math.floor(now / self.frame)
            number, count = self._windows.get((principal, op.endpoint), (frame_number, 0))
            count = count + 1 if number == frame_number else 1
            self._windows[(principal, op.endpoint)] = (frame_number, count)
            ends = (frame_number + 1) * self.frame
        reset = max(1, math.ceil(ends - now))
        return Verdict(count <= limit, limit, max(0, limit - count), reset)

    def configure(
        self, frame: float | None = None, quota: int | None = None, operation: str | None = None,
        retry_after: str | None = None,
    ) -> None:
        """Shorten (or lengthen) the frame; set the quota of one operation, or of all; write
        ``Retry-After`` as ``seconds`` or as an HTTP ``date`` (the live service sends both)."""
        if retry_after is not None and retry_after not in RETRY_AFTER_FORMATS:
            raise ValueError(f"retry_after must be one of {', '.join(RETRY_AFTER_FORMATS)}, got {retry_after!r}")
        if operation is not None and operation not in OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}")
        if frame is not None and frame <= 0:
            raise ValueError("the rate-limit frame must be positive")
        if quota is not None and quota < 1:
            raise ValueError("a quota must be at least 1")
        with self._lock:
            if retry_after is not None:
                self.retry_after = retry_after
            if frame is not None:
                self.frame = float(frame)
                self._windows.clear()
            if quota is not None:
                if operation is None:
                    self._default_quota = quota
                    self._quotas.clear()
                else:
                    self._quotas[operation] = quota

    def retry_after_header(self, headers: dict[str, str]) -> None:
        """``Retry-After`` (whole seconds as written) rewritten as an HTTP date when so configured."""
        value = headers.get("Retry-After")
        if self.retry_after == "date" and value is not None and value.isdigit():
            headers["Retry-After"] = formatdate(math.ceil(self._clock()) + int(value), usegmt=True)

    def reset(self, frame: float) -> None:
        with self._lock:
            self.retry_after = "seconds"
            self.frame = frame
            self._default_quota = None
            self._quotas.clear()
            self._windows.clear()
