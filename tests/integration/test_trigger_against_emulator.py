"""AnalyticsJobTrigger against the emulator: every way a wait can end, and a restart.

Waits run on a fake clock (``analytics_provider.testing.fake_clock``) unless the test is about
real time itself (a restart mid-wait, a job the emulator finishes by its own clock).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest

from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.testing.fake_clock import FakeClock
from analytics_provider.triggers import AnalyticsJobTrigger


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> AnalyticsHook:
    return AnalyticsHook(analytics_connection)


@pytest.fixture
def widget_id(hook: AnalyticsHook) -> str:
    return hook.get_dashboard(next(iter(hook.list_dashboards()))["id"])["widgets"][0]["id"]


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    return FakeClock().install(monkeypatch)


async def collect(trigger: AnalyticsJobTrigger) -> list[dict[str, Any]]:
    return [event.payload async for event in trigger.run()]


def trigger_for(job_id: int, *, timeout: float = 30, interval: float = 0.05, **kwargs: Any) -> AnalyticsJobTrigger:
    return AnalyticsJobTrigger("analytics_default", job_id, interval, AnalyticsJobTrigger.clock() + timeout, **kwargs)


def polls(emulator) -> list[Any]:
    """The trigger's reads (in batches; one job alone only when a batch left it out)."""
    return [r for r in emulator.requests if r.origin == "api" and r.operation in ("list_jobs", "get_job")]


def finish(emulator, job_id: int) -> None:
    """The emulator's job ends now (its status is read from its own clock)."""
    with emulator.world.lock:
        job = emulator.world.jobs.jobs[job_id]
        job.duration = time.time() - job.created


async def test_success(hook, widget_id, analytics_emulator, clock) -> None:
    analytics_emulator.job_duration = 0
    job = hook.submit_widget_export(widget_id, "csv")
    (event,) = await collect(trigger_for(job["id"]))
    assert event["status"] == "success" and event["job_id"] == job["id"] and event["job_status"] == "success"
    assert clock.sleeps == []


async def test_failure_carries_status_and_last_error(hook, widget_id, analytics_emulator, clock) -> None:
    analytics_emulator.job_duration = 0
    analytics_emulator.fail_next_job("submit_widget_export", last_error_log="Query timed out after 300s")
    job = hook.submit_widget_export(widget_id, "pdf")
    (event,) = await collect(trigger_for(job["id"]))
    assert event["status"] == "failed"
    assert event["job_status"] == "failure"
    assert event["last_error_log"] == "Query timed out after 300s"


async def test_a_pending_job_is_polled_every_interval_until_it_ends(hook, widget_id, analytics_emulator, clock):
    analytics_emulator.job_duration = 3600
    job = hook.submit_widget_export(widget_id, "csv")
    clock.at(20, lambda: finish(analytics_emulator, job["id"]))
    (event,) = await collect(trigger_for(job["id"], interval=5))
    assert event["status"] == "success"
    assert 2.5 <= clock.sleeps[0] <= 5 and clock.sleeps[1:] == [5.0] * (len(clock.sleeps) - 1)
    assert 20 <= clock.elapsed <= 25


async def test_transient_errors_then_success(hook, widget_id, analytics_emulator, clock) -> None:
    analytics_emulator.job_duration = 0
    job = hook.submit_widget_export(widget_id, "csv")
    analytics_emulator.inject("get_job", status=503, times=1)
    analytics_emulator.inject("get_job", status=502, times=1)
    analytics_emulator.inject("get_job", status=500, times=1)
    (event,) = await collect(trigger_for(job["id"], interval=1))
    assert event["status"] == "success"
    # List Jobs' 503 sends the read alone at once; its 502, then a 500, are an outage the wait outlasts
    assert [(r.operation, r.status) for r in polls(analytics_emulator)][:2] == [("list_jobs", 503), ("get_job", 502)]
    assert [r.status for r in polls(analytics_emulator)] == [503, 502, 500, 200]
    assert len(clock.sleeps) == 2 and all(s >= 1 for s in clock.sleeps)


async def test_429_with_retry_after_is_honoured(hook, widget_id, analytics_emulator, clock) -> None:
    analytics_emulator.job_duration = 0
    job = hook.submit_widget_export(widget_id, "csv")
    # List Jobs' 429 sends the read alone, whose 429 the wait honours (the shared quota holds the same second)
    analytics_emulator.inject("get_job", status=429, retry_after=1, times=2)
    (event,) = await collect(trigger_for(job["id"]))
    assert event["status"] == "success"
    assert clock.sleeps == [1.0]
    assert [(r.operation, r.status) for r in polls(analytics_emulator)][:2] == [("list_jobs", 429), ("get_job", 429)]
    assert [r.status for r in polls(analytics_emulator)] == [429, 429, 200]


async def test_a_sixty_second_outage_mid_wait_is_outlasted(hook, widget_id, analytics_emulator, clock) -> None:
    analytics_emulator.job_duration = 3600
    job = hook.submit_widget_export(widget_id, "csv")
    clock.at(10, lambda: analytics_emulator.inject("get_job", status=503, times=10_000))
    clock.at(70, analytics_emulator.faults.clear)
    clock.at(75, lambda: finish(analytics_emulator, job["id"]))
    (event,) = await collect(trigger_for(job["id"], interval=2, timeout=3600))
    assert event["status"] == "success" and event["job_id"] == job["id"]
    statuses = [r.status for r in polls(analytics_emulator)]
    assert statuses[0] == 200 and 503 in statuses and statuses[-1] == 200
    assert [r.operation for r in analytics_emulator.requests].count("submit_widget_export") == 1


async def test_an_outage_longer_than_max_outage_ends_the_wait_with_an_error(
    hook, widget_id, analytics_emulator, clock
) -> None:
    analytics_emulator.job_duration = 3600
    job = hook.submit_widget_export(widget_id, "csv")
    analytics_emulator.inject("get_job", status=500, times=10_000)
    (event,) = await collect(trigger_for(job["id"], interval=1, max_outage=120, timeout=3600))
    # the last look comes as the outage ends, or one poll interval after the look before it
    lasted = re.search(r"could not be read for (\d+) s", event["message"])
    assert event["status"] == "error" and lasted is not None and 120 <= int(lasted.group(1)) <= 121, event
    assert "500" in event["message"] and "max_outage=120 s" in event["message"]
    assert 120 <= clock.elapsed <= 121
    assert len(polls(analytics_emulator)) < 20  # backoff, not a poll per second


async def test_deadline(analytics_emulator, hook, widget_id, clock) -> None:
    analytics_emulator.job_duration = 3600
    job = hook.submit_widget_export(widget_id, "csv")
    (event,) = await collect(trigger_for(job["id"], timeout=10, interval=3))
    assert event["status"] == "timeout" and event["job_id"] == job["id"] and "still" in event["message"]
    assert clock.elapsed == pytest.approx(10)


async def test_already_existed_is_followed(hook, widget_id, analytics_emulator, clock) -> None:
    analytics_emulator.job_duration = 3600
    first = hook.submit_widget_export(widget_id, "xlsx")
    second = hook.submit_widget_export(widget_id, "xlsx")  # identical: the service de-duplicates
    assert second["status"] == "already_existed" and second["id"] != first["id"]
    clock.at(1, lambda: finish(analytics_emulator, first["id"]))
    (event,) = await collect(trigger_for(second["id"], interval=2))
    assert event["status"] == "success" and event["job_id"] == first["id"]


async def test_a_job_that_follows_itself_ends_in_an_error_without_spinning(
    hook, widget_id, analytics_emulator, clock
) -> None:
    job = hook.submit_widget_export(widget_id, "csv")
    with analytics_emulator.world.lock:
        analytics_emulator.world.jobs.jobs[job["id"]].existing_job_id = job["id"]
    (event,) = await collect(trigger_for(job["id"], interval=0.5, timeout=30))  # its first read ends it
    assert event["status"] == "error" and "loops" in event["message"]
    assert len(polls(analytics_emulator)) == 1


async def test_serialize_round_trip_through_airflow_survives_a_restart(hook, widget_id, analytics_emulator) -> None:
    from airflow.serialization.serialized_objects import BaseSerialization

    analytics_emulator.job_duration = 1.0
    job = hook.submit_widget_export(widget_id, "csv")
    original = trigger_for(job["id"], interval=0.1)
    classpath, kwargs = original.serialize()
    stored = BaseSerialization.serialize(kwargs)
    assert analytics_emulator.api_key not in str(stored)

    first_run = asyncio.ensure_future(collect(original))  # the triggerer dies mid-wait...
    while not polls(analytics_emulator):
        assert not first_run.done(), f"the first wait ended without a poll: {first_run.result()}"
        await asyncio.sleep(0.01)
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


async def test_an_unusable_connection_ends_in_an_error_event(monkeypatch, clock) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_BROKEN", '{"conn_type": "analytics", "extra": {"region": "eu"}}')
    trigger = AnalyticsJobTrigger("broken", 1, 0.05, time.time() + 30)
    (event,) = await collect(trigger)
    assert event["status"] == "error" and "has no API key" in event["message"]


async def test_the_event_names_the_try_that_deferred(hook, widget_id, analytics_emulator, clock) -> None:
    analytics_emulator.job_duration = 0
    job = hook.submit_widget_export(widget_id, "csv")
    (event,) = await collect(trigger_for(job["id"], try_number=2))
    assert event["status"] == "success" and event["try_number"] == 2
    (event,) = await collect(trigger_for(job["id"]))
    assert "try_number" not in event
