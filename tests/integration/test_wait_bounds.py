"""Every wait ends at its deadline (within one interval) with a clear error, whatever the server does.

Real time on purpose: these tests are about time. Each wait has a 1.5 s deadline and a 0.5 s
interval; the hook's ``wait_for_job`` and the trigger face the same hostile answers: a spent
quota whose frame resets in a day, 429 after 429, a server that trickles its answer one byte at a
time, and a job that points at itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsJobError, AnalyticsJobTimeout
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.triggers import AnalyticsJobTrigger

DEADLINE, INTERVAL = 1.5, 0.5
SLACK = 0.5  # scheduling noise on a busy machine


def wait_with_hook(conn_id: str, job_id: int) -> tuple[str, str]:
    try:
        AnalyticsHook(conn_id).wait_for_job(job_id, poll_interval=INTERVAL, timeout=DEADLINE, max_outage=600)
    except AnalyticsJobTimeout as exc:
        return "timeout", str(exc)
    except AnalyticsJobError as exc:
        return "error", str(exc)
    return "ended", ""


def wait_with_trigger(conn_id: str, job_id: int) -> tuple[str, str]:
    trigger = AnalyticsJobTrigger(conn_id, job_id, INTERVAL, time.time() + DEADLINE, max_outage=600)

    async def first() -> dict[str, Any]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("no event")

    event = asyncio.run(first())
    return event["status"], event["message"]


WAITS = pytest.mark.parametrize("wait", [wait_with_hook, wait_with_trigger], ids=["hook", "trigger"])


def timed(wait: Callable[[str, int], tuple[str, str]], conn_id: str, job_id: int) -> tuple[str, str, float]:
    started = time.monotonic()
    status, message = wait(conn_id, job_id)
    return status, message, time.monotonic() - started


@pytest.fixture
def pending_job(analytics_emulator, analytics_connection) -> int:
    analytics_emulator.job_duration = 3600
    return int(AnalyticsHook(analytics_connection).bust_data_source_cache(1)["id"])


@WAITS
def test_a_quota_spent_for_a_day_ends_at_the_deadline(wait, analytics_emulator, analytics_connection, pending_job):
    analytics_emulator.set_rate_limit(frame=86_400, quota=1, operation="get_job")
    analytics_emulator.set_rate_limit(quota=1, operation="list_jobs")  # the trigger's batched reads
    status, message, took = timed(wait, analytics_connection, pending_job)
    assert status == "timeout", message
    assert "deadline" in message
    assert took <= DEADLINE + INTERVAL + SLACK


@WAITS
def test_429_after_429_ends_at_the_deadline(wait, analytics_emulator, analytics_connection, pending_job):
    analytics_emulator.inject("get_job", status=429, times=10_000)
    status, message, took = timed(wait, analytics_connection, pending_job)
    assert status == "timeout", message
    assert "429" in message
    assert DEADLINE - INTERVAL <= took <= DEADLINE + INTERVAL + SLACK


@WAITS
def test_a_job_that_follows_itself_is_an_error_before_the_deadline(
    wait, analytics_emulator, analytics_connection, pending_job
):
    with analytics_emulator.world.lock:
        analytics_emulator.world.jobs.jobs[pending_job].existing_job_id = pending_job
    status, message, took = timed(wait, analytics_connection, pending_job)
    assert status == "error" and f"already_existed chain loops ({pending_job} -> {pending_job})" in message
    assert took < DEADLINE
    assert sum(r.operation in ("get_job", "list_jobs") for r in analytics_emulator.requests) == 1


@contextlib.contextmanager
def trickling_server() -> Iterator[int]:
    """Answers every request with headers, then one byte of its body every 0.2 s."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

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

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()


@WAITS
def test_a_trickling_server_cannot_hold_a_wait_past_its_deadline(wait, monkeypatch):
    with trickling_server() as port:
        conn = {"conn_type": "analytics", "password": "k" * 20,
                "extra": {"base_url": f"http://127.0.0.1:{port}/api/v2", "timeout": 30}}
        monkeypatch.setenv("AIRFLOW_CONN_TRICKLE", json.dumps(conn))
        status, message, took = timed(wait, "trickle", 1)
    assert status == "timeout", message
    assert took <= DEADLINE + INTERVAL + SLACK
