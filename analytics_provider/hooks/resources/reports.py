"""Query reports, and data sets: reading them and running queries on them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analytics_provider.api.filters import check_data_set_query
from analytics_provider.hooks.resources.base import Id, Json, ResourceMethods


class ReportMethods(ResourceMethods):
    def get_query_report(self, report_id: Id, *, include_data_set: bool | None = None) -> Json:
        return self.call("get_query_report", report_id, query={"include_data_set": include_data_set})

    def get_data_set(
        self, data_set_id: Id, *, include_models: bool | None = None, include_reports: bool | None = None
    ) -> Json:
        return self.call("get_data_set", data_set_id, query={
            "include_models": include_models, "include_reports": include_reports,
        })

    def delete_data_set(self, data_set_id: Id) -> Json:
        return self.call("delete_data_set", data_set_id)

    def submit_data_set_query(self, data_set_id: Id, query: Mapping[str, Any]) -> Json:
        """Run a query (metrics, dimensions, filters...) on a data set.

        Returns either the Job (``{"id", "status"}``: wait for it, then read the rows from
        ``get_job_result(job_id)["result"]["data"]``) or, when the service answers from its
        cache, that data at once: ``{"fields", "values", "meta"}``. :func:`is_job` tells which.
        """
        answer = self.call("submit_data_set_query", data_set_id, body={"query": check_data_set_query(query)})
        return answer["job"] if isinstance(answer, dict) and isinstance(answer.get("job"), dict) else answer

    def generate_data_set_sql(self, data_set_id: Id, query: Mapping[str, Any]) -> str:
        """The SQL the service would run for ``query`` on the data set."""
        return str(self.call("generate_data_set_sql", data_set_id, body={"query": check_data_set_query(query)}))


def is_job(answer: Mapping[str, Any]) -> bool:
    """Whether :meth:`AnalyticsHook.submit_data_set_query` answered a Job (else the rows themselves)."""
    return "id" in answer and "status" in answer and "values" not in answer
