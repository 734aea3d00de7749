"""Data schedules and data alerts: deliveries of a dashboard's or widget's data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from analytics_provider.hooks.resources.base import Id, Json, ResourceMethods

if TYPE_CHECKING:
    from analytics_provider.api.pagination import Pages


class ScheduleMethods(ResourceMethods):
    def create_data_schedule(self, data_schedule: Mapping[str, Any]) -> Json:
        """Create a schedule; never re-sent once it may have reached the service."""
        return self.call("create_data_schedule", body=dict(data_schedule))

    def list_data_schedules(
        self,
        *,
        search_term: str | None = None,
        sort: str | None = None,
        creator_roles: Sequence[str] | None = None,
        page: int | None = None,
        dest_type: str | None = None,
        source_type: str | None = None,
        source_id: int | None = None,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Pages:
        return self.paginate("list_data_schedules", {
            "search_term": search_term, "sort": sort, "creator_roles": creator_roles, "page": page,
            "dest_type": dest_type, "source_type": source_type, "source_id": source_id, "limit": limit,
            "after": after, "before": before,
        })

    def get_data_schedule(self, schedule_id: Id) -> Json:
        return self.call("get_data_schedule", schedule_id)

    def update_data_schedule(self, schedule_id: Id, data_schedule: Mapping[str, Any]) -> Json:
        return self.call("update_data_schedule", schedule_id, body=dict(data_schedule))

    def delete_data_schedule(self, schedule_id: Id) -> Json:
        return self.call("delete_data_schedule", schedule_id)

    def execute_data_schedule(self, schedule_id: Id) -> Json:
        """Send a schedule now (for example after a warehouse load); returns the Job."""
        return self.call("execute_data_schedule", schedule_id)

    def test_data_schedule(self, data_schedule: Mapping[str, Any]) -> Json:
        """Send an unsaved schedule once (for example to check its destination); returns the Job."""
        return self.call("test_data_schedule", body=dict(data_schedule))

    def create_data_alert(self, data_alert: Mapping[str, Any]) -> Json:
        """Create an alert; never re-sent once it may have reached the service."""
        return self.call("create_data_alert", body=dict(data_alert))

    def list_data_alerts(
        self,
        *,
        search_term: str | None = None,
        dest_type: str | None = None,
        source_id: Id | None = None,
        source_type: str | None = None,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Pages:
        return self.paginate("list_data_alerts", {
            "search_term": search_term, "dest_type": dest_type, "source_id": source_id, "source_type": source_type,
            "limit": limit, "after": after, "before": before,
        })

    def get_data_alert(self, alert_id: Id) -> Json:
        return self.call("get_data_alert", alert_id)

    def update_data_alert(self, alert_id: Id, data_alert: Mapping[str, Any]) -> Json:
        return self.call("update_data_alert", alert_id, body=dict(data_alert))

    def delete_data_alert(self, alert_id: Id) -> Json:
        return self.call("delete_data_alert", alert_id)

    def execute_data_alert(self, alert_id: Id) -> Json:
        return self.call("execute_data_alert", alert_id)

    def test_data_alert(self, data_alert: Mapping[str, Any]) -> Json:
        """Run an unsaved alert once; returns the Job."""
        return self.call("test_data_alert", body=dict(data_alert))
