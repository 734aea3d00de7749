"""A sensor that waits for any job of the service."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import (
    AirflowFailException,
    AirflowSensorTimeout,
    BaseSensorOperator,
    conf,
)

from analytics_provider.api.wire.choices import DEFAULT_MAX_OUTAGE
from analytics_provider.exceptions import AnalyticsJobError
from analytics_provider.fresh_retry import FreshRetryMixin
from analytics_provider.hook_task import HookTask
from analytics_provider.job_tasks import check_max_outage, check_wait, describe_job_failure

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from analytics_provider.api.jobs.wait import JobWatch, WaitResult


class AnalyticsJobSensor(HookTask, FreshRetryMixin, BaseSensorOperator):
    """Wait until a job of the service is final; succeed on ``success``, fail on anything else.

    ``poke_interval``, ``timeout``, ``mode="reschedule"`` and ``soft_fail`` behave as for any
    sensor; with ``deferrable=True`` the wait runs in the triggerer. A job that the service
    reports as ``already_existed`` is followed to the job doing the work, one hop per poke. A
    poke that cannot read the job (service unreachable, 5xx, 429) reports "not yet" until such
    failures have lasted ``max_outage`` seconds (counted within one poke-mode run, and by the
    trigger when deferred).

    :param job_id: the job (templated), for example ``{{ ti.xcom_pull(task_ids='export', key='job_id') }}``.
    :param analytics_conn_id: the ``analytics`` connection (templated).
    :param max_outage: seconds of failures in a row tolerated before the sensor fails.
    :param max_failures: deprecated and ignored (see ``max_outage``).
    """

    template_fields: Sequence[str] = ("job_id", "analytics_conn_id")
    ui_color = "#dfeefc"

    def __init__(
        self,
        *,
        job_id: int | str,
        analytics_conn_id: str = "analytics_default",
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        max_outage: float = DEFAULT_MAX_OUTAGE,
        max_failures: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        check_wait(self.task_id, self.poke_interval, self.timeout, poll_name="poke_interval")
        check_max_outage(self.task_id, max_outage, max_failures)
        self.job_id = job_id
        self.analytics_conn_id = analytics_conn_id
        self.deferrable = deferrable
        self.max_outage = max_outage
        self._watch: JobWatch | None = None

    def _job_id(self) -> int:
        try:
            return int(self.job_id)
        except (TypeError, ValueError):
            raise AirflowFailException(f"{self.task_id}: job_id must be an integer, got {self.job_id!r}") from None

    @property
    def watch(self) -> JobWatch:
        """What the pokes have learnt so far (the job followed, the outage): kept between pokes."""
        if self._watch is None:
            from analytics_provider.api.jobs.wait import JobWatch

            self._watch = JobWatch(
                self._job_id(), poll_interval=self.poke_interval, max_outage=self.max_outage, clock=self.hook.clock
            )
        return self._watch

    def poke(self, context: Context) -> bool:
        result = self.hook.look_at_job(self.watch)  # one look, up to the first pause
        if result is None:
            self.log.info("Job %s is %s", self.watch.job_id, self.watch.status)
            return False
        self._raise_unless_success(result)
        return True

    def execute(self, context: Context) -> Any:
        with self.closing_hook():
            return self._execute(context)

    def _execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        if self.poke(context):
            return None
        from analytics_provider.triggers.analytics import AnalyticsJobTrigger

        self.defer(
            trigger=AnalyticsJobTrigger(
                analytics_conn_id=self.analytics_conn_id,
                job_id=self.watch.job_id,
                poll_interval=self.poke_interval,
                end_time=AnalyticsJobTrigger.clock() + self.timeout,
                max_outage=self.max_outage,
                try_number=context["ti"].try_number,
            ),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> None:
        from analytics_provider.api.jobs.wait import WaitResult

        try:
            result = WaitResult.from_event(event)
        except AnalyticsJobError as exc:
            raise AirflowFailException(str(exc)) from None
        self._raise_unless_success(result)

    def _raise_unless_success(self, result: WaitResult) -> None:
        if result.status == "success":
            self.log.info("Job %s succeeded", result.job_id)
            return
        if result.status == "timeout":
            raise AirflowSensorTimeout(result.message or f"job {result.job_id} did not finish in {self.timeout:g} s")
        if result.status == "failed":
            raise AirflowFailException(
                describe_job_failure(self.hook, result.job_id, result.job_status, result.last_error_log)
            )
        # the job could not be waited on (an outage past max_outage, a refused read): Airflow's retries may help
        raise AnalyticsJobError(
            f"waiting for job {result.job_id} failed: {result.message}", job_id=result.job_id, status="unknown"
        ) from result.error
