"""Jobs: what the service runs in the background. Waiting for a job, and downloading an export's
file, are the client's (:class:`~analytics_provider.hooks.client.AnalyticsClientHook`)."""

from __future__ import annotations

from collections.abc import Sequence

from analytics_provider.api.operations import MAX_JOB_IDS
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.resources.base import Id, Json, ResourceMethods


class JobMethods(ResourceMethods):
    def get_job(
        self, job_id: Id, *, include_data_source_stats: bool | None = None, include_source: bool | None = None
    ) -> Json:
        return self.call("get_job", job_id, query={
            "include_data_source_stats": include_data_source_stats, "include_source": include_source,
        })

    def list_jobs(
        self,
        job_ids: Sequence[int],
        *,
        include_data_source_stats: bool | None = None,
        include_source: bool | None = None,
    ) -> list[Json]:
        """Several jobs, a request per 100 ids (the service's limit); ids that do not exist, or
        that the key may not see, are left out of the answer."""
        if isinstance(job_ids, (str, bytes)) or not job_ids:
            raise AnalyticsParameterError("list_jobs: job_ids must be a non-empty list of job ids")
        options = {"include_data_source_stats": include_data_source_stats, "include_source": include_source}
        ids = list(job_ids)
        found: list[Json] = []
        for start in range(0, len(ids), MAX_JOB_IDS):
            found += self.call("list_jobs", query={"ids": ids[start:start + MAX_JOB_IDS], **options}) or []
        return found

    def get_job_result(self, job_id: Id) -> Json:
        """``{status, error, result}``: ``result.data`` holds an AML publish's outcome (its diagnostics on
        failure) or a data-set query's rows (``{fields, values, meta}``); the vendor types no
        ``result`` for other kinds of job."""
        return self.call("get_job_result", job_id)

    def get_job_logs(self, job_id: Id) -> list[Json]:
        """The job's log lines: ``[{level, message, timestamp}]``."""
        return self.call("get_job_logs", job_id) or []

    def list_job_queues(self) -> list[Json]:
        """The service's job queues with their total and busy workers."""
        return self.call("list_job_queues") or []
