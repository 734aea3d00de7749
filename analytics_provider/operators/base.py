"""What every job operator shares: submit on the worker, then wait there or in the triggerer."""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, NoReturn

from airflow.configuration import conf
from airflow.sdk import BaseOperator

from analytics_provider.exceptions import AnalyticsJobError, AnalyticsJobTimeout
from analytics_provider.lineage import OpenLineageMixin

if TYPE_CHECKING:
    from airflow.sdk import Context

    from analytics_provider.hooks.analytics import AnalyticsHook

EVENT_STATUSES = ("success", "failed", "timeout", "error")


class AnalyticsJobOperator(OpenLineageMixin, BaseOperator):
    """Base of the operators that start a job of the service and wait for it.

    :param analytics_conn_id: the ``analytics`` connection (templated).
    :param wait_for_completion: wait for the job; when False the task ends once it is submitted.
    :param poll_interval: seconds between two looks at the job.
    :param timeout: seconds to wait for the job before failing the task.
    :param deferrable: wait in the triggerer instead of holding a worker slot
        (default: ``[operators] default_deferrable``).
    :param max_failures: in a deferred wait, the attempts each look at the job may take
        (transient failures are retried with backoff up to this count) before the wait ends in error.

    The job id is pushed to XCom under ``job_id`` as soon as the job is submitted.
    """

    template_fields: Sequence[str] = ("analytics_conn_id",)
    ui_color = "#dfeefc"

    def __init__(
        self,
        *,
        analytics_conn_id: str = "analytics_default",
        wait_for_completion: bool = True,
        poll_interval: float = 5.0,
        timeout: float = 3600.0,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        max_failures: int = 5,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if poll_interval <= 0:
            raise ValueError(f"{self.task_id}: poll_interval must be a positive number of seconds")
        if timeout <= 0:
            raise ValueError(f"{self.task_id}: timeout must be a positive number of seconds")
        if max_failures < 1:
            raise ValueError(f"{self.task_id}: max_failures must be at least 1")
        self.analytics_conn_id = analytics_conn_id
        self.wait_for_completion = wait_for_completion
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.deferrable = deferrable
        self.max_failures = max_failures

    @cached_property
    def hook(self) -> AnalyticsHook:
        from analytics_provider.hooks.analytics import AnalyticsHook

        return AnalyticsHook(self.analytics_conn_id)

    # -- what subclasses provide ------------------------------------------------------------------

    def check_inputs(self) -> None:
        """Refuse bad (rendered) parameters before any request."""

    def submit(self, context: Context) -> dict[str, Any]:
        """Start the job; return the Job (``{"id", "status"}``)."""
        raise NotImplementedError

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        """The task's return value once the job succeeded."""
        return {"job_id": job_id, "status": "success"}

    def on_failure(self, context: Context, job_id: int, status: str, last_error_log: str | None) -> NoReturn:
        raise AnalyticsJobError(
            describe_job_failure(self.hook, job_id, status, last_error_log),
            job_id=job_id,
            status=status,
            last_error_log=last_error_log,
        )

    # -- the flow ---------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        self.check_inputs()
        job = self.submit(context)
        job_id = int(job["id"])
        context["ti"].xcom_push(key="job_id", value=job_id)
        self.log.info("Submitted job %s (status %s)", job_id, job.get("status"))
        if not self.wait_for_completion:
            return {"job_id": job_id, "status": job.get("status")}
        if self.deferrable:
            from analytics_provider.triggers.analytics import AnalyticsJobTrigger

            self.defer(
                trigger=AnalyticsJobTrigger(
                    analytics_conn_id=self.analytics_conn_id,
                    job_id=job_id,
                    poll_interval=self.poll_interval,
                    end_time=time.time() + self.timeout,
                    max_failures=self.max_failures,
                ),
                method_name="execute_complete",
            )
        state = self.hook.wait_for_job(job_id, poll_interval=self.poll_interval, timeout=self.timeout)
        return self._finish(context, state.job_id, state.status, state.last_error_log)

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> dict[str, Any]:
        """Resume after the trigger: check its event, then finish as a waiting task would."""
        if not isinstance(event, dict) or event.get("status") not in EVENT_STATUSES or "job_id" not in event:
            raise AnalyticsJobError(
                f"unexpected event from the trigger: {event!r}", job_id=-1, status="unknown"
            )
        job_id = int(event["job_id"])
        if event["status"] == "timeout":
            raise AnalyticsJobTimeout(
                f"job {job_id} did not finish within {self.timeout:g} s", job_id=job_id, status="timeout"
            )
        if event["status"] == "error":
            raise AnalyticsJobError(
                f"waiting for job {job_id} failed: {event.get('message')}", job_id=job_id, status="unknown"
            )
        return self._finish(context, job_id, str(event.get("job_status")), event.get("last_error_log"))

    def _finish(self, context: Context, job_id: int, status: str, last_error_log: str | None) -> dict[str, Any]:
        self.lineage_job_id = job_id
        if status != "success":
            self.on_failure(context, job_id, status, last_error_log)
        self.log.info("Job %s succeeded", job_id)
        self.lineage_result = self.on_success(context, job_id)
        return self.lineage_result


def describe_job_failure(hook: AnalyticsHook, job_id: int, status: str, last_error_log: str | None) -> str:
    """The failure text: job id, status, last error, and the job's ERROR log lines."""
    lines = [f"job {job_id} ended with status {status!r}"]
    if last_error_log:
        lines.append(f"last error: {last_error_log}")
    try:
        errors = [entry for entry in hook.get_job_logs(job_id) if entry.get("level") == "ERROR"]
    except Exception as exc:
        lines.append(f"(its logs could not be read: {exc})")
    else:
        lines.extend(f"  {e.get('timestamp', '')} ERROR {e.get('message', '')}".rstrip() for e in errors)
    return "\n".join(lines)
