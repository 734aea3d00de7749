"""Durable execution of the job operators: what a later try does with the job an earlier one kept.

On Airflow 3.3 and later the mixin is ``airflow.sdk.ResumableJobMixin`` and the store decides;
before 3.3 the stand-in of ``common.compat`` submits on every try, and these tests assert that.
"""

from __future__ import annotations

from typing import Any

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from analytics_provider.exceptions import AnalyticsJobError
from analytics_provider.operators import (
    AnalyticsBustDataSourceCacheOperator,
    AnalyticsExecuteDataScheduleOperator,
    AnalyticsExportWidgetOperator,
    AnalyticsPreloadDashboardOperator,
    AnalyticsPublishAmlProjectOperator,
)
from analytics_provider.operators.base import AnalyticsJobOperator
from analytics_provider.operators.resumable import ResumableJobMixin
from analytics_provider.testing.task_instance import FakeTaskInstance

from .conftest import BASE
from .test_operators import _job, _mock_export_submit

RESUMES = ResumableJobMixin.__module__.startswith("airflow.sdk")
KEY = AnalyticsJobOperator.external_id_key


class FakeStore:
    """The task state store: records, with each write, how many requests had been sent by then."""

    def __init__(self, mock: Any, **values: Any) -> None:
        self.mock = mock
        self.values = dict(values)
        self.writes: list[tuple[str, Any, int]] = []

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any, **kwargs: Any) -> None:
        self.values[key] = value
        self.writes.append((key, value, self.mock.call_count))


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch, conn_env) -> None:
    from analytics_provider.hooks.client import AnalyticsClientHook

    now = [0.0]
    monkeypatch.setattr(AnalyticsClientHook, "sleep", staticmethod(lambda s: now.__setitem__(0, now[0] + s)))
    monkeypatch.setattr(AnalyticsClientHook, "clock", staticmethod(lambda: now[0]))


def context_with(store: FakeStore) -> dict[str, Any]:
    return {"ti": FakeTaskInstance(), "task_state_store": store}


def submits(mock: Any) -> int:
    return sum(r.method == "POST" for r in mock.request_history)


def bust(**kwargs: Any) -> AnalyticsBustDataSourceCacheOperator:
    return AnalyticsBustDataSourceCacheOperator(task_id="bust", data_source_id=3, poll_interval=1, **kwargs)


def mock_bust_submit(mock: Any, job_id: int = 9) -> None:
    mock.post(f"{BASE}/data_sources/3/bust_exploration_cache", json={"job": {"id": job_id, "status": "created"}})


def test_every_job_operator_is_durable_by_default() -> None:
    ops = [
        bust(),
        AnalyticsExecuteDataScheduleOperator(task_id="s", data_schedule_id=1),
        AnalyticsExportWidgetOperator(task_id="e", widget_id=1, destination="/tmp/x"),
        AnalyticsPreloadDashboardOperator(task_id="p", dashboard_id=1),
        AnalyticsPublishAmlProjectOperator(task_id="a"),
    ]
    assert all(isinstance(op, ResumableJobMixin) for op in ops)
    assert all(op.durable is RESUMES for op in ops)  # the stand-in before 3.3 says what it does: not durable
    if RESUMES:
        assert bust(durable=False).durable is False


def test_a_fresh_try_keeps_the_job_id_before_any_wait(mock) -> None:
    mock_bust_submit(mock)
    _job(mock, 9, "running", "success")
    store = FakeStore(mock)
    assert bust().execute(context_with(store))["job_id"] == 9
    if RESUMES:
        assert store.writes == [(KEY, 9, 1)]  # written after the submit, before the first look at the job
    else:
        assert store.writes == []


def test_a_pending_job_of_an_earlier_try_is_waited_on_again(mock) -> None:
    mock_bust_submit(mock, job_id=99)
    _job(mock, 9, "running", "running", "success")
    _job(mock, 99, "success")
    context = context_with(FakeStore(mock, **{KEY: 9}))
    result = bust().execute(context)
    if RESUMES:
        assert result["job_id"] == 9 and submits(mock) == 0
        assert context["ti"].xcom["job_id"] == 9
    else:
        assert result["job_id"] == 99 and submits(mock) == 1


def test_a_job_that_could_not_be_read_is_waited_on_not_submitted_again(mock) -> None:
    mock_bust_submit(mock, job_id=99)
    down = {"status_code": 503, "json": {"type": "MaintenanceError", "message": "down"}}
    mock.get(f"{BASE}/jobs/9", [down, down, {"json": {"job": {"id": 9, "status": "success"}}}])
    _job(mock, 99, "success")
    result = bust().execute(context_with(FakeStore(mock, **{KEY: 9})))
    assert result["job_id"] == (9 if RESUMES else 99)
    assert submits(mock) == (0 if RESUMES else 1)


def test_a_pending_job_is_deferred_again_when_deferrable(mock) -> None:
    mock_bust_submit(mock, job_id=99)
    _job(mock, 9, "running")
    with pytest.raises(TaskDeferred) as deferred:
        bust(deferrable=True).execute(context_with(FakeStore(mock, **{KEY: 9})))
    _, kwargs = deferred.value.trigger.serialize()
    assert kwargs["job_id"] == (9 if RESUMES else 99)
    assert submits(mock) == (0 if RESUMES else 1)


def test_a_succeeded_export_downloads_its_file_again_without_a_new_job(mock, tmp_path) -> None:
    _mock_export_submit(mock, job_id=77)
    _job(mock, 42, "success")
    _job(mock, 77, "success")
    mock.get(f"{BASE}/exports/download", content=b"a,b\n", headers={"Content-Length": "4"})
    op = AnalyticsExportWidgetOperator(task_id="export", widget_id=101, destination=str(tmp_path / "out.csv"))
    result = op.execute(context_with(FakeStore(mock, **{KEY: 42})))
    assert (tmp_path / "out.csv").read_bytes() == b"a,b\n"
    if RESUMES:
        assert result["job_id"] == 42 and submits(mock) == 0
        assert mock.last_request.qs == {"job_id": ["42"]}
    else:
        assert result["job_id"] == 77 and submits(mock) == 1


def test_a_succeeded_publish_reports_its_result(mock) -> None:
    mock.post(f"{BASE}/aml_studio/projects/submit_publish", json={"job": {"id": 60, "status": "created"}})
    for job_id in (50, 60):
        _job(mock, job_id, "success")
        mock.get(
            f"{BASE}/jobs/{job_id}/result",
            json={"status": "success", "result": {"data": {"status": "success", "target_commit": f"c{job_id}"}}},
        )
    op = AnalyticsPublishAmlProjectOperator(task_id="publish")
    result = op.execute(context_with(FakeStore(mock, **{KEY: 50})))
    assert result["target_commit"] == ("c50" if RESUMES else "c60")


@pytest.mark.parametrize("status", ["failure", "cancelled"])
def test_a_failed_or_cancelled_job_is_submitted_anew(mock, status) -> None:
    mock_bust_submit(mock, job_id=10)
    _job(mock, 9, status)
    _job(mock, 10, "success")
    store = FakeStore(mock, **{KEY: 9})
    assert bust().execute(context_with(store))["job_id"] == 10
    assert submits(mock) == 1
    assert store.values[KEY] == (10 if RESUMES else 9)


def test_a_job_that_no_longer_exists_is_submitted_anew(mock) -> None:
    mock_bust_submit(mock, job_id=10)
    mock.get(f"{BASE}/jobs/9", status_code=404, json={"type": "NotFoundError", "message": "gone"})
    _job(mock, 10, "success")
    assert bust().execute(context_with(FakeStore(mock, **{KEY: 9})))["job_id"] == 10


def test_already_existed_keeps_the_existing_job(mock) -> None:
    mock.post(
        f"{BASE}/data_sources/3/bust_exploration_cache",
        json={"job": {"id": 11, "status": "already_existed", "existing_job_id": 5}},
    )
    _job(mock, 5, "success")
    store = FakeStore(mock)
    assert bust().execute(context_with(store))["job_id"] == 5
    assert store.values.get(KEY) == (5 if RESUMES else None)


def test_a_failing_job_still_fails_the_try(mock) -> None:
    mock_bust_submit(mock)
    _job(mock, 9, "failure", last_error_log="disk full")
    mock.get(f"{BASE}/jobs/9/logs", json={"job_logs": []})
    with pytest.raises(AnalyticsJobError, match="disk full"):
        bust().execute(context_with(FakeStore(mock)))


def test_not_waiting_keeps_the_id_and_a_later_try_does_not_submit_again(mock) -> None:
    mock_bust_submit(mock)
    _job(mock, 9, "running")
    store = FakeStore(mock)
    assert bust(wait_for_completion=False).execute(context_with(store)) == {"job_id": 9, "status": "created"}
    again = bust(wait_for_completion=False).execute(context_with(store))
    assert again["job_id"] == 9
    assert submits(mock) == (1 if RESUMES else 2)


def test_with_an_older_common_compat_the_operators_still_run_submitting_on_every_try() -> None:
    """Airflow before 3.3 with common-compat before 1.23 (Python 3.10) has no ResumableJobMixin."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent('''
        import sys, types
        import airflow.providers.common.compat.sdk as real
        try:
            import airflow.sdk as real_sdk
        except ImportError:  # Airflow 2.11
            real_sdk = None

        def without_mixin(module):  # what Airflow < 3.3 and common-compat < 1.23 offer
            stand_in = types.ModuleType(module.__name__)
            def lookup(name):
                if name == "ResumableJobMixin":
                    raise AttributeError(name)
                return getattr(module, name)
            stand_in.__getattr__ = lookup
            sys.modules[module.__name__] = stand_in

        without_mixin(real)
        if real_sdk is not None:
            without_mixin(real_sdk)
        from analytics_provider.operators import AnalyticsBustDataSourceCacheOperator as Bust
        calls = []
        class Counted(Bust):
            def submit_job(self, context): calls.append("submit"); return 1
            def poll_until_complete(self, job_id, context): calls.append("poll")
            def get_job_result(self, job_id, context): calls.append("result"); return {"job_id": job_id}
        op = Counted(task_id="b", data_source_id=1, durable=True)
        assert op.durable is False, op.durable
        assert op.execute({"ti": None, "task_state_store": {"analytics_job_id": 7}}) == {"job_id": 1}
        assert calls == ["submit", "poll", "result"], calls
        print("ok")
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.strip().endswith("ok"), done.stderr[-2000:]
