"""Operators and the sensor: requests, deferral, resumption for every event kind, input checks."""

from __future__ import annotations

import re
import time
import warnings
from typing import Any

import pytest
from airflow.exceptions import AirflowProviderDeprecationWarning
from airflow.providers.common.compat.sdk import (
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    TaskDeferred,
)

from analytics_provider.aml.diagnostics import format_diagnostic, offset_to_position
from analytics_provider.exceptions import AnalyticsJobError, AnalyticsJobTimeout, AnalyticsParameterError
from analytics_provider.operators import (
    AnalyticsBustDataSourceCacheOperator,
    AnalyticsExecuteDataScheduleOperator,
    AnalyticsExportWidgetOperator,
    AnalyticsPreloadDashboardOperator,
    AnalyticsPublishAmlProjectOperator,
)
from analytics_provider.sensors import AnalyticsJobSensor
from analytics_provider.testing.task_instance import FakeTaskInstance
from analytics_provider.triggers import AnalyticsJobTrigger

from .conftest import BASE, KEY


@pytest.fixture
def context() -> dict[str, Any]:
    return {"ti": FakeTaskInstance()}  # no task_state_store: the mixin submits fresh (see test_durable.py for resuming)


@pytest.fixture(autouse=True)
def fake_time(monkeypatch, conn_env) -> list[float]:
    """The hook's waits advance a fake clock instead of sleeping; returns the waits taken."""
    from analytics_provider.hooks.client import AnalyticsClientHook

    now, waits = [0.0], []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(AnalyticsClientHook, "sleep", staticmethod(sleep))
    monkeypatch.setattr(AnalyticsClientHook, "clock", staticmethod(lambda: now[0]))
    return waits


def _job(mock, job_id: int, *statuses: str, **extra: Any) -> None:
    mock.get(f"{BASE}/jobs/{job_id}", [{"json": {"job": {"id": job_id, "status": s, **extra}}} for s in statuses])


def _export(**kwargs: Any) -> AnalyticsExportWidgetOperator:
    return AnalyticsExportWidgetOperator(task_id="export", widget_id=101, poll_interval=0.01, **kwargs)


def _mock_export_submit(mock, job_id: int = 42) -> None:
    mock.get(
        f"{BASE}/dashboard_widgets/101", json={"dashboard_widget": {"id": "101", "dashboard": {"url": "https://x/d/7"}}}
    )
    mock.post(f"{BASE}/dashboard_widgets/101/submit_export", json={"job": {"id": job_id, "status": "created"}})


def test_export_waits_downloads_and_returns_a_summary(mock, context, tmp_path) -> None:
    _mock_export_submit(mock)
    _job(mock, 42, "queued", "running", "success")
    mock.get(f"{BASE}/exports/download", status_code=302, headers={"Location": "https://files.test/f.csv"})
    mock.get(
        "https://files.test/f.csv", content=b"a,b\n1,2\n", headers={"Content-Type": "text/csv", "Content-Length": "8"}
    )

    result = _export(destination=str(tmp_path / "out.csv")).execute(context)

    assert result == {"job_id": 42, "path": str(tmp_path / "out.csv"), "bytes": 8, "content_type": "text/csv"}
    assert context["ti"].xcom == {"job_id": 42, "dashboard_url": "https://x/d/7"}
    submit = next(r for r in mock.request_history if r.method == "POST")
    assert submit.json() == {"output": "csv"}
    assert KEY not in repr(result)


def test_job_id_reaches_xcom_before_any_waiting(mock, context, tmp_path) -> None:
    _mock_export_submit(mock)
    mock.get(f"{BASE}/jobs/42", status_code=403, json={"type": "PermissionDeniedError", "message": "no"})
    with pytest.raises(AirflowException):
        _export(destination=str(tmp_path / "x.csv")).execute(context)
    assert context["ti"].xcom["job_id"] == 42


def test_deferrable_export_submits_on_the_worker_and_defers_the_wait(mock, context, tmp_path) -> None:
    _mock_export_submit(mock)
    op = _export(destination=str(tmp_path / "x.csv"), deferrable=True, timeout=600)
    before = time.time()
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(context)
    assert deferred.value.method_name == "execute_complete"
    classpath, kwargs = deferred.value.trigger.serialize()
    assert classpath == "analytics_provider.triggers.analytics.AnalyticsJobTrigger"
    assert kwargs["job_id"] == 42 and kwargs["analytics_conn_id"] == "analytics_default"
    assert before + 600 <= kwargs["end_time"] <= time.time() + 600
    assert KEY not in str(kwargs)
    assert not any("/jobs/" in r.url for r in mock.request_history)  # no polling on the worker


def test_execute_complete_success_downloads(mock, context, tmp_path) -> None:
    mock.get(f"{BASE}/exports/download", content=b"xyz", headers={"Content-Length": "3", "Content-Type": "text/csv"})
    op = _export(destination=str(tmp_path / "x.csv"))
    event = {"status": "success", "job_id": 43, "job_status": "success", "message": "", "last_error_log": None}
    assert op.execute_complete(context, event)["job_id"] == 43
    assert mock.last_request.qs == {"job_id": ["43"]}


def test_execute_complete_failed_names_job_status_error_and_log_lines(mock, context, tmp_path) -> None:
    mock.get(
        f"{BASE}/jobs/43/logs",
        json={
            "job_logs": [
                {"level": "INFO", "message": "started", "timestamp": "t1"},
                {"level": "ERROR", "message": "query timed out", "timestamp": "t2"},
            ]
        },
    )
    event = {"status": "failed", "job_id": 43, "job_status": "failure", "message": "", "last_error_log": "Timeout"}
    with pytest.raises(AnalyticsJobError) as raised:
        _export(destination=str(tmp_path / "x.csv")).execute_complete(context, event)
    text = str(raised.value)
    assert "job 43 ended with status 'failure'" in text
    assert "last error: Timeout" in text
    assert "t2 ERROR query timed out" in text and "started" not in text
    assert not (tmp_path / "x.csv").exists()


def test_execute_complete_timeout_and_error(context, tmp_path) -> None:
    op = _export(destination=str(tmp_path / "x.csv"))
    with pytest.raises(AnalyticsJobTimeout, match="job 5 did not finish"):
        op.execute_complete(context, {"status": "timeout", "job_id": 5})
    with pytest.raises(AnalyticsJobError, match="waiting for job 5 failed: boom"):
        op.execute_complete(context, {"status": "error", "job_id": 5, "message": "boom"})


@pytest.mark.parametrize("event", [None, {}, {"status": "weird", "job_id": 1}, {"status": "success"}, "success"])
def test_execute_complete_refuses_unexpected_events(context, tmp_path, event) -> None:
    with pytest.raises(AnalyticsJobError, match="unexpected event"):
        _export(destination=str(tmp_path / "x.csv")).execute_complete(context, event)


def test_sync_wait_times_out(mock, context, fake_time) -> None:
    mock.post(f"{BASE}/data_sources/3/bust_exploration_cache", json={"job": {"id": 9, "status": "created"}})
    mock.get(f"{BASE}/jobs/9", json={"job": {"id": 9, "status": "running"}})
    op = AnalyticsBustDataSourceCacheOperator(task_id="bust", data_source_id=3, poll_interval=0.5, timeout=1)
    with pytest.raises(AnalyticsJobTimeout, match=r"job 9 did not finish before the deadline \(still running\)"):
        op.execute(context)
    assert fake_time == [0.5, 0.5]  # polls at 0 and 0.5 s; the wait ends at the 1 s deadline, no later


def test_sync_wait_follows_already_existed(mock, context) -> None:
    mock.post(f"{BASE}/data_schedules/4/submit_execute", json={"job": {"id": 10, "status": "already_existed"}})
    _job(mock, 10, "already_existed", existing_job_id=8)
    _job(mock, 8, "running", "success")
    op = AnalyticsExecuteDataScheduleOperator(task_id="send", data_schedule_id=4, poll_interval=0.01)
    assert op.execute(context) == {"job_id": 8, "status": "success", "data_schedule_id": 4}
    assert context["ti"].xcom["job_id"] == 10


def test_an_already_existed_answer_to_the_submit_is_kept_and_followed_at_once(mock, context) -> None:
    mock.post(
        f"{BASE}/data_schedules/4/submit_execute",
        json={"job": {"id": 10, "status": "already_existed", "existing_job_id": 8}},
    )
    _job(mock, 8, "success")
    op = AnalyticsExecuteDataScheduleOperator(task_id="send", data_schedule_id=4, poll_interval=0.01)
    assert op.execute(context) == {"job_id": 8, "status": "success", "data_schedule_id": 4}
    assert context["ti"].xcom["job_id"] == 8
    assert not any(r.url.endswith("/jobs/10") for r in mock.request_history)


def test_sync_wait_outlasts_an_outage_shorter_than_max_outage(mock, context, fake_time) -> None:
    mock.post(f"{BASE}/data_sources/3/bust_exploration_cache", json={"job": {"id": 9, "status": "created"}})
    mock.get(
        f"{BASE}/jobs/9",
        [{"status_code": 503, "json": {"type": "MaintenanceError", "message": "down"}}] * 12
        + [{"json": {"job": {"id": 9, "status": "success"}}}],
    )
    op = AnalyticsBustDataSourceCacheOperator(task_id="bust", data_source_id=3, poll_interval=1, max_outage=600)
    assert op.execute(context)["job_id"] == 9
    assert sum(fake_time) > 60  # well past the old five quick attempts
    assert all(wait >= 1 for wait in fake_time)


def test_sync_wait_ends_when_the_outage_outlasts_max_outage(mock, context, fake_time) -> None:
    mock.post(f"{BASE}/data_sources/3/bust_exploration_cache", json={"job": {"id": 9, "status": "created"}})
    mock.get(f"{BASE}/jobs/9", status_code=502, text="bad gateway")
    op = AnalyticsBustDataSourceCacheOperator(task_id="bust", data_source_id=3, poll_interval=1, max_outage=30)
    # the last look comes as the outage reaches 30 s, within one interval: the message says 30 or 31 s
    with pytest.raises(AnalyticsJobError, match=r"job 9 could not be read for 3[01] s .*max_outage=30 s"):
        op.execute(context)
    assert 30 - 1e-9 <= sum(fake_time) <= 31  # the jittered sleeps' sum is a float: 29.999999999999996 is 30


def test_no_wait_returns_at_submission(mock, context) -> None:
    mock.post(f"{BASE}/data_sources/3/bust_exploration_cache", json={"job": {"id": 9, "status": "created"}})
    op = AnalyticsBustDataSourceCacheOperator(task_id="bust", data_source_id=3, wait_for_completion=False)
    assert op.execute(context) == {"job_id": 9, "status": "created"}
    assert mock.call_count == 1


def test_preload_sends_conditions_and_links_the_dashboard(mock, context) -> None:
    mock.get(f"{BASE}/dashboards/7", json={"dashboard": {"id": 7, "url": "https://svc/dashboards/7"}})
    mock.post(f"{BASE}/dashboards/7/submit_preload", json={"job": {"id": 11, "status": "created"}})
    _job(mock, 11, "success")
    conditions = [{"dynamic_filter_id": 2, "condition": {"operator": "is", "values": ["EU"]}}]
    op = AnalyticsPreloadDashboardOperator(
        task_id="preload", dashboard_id=7, dashboard_filter_conditions=conditions, bust_cache=True
    )
    assert op.execute(context)["job_id"] == 11
    preload = next(r for r in mock.request_history if r.method == "POST")
    assert preload.json() == {"dashboard_filter_conditions": conditions, "bust_cache": True}
    assert context["ti"].xcom["dashboard_url"] == "https://svc/dashboards/7"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"output": "docx"}, "output must be one of csv, xlsx, pdf; got 'docx'"),
        ({"dashboard_filter_conditions": [{"dynamic_filter_id": "x", "condition": {}}]}, "must be an integer"),
        ({"dashboard_filter_conditions": [{"dynamic_filter_id": 1, "condition": {"values": []}}]}, "operator"),
        ({"dashboard_filter_conditions": {"dynamic_filter_id": 1}}, "must be a list of conditions"),
    ],
)
def test_export_refuses_bad_input_when_the_dag_is_parsed(kwargs, message, tmp_path) -> None:
    with pytest.raises(AnalyticsParameterError, match=message):
        _export(destination=str(tmp_path / "x"), **kwargs)


def test_templated_input_is_checked_once_rendered_before_any_request(mock, context, tmp_path) -> None:
    op = _export(destination=str(tmp_path / "x"), output="{{ params.fmt }}")
    op.export_format = "docx"  # as rendered
    with pytest.raises(AnalyticsParameterError, match="output must be one of"):
        op.execute(context)
    assert mock.call_count == 0


def test_excel_is_accepted_as_xlsx_with_a_deprecation_warning(tmp_path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op = _export(destination=str(tmp_path / "x"), output="excel")
    assert op.export_format == "xlsx"
    assert any(issubclass(w.category, AirflowProviderDeprecationWarning) for w in caught)


@pytest.mark.parametrize("bad", [{"poll_interval": 0}, {"timeout": -1}, {"max_outage": -1}])
def test_wait_settings_are_checked(bad) -> None:
    with pytest.raises(ValueError):
        AnalyticsBustDataSourceCacheOperator(task_id="b", data_source_id=1, **bad)


@pytest.mark.parametrize("name, value, most", [("poll_interval", 1e12, "86,400 (a day)"),
                                               ("timeout", float("inf"), "604,800 (7 days)"),
                                               ("timeout", 604_801, "604,800 (7 days)")])
def test_a_wait_past_its_bound_is_refused_naming_the_task_and_the_bound(name, value, most) -> None:
    from analytics_provider.operators import AnalyticsRefreshImpactedOperator

    # (a sleep of 1e12 s overflows; no job is waited for a week)
    for make in (lambda: AnalyticsBustDataSourceCacheOperator(task_id="bust", data_source_id=1, **{name: value}),
                 lambda: AnalyticsRefreshImpactedOperator(task_id="bust", tables=["a.b"], **{name: value})):
        with pytest.raises(ValueError, match=rf"bust: {name} must be .*at most {re.escape(most)}"):
            make()
    AnalyticsBustDataSourceCacheOperator(task_id="ok", data_source_id=1, poll_interval=86_400, timeout=604_800)


@pytest.mark.parametrize("kwargs, named", [({"poke_interval": 1e7}, "poke_interval"), ({"timeout": 1e12}, "timeout"),
                                           ({"max_outage": float("inf")}, "max_outage")])
def test_the_sensors_wait_past_its_bound_is_refused_at_parse_naming_the_task(kwargs, named) -> None:
    """The sensor deferred 31,700 years (timeout=1e12) and failed its first poke with a bare ValueError
    (poke_interval=1e7); max_outage=inf was taken everywhere."""
    with pytest.raises(ValueError, match=rf"^wait: {named} must be .*at most|^wait: {named} must be .*to 604,800"):
        AnalyticsJobSensor(task_id="wait", job_id=1, **kwargs)
    AnalyticsJobSensor(task_id="wait", job_id=1)  # Airflow's own defaults: a minute, and 7 days


def test_the_hooks_wait_past_its_bound_is_refused_before_any_request(requests_mock) -> None:
    from analytics_provider.exceptions import AnalyticsParameterError
    from analytics_provider.hooks.analytics import AnalyticsHook

    with pytest.raises(AnalyticsParameterError, match=r"wait_for_job: timeout must be .*at most 604,800"):
        AnalyticsHook().wait_for_job(1, timeout=1e9)
    for outage in (float("inf"), -1, 1e9, "600"):  # (fifth attack: inf was taken, the wait outlasted any outage)
        with pytest.raises(AnalyticsParameterError, match=r"wait_for_job: max_outage must be a number of seconds, "
                                                          r"from 0 to 604,800 \(7 days\)"):
            AnalyticsHook().wait_for_job(1, max_outage=outage)
    assert requests_mock.call_count == 0


def test_max_failures_is_deprecated_in_favour_of_max_outage() -> None:
    with pytest.warns(AirflowProviderDeprecationWarning, match="max_outage"):
        AnalyticsBustDataSourceCacheOperator(task_id="b", data_source_id=1, max_failures=3)
    with pytest.warns(AirflowProviderDeprecationWarning, match="max_outage"):
        AnalyticsJobSensor(task_id="s", job_id=1, max_failures=3)


# -- publish -------------------------------------------------------------------------------------

DIAGNOSTICS = [
    {
        "category": "error",
        "code": 1001,
        "message": "unexpected '}'",
        "file_path": "models/orders.model.aml",
        "start": 29,
        "end": 30,
    },
    {
        "category": "error",
        "code": 1002,
        "message": "unknown field",
        "file_path": "datasets/gone.dataset.aml",
        "start": 5,
        "end": 9,
    },
]


def _publish_result(mock, job_id: int, data: dict[str, Any] | None) -> None:
    mock.get(
        f"{BASE}/jobs/{job_id}/result",
        json={"status": "success", "error": None, "result": {"type": "AmlStudio::Publish.call", "data": data}},
    )


def test_publish_failure_lists_every_diagnostic_with_line_and_column(mock, context, tmp_path, capsys) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "orders.model.aml").write_text("Model orders {\n  label: 'x'\n}}\n")
    mock.post(f"{BASE}/aml_studio/projects/submit_publish", json={"job": {"id": 50, "status": "created"}})
    _job(mock, 50, "running", "failure")
    _publish_result(
        mock,
        50,
        {
            "status": "error",
            "error_type": "syntax_error",
            "target_commit": "abc",
            "error_details": {"diagnostics": DIAGNOSTICS},
        },
    )
    op = AnalyticsPublishAmlProjectOperator(task_id="publish", project_dir=str(tmp_path), poll_interval=0.01)
    with pytest.raises(AnalyticsJobError) as raised:
        op.execute(context)
    lines = str(raised.value).splitlines()
    assert lines == [
        "AML publish job 50 failed: syntax_error",
        "models/orders.model.aml:3:2: error 1001: unexpected '}'",
        "datasets/gone.dataset.aml:offset 5-9: error 1002: unknown field",
    ]
    assert "models/orders.model.aml:3:2: error 1001: unexpected '}'" in capsys.readouterr().out  # the task log


def test_publish_success_returns_commit_and_objects(mock, context) -> None:
    mock.post(f"{BASE}/aml_studio/projects/submit_publish", json={"job": {"id": 51, "status": "created"}})
    _job(mock, 51, "success")
    objects = [{"id": 1, "type": "Dataset", "uname": "sales", "title": "Sales", "status": "updated"}]
    _publish_result(mock, 51, {"status": "success", "target_commit": "c0ffee", "objects_status": objects})
    op = AnalyticsPublishAmlProjectOperator(task_id="publish", object_mapping={"datasets": {"3": "sales"}})
    assert op.execute(context) == {"job_id": 51, "target_commit": "c0ffee", "objects": objects}
    assert mock.request_history[0].json() == {"object_mapping": {"datasets": {"3": "sales"}}}


def test_offsets_become_lines_and_columns() -> None:
    text = "ab\ncd\n\nef"
    assert [offset_to_position(text, o) for o in (0, 1, 3, 6, 7, 8)] == [(1, 1), (1, 2), (2, 1), (3, 1), (4, 1), (4, 2)]
    assert format_diagnostic({"message": "m"}) == "<project>: error: m"


# -- sensor --------------------------------------------------------------------------------------


def test_sensor_pokes_follow_and_fail(mock, context) -> None:
    sensor = AnalyticsJobSensor(task_id="wait", job_id="12")
    _job(mock, 12, "running", "already_existed", existing_job_id=13)
    _job(mock, 13, "success")
    assert sensor.poke(context) is False
    assert sensor.poke(context) is False  # followed to 13, which the next poke reads
    assert sensor.poke(context) is True
    mock.get(f"{BASE}/jobs/14", json={"job": {"id": 14, "status": "cancelled"}})
    mock.get(f"{BASE}/jobs/14/logs", json={"job_logs": []})
    with pytest.raises(AirflowFailException, match="job 14 ended with status 'cancelled'"):
        AnalyticsJobSensor(task_id="w", job_id=14).poke(context)


def test_deferrable_sensor_defers_with_its_interval_and_deadline(mock, context) -> None:
    _job(mock, 12, "running")
    sensor = AnalyticsJobSensor(task_id="wait", job_id=12, deferrable=True, poke_interval=3, timeout=100)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context)
    _, kwargs = deferred.value.trigger.serialize()
    assert kwargs["poll_interval"] == 3 and kwargs["end_time"] <= time.time() + 100


def test_deferrable_sensor_resumes_on_each_event(mock, context) -> None:
    sensor = AnalyticsJobSensor(task_id="wait", job_id=12, deferrable=True)
    sensor.execute_complete(context, {"status": "success", "job_id": 12})
    with pytest.raises(AirflowSensorTimeout):
        sensor.execute_complete(context, {"status": "timeout", "job_id": 12})
    mock.get(f"{BASE}/jobs/12/logs", json={"job_logs": []})
    with pytest.raises(AirflowFailException, match="ended with status 'failure'\nlast error: bad"):
        sensor.execute_complete(
            context, {"status": "failed", "job_id": 12, "job_status": "failure", "last_error_log": "bad"}
        )
    with pytest.raises(AnalyticsJobError, match="waiting for job 12 failed: x"):
        sensor.execute_complete(context, {"status": "error", "job_id": 12, "message": "x"})


@pytest.mark.parametrize(
    "event", [None, {}, {"status": "success"}, {"job_id": 3}, "success", {"status": "x", "job_id": 1}]
)
def test_sensor_and_operators_refuse_a_malformed_event_alike(context, tmp_path, event) -> None:
    with pytest.raises(AirflowFailException, match="unexpected event from the trigger"):
        AnalyticsJobSensor(task_id="wait", job_id=12).execute_complete(context, event)
    with pytest.raises(AnalyticsJobError, match="unexpected event from the trigger"):
        _export(destination=str(tmp_path / "x.csv")).execute_complete(context, event)


def test_sensor_outlasts_failed_pokes_until_max_outage(mock, context, fake_time) -> None:
    mock.get(f"{BASE}/jobs/12", status_code=503, json={"type": "MaintenanceError", "message": "down"})
    now = [0.0]
    sensor = AnalyticsJobSensor(task_id="wait", job_id=12, poke_interval=10, max_outage=60)
    sensor.hook.clock = lambda: now[0]
    for _ in range(6):
        assert sensor.poke(context) is False
        now[0] += 10
    with pytest.raises(AnalyticsJobError, match="could not be read for 60 s") as raised:
        sensor.poke(context)
    assert not isinstance(raised.value, AirflowFailException)  # Airflow's retries may still help


def test_trigger_serialises_only_plain_values() -> None:
    trigger = AnalyticsJobTrigger("analytics_default", 5, 2.0, 1_900_000_000.0)
    classpath, kwargs = trigger.serialize()
    assert kwargs == {
        "analytics_conn_id": "analytics_default",
        "job_id": 5,
        "poll_interval": 2.0,
        "end_time": 1_900_000_000.0,
        "max_outage": 600.0,
        "try_number": None,
    }
    assert type(trigger)(**kwargs).serialize() == (classpath, kwargs)
    old = {**kwargs, "max_failures": 5}  # stored by an earlier version before an upgrade
    old.pop("max_outage")
    old.pop("try_number")
    assert type(trigger)(**old).serialize() == (classpath, kwargs)


def test_dashboard_link_reads_the_url_the_task_pushed(monkeypatch) -> None:
    from airflow.providers.common.compat.sdk import XCom

    from analytics_provider.links import DASHBOARD_URL_KEY, AnalyticsDashboardLink

    asked: list[str] = []

    def get_value(*, ti_key: Any, key: str) -> str | None:
        asked.append(key)
        return "https://svc/dashboards/7" if ti_key == "with-url" else None

    monkeypatch.setattr(XCom, "get_value", staticmethod(get_value))
    link = AnalyticsDashboardLink()
    assert link.get_link(None, ti_key="with-url") == "https://svc/dashboards/7"
    assert link.get_link(None, ti_key="without") == ""
    assert asked == [DASHBOARD_URL_KEY, DASHBOARD_URL_KEY]
    assert AnalyticsExportWidgetOperator.operator_extra_links[0].name == "Analytics dashboard"
    assert AnalyticsPreloadDashboardOperator.operator_extra_links[0].name == "Analytics dashboard"


def test_preload_reads_a_rendered_bust_cache(mock, context) -> None:
    mock.get(f"{BASE}/dashboards/7", json={"dashboard": {"id": 7, "url": "u"}})
    mock.post(f"{BASE}/dashboards/7/submit_preload", json={"job": {"id": 11, "status": "created"}})
    op = AnalyticsPreloadDashboardOperator(task_id="p", dashboard_id=7, bust_cache="{{ params.bust }}",
                                           wait_for_completion=False)
    op.bust_cache = "True"  # as rendered
    op.execute(context)
    assert mock.last_request.json()["bust_cache"] is True
    op.bust_cache = "sometimes"
    with pytest.raises(AnalyticsParameterError, match="bust_cache must be true or false"):
        op.execute(context)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"bust_cache": False, "preload": False},
     r"^refresh: bust_cache and preload are both False: every run would succeed having refreshed nothing"),
    ({"bust_cache": False, "dashboards_filter": {"exclude_titles": ["*"]}},
     r"^refresh: dashboards_filter\['exclude_titles'\] '\*' leaves out every dashboard and bust_cache is False"),
])
def test_a_refresh_that_can_never_do_anything_is_refused_at_parse(kwargs, message) -> None:
    from analytics_provider.operators import AnalyticsRefreshImpactedOperator

    with pytest.raises(AnalyticsParameterError, match=message):
        AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["public.orders"], **kwargs)
    AnalyticsRefreshImpactedOperator(task_id="ok", tables=["public.orders"], bust_cache=False)  # preloads
    AnalyticsRefreshImpactedOperator(task_id="ok2", tables=["public.orders"],  # busts only
                                     dashboards_filter={"exclude_titles": ["*"]})
