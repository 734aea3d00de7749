"""An answer's head (status line and headers) is bounded on both transports: in time (a head
dripped a byte at a time ends within the connection's timeouts) and in bytes (``max_header_bytes``);
so is a chunked body's framing (chunk-size lines, trailers) on the worker, in time."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from analytics_provider.api.call.retry import RetryPolicy
from analytics_provider.exceptions import (
    AnalyticsApiError,
    AnalyticsJobTimeout,
    AnalyticsTransportError,
    AnswerTooLargeError,
    DownloadTooSlowError,
)
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.hooks.async_client import AsyncAnalyticsClient
from hostile.measure import measured
from hostile.server import (
    RawServer,
    drip_head,
    dripped_body,
    dripped_chunk_size,
    early_hints,
    endless_trailers,
    head_and_large_body,
    huge_head,
)

ONCE = RetryPolicy(max_attempts=1)
DRIP_SECONDS = 30.0  # how long the dripping server goes on before it ends its head


@pytest.fixture
def raw(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., RawServer]]:
    """Start a :class:`RawServer` with a script, and point the connection at it (timeouts of 1 s)."""
    servers: list[RawServer] = []

    def start(script, **extra: object) -> RawServer:
        server = RawServer(script).__enter__()
        servers.append(server)
        conn = {"conn_type": "analytics", "password": "k" * 20,
                "extra": {"base_url": server.base_url, "timeout": 1, "connect_timeout": 1, **extra}}
        monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(conn))
        return server

    yield start
    for server in servers:
        server.__exit__()


def sync_call() -> object:
    hook = AnalyticsHook()
    try:
        return hook.call("get_job", 1, retry_policy=ONCE)
    finally:
        hook.close()


async def async_call() -> object:
    async with AsyncAnalyticsClient("analytics_default", ONCE) as client:
        return await client.call("get_job", 1)


def test_a_dripped_head_ends_within_the_timeouts_on_the_worker(raw) -> None:
    raw(drip_head(0.1, DRIP_SECONDS))
    started = time.monotonic()
    with pytest.raises(AnalyticsTransportError) as failed:
        sync_call()
    seconds = time.monotonic() - started
    assert seconds < DRIP_SECONDS / 2  # connect + read timeout: 2 s; the old code read the head for 30 s
    text = str(failed.value)
    assert "the answer of 127.0.0.1 did not send its head (status line and headers) whole within 2 s" in text
    assert "connect_timeout=1 and timeout=1" in text


async def triggerer_error_in_time() -> str:
    """The text of the transport error the triggerer's call fails with, well before the drip ends."""
    started = time.monotonic()
    with pytest.raises(AnalyticsTransportError) as failed:
        await async_call()
    assert time.monotonic() - started < DRIP_SECONDS / 2
    return str(failed.value)


async def test_a_dripped_head_ends_within_the_timeouts_in_the_triggerer(raw) -> None:
    raw(drip_head(0.1, DRIP_SECONDS))
    text = await triggerer_error_in_time()  # the old text was empty (an asyncio.TimeoutError's)
    assert "the answer of 127.0.0.1 did not send its head (status line and headers) whole within 2 s" in text
    assert "connect_timeout=1 and timeout=1" in text


def test_a_dripped_head_meets_the_calls_deadline(raw) -> None:
    from analytics_provider.exceptions import AnalyticsDeadlineExceeded

    raw(drip_head(0.1, DRIP_SECONDS))
    hook = AnalyticsHook()
    try:
        with pytest.raises(AnalyticsDeadlineExceeded, match="the deadline passed while waiting for the answer's head"):
            hook.call("get_job", 1, deadline=hook.clock() + 1.5)
    finally:
        hook.close()


@pytest.mark.parametrize("size, line", [(1_000_000, 8000), (100_000, 70_000)], ids=["many lines", "long lines"])
def test_a_huge_head_is_refused_by_name_on_the_worker(raw, size, line) -> None:
    server = raw(huge_head(size, line))
    with pytest.raises(AnswerTooLargeError) as refused:
        sync_call()
    text = str(refused.value)
    assert "the answer of 127.0.0.1 has a head (status line and headers) larger than 65,536 bytes" in text
    assert "max_header_bytes=65536" in text
    assert server.requests == 1


@pytest.mark.parametrize("size, line", [(1_000_000, 8000), (100_000, 70_000)], ids=["many lines", "long lines"])
async def test_a_huge_head_is_refused_by_name_in_the_triggerer(raw, size, line) -> None:
    server = raw(huge_head(size, line))
    with pytest.raises(AnswerTooLargeError) as refused:
        await async_call()
    text = str(refused.value)
    assert ("the answer of 127.0.0.1 has a head (status line and headers) with a line longer than 4,096 bytes or "
            "more than 32 header lines (the triggerer reads a head in lines of at most 1/16 of max_header_bytes)"
            ) in text
    assert "max_header_bytes=65536" in text
    assert server.requests == 1


def test_a_head_within_the_bounds_and_a_large_body_in_the_same_read_are_read_on_both_transports(raw) -> None:
    """The triggerer's byte count on aiohttp before 3.14 (hooks/aiohttp_head.py) stops at the head's
    blank line: a read that holds the head's end and 600 KB of body is no head past its bound."""
    raw(head_and_large_body())
    assert sync_call()["status"] == "success"
    assert asyncio.run(async_call())["status"] == "success"


@pytest.mark.parametrize("line", [61_440, 4_000], ids=["lines just under the limit", "lines under aiohttp's bound"])
async def test_the_triggerer_holds_about_max_header_bytes_of_a_head_before_refusing(raw, line) -> None:
    """aiohttp has no bound on a head's total, only per line and a count: with max_header_bytes per
    line and 128 lines it held 126 times the limit (8 MB here) before the head was judged whole."""
    for _ in range(2):  # the first call unmeasured: what it imports (20 MB when the test ran alone) is no head's
        raw(huge_head(8_000_000, line))
        with measured() as cost, pytest.raises(AnswerTooLargeError):
            await async_call()
    assert cost.peak_memory < 4 * 65_536 + 512 * 1024, cost  # at most twice the head's limit, and the call's own


async def test_the_connections_max_header_bytes_lets_a_large_head_through_on_both(raw) -> None:
    raw(huge_head(200_000), max_header_bytes=300_000)
    assert sync_call() == {"id": 1, "status": "success"}
    assert await async_call() == {"id": 1, "status": "success"}


def test_a_bad_max_header_bytes_is_refused_by_name(raw) -> None:
    from analytics_provider.api.call.settings import ConnectionConfigError

    raw(huge_head(10), max_header_bytes="64k")
    with pytest.raises(ConnectionConfigError, match="max_header_bytes must be a whole number of bytes from 1,024"):
        sync_call()


# A chunked body's framing (its chunk-size lines and trailers) is read inside http.client, in one
# read of the driver: each read of the socket there must hold the call's time too (issue 46, a
# third attack: a call, a job's wait and a download each held for as long as the server went on).
FRAMING = [endless_trailers, dripped_chunk_size]


@pytest.mark.parametrize("script", FRAMING, ids=["endless trailers", "dripped chunk size"])
def test_a_chunked_bodys_framing_ends_within_the_timeouts_on_the_worker(raw, script) -> None:
    raw(script(for_seconds=DRIP_SECONDS))
    started = time.monotonic()
    with pytest.raises(AnalyticsTransportError, match=r"ReadTimeout: the answer did not come whole in time"):
        sync_call()
    assert time.monotonic() - started < DRIP_SECONDS / 2  # connect + read timeout: 2 s; the old call took 30 s


@pytest.mark.parametrize("script", FRAMING, ids=["endless trailers", "dripped chunk size"])
def test_a_jobs_wait_ends_at_its_timeout_whatever_the_framing(raw, script) -> None:
    raw(script(for_seconds=DRIP_SECONDS))
    hook = AnalyticsHook()
    started = time.monotonic()
    try:
        with pytest.raises(AnalyticsJobTimeout, match="did not finish before the deadline"):
            hook.wait_for_job(1, poll_interval=1, timeout=3)
    finally:
        hook.close()
    assert time.monotonic() - started < DRIP_SECONDS / 2  # the old wait (timeout=3) took the server's 30 s


@pytest.mark.parametrize("script", FRAMING, ids=["endless trailers", "dripped chunk size"])
def test_a_download_ends_at_max_download_seconds_whatever_the_framing(raw, script, tmp_path) -> None:
    raw(script(b"a,b\n1,2\n", for_seconds=DRIP_SECONDS))
    hook = AnalyticsHook()
    target = tmp_path / "out.csv"
    started = time.monotonic()
    try:
        with pytest.raises(DownloadTooSlowError, match=r"did not come whole within 2 s; refused"):
            hook.download_export(1, str(target), max_download_seconds=2)
    finally:
        hook.close()
    assert time.monotonic() - started < DRIP_SECONDS / 2  # the old download took 30 s, and succeeded
    assert list(tmp_path.iterdir()) == []  # no partial file


def test_the_answer_to_a_call_that_sends_a_body_comes_whole_in_time_on_the_worker(raw) -> None:
    """An upload's time is its own, but its answer's body had no bound at all (held 15 s past the
    2 s of a GET): now it comes whole within connect + read timeout of its head."""
    raw(dripped_body(0.2, DRIP_SECONDS))
    hook = AnalyticsHook(retry_policy=ONCE)
    started = time.monotonic()
    try:
        with pytest.raises(AnalyticsTransportError, match=r"on POST /git_webhooks/gitlab_event: ReadTimeout: the "
                                                          r"answer did not come whole in time \(\d+ bytes read\)"):
            hook.send_gitlab_event({"a": 1}, event="Push Hook", token="t" * 12)
    finally:
        hook.close()
    assert time.monotonic() - started < DRIP_SECONDS / 2


def flooding_trailers(seconds: float = 20.0) -> Callable[[socket.socket, threading.Event], None]:
    """A chunked answer whose body comes at once, then short trailer lines as fast as the socket takes them."""

    def script(conn: socket.socket, closing: threading.Event) -> None:
        body = b'{"job": {"id": 1, "status": "success"}}'
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"%x\r\n%s\r\n0\r\n" % (len(body), body))
        lines = b"X-T: tttttttt\r\n" * 16384  # short lines: under any line bound
        end = time.monotonic() + seconds
        while time.monotonic() < end and not closing.is_set():
            conn.sendall(lines)

    return script


async def test_a_chunked_bodys_trailers_are_bounded_in_the_triggerer(raw) -> None:
    """Before (fifth attack), on aiohttp 3.12.15 and 3.13.3 (Airflow 3.0 and 2.11): the trailers were
    held whole for as long as the answer's time allowed (444 and 385 MB, parsed). Now what follows a
    body is bounded by a head's worth (and half the body, for chunk-size lines), on every aiohttp the
    matrix pins (3.13.5 and 3.14 count trailer lines themselves)."""
    for _ in range(2):  # the first call unmeasured (its imports)
        raw(flooding_trailers(), max_answer_bytes=1_048_576, timeout=10)
        with measured() as cost, pytest.raises(AnalyticsApiError) as refused:
            await async_call()
    text = str(refused.value)
    if not isinstance(refused.value, AnswerTooLargeError):  # aiohttp 3.14 refuses the trailer lines itself
        assert "Too many headers received" in text, text  # (a payload error: retried as a transport error)
    elif "has a head (status line and headers)" not in text:  # (aiohttp 3.13.5 counts trailer lines too)
        assert re.search(r"the answer of 127\.0\.0\.1 sent more than 13\d,\d{3} bytes after its head \(its body and "
                         r"a chunked body's trailers\); refused\. max_answer_bytes=1048576", text), text
    assert cost.peak_memory < 16 * 1_048_576, cost  # a head's worth parsed, a read: aiohttp 3.12.15 held 444 MB


async def test_a_dripped_body_in_the_triggerer_says_what_timed_out(raw) -> None:
    raw(dripped_body(0.2, DRIP_SECONDS))
    text = await triggerer_error_in_time()  # was "TimeoutError: ", empty
    assert text == "TransportError on GET /jobs/1: TimeoutError: the answer did not come whole in time"


@pytest.mark.parametrize("transport", ["worker", "triggerer"])
async def test_early_hints_are_skipped_on_both_transports(raw, transport) -> None:
    """A 103 Early Hints before the answer: the worker failed with AnalyticsApiError 103."""
    raw(early_hints(2))
    assert (sync_call() if transport == "worker" else await async_call()) == {"id": 1, "status": "success"}


def test_endless_informational_answers_are_refused_on_the_worker(raw) -> None:
    raw(early_hints(50))
    with pytest.raises(AnswerTooLargeError, match=r"has a head \(status line and headers\) after more than 8 "
                                                  r"informational \(1xx\) answers"):
        sync_call()


def test_http_clients_own_bounds_are_named_as_such_on_the_worker(raw) -> None:
    """Past 64 KiB a line is http.client's own bound, not max_header_bytes (here 1 MiB): the error said 1 MiB."""
    raw(huge_head(200_000, 70_000), max_header_bytes=1024 * 1024)
    with pytest.raises(AnswerTooLargeError, match=r"has a head \(status line and headers\) with a line longer than "
                                                  r"65,536 bytes \(http.client's own bound\)"):
        sync_call()
    raw(huge_head(200_000, 1_000), max_header_bytes=1024 * 1024)
    with pytest.raises(AnswerTooLargeError, match=r"with more than 100 header lines \(http.client's own bound\)"):
        sync_call()
