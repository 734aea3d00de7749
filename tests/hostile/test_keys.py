"""Issue 8, case 1: the key never leaks, whatever the connection holds or the server answers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from analytics_provider.api.call.settings import ConnectionConfigError
from analytics_provider.exceptions import AnalyticsApiError
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.hooks.async_client import AsyncAnalyticsClient
from hostile.conftest import KEY
from hostile.server import Answer, always

ME = Answer(200, {"user": {"email": "me@example.com", "role": "admin"}})


def pieces(secret: str, size: int = 6) -> list[str]:
    return [secret[i : i + size] for i in range(0, len(secret) - size + 1)]


def assert_no_part_of(secret: str, text: str) -> None:
    assert not any(piece in text for piece in pieces(secret)), text


@pytest.mark.parametrize("saved", [KEY + "\n", f"  {KEY}\r\n", f"\t{KEY} "])
def test_a_key_saved_with_surrounding_whitespace_is_sent_stripped(server, connect, saved) -> None:
    connect(password=saved)
    server.answer = always(ME)
    assert AnalyticsHook().test_connection() == (True, "Connected as me@example.com (role admin)")
    assert server.requests[0].headers["X-Service-Key"] == KEY


@pytest.mark.parametrize("saved", [KEY + "\n", f"  {KEY}\r\n"])
async def test_the_async_client_sends_the_same_stripped_key(server, connect, saved) -> None:
    connect(password=saved)
    server.answer = always(ME)
    async with AsyncAnalyticsClient("analytics_default") as client:
        assert (await client.call("get_current_user"))["email"] == "me@example.com"
    assert server.requests[0].headers["X-Service-Key"] == KEY


@pytest.mark.parametrize("bad", [KEY[:10] + "\n" + KEY[10:], KEY[:10] + "\x00" + KEY[10:], KEY + "\u00e9"])
def test_a_key_that_cannot_be_sent_is_refused_by_name_without_echoing_it(server, connect, bad) -> None:
    connect(password=bad, conn_id="broken_key")
    hook = AnalyticsHook("broken_key")
    with pytest.raises(ConnectionConfigError) as raised:
        hook.get_current_user()
    assert "connection 'broken_key'" in str(raised.value) and "password (the API key)" in str(raised.value)
    assert_no_part_of(KEY, str(raised.value))
    ok, message = hook.test_connection()
    assert not ok and "API key" in message
    assert_no_part_of(KEY, message)
    assert server.requests == []


async def test_the_async_client_refuses_the_same_key(server, connect) -> None:
    connect(password=KEY[:10] + "\n" + KEY[10:])
    async with AsyncAnalyticsClient("analytics_default") as client:
        with pytest.raises(ConnectionConfigError) as raised:
            await client.call("get_current_user")
    assert_no_part_of(KEY, str(raised.value))
    assert server.requests == []


def test_a_header_name_that_cannot_be_sent_is_refused_by_name(server, connect) -> None:
    connect(header_name="X Key")
    with pytest.raises(ConnectionConfigError, match="header_name must be an HTTP header name"):
        AnalyticsHook().get_current_user()
    assert server.requests == []


ECHO = Answer(
    500,
    {"type": "InternalHolisticsError", "message": f"your key {KEY} was refused", "debug_id": KEY,
     "record": {KEY: [KEY]}},
)


def test_a_server_that_echoes_the_key_does_not_get_it_into_an_error(hook, server) -> None:
    server.answer = always(ECHO)
    with pytest.raises(AnalyticsApiError) as raised:
        hook.get_job(1)
    assert KEY not in str(raised.value) and KEY not in repr(raised.value)
    assert KEY not in raised.value.message and KEY not in str(raised.value.record)
    assert "***" in str(raised.value)
    ok, message = hook.test_connection()
    assert not ok and KEY not in message


async def test_the_async_client_redacts_an_echoed_key(server, connect, fake_async_time) -> None:
    server.answer = always(ECHO)
    async with AsyncAnalyticsClient("analytics_default") as client:
        with pytest.raises(AnalyticsApiError) as raised:
            await client.call("get_job", 1)
    assert KEY not in str(raised.value) and "***" in str(raised.value)


def test_a_transport_failure_names_no_header(hook, server) -> None:
    server.answer = always(Answer(200, b"", content_length=50))  # the connection closes short of the body
    with pytest.raises(AnalyticsApiError) as raised:
        hook.get_job(1)
    assert KEY not in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_no_step_of_an_exchange_shows_the_key_or_a_proxy_password() -> None:
    from analytics_provider.api.call.exchange import CallPlan, Exchange
    from analytics_provider.api.call.request import build_request
    from analytics_provider.api.call.retry import RetryPolicy
    from analytics_provider.api.call.settings import ConnectionSettings

    conn = SimpleNamespace(password=KEY, extra_dejson={
        "base_url": "https://svc.example/api/v2", "proxies": {"https": "http://egress:pr0xy-pw-77@proxy.example:3128"}})
    settings = ConnectionSettings.from_connection(conn, "c")
    request = build_request("get_job", (7,))
    exchange = Exchange(request, settings, CallPlan(RetryPolicy(), request, None, lambda: 0.0),
                        lambda endpoint: None)  # type: ignore[arg-type,return-value]
    step = next(exchange.send())
    assert step.headers["X-Service-Key"] == KEY  # it is sent...
    shown = repr(step) + repr(settings) + repr(exchange.settings.network)
    assert KEY not in shown and "pr0xy-pw-77" not in shown  # ...and shown nowhere
