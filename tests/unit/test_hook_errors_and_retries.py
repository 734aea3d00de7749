"""Errors, retries and rate limits of the hook, on the wire."""

from __future__ import annotations

import pickle

import pytest
import requests

from analytics_provider import exceptions as exc
from analytics_provider.api.call.retry import RetryPolicy
from analytics_provider.hooks.analytics import AnalyticsHook

from .conftest import BASE, KEY


@pytest.mark.parametrize(
    ("status", "body", "cls", "text"),
    [
        (
            400,
            {"type": "InvalidParameterError", "message": "limit is invalid"},
            exc.InvalidParameterError,
            "400 InvalidParameterError on GET /dashboards/12: limit is invalid",
        ),
        (
            401,
            {"type": "AuthError", "message": "expired"},
            exc.AuthError,
            "401 AuthError on GET /dashboards/12: expired",
        ),
        (
            403,
            {"type": "PermissionDeniedError", "message": "not yours"},
            exc.PermissionDeniedError,
            "403 PermissionDeniedError on GET /dashboards/12: not yours",
        ),
        (
            403,
            {"type": "SubscriptionError", "message": "upgrade"},
            exc.SubscriptionError,
            "403 SubscriptionError on GET /dashboards/12: upgrade",
        ),
        (
            404,
            {"type": "BaseError", "message": "no such dashboard"},
            exc.NotFoundError,
            "404 BaseError on GET /dashboards/12: no such dashboard",
        ),
        (
            422,
            {"error": {"type": "InvalidOperationError", "message": "nested shape"}},
            exc.InvalidOperationError,
            "422 InvalidOperationError on GET /dashboards/12: nested shape",
        ),
        (
            422,
            {"type": "RecordError", "message": "invalid", "record": {"name": ["is taken"]}},
            exc.RecordError,
            "422 RecordError on GET /dashboards/12: invalid (name: is taken)",
        ),
        (404, None, exc.NotFoundError, "404 NotFoundError on GET /dashboards/12: HTTP 404 with no error body"),
    ],
)
def test_error_answers_raise_the_matching_exception_at_once(hook, mock, status, body, cls, text) -> None:
    mock.get(BASE + "/dashboards/12", status_code=status, json=body) if body else mock.get(
        BASE + "/dashboards/12", status_code=status
    )
    with pytest.raises(cls) as raised:
        hook.get_dashboard(12)
    assert str(raised.value) == text
    assert raised.value.status == status
    assert mock.call_count == 1


def test_internal_error_carries_debug_id_and_details(hook, mock) -> None:
    mock.get(
        BASE + "/jobs/1",
        status_code=500,
        json={"error": {"type": "InternalHolisticsError", "message": "boom", "debug_id": "dbg-42"}},
    )
    hook.retry_policy = RetryPolicy(max_attempts=1)
    with pytest.raises(exc.InternalServiceError) as raised:
        hook.get_job(1)
    assert raised.value.debug_id == "dbg-42"
    assert "[debug id dbg-42]" in str(raised.value)
    restored = pickle.loads(pickle.dumps(raised.value))
    assert (restored.status, restored.debug_id, str(restored)) == (500, "dbg-42", str(raised.value))


def test_maintenance_is_recognised_by_type_whatever_the_status(hook, mock, sleeps) -> None:
    mock.get(
        BASE + "/jobs/1",
        [
            {"status_code": 409, "json": {"type": "MaintenanceError", "message": "upgrading"}},
            {"json": {"job": {"id": 1, "status": "running"}}},
        ],
    )
    assert hook.get_job(1)["id"] == 1
    assert len(sleeps) == 1


def test_500_500_200_on_a_get_succeeds_with_backoff(hook, mock, sleeps) -> None:
    mock.get(
        BASE + "/jobs/1",
        [
            {"status_code": 500, "json": {"type": "InternalHolisticsError", "message": "a"}},
            {"status_code": 502, "text": "bad gateway"},
            {"json": {"job": {"id": 1, "status": "success"}}},
        ],
    )
    assert hook.get_job(1)["status"] == "success"
    assert mock.call_count == 3
    assert len(sleeps) == 2 and all(0 <= s <= 60 for s in sleeps)


def test_429_honours_retry_after(hook, mock, sleeps) -> None:
    mock.get(
        BASE + "/users/me",
        [
            {
                "status_code": 429,
                "headers": {"Retry-After": "2"},
                "json": {"type": "RateLimitExceedError", "message": "x"},
            },
            {"json": {"user": {"id": 1}}},
        ],
    )
    assert hook.get_current_user() == {"id": 1}
    assert sleeps == [2.0]


def test_retry_after_as_http_date(hook, mock, sleeps) -> None:
    import time
    from email.utils import formatdate

    mock.get(
        BASE + "/users/me",
        [
            {
                "status_code": 503,
                "headers": {"Retry-After": formatdate(time.time() + 30, usegmt=True)},
                "json": {"type": "MaintenanceError", "message": "x"},
            },
            {"json": {"user": {"id": 1}}},
        ],
    )
    hook.get_current_user()
    assert 28 <= sleeps[0] <= 31


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_never_retried(hook, mock, status, sleeps) -> None:
    mock.get(BASE + "/jobs/1", status_code=status, json={"type": "BaseError", "message": "no"})
    with pytest.raises(exc.AnalyticsApiError):
        hook.get_job(1)
    assert mock.call_count == 1 and sleeps == []


def test_retries_stop_after_the_attempt_count(hook, mock, sleeps) -> None:
    mock.get(BASE + "/jobs/1", status_code=503, json={"type": "MaintenanceError", "message": "down"})
    hook.retry_policy = RetryPolicy(max_attempts=3)
    with pytest.raises(exc.MaintenanceError):
        hook.get_job(1)
    assert mock.call_count == 3 and len(sleeps) == 2


def test_retries_stop_before_the_total_time_is_exceeded(hook, mock, sleeps) -> None:
    mock.get(
        BASE + "/jobs/1",
        status_code=429,
        headers={"Retry-After": "120"},
        json={"type": "RateLimitExceedError", "message": "slow down"},
    )
    hook.retry_policy = RetryPolicy(max_attempts=10, max_elapsed=60)
    with pytest.raises(exc.RateLimitExceedError):
        hook.get_job(1)
    assert mock.call_count == 1 and sleeps == []


def test_a_create_is_sent_once_on_500(hook, mock, sleeps) -> None:
    mock.post(BASE + "/data_schedules", status_code=500, json={"type": "InternalHolisticsError", "message": "x"})
    with pytest.raises(exc.InternalServiceError):
        hook.create_data_schedule({"source_type": "Dashboard", "source_id": 1})
    assert mock.call_count == 1 and sleeps == []


def test_a_create_is_sent_once_on_a_read_timeout(hook, mock) -> None:
    mock.post(BASE + "/groups", exc=requests.ReadTimeout("read timed out"))
    with pytest.raises(exc.AnalyticsTransportError) as raised:
        hook.create_group({"name": "Finance"})
    assert raised.value.sent is True
    assert mock.call_count == 1


@pytest.mark.parametrize("status", [429, 503])
def test_a_create_refused_before_any_work_is_retried(hook, mock, status) -> None:
    mock.post(
        BASE + "/user_attributes",
        [
            {"status_code": status, "headers": {"Retry-After": "1"}, "json": {"type": "BaseError", "message": "x"}},
            {"json": {"user_attribute": {"id": 4}, "status": "created"}},
        ],
    )
    assert hook.create_user_attribute({"name": "region"}) == {"id": 4}
    assert mock.call_count == 2


def test_a_create_is_retried_when_the_connection_was_never_made(hook, mock) -> None:
    mock.post(
        BASE + "/data_alerts",
        [
            {"exc": requests.ConnectTimeout("connect timed out")},
            {"status_code": 201, "json": {"data_alert": {"id": 1}}},
        ],
    )
    assert hook.create_data_alert({"title": "x"}) == {"id": 1}
    assert mock.call_count == 2


def test_job_submissions_are_retried(hook, mock) -> None:
    mock.post(
        BASE + "/dashboard_widgets/5/submit_export",
        [
            {"exc": requests.ConnectionError("reset by peer")},
            {"json": {"job": {"id": 3, "status": "created"}}},
        ],
    )
    assert hook.submit_widget_export(5)["id"] == 3


def test_transport_errors_are_wrapped_and_retried(hook, mock, sleeps) -> None:
    answers = [{"exc": requests.ReadTimeout("slow")}, {"json": {"job": {"id": 2, "status": "running"}}}]
    mock.get(BASE + "/jobs/2", answers)
    assert hook.get_job(2)["id"] == 2
    assert len(sleeps) == 1


def test_spent_quota_is_waited_out_instead_of_collecting_a_429(hook, mock, sleeps) -> None:
    mock.get(
        BASE + "/jobs/1",
        json={"job": {"id": 1, "status": "running"}},
        headers={"RateLimit-Limit": "120", "RateLimit-Remaining": "0", "RateLimit-Reset": "7"},
    )
    hook.get_job(1)
    assert sleeps == []
    limits = hook.rate_limits["GET /jobs/{id}"]
    assert (limits.limit, limits.remaining) == (120, 0)
    mock.get(BASE + "/jobs/2", json={"job": {"id": 2, "status": "running"}})
    hook.get_job(2)  # same endpoint: waits for the reset first
    assert len(sleeps) == 1 and 6 <= sleeps[0] <= 7
    mock.get(BASE + "/users/me", json={"user": {}})
    hook.get_current_user()  # another endpoint has its own quota
    assert len(sleeps) == 1


def test_rate_limit_reset_as_epoch(hook, mock) -> None:
    import time

    mock.get(
        BASE + "/jobs/1",
        json={"job": {"status": "running"}},
        headers={"RateLimit-Limit": "20", "RateLimit-Remaining": "3", "RateLimit-Reset": str(int(time.time()) + 50)},
    )
    hook.get_job(1)
    reset_at = hook.rate_limits["GET /jobs/{id}"].reset_at
    assert reset_at is not None and 45 < reset_at - time.time() <= 51


def test_the_key_appears_in_no_error_or_repr(hook, mock) -> None:
    mock.get(BASE + "/jobs/1", status_code=401, json={"type": "AuthError", "message": "bad key"})
    with pytest.raises(exc.AuthError) as raised:
        hook.get_job(1)
    assert KEY not in str(raised.value) and KEY not in repr(raised.value)
    assert KEY not in repr(hook) and KEY not in repr(hook.settings)


def test_no_retry_policy_below_one_attempt() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)


def test_hook_options_override_the_policy(conn_env) -> None:
    hook = AnalyticsHook(max_attempts=2, max_retry_time=10, timeout=5, connect_timeout=2)
    assert (hook.retry_policy.max_attempts, hook.retry_policy.max_elapsed) == (2, 10)
    assert (hook.settings.connect_timeout, hook.settings.read_timeout) == (2, 5)
