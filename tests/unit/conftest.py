from __future__ import annotations

import json

import pytest
import requests_mock as rm

from analytics_provider.hooks.analytics import AnalyticsHook

BASE = "https://eu.holistics.io/api/v2"
KEY = "unit-test-key-0123456789"


@pytest.fixture
def conn_env(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {"conn_type": "analytics", "password": KEY, "extra": {"region": "eu"}}
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(conn))


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def hook(conn_env: None, sleeps: list[float]) -> AnalyticsHook:
    hook = AnalyticsHook()
    hook.sleep = sleeps.append  # retries and quota waits are recorded, not slept
    return hook


@pytest.fixture
def mock() -> rm.Mocker:
    with rm.Mocker() as mocker:
        yield mocker
