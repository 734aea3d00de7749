"""The one retry policy, as tenacity pieces both transports compose.

Retried: connection errors, timeouts, incomplete downloads, 429, 500, 502, 503, 504 and
MaintenanceError, with exponential backoff and full jitter, bounded by a count and a total time.
A 429 or 503 that says ``Retry-After`` is waited out for exactly that long. 400, 401, 403, 404
and 422 are never retried. A call that creates a resource is re-sent only when the service
surely did not act on it: the request never left (connect failure), or the answer was 429 or
503, which refuse the request before any work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tenacity

from analytics_provider.api.operations import Operation
from analytics_provider.exceptions import AnalyticsApiError, AnalyticsTransportError, MaintenanceError

log = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
NOT_PROCESSED_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry. ``max_attempts`` counts the first try."""

    max_attempts: int = 5
    max_elapsed: float = 300.0
    initial_wait: float = 1.0
    max_wait: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.max_elapsed <= 0:
            raise ValueError(f"max_elapsed must be positive, got {self.max_elapsed}")

    def tenacity_kwargs(self, op: Operation) -> dict[str, Any]:
        """``retry``, ``wait``, ``stop`` and logging for calls of ``op``; add ``sleep`` as needed."""
        return {
            "retry": tenacity.retry_if_exception(lambda exc: is_retryable(exc, op)),
            "wait": WaitRetryAfter(tenacity.wait_random_exponential(multiplier=self.initial_wait, max=self.max_wait)),
            "stop": tenacity.stop_after_attempt(self.max_attempts) | tenacity.stop_before_delay(self.max_elapsed),
            "before_sleep": _log_retry,
            "reraise": True,
        }


def is_retryable(exc: BaseException, op: Operation) -> bool:
    if isinstance(exc, AnalyticsTransportError):
        return not (op.creates and exc.sent)
    if isinstance(exc, MaintenanceError):
        return True
    if isinstance(exc, AnalyticsApiError) and exc.status in RETRYABLE_STATUSES:
        return not op.creates or exc.status in NOT_PROCESSED_STATUSES
    return False


class WaitRetryAfter(tenacity.wait.wait_base):
    """The service's ``Retry-After`` when it gave one, else the fallback wait."""

    def __init__(self, fallback: Callable[[tenacity.RetryCallState], float]) -> None:
        self.fallback = fallback

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return float(retry_after)
        return float(self.fallback(retry_state))


def _log_retry(retry_state: tenacity.RetryCallState) -> None:
    exc = retry_state.outcome.exception() if retry_state.outcome else None
    wait = retry_state.next_action.sleep if retry_state.next_action else 0.0
    log.warning("Retrying in %.1f s (attempt %d failed): %s", wait, retry_state.attempt_number, exc)
