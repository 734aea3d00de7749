from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from analytics_provider.hooks.analytics import AnalyticsHook
from hostile.server import HostileServer

KEY = "hostile-key-5d41402abc4b2a76b9719d911017c592"


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with HostileServer() as running:
        yield running


@pytest.fixture
def connect(monkeypatch: pytest.MonkeyPatch, server: HostileServer) -> Callable[..., None]:
    """Point ``analytics_default`` (or ``conn_id``) at the server, with a key and extras."""

    def set_connection(password: str = KEY, conn_id: str = "analytics_default", **extra: object) -> None:
        conn = {"conn_type": "analytics", "password": password,
                "extra": {"base_url": server.base_url, "timeout": 5, "connect_timeout": 5, **extra}}
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))

    set_connection()
    return set_connection


class Recorder:
    """The hook's waits, recorded; time moves only by them (the server itself runs in real time)."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


@pytest.fixture
def waits() -> Recorder:
    return Recorder()


@pytest.fixture
def hook(connect: Callable[..., None], waits: Recorder) -> Iterator[AnalyticsHook]:
    made = AnalyticsHook()
    made.sleep = waits.sleep
    made.clock = waits
    yield made
    made.close()


@pytest.fixture
def fake_async_time(monkeypatch: pytest.MonkeyPatch, waits: Recorder) -> Recorder:
    """The async client's waits on the same recorder (class attributes: budgets are shared)."""
    from analytics_provider.hooks.async_client import AsyncAnalyticsClient

    monkeypatch.setattr(AsyncAnalyticsClient, "sleep", staticmethod(waits.asleep))
    monkeypatch.setattr(AsyncAnalyticsClient, "clock", staticmethod(waits))
    return waits


GOOD = b"yesterday's complete file\n"


@pytest.fixture
def target(tmp_path):
    """A destination that holds yesterday's good file (a download must leave it alone or replace it whole)."""
    path = tmp_path / "out.csv"
    path.write_bytes(GOOD)
    return path


def leaves_only_the_good_file(target) -> bool:
    return target.read_bytes() == GOOD and [p.name for p in target.parent.iterdir()] == [target.name]
