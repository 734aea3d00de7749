"""Dashboards and their widgets (and a widget's export); finding them by name
(:class:`~analytics_provider.hooks.names.NamedLookups`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from analytics_provider.api.filters import FilterConditions, check_filter_conditions
from analytics_provider.api.operations import DASHBOARD_CATEGORIES, EXPORT_OUTPUTS, PERMISSION_ACTIONS
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.names import NamedLookups, is_id
from analytics_provider.hooks.resources.base import Id, Json, ResourceMethods, check_choice, given

if TYPE_CHECKING:
    from analytics_provider.api.pagination import Pages


class DashboardMethods(NamedLookups, ResourceMethods):
    def get_dashboard(self, dashboard_id: Id) -> Json:
        return self.call("get_dashboard", dashboard_id)

    def list_dashboards(
        self,
        *,
        sort: str | None = None,
        include_embed_info: bool | None = None,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Pages:
        return self.paginate("list_dashboards", {
            "sort": sort, "include_embed_info": include_embed_info, "limit": limit, "after": after, "before": before,
        })

    def list_dashboards_metadata(
        self, *, version: int | Sequence[int] | None = None, permission_action: str | None = None
    ) -> list[Json]:
        """``{id, title, uname, project_id, version}`` of every dashboard the key may act on."""
        if permission_action is not None:
            check_choice("list_dashboards_metadata", "permission_action", permission_action, PERMISSION_ACTIONS)
        versions = [version] if isinstance(version, int) else version
        return self.call("list_dashboards_metadata", query=given(
            {"version": list(versions) if versions is not None else None, "permission_action": permission_action}
        )) or []

    def build_dashboard_url(
        self,
        dashboard_id: Id,
        filter_states: FilterConditions | None = None,
        *,
        filters: Mapping[str, Any] | None = None,
    ) -> Json:
        """``{dashboard_url, fstate_hash}`` for the dashboard with preset filter states: by filter id
        (``filter_states``) and by label (``filters={"Region": ["EU"]}``, checked against the
        filter's options). ``dashboard_id`` may be a dashboard's title too (see :meth:`find_dashboard`)."""
        states = check_filter_conditions(filter_states or [])
        if filters or not is_id(dashboard_id):
            board = self.find_dashboard(int(dashboard_id) if is_id(dashboard_id) else dashboard_id)
            dashboard_id, states = board["id"], [*states, *self.filter_conditions(board, filters or {})]
        return self.call("build_dashboard_url", dashboard_id, body={"filter_states": states})

    def preload_dashboard(
        self,
        dashboard_id: Id,
        dashboard_filter_conditions: FilterConditions | None = None,
        bust_cache: bool = False,
    ) -> Json:
        """Run the dashboard's widgets into the cache; ``bust_cache`` ignores what is cached."""
        body = {
            "dashboard_filter_conditions": check_filter_conditions(dashboard_filter_conditions or []),
            "bust_cache": bool(bust_cache),
        }
        return self.call("preload_dashboard", dashboard_id, body=body)

    def clone_canvas_dashboard(
        self,
        dashboard_id: Id,
        new_uname: str,
        *,
        category_type: str = "ReportCategory",
        category_id: int | None = None,
        new_title: str | None = None,
    ) -> Json:
        """Copy a canvas dashboard under a new uname; returns the Job. Never re-sent once received."""
        if not isinstance(new_uname, str) or not new_uname:
            raise AnalyticsParameterError("clone_canvas_dashboard: new_uname must be a non-empty string")
        check_choice("clone_canvas_dashboard", "category_type", category_type, DASHBOARD_CATEGORIES)
        body = {"new_uname": new_uname, "category_type": category_type,
                **given({"category_id": category_id, "new_title": new_title})}
        return self.call("clone_canvas_dashboard", dashboard_id, body=body)

    def delete_dashboard(self, dashboard_id: Id) -> Json:
        return self.call("delete_dashboard", dashboard_id)

    def get_dashboard_widget(
        self,
        widget_id: Id,
        *,
        include_dashboard: bool | None = None,
        include_report: bool | None = None,
        include_url: bool | None = None,
    ) -> Json:
        return self.call("get_dashboard_widget", widget_id, query={
            "include_dashboard": include_dashboard, "include_report": include_report, "include_url": include_url,
        })

    def delete_dashboard_widget(self, widget_id: Id) -> Json:
        return self.call("delete_dashboard_widget", widget_id)

    def submit_widget_export(
        self, widget_id: Id, output: str = "csv", dashboard_filter_conditions: FilterConditions | None = None
    ) -> Json:
        """Start exporting a dashboard widget's data as csv, xlsx or pdf; returns the Job."""
        check_choice("submit_widget_export", "output", output, EXPORT_OUTPUTS)
        body: Json = {"output": output}
        if dashboard_filter_conditions:
            body["dashboard_filter_conditions"] = check_filter_conditions(dashboard_filter_conditions)
        return self.call("submit_widget_export", widget_id, body=body)
