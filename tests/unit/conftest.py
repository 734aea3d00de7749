from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
import requests_mock as rm

if TYPE_CHECKING:
    from analytics_provider.hooks.analytics import AnalyticsHook

BASE = "https://eu.holistics.io/api/v2"
KEY = "unit-test-key-0123456789"


@pytest.fixture
def conn_env(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {"conn_type": "analytics", "password": KEY, "extra": {"region": "eu"}}
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(conn))


class FakeTime:
    """A clock that moves only when something sleeps on it; the sleeps are recorded."""

    def __init__(self, sleeps: list[float]) -> None:
        self.now = 1_000.0
        self.sleeps = sleeps

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def hook(conn_env: None, sleeps: list[float]) -> AnalyticsHook:
    from analytics_provider.hooks.analytics import AnalyticsHook  # Airflow's BaseHook: not at collection

    hook = AnalyticsHook()
    fake = FakeTime(sleeps)
    hook.sleep = fake.sleep  # retries and quota waits are recorded, not slept
    hook.clock = fake
    return hook


@pytest.fixture
def mock() -> rm.Mocker:
    with rm.Mocker() as mocker:
        yield mocker
