"""Issue 8, cases 3, 4 and 5: unusable answers, unbounded texts and numbers, endless pages."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable

import pytest

from analytics_provider.exceptions import (
    MAX_TEXT,
    AnalyticsDeadlineExceeded,
    AnalyticsJobError,
    InternalServiceError,
    PaginationLoopError,
    RateLimitExceedError,
    UnexpectedResponseError,
)
from analytics_provider.hooks.async_client import AsyncAnalyticsClient
from hostile.server import Answer, Seen, always, in_turn

RUNNING = Answer(200, {"job": {"id": 7, "status": "running"}})
SUCCESS = Answer(200, {"job": {"id": 7, "status": "success"}})
LOGIN_PAGE = Answer(200, "<html><body>Please sign in to the proxy</body></html>", {"Content-Type": "text/html"})


# -- case 3: unusable answers ------------------------------------------------------------------------


@pytest.mark.parametrize("unusable", [Answer(200, b""), LOGIN_PAGE, Answer(200, {"job": {}}), Answer(200, [1])])
def test_an_unusable_answer_is_a_typed_error_never_a_job_state(hook, server, unusable) -> None:
    server.answer = always(unusable)
    with pytest.raises(AnalyticsJobError) as raised:  # the wait outlasted it for max_outage, then gave up
        hook.wait_for_job(7, poll_interval=1, timeout=600, max_outage=30)
    assert isinstance(raised.value.__cause__, UnexpectedResponseError)
    assert "200 UnexpectedResponse on GET /jobs/7" in str(raised.value)
    # the last look comes as the outage ends, or up to one interval later (every pause is at least one)
    assert re.search(r"could not be read for 3[01] s", str(raised.value)), str(raised.value)
    assert len(server.requests) > 1  # retried as a transient failure


def test_an_unusable_answer_is_retried_and_the_wait_goes_on(hook, server) -> None:
    server.answer = in_turn(Answer(200, b""), LOGIN_PAGE, SUCCESS)
    assert hook.wait_for_job(7, poll_interval=1, timeout=60).status == "success"


def test_the_error_quotes_a_bounded_excerpt_of_the_page(hook, server) -> None:
    server.answer = always(Answer(200, "<html>" + "x" * 100_000 + "</html>", {"Content-Type": "text/html"}))
    with pytest.raises(UnexpectedResponseError) as raised:
        hook.get_dashboard(1)
    text = str(raised.value)
    assert "not JSON (text/html, 100013 bytes): <html>xxx" in text and len(text) < 1000


async def test_the_async_client_reads_the_same_answers_the_same_way(server, connect, fake_async_time) -> None:
    server.answer = in_turn(Answer(200, b""), LOGIN_PAGE, RUNNING)
    async with AsyncAnalyticsClient("analytics_default") as client:
        assert (await client.call("get_job", 7))["status"] == "running"
        server.answer = always(LOGIN_PAGE)
        with pytest.raises(UnexpectedResponseError, match="not JSON"):
            await client.call("get_job", 7)


def test_the_sensor_leaves_an_unusable_answer_to_airflow_retries(server, connect) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    from analytics_provider.sensors.analytics import AnalyticsJobSensor

    server.answer = always(Answer(200, b""))
    assert AnalyticsJobSensor(task_id="wait", job_id=7).poke({}) is False  # transient: not yet
    sensor = AnalyticsJobSensor(task_id="wait", job_id=7, max_outage=0)
    with pytest.raises(AnalyticsJobError) as raised:  # an AirflowException, not AirflowFailException
        sensor.poke({})
    assert not isinstance(raised.value, AirflowFailException)
    assert isinstance(raised.value.__cause__, UnexpectedResponseError)


# -- case 4: unbounded texts and numbers ---------------------------------------------------------------

HUGE = Answer(500, {"type": "InternalHolisticsError", "message": "m" * 10_000_000})


def test_a_huge_error_message_is_cut_in_the_error_and_in_each_retry_line(hook, server, caplog) -> None:
    server.answer = always(HUGE)
    with caplog.at_level(logging.WARNING, logger="analytics_provider.api.call.retry"), pytest.raises(
        InternalServiceError
    ) as raised:
        hook.get_job(7)
    assert len(str(raised.value)) < 2 * MAX_TEXT + 200 and "characters in all]" in str(raised.value)
    retries = [r.getMessage() for r in caplog.records if "Retrying" in r.getMessage()]
    assert len(retries) == 4 and all(len(line) < 2 * MAX_TEXT + 200 for line in retries)


async def test_the_async_client_cuts_the_same_message(server, connect, fake_async_time) -> None:
    server.answer = always(HUGE)
    async with AsyncAnalyticsClient("analytics_default") as client:
        with pytest.raises(InternalServiceError) as raised:
            await client.call("get_job", 7)
    assert len(str(raised.value)) < 2 * MAX_TEXT + 200


@pytest.mark.parametrize(
    "reset", ["1e400", "inf", "nan", "-5", "999999999999999999999", "Tue, 01 Jan 9999 00:00:00 GMT"]
)
def test_an_absurd_reset_never_becomes_an_absurd_wait(hook, server, waits, reset) -> None:
    limits = {"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": reset}
    server.answer = always(Answer(200, {"job": {"id": 7, "status": "running"}}, limits))
    hook.get_job(7)
    with contextlib.suppress(RateLimitExceedError):  # a wait longer than the call may take is refused, not slept
        hook.get_job(7)
    assert all(0 <= s <= 300 for s in waits.sleeps), waits.sleeps


def test_a_day_long_reset_is_not_waited_out(hook, server, waits) -> None:
    limits = {"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": "86400"}
    server.answer = always(Answer(200, {"job": {"id": 7, "status": "running"}}, limits))
    hook.get_job(7)
    with pytest.raises(RateLimitExceedError, match="longer than this call may wait"):
        hook.get_job(7)
    assert waits.sleeps == [] and len(server.requests) == 1
    with pytest.raises(AnalyticsDeadlineExceeded, match="past the deadline"):
        hook.call("get_job", 7, deadline=waits() + 3)
    assert waits.sleeps == [] and len(server.requests) == 1


async def test_the_async_client_holds_the_same_bounds(server, connect, fake_async_time) -> None:
    limits = {"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": "86400"}
    server.answer = always(Answer(200, {"job": {"id": 7, "status": "running"}}, limits))
    async with AsyncAnalyticsClient("analytics_default") as client:
        await client.call("get_job", 7)
        with pytest.raises(AnalyticsDeadlineExceeded):  # spent for the capped hour: past a 2 s deadline
            await client.call("get_job", 7, deadline=fake_async_time() + 2)
    assert fake_async_time.sleeps == [] and len(server.requests) == 1


def test_a_429_with_a_day_long_retry_after_is_capped(hook, server, waits) -> None:
    server.answer = in_turn(Answer(429, {"message": "slow down"}, {"Retry-After": "86400"}), RUNNING)
    with pytest.raises(RateLimitExceedError):
        hook.get_job(7)  # an hour (the cap) is more than the call's 300 s: no retry, no sleep
    assert waits.sleeps == [] and len(server.requests) == 1
    with pytest.raises(RateLimitExceedError, match="longer than this call may wait"):
        hook.get_job(7)  # the quota learnt the 429: the next call is not sent into it
    assert waits.sleeps == [] and len(server.requests) == 1


@pytest.mark.parametrize("retry_after", ["1e400", "inf", "-1", "1.5e3"])
def test_a_retry_after_that_is_neither_seconds_nor_a_date_is_ignored(hook, server, waits, retry_after) -> None:
    server.answer = in_turn(Answer(429, {"message": "slow down"}, {"Retry-After": retry_after}), RUNNING)
    assert hook.get_job(7)["status"] == "running"  # retried with the policy's own backoff
    assert len(waits.sleeps) >= 1 and all(s <= 60 for s in waits.sleeps), waits.sleeps


# -- case 5: pagination that never ends ------------------------------------------------------------------


def endless_then_done(page: Answer, pages: int = 20) -> Callable[[Seen], Answer]:
    """``page`` again and again, then (a client that never stopped looping) a last page."""

    served = [0]

    def answer(seen: Seen) -> Answer:
        served[0] += 1
        if served[0] > pages:
            return Answer(200, {"dashboards": [], "cursors": {"next": None}})
        return page

    return answer


def test_a_repeated_cursor_ends_the_walk_with_an_error_naming_the_operation(hook, server) -> None:
    server.answer = endless_then_done(Answer(200, {"dashboards": [{"id": 1}], "cursors": {"next": "same"}}))
    with pytest.raises(PaginationLoopError, match="list_dashboards answered the cursor 'same' a second time"):
        list(hook.list_dashboards())
    assert len(server.requests) == 2


def test_a_cycle_of_cursors_is_caught_too(hook, server) -> None:
    pages = iter(["b", "c", "a", "b"])
    server.answer = lambda seen: Answer(200, {"dashboards": [{"id": 1}], "cursors": {"next": next(pages, None)}})
    with pytest.raises(PaginationLoopError):
        list(hook.list_dashboards(after="a"))
    assert len(server.requests) == 3
