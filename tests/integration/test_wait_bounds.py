"""Every wait ends at its deadline (within one interval) with a clear error, whatever the server does.

Each wait has a 1.5 s deadline and a 0.5 s interval; the hook's ``wait_for_job`` and the trigger
face the same hostile answers: a spent quota whose frame resets in a day, 429 after 429, a server
that trickles its answer one byte at a time, and a job that points at itself. The waits run on a
fake clock, so "at its deadline" is exact however busy the machine; the trickle, which only real
time can show, must end the wait while the server is still sending its first answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsJobError, AnalyticsJobTimeout
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.testing.fake_clock import FakeClock
from analytics_provider.triggers import AnalyticsJobTrigger

DEADLINE, INTERVAL = 1.5, 0.5


def wait_with_hook(conn_id: str, job_id: int) -> tuple[str, str]:
    try:
        AnalyticsHook(conn_id).wait_for_job(job_id, poll_interval=INTERVAL, timeout=DEADLINE, max_outage=600)
    except AnalyticsJobTimeout as exc:
        return "timeout", str(exc)
    except AnalyticsJobError as exc:
        return "error", str(exc)
    return "ended", ""


def wait_with_trigger(conn_id: str, job_id: int) -> tuple[str, str]:
    trigger = AnalyticsJobTrigger(conn_id, job_id, INTERVAL, AnalyticsJobTrigger.clock() + DEADLINE, max_outage=600)

    async def first() -> dict[str, Any]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("no event")

    event = asyncio.run(first())
    return event["status"], event["message"]


WAITS = pytest.mark.parametrize("wait", [wait_with_hook, wait_with_trigger], ids=["hook", "trigger"])


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    return FakeClock().install(monkeypatch)


@pytest.fixture
def pending_job(analytics_emulator, analytics_connection) -> int:
    analytics_emulator.job_duration = 3600
    return int(AnalyticsHook(analytics_connection).bust_data_source_cache(1)["id"])


@WAITS
def test_a_quota_spent_for_a_day_ends_at_the_deadline(wait, analytics_emulator, analytics_connection, pending_job,
                                                      clock):
    analytics_emulator.set_rate_limit(frame=86_400, quota=1, operation="get_job")
    analytics_emulator.set_rate_limit(quota=1, operation="list_jobs")  # the trigger's batched reads
    status, message = wait(analytics_connection, pending_job)
    assert status == "timeout", message
    assert "deadline" in message
    assert clock.elapsed <= DEADLINE + INTERVAL


@WAITS
def test_429_after_429_ends_at_the_deadline(wait, analytics_emulator, analytics_connection, pending_job, clock):
    analytics_emulator.inject("get_job", status=429, times=10_000)
    status, message = wait(analytics_connection, pending_job)
    assert status == "timeout", message
    assert "429" in message
    assert DEADLINE - INTERVAL <= clock.elapsed <= DEADLINE + INTERVAL


@WAITS
def test_a_job_that_follows_itself_is_an_error_before_the_deadline(
    wait, analytics_emulator, analytics_connection, pending_job, clock
):
    with analytics_emulator.world.lock:
        analytics_emulator.world.jobs.jobs[pending_job].existing_job_id = pending_job
    status, message = wait(analytics_connection, pending_job)
    assert status == "error" and f"already_existed chain loops ({pending_job} -> {pending_job})" in message
    assert clock.elapsed < DEADLINE
    assert sum(r.operation in ("get_job", "list_jobs") for r in analytics_emulator.requests) == 1


class Trickle:
    """A server's state: the port; how many answers it sent whole (each takes 46 s)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.answers_sent = 0


@contextlib.contextmanager
def trickling_server() -> Iterator[Trickle]:
    """Answers every request with headers, then one byte of its body every 0.2 s."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    trickle = Trickle(listener.getsockname()[1])

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            body = json.dumps({"job": {"id": 1, "status": "running"}}).encode() + b" " * 200
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
            for byte in body:
                if stop.wait(0.2):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
            trickle.answers_sent += 1

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield trickle
    finally:
        stop.set()
        listener.close()


@WAITS
def test_a_trickling_server_cannot_hold_a_wait_past_its_deadline(wait, monkeypatch):
    """Real time: each byte comes within the read timeout; only the deadline can end the read."""
    with trickling_server() as server:
        conn = {"conn_type": "analytics", "password": "k" * 20,
                "extra": {"base_url": f"http://127.0.0.1:{server.port}/api/v2", "timeout": 30}}
        monkeypatch.setenv("AIRFLOW_CONN_TRICKLE", json.dumps(conn))
        status, message = wait("trickle", 1)
        assert status == "timeout", message
        assert server.answers_sent == 0  # ended while the first answer (46 s) was still coming


# -- issue 46, item 5: the emulator's jobs follow its world's clock ----------------------------------------


@pytest.mark.parametrize("waiter", ["hook", "trigger"])
def test_an_hour_long_job_ends_on_the_worlds_fake_clock(waiter, analytics_emulator, analytics_connection,
                                                       monkeypatch) -> None:
    clock = FakeClock().install(monkeypatch, analytics_emulator)
    analytics_emulator.job_duration = 3600
    job_id = int(AnalyticsHook(analytics_connection).bust_data_source_cache(1)["id"])
    (job,) = analytics_emulator.jobs
    assert job.status == "created"
    started = time.monotonic()
    if waiter == "hook":
        status = AnalyticsHook(analytics_connection).wait_for_job(job_id, poll_interval=60, timeout=7200).status
    else:
        trigger = AnalyticsJobTrigger(analytics_connection, job_id, 60, clock.time() + 7200)

        async def first() -> dict[str, Any]:
            async for event in trigger.run():
                return dict(event.payload)
            raise AssertionError("no event")

        status = asyncio.run(first())["status"]
    assert status == "success"
    assert job.status == "success"  # read on the world's clock, an hour on
    assert 3600 <= clock.elapsed <= 3600 + 60  # the job's hour, and at most one interval more
    assert time.monotonic() - started < 30  # an hour of the world's time, not of the wall's
