"""Operator extra links: from a task to the dashboard it worked on, in the service."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import TaskInstanceKey

DASHBOARD_URL_KEY = "dashboard_url"


class AnalyticsDashboardLink(BaseOperatorLink):
    """The dashboard an export or preload task worked on (its URL, as the service gave it)."""

    name = "Analytics dashboard"

    def get_link(self, operator: Any, *, ti_key: TaskInstanceKey) -> str:
        from airflow.providers.common.compat.sdk import XCom

        url = XCom.get_value(ti_key=ti_key, key=DASHBOARD_URL_KEY)
        return str(url) if url else ""
