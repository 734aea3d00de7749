"""The provider's task retry policy through Airflow itself (``dag.test()``), on Airflow 3.3 and later."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from analytics_provider import retry_policy
from analytics_provider.exceptions import (
    AnalyticsTlsError,
    AnalyticsTransportError,
    AuthError,
    InternalServiceError,
    RateLimitExceedError,
)

from .conftest import AIRFLOW_VERSION

DAG_FILE = Path(__file__).resolve().parent / "retry_dags" / "retry_policy_dags.py"
needs_33 = pytest.mark.skipif(AIRFLOW_VERSION < (3, 3), reason="task retry policies need Airflow 3.3 or later")


def test_errors_map_to_decisions() -> None:
    assert retry_policy.classify(RateLimitExceedError("slow down", retry_after=7)) == (
        "retry", timedelta(seconds=7), "RateLimitExceedError: retrying in 7 s, when the service said")
    assert retry_policy.classify(RateLimitExceedError("x", retry_after=86_400))[1] == timedelta(hours=1)
    assert retry_policy.classify(AuthError("bad key", status=401))[0] == "fail"
    assert retry_policy.classify(InternalServiceError("boom", status=500)) == ("default", None, "")
    assert retry_policy.classify(AnalyticsTransportError("no answer"))[0] == "default"
    import ssl

    try:
        raise AnalyticsTransportError("TLS") from ssl.SSLCertVerificationError("certificate verify failed")
    except AnalyticsTransportError as refused:
        assert retry_policy.classify(refused)[0] == "fail"
    # what the hook raises for a certificate it does not trust (the exchange's one TLS rule)
    untrusted = AnalyticsTlsError("the certificate of eu.holistics.io is not trusted (self-signed certificate)")
    assert retry_policy.classify(untrusted)[0] == "fail"


def test_the_policy_exists_from_airflow_33_and_says_so_before() -> None:
    if AIRFLOW_VERSION >= (3, 3):
        from airflow.sdk import RetryPolicy

        from analytics_provider.retry_policy import AnalyticsRetryPolicy

        assert issubclass(AnalyticsRetryPolicy, RetryPolicy)
    else:
        with pytest.raises(ImportError, match=r"needs Airflow 3\.3"):
            from analytics_provider.retry_policy import AnalyticsRetryPolicy


@pytest.fixture(scope="module")
def retry_bag(airflow_db: None) -> Any:
    from .conftest import dag_bag_of

    return dag_bag_of(DAG_FILE)


def _tries(dag_run: Any) -> list[Any]:
    """The earlier tries of the run's tasks (the current one is the task instance itself)."""
    from airflow.utils.session import create_session
    from sqlalchemy import select

    try:
        from airflow.models.taskinstancehistory import TaskInstanceHistory

        query = select(TaskInstanceHistory).where(TaskInstanceHistory.run_id == dag_run.run_id,
                                                  TaskInstanceHistory.dag_id == dag_run.dag_id)
    except ImportError:  # Airflow 3.4: every try is a row; earlier ones are archived (working_set NULL)
        from airflow.models.taskinstance import TaskInstance

        query = select(TaskInstance).where(
            TaskInstance.run_id == dag_run.run_id, TaskInstance.dag_id == dag_run.dag_id,
            TaskInstance.working_set.is_(None),
        ).execution_options(include_all_attempts=True)
    with create_session() as session:
        history = list(session.scalars(query))
        session.expunge_all()
    return sorted(history, key=lambda h: h.try_number)


@needs_33
def test_a_429_is_retried_when_the_service_said(retry_bag, analytics_emulator, analytics_connection) -> None:
    analytics_emulator.inject("get_current_user", status=429, retry_after=2)
    dag_run = retry_bag.get_dag("retry_policy_rate_limit").test()
    (ti,) = dag_run.get_task_instances()
    assert (dag_run.state, ti.state, ti.try_number) == ("success", "success", 2)
    (first,) = _tries(dag_run)
    assert first.retry_delay_override == 2.0  # not the task's 5 s
    assert "RateLimitExceedError" in first.retry_reason


@needs_33
def test_a_401_fails_at_once(retry_bag, analytics_emulator, monkeypatch) -> None:
    bad = {"conn_type": "analytics", "password": "not-the-key", "extra": analytics_emulator.connection_extra()}
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_BAD_KEY", json.dumps(bad))
    dag_run = retry_bag.get_dag("retry_policy_auth").test()
    (ti,) = dag_run.get_task_instances()
    assert (dag_run.state, ti.state, ti.try_number) == ("failed", "failed", 1)  # 3 retries left, none used
    assert [r.operation for r in analytics_emulator.requests] == ["get_current_user"]
