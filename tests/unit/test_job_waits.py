"""The one job-following loop (api/jobs/wait.py), run by the drivers with a fake clock and a fake
service: every way a wait ends, and its bounds."""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
from collections.abc import Callable
from typing import Any

import pytest

from analytics_provider.api.call.retry import RetryPolicy
from analytics_provider.api.jobs.wait import (
    MAX_BACKOFF,
    MAX_FOLLOWS,
    UNREACHABLE,
    JobWatch,
    WaitResult,
    final_state,
    first_look,
    follow_job,
)
from analytics_provider.api.wire.choices import DEFAULT_MAX_OUTAGE
from analytics_provider.exceptions import (
    AnalyticsDeadlineExceeded,
    AnalyticsJobError,
    AnalyticsJobTimeout,
    AnalyticsTransportError,
    InternalServiceError,
    MaintenanceError,
    PermissionDeniedError,
    RateLimitExceedError,
    UnexpectedResponseError,
)


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


class Service:
    """Answers reads from a function of (job id, time); records every read."""

    def __init__(self, time: FakeTime, answer: Callable[[int, float], Any]) -> None:
        self.time = time
        self.answer = answer
        self.reads: list[tuple[int, float, float]] = []  # job id, time, deadline

    def read(self, job_id: int, deadline: float) -> Any:
        self.reads.append((job_id, self.time.now, deadline))
        result = self.answer(job_id, self.time.now)
        if isinstance(result, BaseException):
            raise result
        return result


def driver(time: FakeTime, service: Service) -> Any:
    """The worker's driver, its reads answered by ``service``."""
    from analytics_provider.hooks.sync_client import AnalyticsClient

    client = AnalyticsClient(lambda: None, RetryPolicy(), clock=time.clock, sleep=time.sleep)  # type: ignore[arg-type,return-value]
    client.read_job = service.read  # type: ignore[method-assign]
    return client


def job(job_id: int, status: str, **extra: Any) -> dict[str, Any]:
    return {"id": job_id, "status": status, **extra}


def watch_for(time: FakeTime, job_id: int = 1, *, interval: float = 5.0, timeout: float = 3600.0,
              max_outage: float = 600.0) -> JobWatch:
    return JobWatch(job_id, poll_interval=interval, deadline=time.now + timeout, max_outage=max_outage,
                    clock=time.clock, rng=random.Random(7))


def run(time: FakeTime, answer: Callable[[int, float], Any], **kwargs: Any) -> tuple[WaitResult, Service]:
    service = Service(time, answer)
    return driver(time, service).run(follow_job(watch_for(time, **kwargs))), service


def test_pending_then_success_sleeps_the_interval_between_looks() -> None:
    t = FakeTime()
    result, service = run(t, lambda j, now: job(j, "running" if now < 1012 else "success"))
    assert result.status == "success" and result.job_id == 1 and result.job_status == "success"
    assert t.sleeps == [5.0, 5.0, 5.0]
    assert len(service.reads) == 4


def test_failed_job_carries_status_and_last_error() -> None:
    t = FakeTime()
    result, _ = run(t, lambda j, now: job(j, "failure", last_error_log="boom"))
    assert (result.status, result.job_status, result.last_error_log) == ("failed", "failure", "boom")
    assert final_state(result).last_error_log == "boom"


def test_already_existed_is_followed_with_a_pause() -> None:
    t = FakeTime()
    answers = {1: job(1, "already_existed", existing_job_id=2), 2: job(2, "success")}
    result, service = run(t, lambda j, now: answers[j])
    assert result.status == "success" and result.job_id == 2
    assert [r[0] for r in service.reads] == [1, 2] and t.sleeps == [5.0]


def test_a_job_that_follows_itself_is_an_error_at_once_never_a_spin() -> None:
    t = FakeTime()
    result, service = run(t, lambda j, now: job(j, "already_existed", existing_job_id=j))
    assert result.status == "error" and "loops (1 -> 1)" in result.message
    assert len(service.reads) == 1


def test_a_loop_of_two_jobs_is_an_error_after_one_hop() -> None:
    t = FakeTime()
    result, service = run(t, lambda j, now: job(j, "already_existed", existing_job_id=3 - j))
    assert result.status == "error" and "loops (1 -> 2 -> 1)" in result.message
    assert len(service.reads) == 2 and t.sleeps == [5.0]


def test_an_endless_chain_ends_after_the_bounded_number_of_hops() -> None:
    t = FakeTime()
    result, service = run(t, lambda j, now: job(j, "already_existed", existing_job_id=j + 1))
    assert result.status == "error" and f"longer than {MAX_FOLLOWS} hops" in result.message
    assert len(service.reads) == MAX_FOLLOWS + 1
    assert all(s == 5.0 for s in t.sleeps)


def test_transient_failures_are_outlasted_with_backoff_and_success_resets_the_outage() -> None:
    t = FakeTime()

    def answer(j: int, now: float) -> Any:
        if now < 1300:  # a 5-minute outage, then the job is done
            return AnalyticsTransportError("connection refused")
        return job(j, "success")

    result, service = run(t, answer)
    assert result.status == "success"
    assert all(5.0 <= s <= MAX_BACKOFF for s in t.sleeps)
    assert max(t.sleeps) > 20  # it backed off
    assert len(service.reads) < 20


@pytest.mark.parametrize(
    "failure",
    [
        AnalyticsTransportError("dropped"),
        InternalServiceError("oops", status=500),
        MaintenanceError("later", status=503),
        RateLimitExceedError("slow down", status=429),
        UnexpectedResponseError("200 with an HTML login page"),
        "no status",
        ["not", "a", "job"],
    ],
    ids=["dropped", "500", "503", "429", "html", "no-status", "list"],
)
def test_an_outage_longer_than_max_outage_ends_in_an_error(failure: Any) -> None:
    t = FakeTime()
    answer = (lambda j, now: {"id": j}) if failure == "no status" else (lambda j, now: failure)
    result, _ = run(t, answer, max_outage=120)
    assert result.status == "error" and result.job_status == UNREACHABLE
    lasted = re.search(r"could not be read for (\d+) s", result.message)
    assert lasted and "max_outage=120 s" in result.message, result.message
    # the last look came as the outage ended (within one interval), and the message says so
    assert 120 <= t.now - 1000 <= 125 and 120 <= int(lasted.group(1)) <= 125
    with pytest.raises(AnalyticsJobError, match="waiting for job 1 failed: job 1 could not be read"):
        final_state(result)


def test_a_permanent_error_ends_the_wait_at_once() -> None:
    t = FakeTime()
    result, service = run(t, lambda j, now: PermissionDeniedError("no", status=403))
    assert result.status == "error" and "403" in result.message and isinstance(result.error, PermissionDeniedError)
    assert len(service.reads) == 1 and t.sleeps == []


def test_retry_after_is_honoured() -> None:
    t = FakeTime()
    answers = iter([RateLimitExceedError("slow", status=429, retry_after=42.0), job(1, "success")])
    result, _ = run(t, lambda j, now: next(answers))
    assert result.status == "success" and t.sleeps == [42.0]


def test_a_day_long_retry_after_ends_at_the_deadline_with_a_clear_error() -> None:
    t = FakeTime()
    result, _ = run(t, lambda j, now: RateLimitExceedError("spent", status=429, retry_after=86400.0),
                          interval=0.5, timeout=3)
    assert result.status == "timeout" and "did not finish before the deadline" in result.message
    assert "429" in result.message
    assert t.now - 1000 == pytest.approx(3)  # not a second later
    with pytest.raises(AnalyticsJobTimeout):
        final_state(result)


def test_repeated_429_without_retry_after_end_at_the_deadline() -> None:
    t = FakeTime()
    result, _ = run(t, lambda j, now: RateLimitExceedError("slow", status=429), interval=1, timeout=30)
    assert result.status == "timeout"
    assert t.now - 1000 == pytest.approx(30)
    assert all(s >= 1 or t.now - 1000 == pytest.approx(30) for s in t.sleeps)


def test_no_sleep_goes_past_the_deadline_and_every_read_carries_it() -> None:
    t = FakeTime()
    result, service = run(t, lambda j, now: job(j, "running"), interval=0.7, timeout=2)
    assert result.status == "timeout" and "still running" in result.message
    assert sum(t.sleeps) == pytest.approx(2) and t.sleeps[-1] == pytest.approx(0.6)
    assert {deadline for _, _, deadline in service.reads} == {1002.0}


def test_a_read_the_transport_ends_for_its_deadline_is_a_timeout_at_once() -> None:
    t = FakeTime()
    spent = AnalyticsDeadlineExceeded("the quota of GET /jobs/{id} is spent for 86399.0 s more, past the deadline")
    result, service = run(t, lambda j, now: spent, timeout=5)
    assert result.status == "timeout" and "spent for 86399.0 s more" in result.message
    assert len(service.reads) == 1 and t.sleeps == []  # it cannot finish in time: no pointless waiting


def test_a_read_failing_at_the_deadline_is_a_timeout_not_an_error() -> None:
    t = FakeTime()

    def answer(j: int, now: float) -> Any:
        t.now += 10  # the read itself used up the time left (the transport's deadline ended it)
        return AnalyticsTransportError("deadline exceeded")

    result, _ = run(t, answer, timeout=5)
    assert result.status == "timeout"


def test_every_pending_wait_is_the_interval_unless_the_first_is_spread() -> None:
    t = FakeTime()
    watch = JobWatch(1, poll_interval=10, clock=t.clock, rng=random.Random(1))
    waits = [watch.on_answer(job(1, "running")).seconds for _ in range(3)]  # type: ignore[union-attr]
    assert waits == [10, 10, 10]  # waits started together stay together (their reads are shared)
    spread = JobWatch(1, poll_interval=10, clock=t.clock, spread_first_wait=True, rng=random.Random(1))
    waits = [spread.on_answer(job(1, "running")).seconds for _ in range(3)]  # type: ignore[union-attr]
    assert 5 <= waits[0] < 10 and waits[1:] == [10, 10]  # read one by one, waits are spread


def test_a_first_look_stops_at_the_first_pause_and_the_watch_keeps_what_it_learnt() -> None:
    t = FakeTime()
    watch = watch_for(t)
    answers = {1: job(1, "already_existed", existing_job_id=2), 2: job(2, "running")}
    service = Service(t, lambda j, now: answers[j])
    client = driver(t, service)
    assert client.run(first_look(watch)) is None and watch.job_id == 2 and watch.status == "already_existed"
    assert client.run(first_look(watch)) is None and watch.status == "running"
    answers[2] = job(2, "success")
    assert client.run(first_look(watch)) == WaitResult("success", 2, "success", "job 2 succeeded")
    assert [r[0] for r in service.reads] == [1, 2, 2] and t.sleeps == []


def test_the_async_driver_runs_the_same_loop_the_same_way(monkeypatch) -> None:
    from analytics_provider.hooks.async_client import AsyncAnalyticsClient

    t = FakeTime()
    service = Service(t, lambda j, now: job(j, "running" if now < 1010 else "success"))

    async def read(self: Any, job_id: int, deadline: float) -> Any:
        return service.read(job_id, deadline)

    async def sleep(seconds: float) -> None:
        t.sleep(seconds)

    monkeypatch.setattr(AsyncAnalyticsClient, "read_job", read)
    monkeypatch.setattr(AsyncAnalyticsClient, "clock", staticmethod(t.clock))
    result = asyncio.run(AsyncAnalyticsClient("unused").run(follow_job(watch_for(t)), sleep=sleep))
    assert result.status == "success" and t.sleeps == [5.0, 5.0]
    assert [deadline for _, _, deadline in service.reads] == [4600.0] * 3  # the watch's deadline


@pytest.mark.parametrize(
    "event",
    [None, {}, "success", {"status": "weird", "job_id": 1}, {"status": "success"}, {"status": "success", "job_id": "x"},
     {"status": "success", "job_id": True}, {"status": "failed", "job_id": None}],
)
def test_a_malformed_event_is_a_clear_error(event: Any) -> None:
    with pytest.raises(AnalyticsJobError, match="unexpected event from the trigger"):
        WaitResult.from_event(event)


def test_events_round_trip() -> None:
    result = WaitResult("failed", 4, "failure", "job 4 ended failure", "bad")
    assert WaitResult.from_event(json.loads(json.dumps(result.to_event()))) == result
    assert WaitResult.from_event({"status": "success", "job_id": "7"}).job_id == 7


def test_an_event_carries_the_end_of_a_huge_error_log_only() -> None:
    """A failed job's 30 MB error log went whole into the event (Airflow stores it as next_kwargs)."""
    log = "ERROR first\n" + "x" * 30_000_000 + "\nERROR the decisive last line"
    event = WaitResult("failed", 4, "failure", "job 4 ended failure", log).to_event()
    assert len(json.dumps(event)) < 70_000
    assert event["last_error_log"].endswith("ERROR the decisive last line")
    assert event["last_error_log"].startswith("[the first 29,934,")


def test_watch_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="poll_interval"):
        JobWatch(1, poll_interval=0, clock=lambda: 0.0)
    with pytest.raises(ValueError, match="max_outage"):
        JobWatch(1, poll_interval=1, max_outage=-1, clock=lambda: 0.0)
    assert JobWatch(1, poll_interval=1, clock=lambda: 0.0).deadline == math.inf


def test_the_trigger_module_states_the_same_default_max_outage() -> None:
    """The trigger module repeats the figure (it may not import this module on the event loop)."""
    from analytics_provider.triggers import analytics as trigger_module

    assert trigger_module.DEFAULT_MAX_OUTAGE == DEFAULT_MAX_OUTAGE


def test_a_wait_and_a_call_back_off_by_one_rule() -> None:
    """``backoff``: the service's Retry-After, else doubling from the first wait up to a cap,
    jittered (a call's retries over the whole of it, a wait's looks over its upper half)."""
    from analytics_provider.api.call.retry import WaitBackoff, backoff
    from analytics_provider.api.wire.operations import OPERATIONS

    class Edges:
        def __init__(self, pick: str) -> None:
            self.pick = pick

        def uniform(self, low: float, high: float) -> float:
            return low if self.pick == "low" else high

    assert backoff(RateLimitExceedError("slow", retry_after=7.0), 3, 1.0, 60.0) == 7.0
    assert [backoff(None, n, 1.0, 60.0, rng=Edges("high")) for n in (1, 2, 3, 7, 8, 10_000)] == [1, 2, 4, 60, 60, 60]
    assert backoff(None, 3, 5.0, 60.0, low=0.5, rng=Edges("low")) == 10.0
    assert backoff(None, 3, 5.0, 60.0, rng=Edges("low")) == 0.0
    t = FakeTime()  # a wait in an outage pauses within that rule, never less than its interval
    run(t, lambda j, now: InternalServiceError("down", status=500) if now < 1100 else job(j, "success"))
    assert all(5.0 <= s <= MAX_BACKOFF for s in t.sleeps)
    assert isinstance(RetryPolicy().tenacity_kwargs(OPERATIONS["get_job"])["wait"], WaitBackoff)  # a call's
