"""Operator extra links: from a task to the dashboard it worked on, in the service."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import TaskInstanceKey

DASHBOARD_URL_KEY = "dashboard_url"
_PUSHED_ATTR = "_analytics_dashboard_url"  # on the operator: what this process pushed ("" for nothing)


def push_dashboard_link(operator: Any, context: Any, fetch_url: Callable[[], str | None]) -> None:
    """Look the dashboard's URL up once and push it for the link; best effort.

    A failure of the lookup is a warning, never the task's failure (the link is a convenience).
    The operator remembers what it pushed, so that Airflow's end-of-task link lookup needs no
    XCom read (and logs no "XCom not found") when nothing was pushed.
    """
    setattr(operator, _PUSHED_ATTR, "")
    try:
        url = fetch_url()
    except Exception as exc:
        log = getattr(operator, "log", None) or logging.getLogger(__name__)
        log.warning("The dashboard link is left out: its URL could not be read (%s)", exc)
        return
    if url:
        context["ti"].xcom_push(key=DASHBOARD_URL_KEY, value=str(url))
        setattr(operator, _PUSHED_ATTR, str(url))


def widget_dashboard_url(hook: Any, widget_id: Any) -> str | None:
    """The URL of the dashboard holding a widget: one request, no retry (the link is best effort)."""
    from analytics_provider.api.call.retry import RetryPolicy

    widget = hook.call("get_dashboard_widget", widget_id, query={"include_dashboard": True},
                       retry_policy=RetryPolicy(max_attempts=1))
    return (widget.get("dashboard") or {}).get("url") if isinstance(widget, dict) else None


def dashboard_url(hook: Any, dashboard_id: Any) -> str | None:
    """A dashboard's URL: one request, no retry (the link is best effort)."""
    from analytics_provider.api.call.retry import RetryPolicy

    dashboard = hook.call("get_dashboard", dashboard_id, retry_policy=RetryPolicy(max_attempts=1))
    return dashboard.get("url") if isinstance(dashboard, dict) else None


def forget_dashboard_link(operator: Any) -> None:
    """Mark that this run of the task has pushed no link (yet)."""
    setattr(operator, _PUSHED_ATTR, "")


class AnalyticsDashboardLink(BaseOperatorLink):
    """The dashboard an export or preload task worked on (its URL, as the service gave it)."""

    name = "Analytics dashboard"

    def get_link(self, operator: Any, *, ti_key: TaskInstanceKey) -> str:
        pushed = getattr(operator, _PUSHED_ATTR, None)
        if pushed is not None:  # this process ran the task: it knows what it pushed
            return str(pushed)
        from airflow.providers.common.compat.sdk import XCom

        url = XCom.get_value(ti_key=ti_key, key=DASHBOARD_URL_KEY)
        return str(url) if url else ""
