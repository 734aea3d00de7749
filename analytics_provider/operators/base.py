"""What every job operator shares: submit on the worker, wait there or in the triggerer, resume on retry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from airflow.providers.common.compat.sdk import BaseOperator, conf

from analytics_provider.api.wire.choices import DEFAULT_MAX_OUTAGE
from analytics_provider.exceptions import AnalyticsJobError, naming_the_task, refused
from analytics_provider.fresh_retry import FreshRetryMixin
from analytics_provider.hook_task import HookTask
from analytics_provider.job_tasks import (
    check_max_outage,
    check_wait,
    data_source_stats,
    describe_cost,
    describe_job_failure,
)
from analytics_provider.lineage_mixin import OpenLineageMixin
from analytics_provider.operators.resumable import ResumableJobMixin

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context


RESOLVED_KEY = "resolved"
"""The XCom key of the ids this try's names were resolved to (read back after a deferral)."""


class AnalyticsJobOperator(HookTask, OpenLineageMixin, ResumableJobMixin, FreshRetryMixin, BaseOperator):
    """Base of the operators that start a job of the service and wait for it.

    :param analytics_conn_id: the ``analytics`` connection (templated).
    :param wait_for_completion: wait for the job; when False the task ends once it is submitted.
    :param poll_interval: seconds between two looks at the job.
    :param timeout: seconds to wait for the job before failing the task.
    :param deferrable: wait in the triggerer instead of holding a worker slot
        (default: ``[operators] default_deferrable``).
    :param max_outage: seconds of failures in a row (service unreachable, timeouts, 5xx, 429) a
        wait outlasts before it ends in an error; backoff and ``Retry-After`` are honoured meanwhile.
    :param max_failures: deprecated and ignored; an outage is measured in time (``max_outage``).
    :param durable: on Airflow 3.3 and later (default True), the job id is kept in the task state
        store before any wait, and a later try of the task picks that job up instead of submitting
        another: a pending job is waited on again, a succeeded one goes straight to its result, a
        failed or cancelled one is submitted anew. Before 3.3 every try submits.
    :param include_data_source_stats: once the job succeeded, read what its queries cost in the
        data source (``data_source_stats``: ``[{"id", "cost", "cost_unit"}]``, None where the data
        source reports none) into the task's result, one line of the task log and, with
        OpenLineage, the run facet ``analyticsDataSourceStats``.

    The job id (of the job that does the work: ``already_existed`` is resolved) is pushed to XCom
    under ``job_id`` before any wait.
    """

    template_fields: Sequence[str] = ("analytics_conn_id",)
    ui_color = "#dfeefc"
    external_id_key = "analytics_job_id"

    def __init__(
        self,
        *,
        analytics_conn_id: str = "analytics_default",
        wait_for_completion: bool = True,
        poll_interval: float = 5.0,
        timeout: float = 3600.0,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        max_outage: float = DEFAULT_MAX_OUTAGE,
        max_failures: int | None = None,
        include_data_source_stats: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(include_data_source_stats, bool):
            raise refused(self.task_id, "include_data_source_stats", include_data_source_stats, "True or False")
        check_wait(self.task_id, poll_interval, timeout)
        check_max_outage(self.task_id, max_outage, max_failures)
        self.analytics_conn_id = analytics_conn_id
        self.wait_for_completion = wait_for_completion
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.deferrable = deferrable
        self.max_outage = max_outage
        self.include_data_source_stats = include_data_source_stats
        self._results: dict[int, Any] = {}
        self._submitted_status = ""
        self.resolved: dict[str, Any] = {}

    # -- what subclasses provide ------------------------------------------------------------------

    def check_inputs(self) -> None:
        """Refuse bad (rendered) parameters before any request."""

    def resolve(self, context: Context) -> None:
        """Turn the names given into ids, once per try, before any job is submitted; what it sets
        goes into :attr:`resolved` (kept across a deferral, logged, in the task's result)."""

    def uses_names(self) -> bool:
        """Whether :meth:`resolve` has names to turn into ids."""
        return False

    def submit(self, context: Context) -> dict[str, Any]:
        """Start the job; return the Job (``{"id", "status"}``)."""
        raise NotImplementedError

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        """The task's return value once the job succeeded (also on a later try, after a failure here)."""
        return {"job_id": job_id, "status": "success"}

    def on_failure(self, context: Context, job_id: int, status: str, last_error_log: str | None) -> NoReturn:
        raise AnalyticsJobError(
            describe_job_failure(self.hook, job_id, status, last_error_log),
            job_id=job_id,
            status=status,
            last_error_log=last_error_log,
        )

    # -- the flow ---------------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        with self.closing_hook():
            with naming_the_task(self.task_id):
                self.check_inputs()
                self.resolve(context)
            if self.resolved:
                ids = ", ".join(f"{k}={v!r}" for k, v in self.resolved.items() if k.endswith("_id"))
                if ids:
                    self.log.info("Resolved by name: %s", ids)
                context["ti"].xcom_push(key=RESOLVED_KEY, value=self.resolved)
            return self.execute_resumable(context)

    def execute_complete(
        self, context: Context, event: dict[str, Any] | None = None, resolved: dict[str, Any] | None = None
    ) -> Any:
        """Resume after the trigger: check its event, then finish as a waiting task would (with the
        ids the names were resolved to before the deferral)."""
        from analytics_provider.api.jobs.wait import WaitResult, final_state

        if resolved is None and self.uses_names():  # dag.test() hands no kwargs over a deferral
            ti = context["ti"]
            resolved = ti.xcom_pull(task_ids=self.task_id, key=RESOLVED_KEY, map_indexes=ti.map_index)
        if resolved:
            self.apply_resolved(resolved)
        state = final_state(WaitResult.from_event(event))
        with self.closing_hook():
            return self._finish(context, state.job_id, state.status, state.last_error_log)

    def apply_resolved(self, resolved: dict[str, Any]) -> None:
        """Take the ids names were resolved to (this try's, handed over a deferral)."""
        self.resolved = dict(resolved)
        for name, value in resolved.items():
            if name in self.template_fields:
                setattr(self, name, value)

    # -- ResumableJobMixin: how the flow reaches the service ------------------------------------

    def submit_job(self, context: Context) -> int:
        """Submit, and return the id to keep: the existing job's when the service says ``already_existed``."""
        job = self.submit(context)
        job_id = int(job["id"])
        self._submitted_status = str(job.get("status") or "")
        existing = job.get("existing_job_id")
        if self._submitted_status == "already_existed" and existing is not None:
            self.log.info("Job %s already existed: an identical job %s is pending; following it", job_id, existing)
            job_id = int(existing)
        else:
            self.log.info("Submitted job %s (status %s)", job_id, self._submitted_status)
        context["ti"].xcom_push(key="job_id", value=job_id)
        return job_id

    def get_job_status(self, external_id: Any, context: Context) -> str:
        """The status of the job an earlier try kept (:data:`UNREACHABLE` while it cannot be read)."""
        from analytics_provider.api.jobs.wait import UNREACHABLE, UNREADABLE, JobWatch

        job_id = int(external_id)
        context["ti"].xcom_push(key="job_id", value=job_id)
        watch = JobWatch(job_id, poll_interval=self.poll_interval, max_outage=self.max_outage, clock=self.hook.clock)
        result = self.hook.look_at_job(watch)  # one look: it stops at the first pause
        if result is None:
            return watch.status or UNREACHABLE  # pending, followed, or unreachable: wait on it again
        if result.status == "error":
            self.log.warning("Job %s kept by an earlier try cannot be read: %s", job_id, result.message)
            return UNREADABLE
        return result.job_status

    def is_job_active(self, status: str) -> bool:
        from analytics_provider.api.jobs.wait import is_pending_status

        return is_pending_status(status)

    def is_job_succeeded(self, status: str) -> bool:
        return status == "success"

    def poll_until_complete(self, external_id: Any, context: Context) -> Any:
        """Wait for the job (or defer the wait) and return the task's result."""
        job_id = int(external_id)
        if not self.wait_for_completion:
            result: Any = {"job_id": job_id, "status": self._submitted_status or "pending"}
        elif self.deferrable:
            from analytics_provider.triggers.analytics import AnalyticsJobTrigger

            self.defer(
                trigger=AnalyticsJobTrigger(
                    analytics_conn_id=self.analytics_conn_id,
                    job_id=job_id,
                    poll_interval=self.poll_interval,
                    end_time=AnalyticsJobTrigger.clock() + self.timeout,
                    max_outage=self.max_outage,
                    try_number=context["ti"].try_number,
                ),
                method_name="execute_complete",
                kwargs={"resolved": self.resolved} if self.resolved else None,
            )
        else:
            state = self.hook.wait_for_job(
                job_id, poll_interval=self.poll_interval, timeout=self.timeout, max_outage=self.max_outage
            )
            result = self._finish(context, state.job_id, state.status, state.last_error_log)
        self._results[job_id] = result
        return result

    def get_job_result(self, external_id: Any, context: Context) -> Any:
        """The result the wait produced, or, for a job that succeeded on an earlier try, its result now."""
        job_id = int(external_id)
        if job_id in self._results:
            return self._results.pop(job_id)
        if not self.wait_for_completion:
            return {"job_id": job_id, "status": "success"}
        self.log.info("Job %s succeeded on an earlier try; finishing without submitting again", job_id)
        return self._succeeded(context, job_id)

    def _finish(self, context: Context, job_id: int, status: str, last_error_log: str | None) -> Any:
        self.lineage_job_id = job_id
        if status != "success":
            self.on_failure(context, job_id, status, last_error_log)
        self.log.info("Job %s succeeded", job_id)
        return self._succeeded(context, job_id)

    def _succeeded(self, context: Context, job_id: int) -> Any:
        """The task's result for a job that succeeded (with what it cost, when asked); kept for the
        lineage facets too."""
        self.lineage_job_id = job_id
        result = self.on_success(context, job_id)
        if self.include_data_source_stats and isinstance(result, dict):
            result = {**result, "data_source_stats": self._data_source_stats(job_id)}
        self.lineage_result = result
        return result

    def _data_source_stats(self, job_id: int) -> list[dict[str, Any]] | None:
        """What the job cost in its data source, logged in one line (None: not reported, or not readable)."""
        try:
            stats = data_source_stats(self.hook.get_job(job_id, include_data_source_stats=True))
        except Exception as exc:  # the job's work is done and delivered: its cost is not worth a retry
            self.log.warning("Job %s succeeded, but its data_source_stats could not be read: %s", job_id, exc)
            return None
        self.log.info("%s", describe_cost(job_id, stats))
        return stats
