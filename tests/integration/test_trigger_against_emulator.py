"""AnalyticsJobTrigger against the emulator: every way a wait can end, and a restart."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.triggers import AnalyticsJobTrigger


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> AnalyticsHook:
    return AnalyticsHook(analytics_connection)


@pytest.fixture
def widget_id(hook: AnalyticsHook) -> str:
    return hook.get_dashboard(next(iter(hook.list_dashboards()))["id"])["widgets"][0]["id"]


async def collect(trigger: AnalyticsJobTrigger) -> list[dict[str, Any]]:
    return [event.payload async for event in trigger.run()]


def trigger_for(job_id: int, *, timeout: float = 30, interval: float = 0.05, **kwargs: Any) -> AnalyticsJobTrigger:
    return AnalyticsJobTrigger("analytics_default", job_id, interval, time.time() + timeout, **kwargs)


def polls(emulator) -> list[Any]:
    return [r for r in emulator.requests if r.origin == "api" and r.operation == "get_job"]


async def test_success(hook, widget_id) -> None:
    job = hook.submit_widget_export(widget_id, "csv")
    (event,) = await collect(trigger_for(job["id"]))
    assert event["status"] == "success" and event["job_id"] == job["id"] and event["job_status"] == "success"


async def test_failure_carries_status_and_last_error(hook, widget_id, analytics_emulator) -> None:
    analytics_emulator.fail_next_job("submit_widget_export", last_error_log="Query timed out after 300s")
    job = hook.submit_widget_export(widget_id, "pdf")
    (event,) = await collect(trigger_for(job["id"]))
    assert event["status"] == "failed"
    assert event["job_status"] == "failure"
    assert event["last_error_log"] == "Query timed out after 300s"


async def test_transient_errors_then_success(hook, widget_id, analytics_emulator) -> None:
    job = hook.submit_widget_export(widget_id, "csv")
    analytics_emulator.inject("get_job", status=503, times=1)
    analytics_emulator.inject("get_job", drop=True, times=1)
    (event,) = await collect(trigger_for(job["id"]))
    assert event["status"] == "success"
    statuses = [r.status for r in polls(analytics_emulator)]
    assert statuses[0] == 503 and 200 in statuses


async def test_429_with_retry_after_is_honoured(hook, widget_id, analytics_emulator) -> None:
    job = hook.submit_widget_export(widget_id, "csv")
    analytics_emulator.inject("get_job", status=429, retry_after=1)
    started = time.monotonic()
    (event,) = await collect(trigger_for(job["id"]))
    assert event["status"] == "success"
    first, second = polls(analytics_emulator)[:2]
    assert first.status == 429
    assert second.time - first.time >= 0.95
    assert time.monotonic() - started >= 1


async def test_consecutive_failures_end_the_wait_with_an_error(hook, widget_id, analytics_emulator) -> None:
    job = hook.submit_widget_export(widget_id, "csv")
    analytics_emulator.inject("get_job", status=500, times=10)
    (event,) = await collect(trigger_for(job["id"], max_failures=2))
    assert event["status"] == "error" and "500" in event["message"]
    assert len(polls(analytics_emulator)) == 2


async def test_deadline(analytics_emulator, analytics_connection, hook, widget_id) -> None:
    analytics_emulator.job_duration = 30
    job = hook.submit_widget_export(widget_id, "csv")
    started = time.monotonic()
    (event,) = await collect(trigger_for(job["id"], timeout=0.5, interval=0.1))
    assert event["status"] == "timeout" and event["job_id"] == job["id"]
    assert time.monotonic() - started < 5


async def test_already_existed_is_followed(hook, widget_id) -> None:
    first = hook.submit_widget_export(widget_id, "xlsx")
    second = hook.submit_widget_export(widget_id, "xlsx")  # identical: the service de-duplicates
    assert second["status"] == "already_existed" and second["id"] != first["id"]
    (event,) = await collect(trigger_for(second["id"]))
    assert event["status"] == "success" and event["job_id"] == first["id"]


async def test_serialize_round_trip_through_airflow_survives_a_restart(hook, widget_id, analytics_emulator) -> None:
    from airflow.serialization.serialized_objects import BaseSerialization

    analytics_emulator.job_duration = 1.0
    job = hook.submit_widget_export(widget_id, "csv")
    original = trigger_for(job["id"], interval=0.1)
    classpath, kwargs = original.serialize()
    stored = BaseSerialization.serialize(kwargs)
    assert analytics_emulator.api_key not in str(stored)

    first_run = asyncio.ensure_future(collect(original))  # the triggerer dies mid-wait...
    await asyncio.sleep(0.3)
    first_run.cancel()
    restored = AnalyticsJobTrigger(**BaseSerialization.deserialize(stored))  # ...and a new one takes over
    assert restored.serialize() == (classpath, kwargs)
    (event,) = await collect(restored)
    assert event["status"] == "success" and event["job_id"] == job["id"]
    submits = [r for r in analytics_emulator.requests if r.operation == "submit_widget_export"]
    assert len(submits) == 1  # waiting again never submits again


async def test_many_waits_share_one_session_and_the_key_stays_out_of_events(
    hook, widget_id, analytics_emulator
) -> None:
    jobs = [
        hook.submit_widget_export(
            widget_id, "csv", [{"dynamic_filter_id": 1, "condition": {"operator": "is", "values": [f"v{n}"]}}]
        )
        for n in range(20)
    ]
    events = await asyncio.gather(*(collect(trigger_for(j["id"])) for j in jobs))
    assert [e[0]["status"] for e in events] == ["success"] * 20
    assert analytics_emulator.api_key not in str(events)


async def test_an_unusable_connection_ends_in_an_error_event(monkeypatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_BROKEN", '{"conn_type": "analytics", "extra": {"region": "eu"}}')
    trigger = AnalyticsJobTrigger("broken", 1, 0.05, time.time() + 30)
    (event,) = await collect(trigger)
    assert event["status"] == "error" and "has no API key" in event["message"]
