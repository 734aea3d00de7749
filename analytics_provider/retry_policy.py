"""Which of the provider's errors deserve a task retry, and when: a task retry policy (Airflow 3.3+).

Attach it to any task that calls the service::

    from analytics_provider.retry_policy import AnalyticsRetryPolicy

    AnalyticsExportWidgetOperator(..., retries=3, retry_policy=AnalyticsRetryPolicy())

A rate limit is retried when the service's quota resets (its ``Retry-After``), not after the
task's ``retry_delay``; an error no retry can cure (a refused or unknown key, a missing permission,
a refused certificate, a parameter or a resource the service refuses) fails the task at once,
keeping its retries for what may pass; anything else (no answer, a 5xx, a failed job) follows the
task's own ``retries`` and ``retry_delay``. The task's ``retries`` still bounds the count.

Airflow before 3.3 has no task retry policies: this module imports there, and
``AnalyticsRetryPolicy`` raises an ``ImportError`` that says so.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from analytics_provider.api.call.settings import ConnectionConfigError
from analytics_provider.exceptions import (
    AnalyticsParameterError,
    AnalyticsTlsError,
    AnswerTooLargeError,
    AuthError,
    InvalidEmailsInvitationError,
    InvalidOperationError,
    InvalidParameterError,
    MaintenanceError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitExceedError,
    RecordError,
    SubscriptionError,
    tls_problem,
)

NEVER_CURED = (
    AuthError, PermissionDeniedError, SubscriptionError, AnalyticsParameterError, ConnectionConfigError,
    InvalidParameterError, RecordError, InvalidOperationError, InvalidEmailsInvitationError, NotFoundError,
    AnswerTooLargeError,
)
"""Errors a later try meets again unchanged: the key, its rights, the input, the resource, a size limit."""
WAIT_FOR_THE_SERVICE = (RateLimitExceedError, MaintenanceError)
"""Errors that say when to come back (``retry_after``)."""
MAX_WAIT = timedelta(hours=1)


def classify(exception: BaseException) -> tuple[str, timedelta | None, str]:
    """``(action, delay, reason)`` for an error: ``retry`` (after ``delay``, None: the task's
    ``retry_delay``), ``fail`` or ``default``. Plain data, for any Airflow version."""
    if isinstance(exception, AnalyticsTlsError) or tls_problem(exception) is not None:
        return "fail", None, f"TLS refused (the certificate or the handshake); a retry would be too: {exception}"
    if isinstance(exception, WAIT_FOR_THE_SERVICE):
        after = getattr(exception, "retry_after", None)
        delay = min(timedelta(seconds=max(1.0, float(after))), MAX_WAIT) if after is not None else None
        when = f"in {delay.total_seconds():.0f} s, when the service said" if delay else "after the task's retry_delay"
        return "retry", delay, f"{type(exception).__name__}: retrying {when}"
    if isinstance(exception, NEVER_CURED):
        return "fail", None, f"{type(exception).__name__} is not cured by a retry: {exception}"
    return "default", None, ""


try:  # Airflow 3.3 and later
    from airflow.sdk import RetryDecision, RetryPolicy
except ImportError:  # pragma: no cover - exercised on Airflow 3.0 to 3.2 by the version matrix
    RetryPolicy = None  # type: ignore[assignment,misc]

if TYPE_CHECKING or RetryPolicy is not None:

    class AnalyticsRetryPolicy(RetryPolicy):
        """The provider's errors mapped to task retry decisions (see the module's text)."""

        def evaluate(
            self, exception: BaseException, try_number: int, max_tries: int, context: Any = None
        ) -> RetryDecision:
            action, delay, reason = classify(exception)
            if action == "fail":
                return RetryDecision.fail(reason)
            if action == "retry":
                return RetryDecision.retry(delay=delay, reason=reason)
            return RetryDecision.default()

        def serialize(self) -> dict[str, Any]:
            return {"__type": "AnalyticsRetryPolicy"}

        @classmethod
        def deserialize(cls, data: dict[str, Any]) -> AnalyticsRetryPolicy:
            return cls()

        def __repr__(self) -> str:
            return "AnalyticsRetryPolicy()"

else:  # pragma: no cover - Airflow 3.0 to 3.2

    def __getattr__(name: str) -> Any:
        if name == "AnalyticsRetryPolicy":
            raise ImportError("AnalyticsRetryPolicy needs Airflow 3.3 or later (task retry policies)")
        raise AttributeError(name)
