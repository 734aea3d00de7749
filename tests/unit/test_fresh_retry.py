"""A try resumed with another try's trigger event starts afresh (Airflow 3.0 keeps the event across tries)."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.operators import AnalyticsBustDataSourceCacheOperator
from analytics_provider.sensors import AnalyticsJobSensor
from analytics_provider.testing.task_instance import FakeTaskInstance

FAILED_ON_TRY_1 = {"status": "failed", "job_id": 7, "job_status": "failure", "message": "", "last_error_log": "boom",
                   "try_number": 1}


def recording(task: Any, monkeypatch) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(task, "execute", lambda context: calls.append("execute") or "fresh")
    monkeypatch.setattr(task, "execute_complete", lambda context, event: calls.append(f"complete {event['status']}"))
    return calls


TASKS = pytest.mark.parametrize(
    "task",
    [
        AnalyticsBustDataSourceCacheOperator(task_id="bust", data_source_id=3, deferrable=True),
        AnalyticsJobSensor(task_id="sense", job_id=7, deferrable=True),
    ],
    ids=["operator", "sensor"],
)


@TASKS
def test_the_event_of_an_earlier_try_runs_execute_instead(task, monkeypatch) -> None:
    calls = recording(task, monkeypatch)
    result = task.resume_execution("execute_complete", {"event": FAILED_ON_TRY_1}, {"ti": FakeTaskInstance(2)})
    assert calls == ["execute"] and result == "fresh"


@TASKS
def test_the_event_of_this_try_resumes_at_the_deferrals_method(task, monkeypatch) -> None:
    calls = recording(task, monkeypatch)
    task.resume_execution("execute_complete", {"event": FAILED_ON_TRY_1}, {"ti": FakeTaskInstance(1)})
    assert calls == ["complete failed"]


@TASKS
def test_an_event_without_a_try_resumes_as_before(task, monkeypatch) -> None:
    """Triggers serialised by an earlier version carry no try: their events resume as they did."""
    calls = recording(task, monkeypatch)
    event = {k: v for k, v in FAILED_ON_TRY_1.items() if k != "try_number"}
    task.resume_execution("execute_complete", {"event": event}, {"ti": FakeTaskInstance(2)})
    assert calls == ["complete failed"]


def test_the_deferral_names_the_try_in_the_trigger(monkeypatch) -> None:
    from airflow.providers.common.compat.sdk import TaskDeferred

    task = AnalyticsBustDataSourceCacheOperator(task_id="bust", data_source_id=3, deferrable=True)
    monkeypatch.setattr(type(task), "submit", lambda self, context: {"id": 7, "status": "created"})
    with pytest.raises(TaskDeferred) as deferred:
        task.execute({"ti": FakeTaskInstance(3)})
    assert deferred.value.trigger.serialize()[1]["try_number"] == 3
