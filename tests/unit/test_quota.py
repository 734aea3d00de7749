"""The shared quota: one probe first, turns spaced over the frame with a reserve, FIFO, a 429
respected, a frame re-learnt rather than assumed, and no wait past a caller's deadline.

The budgets run on a real event loop whose clock is virtual (:mod:`unit.virtual_time`): tasks,
locks and timers behave as on any loop, so a caller that should be held really is, and one that
should pass really does; only the waiting costs nothing.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from analytics_provider.api.call.quota import Quota, QuotaState
from analytics_provider.api.call.retry import RetryPolicy
from analytics_provider.exceptions import AnalyticsDeadlineExceeded
from analytics_provider.hooks.async_client import AsyncAnalyticsClient
from analytics_provider.hooks.sync_client import AnalyticsClient
from unit.virtual_time import run


class Clock:
    """The running loop's (virtual) clock, and the sleeps taken on it."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return asyncio.get_running_loop().time()

    @property
    def now(self) -> float:
        return self()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await asyncio.sleep(seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


class OnLoop:
    """A quota of the triggerer's kind, its turns carried out by the async driver."""

    def __init__(self, clock: Clock, probe_timeout: float) -> None:
        self.quota = Quota(clock=clock, probe_timeout=probe_timeout, event=asyncio.Event)
        self.driver = AsyncAnalyticsClient("quota-test")
        self.driver.sleep = clock.sleep  # type: ignore[method-assign]

    async def acquire(self, check: Any = None) -> None:
        await self.driver.run(self.quota.turn(check))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.quota, name)


def budget_on(clock: Clock, probe_timeout: float = 5.0) -> OnLoop:
    return OnLoop(clock, probe_timeout)


def acquire(quota: Quota, sleep: Callable[[float], Any]) -> None:
    """A turn of the hook's kind, carried out by the sync driver."""
    driver = AnalyticsClient(lambda: None, RetryPolicy(), clock=time.monotonic, sleep=sleep)  # type: ignore[arg-type,return-value]
    driver.run(quota.turn())


def headers(limit: int, remaining: int, reset: float) -> dict[str, str]:
    return {"RateLimit-Limit": str(limit), "RateLimit-Remaining": str(remaining), "RateLimit-Reset": str(reset)}


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_unknown_quota_lets_one_probe_through_and_holds_the_rest(clock) -> None:
    async def scenario() -> None:
        budget = budget_on(clock)
        passed: list[str] = []

        async def caller(name: str) -> None:
            await budget.acquire()
            passed.append(name)

        await budget.acquire()  # the probe
        waiting = [asyncio.ensure_future(caller(n)) for n in ("second", "third")]
        await settle()
        assert passed == []  # held until the probe's answer tells the quota
        budget.answered(headers(100, 99, 60))
        await asyncio.gather(*waiting)
        assert passed == ["second", "third"]

    run(scenario())


def test_a_probe_that_never_answers_lets_the_next_caller_probe(clock) -> None:
    async def scenario() -> None:
        budget = budget_on(clock, probe_timeout=0.01)
        await budget.acquire()  # a probe whose answer never comes (and answered() is never called)
        await asyncio.wait_for(budget.acquire(), 5)  # the next caller is let through as the new probe
        assert budget.state.probe_out

    run(scenario())


def test_turns_are_spaced_so_the_quota_lasts_the_frame(clock) -> None:
    async def scenario() -> None:
        budget = budget_on(clock)
        await budget.acquire()
        budget.answered(headers(10, 10, 9))  # 10 left for 9 s, one kept in reserve: one a second
        for _ in range(9):
            await budget.acquire()
        assert sum(clock.sleeps) == pytest.approx(8.0)
        assert all(s == pytest.approx(1.0) for s in clock.sleeps)

    run(scenario())


def test_a_reserve_of_the_limit_is_never_spent(clock) -> None:
    async def scenario() -> None:
        budget = budget_on(clock)
        await budget.acquire()
        budget.answered(headers(100, 17, 30))  # a reserve of 15 of 100: two turns left this frame
        await budget.acquire()
        await budget.acquire()
        assert clock.now < 1_030.0
        await budget.acquire()  # the third waits for the frame's end, then probes the new frame
        assert clock.now >= 1_030.0
        assert budget.state.probe_out

    run(scenario())


def test_a_spent_quota_waits_for_the_reset_then_learns_the_new_frame(clock) -> None:
    async def scenario() -> None:
        budget = budget_on(clock)
        await budget.acquire()
        budget.answered(headers(3, 0, 5))
        await budget.acquire()
        assert clock.sleeps == [pytest.approx(5.0)]
        assert budget.remaining is None and budget.state.probe_out  # not assumed refilled: learnt from one answer
        held = asyncio.ensure_future(budget.acquire())
        await settle()
        assert not held.done()
        budget.answered(headers(3, 2, 5))
        await held
        assert budget.remaining == 1

    run(scenario())


def test_a_429_holds_everyone_until_retry_after(clock) -> None:
    async def scenario() -> None:
        budget = budget_on(clock)
        await budget.acquire()
        budget.answered(headers(100, 50, 30))
        budget.exhausted(retry_after=4)
        await budget.acquire()
        assert clock.sleeps[0] == pytest.approx(4.0)

    run(scenario())


def test_turns_are_first_come_first_served(clock) -> None:
    async def scenario() -> None:
        budget = budget_on(clock)
        await budget.acquire()
        budget.answered(headers(5, 2, 2))
        order: list[int] = []

        async def caller(n: int) -> None:
            await budget.acquire()
            order.append(n)

        await asyncio.gather(*(caller(n) for n in range(6)))
        assert order == list(range(6))

    run(scenario())


def test_same_frame_answers_keep_the_stricter_count(clock) -> None:
    async def scenario() -> None:
        budget = budget_on(clock)
        await budget.acquire()
        budget.answered(headers(100, 50, 30))
        budget.answered(headers(100, 70, 29))  # a late answer from earlier in the frame
        assert budget.remaining == 50
        budget.answered(headers(100, 99, 60))  # the reset moved on: a new frame
        assert budget.remaining == 99

    run(scenario())


def test_a_wait_past_the_callers_deadline_is_refused_without_sleeping_or_spending(clock) -> None:
    async def scenario() -> None:
        budget = budget_on(clock)
        await budget.acquire()
        budget.answered(headers(100, 0, 86_400))  # spent for a day (capped at an hour)

        def two_seconds_left(delay: float) -> float:
            if delay >= 2.0:
                raise AnalyticsDeadlineExceeded(f"would wait {delay:.0f} s")
            return 2.0 - delay

        with pytest.raises(AnalyticsDeadlineExceeded, match="would wait 3600 s"):
            await budget.acquire(two_seconds_left)
        assert clock.sleeps == [] and budget.remaining == 0

    run(scenario())


def test_a_paced_turn_past_the_deadline_is_not_counted(clock) -> None:
    async def scenario() -> None:
        budget = budget_on(clock)
        await budget.acquire()
        budget.answered(headers(10, 2, 10))  # two turns over 10 s: the second in 5 s

        def one_second_left(delay: float) -> float:
            if delay >= 1.0:
                raise AnalyticsDeadlineExceeded("too late")
            return 1.0 - delay

        await budget.acquire(one_second_left)
        with pytest.raises(AnalyticsDeadlineExceeded):
            await budget.acquire(one_second_left)
        assert budget.remaining == 1 and clock.sleeps == []

    run(scenario())


def test_the_state_reads_only_finite_capped_headers() -> None:
    state = QuotaState(clock=lambda: 0.0)
    state.answered({"RateLimit-Limit": "1e400", "RateLimit-Remaining": "1e400", "RateLimit-Reset": "1e400"})
    assert state.remaining is None  # an infinite count is no count
    state.answered(headers(10, 0, 10**12))
    assert state.reset_at is not None and state.reset_at <= 3600.0


def test_threads_wait_behind_the_probe_of_the_sync_quota() -> None:
    quota = Quota(probe_timeout=5.0, pace_from=0.5)
    acquire(quota, lambda s: None)  # this thread is the probe
    passed = threading.Event()

    def other() -> None:
        acquire(quota, lambda s: None)
        passed.set()

    thread = threading.Thread(target=other)
    thread.start()
    assert not passed.wait(0.2)  # held while the probe's answer is out
    quota.answered(headers(100, 99, 60))
    assert passed.wait(5)
    thread.join()


def test_the_sync_quota_waits_out_a_429_on_its_own_clock() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    quota = Quota(pace_from=0.5, clock=lambda: now[0])
    acquire(quota, sleep)
    quota.answered(headers(100, 50, 30))
    quota.exhausted(7.0)
    acquire(quota, sleep)  # waits the 7 s, then probes the new frame
    assert slept == [pytest.approx(7.0)] and quota.state.probe_out


def test_a_sleep_that_does_not_move_the_clock_cannot_trap_a_caller() -> None:
    quota = Quota(pace_from=0.5, clock=lambda: 0.0)  # a frozen clock, as in a test that only records sleeps
    slept: list[float] = []
    acquire(quota, slept.append)
    quota.answered(headers(100, 0, 30))
    acquire(quota, slept.append)  # waits the reset out once, then probes the new frame
    assert slept == [30.0] and quota.state.probe_out


def test_a_process_learns_its_share_of_the_key_and_spends_only_that() -> None:
    now = [0.0]
    state = QuotaState(clock=lambda: now[0])
    state.claim()  # the probe
    state.answered(headers(100, 90, 60))
    for count in (87, 84, 81, 78):  # between two of our answers, two requests of other processes
        assert state.claim().kind == "go"
        state.answered(headers(100, count, 60))
    assert state.share == pytest.approx(1 / 3)
    first, second = state.claim().delay, state.claim().delay
    assert second - first == pytest.approx((60 - first) / ((78 - 15) / 3))  # our third of what may be spent


def test_a_process_alone_keeps_the_whole_quota() -> None:
    state = QuotaState(clock=lambda: 0.0)
    state.claim()
    state.answered(headers(100, 90, 60))
    for count in (89, 88, 87, 86, 85):
        state.claim()
        state.answered(headers(100, count, 60))
    assert state.share == 1.0
