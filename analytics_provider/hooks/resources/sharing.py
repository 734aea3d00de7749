"""Shareable links (public links to a dashboard) and embedding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from analytics_provider.api.filters import check_filter_conditions
from analytics_provider.hooks.resources.base import Id, Json, ResourceMethods

if TYPE_CHECKING:
    from analytics_provider.api.pagination import Pages


class SharingMethods(ResourceMethods):
    def create_shareable_link(self, shareable_link: Mapping[str, Any]) -> Json:
        """Create a public link to a dashboard; never re-sent once it may have reached the service."""
        link = dict(shareable_link)
        if link.get("dynamic_filter_presets"):
            link["dynamic_filter_presets"] = check_filter_conditions(
                link["dynamic_filter_presets"], "dynamic_filter_presets", condition_key="preset_condition"
            )
        return self.call("create_shareable_link", body=link)

    def list_shareable_links(
        self,
        *,
        sort: str | None = None,
        resource_type: str | None = None,
        resource_id: int | None = None,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Pages:
        return self.paginate("list_shareable_links", {
            "sort": sort, "resource_type": resource_type, "resource_id": resource_id, "limit": limit,
            "after": after, "before": before,
        })

    def get_shareable_link(self, link_id: Id) -> Json:
        return self.call("get_shareable_link", link_id)

    def update_shareable_link(self, link_id: Id, shareable_link: Mapping[str, Any]) -> Json:
        return self.call("update_shareable_link", link_id, body=dict(shareable_link))

    def delete_shareable_link(self, link_id: Id) -> Json:
        return self.call("delete_shareable_link", link_id)

    def create_shortened_embed_token(self, hashcode: str, token: str) -> str:
        """A short token for an embed URL that exceeds browser limits."""
        return self.call("create_shortened_embed_token", hashcode, body={"token": token})
