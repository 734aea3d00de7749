"""A sensor that waits for any job of the service."""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import (
    AirflowFailException,
    AirflowSensorTimeout,
    BaseSensorOperator,
    conf,
)

from analytics_provider.api.jobs import JobOutcome, read_job
from analytics_provider.operators.base import describe_job_failure

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from analytics_provider.hooks.analytics import AnalyticsHook


class AnalyticsJobSensor(BaseSensorOperator):
    """Wait until a job of the service is final; succeed on ``success``, fail on anything else.

    ``poke_interval``, ``timeout``, ``mode="reschedule"`` and ``soft_fail`` behave as for any
    sensor; with ``deferrable=True`` the wait runs in the triggerer. A job that the service
    reports as ``already_existed`` is followed to the job doing the work.

    :param job_id: the job (templated), for example ``{{ ti.xcom_pull(task_ids='export', key='job_id') }}``.
    :param analytics_conn_id: the ``analytics`` connection (templated).
    :param max_failures: failed looks in a row that end a deferred wait.
    """

    template_fields: Sequence[str] = ("job_id", "analytics_conn_id")
    ui_color = "#dfeefc"

    def __init__(
        self,
        *,
        job_id: int | str,
        analytics_conn_id: str = "analytics_default",
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        max_failures: int = 5,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.job_id = job_id
        self.analytics_conn_id = analytics_conn_id
        self.deferrable = deferrable
        self.max_failures = max_failures

    @cached_property
    def hook(self) -> AnalyticsHook:
        from analytics_provider.hooks.analytics import AnalyticsHook

        return AnalyticsHook(self.analytics_conn_id)

    def _job_id(self) -> int:
        try:
            return int(self.job_id)
        except (TypeError, ValueError):
            raise AirflowFailException(f"{self.task_id}: job_id must be an integer, got {self.job_id!r}") from None

    def poke(self, context: Context) -> bool:
        job_id = self._job_id()
        while True:
            state = read_job(self.hook.get_job(job_id) or {}, job_id)
            if state.outcome is JobOutcome.FOLLOW and state.existing_job_id is not None:
                job_id = state.existing_job_id
                continue
            break
        if state.outcome is JobOutcome.PENDING:
            self.log.info("Job %s is %s", job_id, state.status)
            return False
        if state.outcome is JobOutcome.SUCCESS:
            return True
        raise AirflowFailException(describe_job_failure(self.hook, job_id, state.status, state.last_error_log))

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        if self.poke(context):
            return None
        from analytics_provider.triggers.analytics import AnalyticsJobTrigger

        self.defer(
            trigger=AnalyticsJobTrigger(
                analytics_conn_id=self.analytics_conn_id,
                job_id=self._job_id(),
                poll_interval=self.poke_interval,
                end_time=time.time() + self.timeout,
                max_failures=self.max_failures,
            ),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> None:
        status = event.get("status") if isinstance(event, dict) else None
        if status == "success":
            self.log.info("Job %s succeeded", event["job_id"])  # type: ignore[index]
            return
        if status == "timeout":
            raise AirflowSensorTimeout(f"job {event['job_id']} did not finish within {self.timeout:g} s")  # type: ignore[index]
        if status == "failed":
            assert event is not None
            job_id, job_status = int(event["job_id"]), str(event.get("job_status"))
            raise AirflowFailException(describe_job_failure(self.hook, job_id, job_status, event.get("last_error_log")))
        raise AirflowFailException(f"waiting for the job failed: {event!r}")
