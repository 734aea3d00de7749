"""User attributes and their entries (the values a user or group has)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from analytics_provider.api.operations import MAX_UPSERT_ENTRIES
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.resources.base import Id, Json, ResourceMethods

if TYPE_CHECKING:
    from analytics_provider.api.pagination import Pages


class UserAttributeMethods(ResourceMethods):
    def create_user_attribute(self, user_attribute: Mapping[str, Any]) -> Json:
        return self.call("create_user_attribute", body=dict(user_attribute))

    def list_user_attributes(
        self, *, limit: int | None = None, after: str | None = None, before: str | None = None
    ) -> Pages:
        return self.paginate("list_user_attributes", {"limit": limit, "after": after, "before": before})

    def update_user_attribute(self, attribute_id: Id, user_attribute: Mapping[str, Any]) -> Json:
        return self.call("update_user_attribute", attribute_id, body=dict(user_attribute))

    def delete_user_attribute(self, attribute_id: Id) -> Json:
        return self.call("delete_user_attribute", attribute_id)

    def list_user_attribute_entries(
        self, subject_type: str, subject_id: int, *, limit: int | None = None, after: str | None = None,
        before: str | None = None,
    ) -> Pages:
        return self.paginate("list_user_attribute_entries", {
            "subject_type": subject_type, "subject_id": subject_id, "limit": limit, "after": after, "before": before,
        })

    def compute_user_attribute_values(self, subject_type: str, subject_id: int) -> dict[str, list[str]]:
        query = {"subject_type": subject_type, "subject_id": subject_id}
        return self.call("compute_user_attribute_values", query=query)

    def upsert_user_attribute_entries(self, entries: Iterable[Mapping[str, Any]]) -> list[Json]:
        """Upsert any number of entries, in requests of at most 100; all are checked first.

        Each entry names its attribute by ``user_attribute_id`` or ``user_attribute_name``.
        An upsert is idempotent, so after a failure the whole call can simply be run again.
        """
        batch = [dict(entry) for entry in entries]
        for index, entry in enumerate(batch):
            if entry.get("user_attribute_id") is None and not entry.get("user_attribute_name"):
                raise AnalyticsParameterError(
                    f"upsert_user_attribute_entries: entry {index} names no attribute "
                    "(give user_attribute_id or user_attribute_name)"
                )
        upserted: list[Json] = []
        for start in range(0, len(batch), MAX_UPSERT_ENTRIES):
            chunk = batch[start : start + MAX_UPSERT_ENTRIES]
            upserted.extend(self.call("upsert_user_attribute_entries", body=chunk) or [])
        return upserted
