"""The shared quota: one probe first, turns spaced over the frame, FIFO, a 429 respected."""

from __future__ import annotations

import asyncio

import pytest

from analytics_provider.api import budget as budget_module
from analytics_provider.api.budget import QuotaBudget


class FakeTime:
    def __init__(self) -> None:
        self.now = 1_000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(budget_module.asyncio, "sleep", fake.sleep)
    return fake


def headers(limit: int, remaining: int, reset: float) -> dict[str, str]:
    return {"RateLimit-Limit": str(limit), "RateLimit-Remaining": str(remaining), "RateLimit-Reset": str(reset)}


async def test_unknown_quota_lets_one_probe_through_first(clock) -> None:
    budget = QuotaBudget(clock=clock)
    order: list[str] = []

    async def caller(name: str) -> None:
        await budget.acquire()
        order.append(name)

    await budget.acquire()  # the probe
    waiting = asyncio.ensure_future(caller("second"))
    await asyncio.sleep(0)
    assert order == []  # held until the probe's answer tells the quota
    budget.answered(headers(10, 9, 10))
    await waiting
    assert order == ["second"]


async def test_turns_are_spaced_so_the_quota_lasts_the_frame(clock) -> None:
    budget = QuotaBudget(clock=clock)
    await budget.acquire()
    budget.answered(headers(10, 9, 9))  # 9 left for 9 seconds: one a second
    for _ in range(9):
        await budget.acquire()
    assert sum(clock.sleeps) == pytest.approx(8.0)
    assert all(s == pytest.approx(1.0) for s in clock.sleeps)


async def test_a_spent_quota_waits_for_the_reset_then_refills(clock) -> None:
    budget = QuotaBudget(clock=clock)
    await budget.acquire()
    budget.answered(headers(3, 0, 5))
    await budget.acquire()
    assert clock.sleeps == [pytest.approx(5.0)]
    assert budget.remaining == 2  # a new frame: the limit, less this turn


async def test_a_429_holds_everyone_until_retry_after(clock) -> None:
    budget = QuotaBudget(clock=clock)
    await budget.acquire()
    budget.answered(headers(100, 50, 30))
    budget.exhausted(retry_after=4)
    await budget.acquire()
    assert clock.sleeps[0] == pytest.approx(4.0)


async def test_turns_are_first_come_first_served(clock) -> None:
    budget = QuotaBudget(clock=clock)
    await budget.acquire()
    budget.answered(headers(5, 2, 2))
    order: list[int] = []

    async def caller(n: int) -> None:
        await budget.acquire()
        order.append(n)

    await asyncio.gather(*(caller(n) for n in range(6)))
    assert order == list(range(6))


async def test_same_frame_answers_keep_the_stricter_count(clock) -> None:
    budget = QuotaBudget(clock=clock)
    await budget.acquire()
    budget.answered(headers(100, 50, 30))
    budget.answered(headers(100, 70, 29.5))  # a late answer from earlier in the frame
    assert budget.remaining == 50
    budget.answered(headers(100, 99, 60))  # the reset moved on: a new frame
    assert budget.remaining == 99
