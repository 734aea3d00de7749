"""Issue 7, the transport's side of "waits that hold their deadline": no request, quota wait or
backoff of a call goes past its ``deadline``; a trickling or stalled server included. The tests
about real time use the real clock and a server far slower than the deadline: the call must end
while the server is still answering (no bound on how fast a busy machine gets there); the others
record the waits.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from analytics_provider.api.call.retry import RetryPolicy, is_retryable, is_transient
from analytics_provider.api.wire.operations import operation
from analytics_provider.exceptions import (
    AnalyticsDeadlineExceeded,
    AnalyticsParameterError,
    AnalyticsTransportError,
    IncompleteDownloadError,
    InternalServiceError,
    MaintenanceError,
    NotFoundError,
    PaginationLoopError,
    RateLimitExceedError,
    UnexpectedResponseError,
)
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.hooks.async_client import AsyncAnalyticsClient
from hostile.server import Answer, always, in_turn

RUNNING = Answer(200, {"job": {"id": 7, "status": "running"}})
TRICKLE = Answer(200, {"job": {"id": 7, "status": "running", "padding": "x" * 200}}, trickle=0.1)  # 25 s whole
STALL = Answer(200, {"job": {"id": 7, "status": "running"}}, delay=30.0)
DOWN = Answer(503, {"type": "MaintenanceError", "message": "upgrading"})


def _dripped(body: bytes, every: float) -> Any:
    for i in range(len(body)):
        time.sleep(every)
        yield body[i:i + 1]


# a chunked answer of one byte per chunk, a chunk every 0.1 s (25 s whole): each read returns at once
DRIP = Answer(200, chunked=True, stream=lambda: _dripped(TRICKLE.payload(), 0.1))


# Far shorter than the slow answers (25 and 30 s), and time enough for a loaded machine to send the
# request (after a first call has read the connection and made the session: at load 25 on two cores,
# a first call's 1 s had passed before its request went out).
DEADLINE = 5.0


@pytest.mark.parametrize("answer", [TRICKLE, STALL, DRIP], ids=["trickle", "stall", "chunked-drip"])
def test_a_slow_answer_cannot_hold_a_call_past_its_deadline(connect, server, answer) -> None:
    connect(timeout=60)  # neither timeout ends the call: only its deadline can
    hook = AnalyticsHook()
    server.answer = always(RUNNING)
    hook.call("get_job", 7)
    server.answer = always(answer)
    with pytest.raises(AnalyticsDeadlineExceeded):
        hook.call("get_job", 7, deadline=time.monotonic() + DEADLINE)
    assert len(server.requests) == 2 and server.answers_sent == 1  # cut while the answer was coming


@pytest.mark.parametrize("answer", [TRICKLE, STALL, DRIP], ids=["trickle", "stall", "chunked-drip"])
async def test_the_async_client_holds_the_same_deadline(connect, server, answer) -> None:
    connect(timeout=60)
    async with AsyncAnalyticsClient("analytics_default") as client:
        server.answer = always(RUNNING)
        await client.call("get_job", 7)
        server.answer = always(answer)
        with pytest.raises(AnalyticsDeadlineExceeded):
            await client.call("get_job", 7, deadline=time.monotonic() + DEADLINE)
    assert len(server.requests) == 2 and server.answers_sent == 1


def test_backoff_never_sleeps_past_the_deadline(hook, server, waits, monkeypatch) -> None:
    # Each backoff at the top of its jitter (1, 2, 4, 8 s; the next, 16 s, would pass the deadline):
    # the last try then has 5 s of real time for its answer. A jittered wait can leave the last try
    # a few milliseconds, and a busy machine's answer then reads as a timeout, not the 503.
    monkeypatch.setattr("tenacity.wait.random.uniform", lambda low, high: high)
    server.answer = always(DOWN)
    deadline = waits() + 20
    with pytest.raises(AnalyticsDeadlineExceeded) as raised:
        hook.call("get_job", 7, deadline=deadline, retry_policy=RetryPolicy(max_attempts=None, max_elapsed=600))
    assert waits() <= deadline and waits.sleeps == [1.0, 2.0, 4.0, 8.0] and len(server.requests) == 5
    assert isinstance(raised.value.last_error, MaintenanceError)
    assert "upgrading" in str(raised.value)


def test_a_retry_after_past_the_deadline_is_not_slept(hook, server, waits) -> None:
    server.answer = always(Answer(503, {"message": "back soon"}, {"Retry-After": "30"}))
    with pytest.raises(AnalyticsDeadlineExceeded, match="the next retry would come after the deadline"):
        hook.call("get_job", 7, deadline=waits() + 10)
    assert waits.sleeps == [] and len(server.requests) == 1


async def test_the_async_client_backs_off_within_the_deadline(server, connect, fake_async_time) -> None:
    server.answer = always(Answer(503, {"message": "back soon"}, {"Retry-After": "4"}))
    deadline = fake_async_time() + 10
    async with AsyncAnalyticsClient("analytics_default") as client:
        with pytest.raises(AnalyticsDeadlineExceeded):
            await client.call("get_job", 7, deadline=deadline, retry_policy=RetryPolicy(max_attempts=None))
    assert fake_async_time.sleeps == [4.0, 4.0] and len(server.requests) == 3


def test_no_time_left_raises_without_a_request(hook, server, waits) -> None:
    with pytest.raises(AnalyticsDeadlineExceeded, match="before the request could be sent"):
        hook.call("get_job", 7, deadline=waits() - 1)
    assert server.requests == []


def test_an_unbounded_count_retries_an_outage_for_a_time(hook, server, waits) -> None:
    server.answer = in_turn(*([DOWN] * 30), RUNNING)
    policy = RetryPolicy(max_attempts=None, max_elapsed=3600, max_wait=5)
    assert hook.call("get_job", 7, retry_policy=policy)["status"] == "running"
    assert len(server.requests) == 31 and all(s <= 5 for s in waits.sleeps)


async def test_the_async_client_takes_the_same_unbounded_policy(server, connect, fake_async_time) -> None:
    server.answer = in_turn(*([DOWN] * 12), RUNNING)
    async with AsyncAnalyticsClient("analytics_default") as client:
        job = await client.call("get_job", 7, retry_policy=RetryPolicy(max_attempts=None, max_elapsed=3600))
    assert job["status"] == "running" and len(server.requests) == 13


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (AnalyticsTransportError("refused", sent=False), True),
        (AnalyticsTransportError("dropped"), True),
        (IncompleteDownloadError("short"), True),
        (UnexpectedResponseError("login page", status=200), True),
        (RateLimitExceedError("slow", status=429), True),
        (InternalServiceError("oops", status=500), True),
        (MaintenanceError("upgrading", status=409), True),
        (NotFoundError("gone", status=404), False),
        (PaginationLoopError("loop"), False),
        (AnalyticsDeadlineExceeded("late"), False),
        (AnalyticsParameterError("bad"), False),
    ],
)
def test_one_predicate_tells_transient_from_final(error, transient) -> None:
    assert is_transient(error) is transient
    assert is_retryable(error, operation("get_job")) is transient


def test_a_create_is_not_resent_after_an_unusable_answer() -> None:
    create = operation("create_data_schedule")
    assert not is_retryable(UnexpectedResponseError("login page", status=200), create)
    assert is_retryable(AnalyticsTransportError("refused", sent=False), create)


def test_with_a_deadline_a_quota_wait_may_outlast_the_retry_time(hook, server, waits) -> None:
    limits = {"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": "400"}
    server.answer = always(Answer(200, {"job": {"id": 7, "status": "running"}}, limits))
    hook.get_job(7)
    hook.call("get_job", 7, deadline=waits() + 3600)  # 400 s > max_elapsed (300), but inside the deadline
    assert waits.sleeps == [400.0] and len(server.requests) == 2


@pytest.mark.parametrize("transport", ["worker", "triggerer"])
async def test_without_a_deadline_an_answer_comes_whole_within_its_two_timeouts(connect, server, transport) -> None:
    """A chunk every 0.5 s, within the 2 s read timeout every time, on a connection the server closes
    after the answer (``Connection: close``: http.client then drops the socket the worker bounds each
    read with): each attempt still ends by the connect and read timeouts together (3 s), not when the
    10 s drip does. The worker read it whole (found by an attack on issue 46, with a raw-socket server
    that dripped this way)."""
    connect(timeout=2, connect_timeout=1)
    drip = b'{"job": {"id": 7}}  '  # 20 bytes, 10 s
    server.answer = always(Answer(200, chunked=True, headers={"Connection": "close"},
                                  stream=lambda: _dripped(drip, 0.5)))
    policy = RetryPolicy(max_attempts=2, initial_wait=0.1, max_wait=0.1)
    with pytest.raises(AnalyticsTransportError, match=r"did not come whole in time|Timeout"):
        if transport == "worker":
            AnalyticsHook().call("get_job", 7, retry_policy=policy)
        else:
            async with AsyncAnalyticsClient("analytics_default") as client:
                await client.call("get_job", 7, retry_policy=policy)
    assert len(server.requests) == 2 and server.answers_sent == 0  # retried, each attempt cut mid-answer
