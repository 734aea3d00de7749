"""AsyncAnalyticsClient on its own, with no network: the shared session and its release, the
settings cache, the shared quota, and a first attempt that needs no retry machinery.

A fake session stands in for aiohttp's (the wire itself is tested against real servers in
``tests/hostile`` and against the emulator in ``tests/integration``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest
import tenacity

from analytics_provider.api.call.retry import RetryPolicy
from analytics_provider.exceptions import RateLimitExceedError
from analytics_provider.hooks import async_client
from analytics_provider.hooks.async_client import AsyncAnalyticsClient

KEY = "async-unit-key-0123456789"


class FakeResponse:
    def __init__(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        self.status = status
        self._body = json.dumps(body).encode()
        self.headers = dict(headers or {})
        self.url = ""
        self.content = self

    async def read(self, limit: int = -1) -> bytes:  # a stream: what was read is gone
        piece, self._body = (self._body, b"") if limit < 0 else (self._body[:limit], self._body[limit:])
        return piece

    async def __aenter__(self) -> FakeResponse:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        pass


class FakeSession:
    """Answers from a list, records each request; ``closed`` as aiohttp's."""

    def __init__(self, *answers: FakeResponse) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[str, str, dict[str, Any]]] = []
        self.closed = False

    async def request(self, method: str, url: str, **kwargs: Any) -> FakeResponse:
        self.sent.append((method, url, kwargs))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def connection(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The connection, as the async lookup returns it; the ids looked up are recorded."""
    import airflow.providers.common.compat.connection as compat_connection
    from airflow.providers.common.compat.sdk import Connection

    looked_up: list[str] = []

    async def get_async_connection(conn_id: str, hook: object = None) -> Connection:
        looked_up.append(conn_id)
        await asyncio.sleep(0)  # a real lookup yields: concurrent callers meet here
        return Connection(conn_id=conn_id, conn_type="analytics", password=KEY, extra=json.dumps({"region": "eu"}))

    monkeypatch.setattr(compat_connection, "get_async_connection", get_async_connection)
    return looked_up


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1_000.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(AsyncAnalyticsClient, "clock", staticmethod(lambda: now[0]))
    monkeypatch.setattr(AsyncAnalyticsClient, "sleep", staticmethod(sleep))
    return slept


def job(status: str = "running", headers: Mapping[str, str] | None = None) -> FakeResponse:
    return FakeResponse(200, {"job": {"id": 7, "status": status}}, headers)


async def test_clients_of_one_loop_share_one_session_and_the_last_one_out_closes_it() -> None:
    async with AsyncAnalyticsClient("a") as first, AsyncAnalyticsClient("b") as second:
        session = first._require().session
        assert session is second._require().session and not session.closed  # type: ignore[union-attr]
        async with AsyncAnalyticsClient("c") as third:
            assert third._require().session is session
        assert not session.closed  # type: ignore[union-attr]
    assert session.closed  # type: ignore[union-attr]
    async with AsyncAnalyticsClient("a") as again:
        assert again._require().session is not session  # a fresh one after the release


def test_each_event_loop_gets_its_own_session() -> None:
    async def session_of_this_loop() -> object:
        async with AsyncAnalyticsClient("a") as client:
            return client._require().session

    first = asyncio.run(session_of_this_loop())
    second = asyncio.run(session_of_this_loop())
    assert first is not second


async def test_the_connection_is_read_once_for_concurrent_waits_then_again_after_the_ttl(connection, clock) -> None:
    async with AsyncAnalyticsClient("analytics_default") as one, AsyncAnalyticsClient("analytics_default") as two:
        settings = await asyncio.gather(*(c.settings() for c in (one, two, one, two)))
        assert connection == ["analytics_default"] and len({id(s) for s in settings}) == 1
        await one.sleep(async_client.SETTINGS_TTL + 1)  # the fixture's clock moves by the sleep
        await one.settings()
        assert connection == ["analytics_default", "analytics_default"]


async def test_options_override_the_connection_for_this_client_only(connection) -> None:
    async with AsyncAnalyticsClient("analytics_default", timeout=2.5) as short, \
            AsyncAnalyticsClient("analytics_default") as plain:
        assert (await short.settings()).read_timeout == 2.5
        assert (await plain.settings()).read_timeout == 60.0


async def test_the_key_goes_in_the_header_to_the_service_only(connection) -> None:
    async with AsyncAnalyticsClient("analytics_default") as client:
        client._require().session = fake = FakeSession(job())  # type: ignore[assignment]
        await client.call("get_job", 7)
    method, url, kwargs = fake.sent[0]
    assert (method, url) == ("GET", "https://eu.holistics.io/api/v2/jobs/7")
    assert kwargs["headers"] == {"X-Holistics-Key": KEY} and KEY not in url
    assert kwargs["allow_redirects"] is False


async def test_a_first_attempt_that_succeeds_builds_no_retry_machinery(connection, monkeypatch) -> None:
    def no_tenacity(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the first attempt runs outside tenacity")

    monkeypatch.setattr(tenacity, "Retrying", no_tenacity)
    async with AsyncAnalyticsClient("analytics_default") as client:
        client._require().session = FakeSession(job())  # type: ignore[assignment]
        assert (await client.call("get_job", 7))["status"] == "running"


async def test_a_failed_first_attempt_counts_as_the_policys_first(connection, clock) -> None:
    down = FakeResponse(503, {"type": "MaintenanceError", "message": "upgrading"}, {"Retry-After": "3"})
    async with AsyncAnalyticsClient("analytics_default", RetryPolicy(max_attempts=3)) as client:
        client._require().session = fake = FakeSession(down, down, job())  # type: ignore[assignment]
        assert (await client.call("get_job", 7))["status"] == "running"
    assert len(fake.sent) == 3 and clock == [3.0, 3.0]  # Retry-After of the first failure honoured


async def test_clients_of_one_connection_share_the_quota_of_an_endpoint(connection, clock) -> None:
    spent = {"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": "30"}
    async with AsyncAnalyticsClient("analytics_default") as one, AsyncAnalyticsClient("analytics_default") as two:
        one._require().session = fake = FakeSession(job(headers=spent), job())  # type: ignore[assignment]
        assert one.quota("GET /jobs/{id}") is two.quota("GET /jobs/{id}")
        assert one.quota("GET /jobs/{id}") is not one.quota("GET /dashboards/{id}")
        await one.call("get_job", 7)
        await two.call("get_job", 7)  # waits for the reset the first answer reported
    assert clock == [30.0] and len(fake.sent) == 2


async def test_a_429_holds_the_shared_quota_until_retry_after(connection, clock) -> None:
    too_many = FakeResponse(429, {"type": "RateLimitExceedError", "message": "slow"}, {"Retry-After": "12"})
    async with AsyncAnalyticsClient("analytics_default", RetryPolicy(max_attempts=1)) as client:
        client._require().session = FakeSession(too_many, job())  # type: ignore[assignment]
        with pytest.raises(RateLimitExceedError):
            await client.call("get_job", 7)
        await client.call("get_job", 7)
    assert clock == [12.0]


async def test_outside_async_with_the_client_says_how_to_use_it() -> None:
    with pytest.raises(RuntimeError, match="async with"):
        await AsyncAnalyticsClient("a").call("get_job", 7)


def test_what_an_event_loop_learnt_ends_with_the_loop() -> None:
    """A refusal of List Jobs (and the rest the loop's clients share) is the loop's: the next loop
    starts afresh, and nothing needs forgetting between two tests."""
    from analytics_provider.hooks.async_client import LoopShared

    async def refuse_here() -> dict[str, str]:
        shared = LoopShared.of_running_loop()
        seen = dict(shared.refusals)
        shared.refusals["analytics_default"] = "refused on this loop"
        assert LoopShared.of_running_loop() is shared
        return seen

    assert asyncio.run(refuse_here()) == {}
    assert asyncio.run(refuse_here()) == {}
