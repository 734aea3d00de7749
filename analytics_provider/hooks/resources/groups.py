"""Groups and their members."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from analytics_provider.hooks.resources.base import Id, Json, ResourceMethods

if TYPE_CHECKING:
    from analytics_provider.api.pagination import Pages


class GroupMethods(ResourceMethods):
    def create_group(self, group: Mapping[str, Any]) -> Json:
        return self.call("create_group", body=dict(group))

    def list_groups(
        self,
        *,
        sort: str | None = None,
        include_users: bool | None = None,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Pages:
        return self.paginate("list_groups", {
            "sort": sort, "include_users": include_users, "limit": limit, "after": after, "before": before,
        })

    def get_group(self, group_id: Id, *, include_users: bool | None = None) -> Json:
        return self.call("get_group", group_id, query={"include_users": include_users})

    def update_group(self, group_id: Id, group: Mapping[str, Any]) -> Json:
        return self.call("update_group", group_id, body=dict(group))

    def delete_group(self, group_id: Id) -> Json:
        return self.call("delete_group", group_id)

    def add_user_to_group(self, group_id: Id, user_id: Id) -> Json:
        return self.call("add_user_to_group", group_id, user_id)

    def remove_user_from_group(self, group_id: Id, user_id: Id) -> Json:
        return self.call("remove_user_from_group", group_id, user_id)
