"""Waiting for a job in the triggerer, without holding a worker."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from analytics_provider.api.jobs import JobOutcome, read_job
from analytics_provider.api.retry import RetryPolicy
from analytics_provider.exceptions import AnalyticsApiError

DEFAULT_MAX_FAILURES = 5


class AnalyticsJobTrigger(BaseTrigger):
    """Poll a job until it ends, then yield exactly one event.

    The first poll is immediate; the second comes after a random half to whole interval (so
    that hundreds of waits started at once do not poll in lock-step), the rest every interval.

    The event is ``{"status": "success" | "failed" | "timeout" | "error", "job_id", "job_status",
    "last_error_log", "message"}``. ``job_id`` is the job finally waited on: when the service
    answers ``already_existed`` the trigger follows ``existing_job_id``.

    A transient failure (connection error, timeout, 5xx, 429) is logged and waited out with
    backoff, honouring ``Retry-After``; only ``max_failures`` failures in a row, or the
    deadline, end the wait. The serialised form holds no secret: the key is read from the
    connection when the trigger runs.

    :param end_time: the deadline, as a Unix time (absolute, so a restarted trigger keeps it).
    """

    def __init__(
        self,
        analytics_conn_id: str,
        job_id: int,
        poll_interval: float,
        end_time: float,
        max_failures: int = DEFAULT_MAX_FAILURES,
    ) -> None:
        super().__init__()
        self.analytics_conn_id = analytics_conn_id
        self.job_id = int(job_id)
        self.poll_interval = float(poll_interval)
        self.end_time = float(end_time)
        self.max_failures = int(max_failures)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "analytics_conn_id": self.analytics_conn_id,
                "job_id": self.job_id,
                "poll_interval": self.poll_interval,
                "end_time": self.end_time,
                "max_failures": self.max_failures,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from analytics_provider.hooks.async_client import AsyncAnalyticsClient

        job_id = self.job_id
        first_sleep = True
        async with AsyncAnalyticsClient(self.analytics_conn_id) as client:
            while True:
                remaining = self.end_time - time.time()
                if remaining <= 0:
                    yield self._event("timeout", job_id, "", f"job {job_id} did not finish before the deadline")
                    return
                policy = RetryPolicy(max_attempts=self.max_failures, max_elapsed=remaining)
                try:
                    job = await client.call("get_job", job_id, retry_policy=policy)
                except (AnalyticsApiError, ValueError) as exc:  # ValueError: an unusable connection
                    if time.time() >= self.end_time:
                        continue  # the deadline ended the retries: a timeout, not an error
                    yield self._event("error", job_id, "", f"could not read job {job_id}: {exc}")
                    return
                state = read_job(job or {}, job_id)
                if state.outcome is JobOutcome.FOLLOW:
                    self.log.info("Job %s already existed; following job %s", job_id, state.existing_job_id)
                    job_id = int(state.existing_job_id or job_id)
                    continue
                if state.outcome is JobOutcome.SUCCESS:
                    yield self._event("success", job_id, state.status, f"job {job_id} succeeded")
                    return
                if state.outcome is JobOutcome.FAILED:
                    yield self._event(
                        "failed", job_id, state.status, f"job {job_id} ended {state.status}", state.last_error_log
                    )
                    return
                self.log.debug("Job %s is %s", job_id, state.status)
                interval = self.poll_interval
                if first_sleep:  # waits started together spread out once, instead of polling in lock-step
                    interval *= random.uniform(0.5, 1.0)
                    first_sleep = False
                await asyncio.sleep(min(interval, max(0.0, self.end_time - time.time())))

    @staticmethod
    def _event(
        status: str, job_id: int, job_status: str, message: str, last_error_log: str | None = None
    ) -> TriggerEvent:
        return TriggerEvent(
            {
                "status": status,
                "job_id": job_id,
                "job_status": job_status,
                "message": message,
                "last_error_log": last_error_log,
            }
        )
