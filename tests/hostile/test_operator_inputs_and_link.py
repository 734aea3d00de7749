"""Issue 8, cases 8 and 10 (operators): the destination and ids are checked before the job is
submitted, and the dashboard link is best effort, fetched once, and silent when never pushed."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.links import DASHBOARD_URL_KEY, AnalyticsDashboardLink
from analytics_provider.operators import AnalyticsExportWidgetOperator, AnalyticsPreloadDashboardOperator
from analytics_provider.sensors import AnalyticsJobSensor
from analytics_provider.testing.task_instance import FakeTaskInstance
from hostile.server import Answer, Seen

CSV = b"a,b\n1,2\n"


def service(widget: Answer) -> Any:
    def answer(seen: Seen) -> Answer:
        route = f"{seen.method} {seen.route}"
        if route == "GET /api/v2/dashboard_widgets/5":
            return widget
        if route in ("POST /api/v2/dashboard_widgets/5/submit_export", "POST /api/v2/dashboards/3/submit_preload"):
            return Answer(200, {"job": {"id": 9, "status": "created"}})
        if route == "GET /api/v2/dashboards/3":
            return widget
        if route == "GET /api/v2/jobs/9":
            return Answer(200, {"job": {"id": 9, "status": "success"}})
        if route == "GET /api/v2/exports/download":
            return Answer(200, CSV, {"Content-Type": "text/csv"})
        return Answer(404, {"message": route})

    return answer


def export(**kwargs: Any) -> AnalyticsExportWidgetOperator:
    options: dict[str, Any] = {"task_id": "export", "widget_id": 5, "destination": "/tmp/unused.csv",
                               "poll_interval": 0.01}
    options.update(kwargs)
    return AnalyticsExportWidgetOperator(**options)


@pytest.mark.parametrize("destination", ["/proc/x.csv", "/sys/x.csv"])
def test_an_unwritable_destination_fails_the_task_before_the_job_is_submitted(server, connect, destination) -> None:
    server.answer = service(Answer(200, {"dashboard_widget": {"dashboard": {"url": "https://x/d/1"}}}))
    with pytest.raises(AnalyticsParameterError, match=f"export: destination '{destination}'"):
        export(destination=destination).execute({"ti": FakeTaskInstance()})
    assert server.requests == []


@pytest.mark.parametrize("widget_id", [-1, "abc", "..", 0, "1.0"])
def test_a_widget_id_the_service_cannot_have_is_refused_before_any_request(server, connect, widget_id) -> None:
    with pytest.raises(AnalyticsParameterError, match="export: widget_id must be a positive integer"):
        export(widget_id=widget_id).execute({"ti": FakeTaskInstance()})
    assert server.requests == []


def test_a_dashboard_id_is_checked_the_same_way(server, connect) -> None:
    with pytest.raises(AnalyticsParameterError, match="preload: dashboard_id must be a positive integer"):
        AnalyticsPreloadDashboardOperator(task_id="preload", dashboard_id="-1").execute({"ti": FakeTaskInstance()})
    assert server.requests == []


def test_a_failing_link_lookup_is_a_warning_tried_once_and_the_export_goes_on(server, connect, tmp_path,
                                                                            caplog, capsys) -> None:
    server.answer = service(Answer(500, {"type": "InternalHolisticsError", "message": "widget service down"}))
    ti = FakeTaskInstance()
    op = export(destination=str(tmp_path / "out.csv"))
    with caplog.at_level(logging.WARNING):
        result = op.execute({"ti": ti})
    assert result["job_id"] == 9 and (tmp_path / "out.csv").read_bytes() == CSV
    assert server.routes().count("GET /api/v2/dashboard_widgets/5") == 1
    assert DASHBOARD_URL_KEY not in ti.xcom
    logged = capsys.readouterr().out + "".join(r.getMessage() for r in caplog.records)
    assert "dashboard link is left out" in logged and "widget service down" in logged
    assert AnalyticsDashboardLink().get_link(op, ti_key=None) == ""  # type: ignore[arg-type]


def test_the_preload_link_is_best_effort_too(server, connect) -> None:
    server.answer = service(Answer(200, b"<html>proxy</html>", {"Content-Type": "text/html"}))
    op = AnalyticsPreloadDashboardOperator(task_id="preload", dashboard_id=3, poll_interval=0.01)
    assert op.execute({"ti": FakeTaskInstance()})["status"] == "success"
    assert server.routes().count("GET /api/v2/dashboards/3") == 1


def test_a_pushed_link_is_given_from_what_the_task_pushed(server, connect, tmp_path, monkeypatch) -> None:
    server.answer = service(Answer(200, {"dashboard_widget": {"dashboard": {"url": "https://x/d/1"}}}))
    ti = FakeTaskInstance()
    op = export(destination=str(tmp_path / "out.csv"))
    op.execute({"ti": ti})
    assert ti.xcom[DASHBOARD_URL_KEY] == "https://x/d/1"
    from airflow.providers.common.compat.sdk import XCom

    def no_xcom(**kwargs: Any) -> None:
        raise AssertionError("no XCom read is needed (and none may log 'XCom not found')")

    monkeypatch.setattr(XCom, "get_value", no_xcom)
    assert AnalyticsDashboardLink().get_link(op, ti_key=None) == "https://x/d/1"  # type: ignore[arg-type]


def test_a_task_that_failed_before_pushing_reads_no_xcom_for_its_link(server, connect, monkeypatch) -> None:
    from airflow.providers.common.compat.sdk import XCom

    op = export(destination="/proc/x.csv")
    with pytest.raises(AnalyticsParameterError):
        op.execute({"ti": FakeTaskInstance()})
    monkeypatch.setattr(XCom, "get_value", lambda **kwargs: pytest.fail("an XCom read for a link never pushed"))
    assert AnalyticsDashboardLink().get_link(op, ti_key=None) == ""  # type: ignore[arg-type]


def _deferred(task: Any) -> None:
    from airflow.providers.common.compat.sdk import TaskDeferred

    with pytest.raises(TaskDeferred):
        task.execute({"ti": FakeTaskInstance()})


@pytest.mark.parametrize(
    ("run", "answer"),
    [
        (lambda tmp: export(destination=str(tmp / "w.csv")).execute({"ti": FakeTaskInstance()}), None),
        (lambda tmp: export(destination=str(tmp / "w.csv"), deferrable=True), _deferred),
        (lambda tmp: export(destination=str(tmp / "w.csv"), widget_id=6).execute({"ti": FakeTaskInstance()}),
         pytest.raises),
        (lambda tmp: AnalyticsJobSensor(task_id="sense", job_id=9, poke_interval=0.01).execute(
            {"ti": FakeTaskInstance()}), None),
    ],
    ids=["export", "deferred", "failed", "sensor"],
)
def test_a_tasks_run_ends_with_its_connections_closed(server, connect, tmp_path, run, answer) -> None:
    """A worker may run many tasks in one process (``dag.test()``): none may keep a connection."""
    server.answer = service(Answer(200, {"dashboard_widget": {"dashboard": {"url": "https://x/d/1"}}}))
    if answer is _deferred:
        _deferred(run(tmp_path))
    elif answer is pytest.raises:
        with pytest.raises(Exception, match="6"):
            run(tmp_path)
    else:
        run(tmp_path)
    assert server.requests and server.all_hung_up(), "the task left a connection open"
