"""The one retry policy, as tenacity pieces both transports compose, and the call deadline.

Retried: connection errors, timeouts, incomplete downloads, unusable answers, 429, 500, 502,
503, 504 and MaintenanceError, with exponential backoff and full jitter, bounded by a count
(or not: ``max_attempts=None``) and a total time. A 429 or 503 that says ``Retry-After`` is
waited out for exactly that long. 400, 401, 403, 404 and 422 are never retried. A call that
creates a resource is re-sent only when the service surely did not act on it: the request
never left (connect failure), or the answer was 429 or 503, which refuse the request before
any work.

The interfaces the waits build on:

* ``call(name, *path_args, query=None, body=None, retry_policy=None, deadline=None)`` of the
  hook and of the async client. ``deadline`` is an absolute time on the transport's own clock
  (its ``clock`` attribute, ``time.monotonic`` unless swapped). Each request's connect, read and
  total time is capped by what is left; quota waits and retry backoff never sleep past it; when
  no time is left, or the next wait would pass it, the call raises
  :class:`~analytics_provider.exceptions.AnalyticsDeadlineExceeded` instead of sleeping. A Unix
  end time (a trigger's) converts as ``client.clock() + (end_time - time.time())``.
* :func:`is_transient`: the one predicate telling a transient failure (connection refused or
  dropped, timeout, 5xx, 429, an unusable answer) from a final one.
* ``RetryPolicy(max_attempts=None, max_elapsed=...)``: retry transient failures for a time
  only, ``Retry-After`` honoured (a wait that tolerates an outage of ``max_elapsed`` seconds).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tenacity

from analytics_provider.api.wire.operations import Operation
from analytics_provider.exceptions import (
    AnalyticsApiError,
    AnalyticsDeadlineExceeded,
    AnalyticsParameterError,
    AnalyticsTransportError,
    MaintenanceError,
)

log = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
NOT_PROCESSED_STATUSES = frozenset({429, 503})
MAX_RETRY_TIME = 604_800  # seconds (7 days): the longest a call may go on retrying; longer is a mistake

Clock = Callable[[], float]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry. ``max_attempts`` counts the first try; None: no count,
    only ``max_elapsed`` (seconds after the first attempt when no further retry starts) ends it.
    """

    max_attempts: int | None = 5
    max_elapsed: float = 300.0
    initial_wait: float = 1.0
    max_wait: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts is not None and (
            isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or self.max_attempts < 1
        ):
            raise AnalyticsParameterError(f"max_attempts must be an integer of at least 1, got {self.max_attempts!r}")
        for name in ("max_elapsed", "initial_wait", "max_wait"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise AnalyticsParameterError(f"{name} must be a positive number of seconds, got {value!r}")

    def with_overrides(self, max_attempts: int | None = None, max_retry_time: float | None = None) -> RetryPolicy:
        """This policy with a transport's options applied; zero or negative values are refused by name."""
        policy = self
        if max_attempts is not None:
            if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
                raise AnalyticsParameterError(f"max_attempts must be an integer of at least 1, got {max_attempts!r}")
            policy = dataclasses.replace(policy, max_attempts=max_attempts)
        if max_retry_time is not None:
            if isinstance(max_retry_time, bool) or not isinstance(max_retry_time, (int, float)) or not (
                0 < max_retry_time <= MAX_RETRY_TIME
            ):
                raise AnalyticsParameterError(
                    f"max_retry_time must be a positive number of seconds, at most {MAX_RETRY_TIME:,} (7 days), "
                    f"got {max_retry_time!r}"
                )
            policy = dataclasses.replace(policy, max_elapsed=float(max_retry_time))
        return policy

    def tenacity_kwargs(self, op: Operation) -> dict[str, Any]:
        """``retry``, ``wait``, ``stop`` and logging for calls of ``op``; add ``sleep`` as needed."""
        stop: tenacity.stop.stop_base = tenacity.stop_before_delay(self.max_elapsed)
        if self.max_attempts is not None:
            stop = stop | tenacity.stop_after_attempt(self.max_attempts)
        return {
            "retry": tenacity.retry_if_exception(lambda exc: is_retryable(exc, op)),
            "wait": WaitBackoff(self.initial_wait, self.max_wait),
            "stop": stop,
            "before_sleep": _log_retry,
            "reraise": True,
        }


def is_transient(exc: BaseException) -> bool:
    """Whether a failure may pass by itself: no answer, a timeout, an unusable answer, 429, 5xx.

    A deadline that passed, a refused parameter and every other answer are final.
    """
    if isinstance(exc, AnalyticsDeadlineExceeded):
        return False
    if isinstance(exc, (AnalyticsTransportError, MaintenanceError)):
        return True
    return isinstance(exc, AnalyticsApiError) and exc.status in RETRYABLE_STATUSES


def is_retryable(exc: BaseException, op: Operation) -> bool:
    """Whether a call of ``op`` may be sent again after ``exc``: transient, and never a second
    create unless the first surely did not reach the service."""
    if not is_transient(exc):
        return False
    if not op.creates:
        return True
    if isinstance(exc, AnalyticsTransportError):
        return not exc.sent
    return isinstance(exc, MaintenanceError) or (
        isinstance(exc, AnalyticsApiError) and exc.status in NOT_PROCESSED_STATUSES
    )


def backoff(exc: BaseException | None, failures: int, first: float, cap: float, *, low: float = 0.0,
            rng: Any = random) -> float:
    """The wait before the next try after ``failures`` failures in a row (the last one ``exc``):
    the service's ``Retry-After`` when it gave one, else a backoff doubling from ``first`` up to
    ``cap``, jittered: a random part of it from ``low`` of it up (0: full jitter). The one rule of
    both a call's retries and a wait's looks during an outage."""
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        return float(retry_after)
    ceiling = min(cap, first * 2.0 ** min(failures - 1, 64))
    return float(rng.uniform(low * ceiling, ceiling))


class WaitBackoff(tenacity.wait.wait_base):
    """:func:`backoff` as tenacity's ``wait``: full jitter from ``first`` up to ``cap``."""

    def __init__(self, first: float, cap: float) -> None:
        self.first, self.cap = first, cap

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        return backoff(exc, retry_state.attempt_number, self.first, self.cap)


def deadline_in(seconds: float, clock: Clock = time.monotonic) -> float:
    """An absolute deadline ``seconds`` from now on ``clock``."""
    return clock() + seconds


def _log_retry(retry_state: tenacity.RetryCallState) -> None:
    exc = retry_state.outcome.exception() if retry_state.outcome else None
    wait = retry_state.next_action.sleep if retry_state.next_action else 0.0
    log.warning("Retrying in %.1f s (attempt %d failed): %s", wait, retry_state.attempt_number, exc)
