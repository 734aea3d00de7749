"""Waiting for a job in the triggerer, without holding a worker.

Nothing here blocks the event loop every trigger of a triggerer shares. The triggerer imports
a trigger's module on that loop, so this module imports only what is already loaded there
(``airflow.triggers.base``); the wait's machinery (aiohttp, the async client, the follow loop:
about half a second of imports) is imported in a worker thread by the first ``run()`` of the
process (:func:`load_machinery`), while the loop goes on serving the other triggers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

DEFAULT_MAX_OUTAGE = 600.0  # seconds; the value of analytics_provider.api.wire.choices.DEFAULT_MAX_OUTAGE

_machinery: SimpleNamespace | None = None


# What reading a connection imports at its first use, where the Airflow in use has it: imported with
# the machinery, so that the first read imports nothing on the loop.
_CONNECTION_READ_IMPORTS = (
    "asgiref.sync",
    "airflow.sdk.definitions.connection",
    "airflow.sdk.execution_time.cache",
    "airflow.sdk.execution_time.secrets",  # Airflow 3.1 and 3.2
    "airflow.sdk.execution_time.secrets.execution_api",
    # the log masker: its home from Airflow 3.1 on, else its old one (from 3.1 a deprecated alias, whose
    # import warns in every deferred task's log)
    ("airflow.sdk._shared.secrets_masker", "airflow.sdk.execution_time.secrets_masker"),
)


def _import_machinery() -> SimpleNamespace:
    import importlib

    import aiohttp  # noqa: F401  (the client's first request must import nothing on the loop)
    import airflow.providers.common.compat.connection
    from airflow.providers.common.compat.sdk import BaseHook

    for entry in _CONNECTION_READ_IMPORTS:
        for name in (entry,) if isinstance(entry, str) else entry:  # the first this Airflow has
            try:
                importlib.import_module(name)
            except ImportError:
                continue
            break

    if BaseHook.__module__ == "airflow.hooks.base":
        # Airflow 3.0: a connection is an ORM object, and the first one made in a process configures
        # every mapper, importing all of airflow.models (0.1 s and more of the GIL): done here instead.
        import airflow.models.connection  # noqa: F401
        from sqlalchemy.orm import configure_mappers

        configure_mappers()

    from analytics_provider.api.call.settings import log_masker_home
    from analytics_provider.api.jobs import wait
    from analytics_provider.hooks.async_client import AsyncAnalyticsClient

    log_masker_home()  # found once here: on 2.11 it is found after a failed import, a search of the path

    return SimpleNamespace(wait=wait, client_class=AsyncAnalyticsClient)


async def load_machinery() -> SimpleNamespace:
    """What ``run()`` needs, imported once per process in a thread (never on the event loop)."""
    global _machinery
    if _machinery is None:
        _machinery = await asyncio.to_thread(_import_machinery)
    return _machinery


class AnalyticsJobTrigger(BaseTrigger):
    """Poll a job until it ends, then yield exactly one event.

    The event is :meth:`WaitResult.to_event <analytics_provider.api.jobs.wait.WaitResult.to_event>`:
    ``{"status": "success" | "failed" | "timeout" | "error", "job_id", "job_status", "message",
    "last_error_log"}``; ``job_id`` is the job finally waited on (``already_existed`` is followed).
    The rules of the wait (outages, follows, the deadline) are those of
    :mod:`analytics_provider.api.jobs.wait`. The first look is immediate, then one every interval.
    The waits of a triggerer on one connection share their looks: a hundred jobs are read with
    one request (:mod:`analytics_provider.hooks.job_reader`), and waits started together keep
    being read together. Where the service refuses that, each job is read alone, and the second
    look comes after a random half to whole interval, so that such waits do not read in lock-step.

    The serialised form holds no secret: the key is read from the connection when the trigger runs.

    :param end_time: the deadline, as a Unix time (absolute, so a restarted trigger keeps it).
    :param max_outage: seconds of failures in a row (service unreachable, 5xx, 429) the wait outlasts.
    :param max_failures: accepted from triggers serialised by earlier versions, and ignored.
    :param try_number: the task's try that deferred, echoed in the event (see
        :mod:`analytics_provider.fresh_retry`).
    """

    clock = staticmethod(time.time)  # Unix time, the clock of ``end_time``; tests swap both
    sleep = staticmethod(asyncio.sleep)

    def __init__(
        self,
        analytics_conn_id: str,
        job_id: int,
        poll_interval: float,
        end_time: float,
        max_outage: float = DEFAULT_MAX_OUTAGE,
        max_failures: int | None = None,
        try_number: int | None = None,
    ) -> None:
        super().__init__()
        self.analytics_conn_id = analytics_conn_id
        self.job_id = int(job_id)
        self.poll_interval = float(poll_interval)
        self.end_time = float(end_time)
        self.max_outage = float(max_outage)
        self.try_number = try_number

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "analytics_conn_id": self.analytics_conn_id,
                "job_id": self.job_id,
                "poll_interval": self.poll_interval,
                "end_time": self.end_time,
                "max_outage": self.max_outage,
                "try_number": self.try_number,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        machinery = await load_machinery()
        wait = machinery.wait
        async with machinery.client_class(self.analytics_conn_id) as client:
            watch = wait.JobWatch(
                self.job_id,
                poll_interval=self.poll_interval,
                deadline=self.end_time,
                max_outage=self.max_outage,
                clock=self.clock,
                # reads shared in batches keep waits together; read one by one, they are spread
                spread_first_wait=client.job_reader().refused is not None,
            )

            result = await client.run(wait.follow_job(watch), sleep=self.sleep)
        event = result.to_event()
        if self.try_number is not None:
            event["try_number"] = self.try_number  # read by FreshRetryMixin (fresh_retry.py)
        yield TriggerEvent(event)
