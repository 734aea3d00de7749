"""AML projects (publish, validate) and the tags of their data sets and dashboards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analytics_provider.api.operations import TAG_OBJECT_TYPES
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.resources.base import Json, ResourceMethods, check_choice


class AmlMethods(ResourceMethods):
    def publish_aml_project(self, object_mapping: Mapping[str, Any] | None = None) -> Json:
        """Publish the AML project to production; returns the Job (read its result for diagnostics)."""
        return self.call("publish_aml_project", body={"object_mapping": dict(object_mapping)} if object_mapping else {})

    def validate_aml_project(self, branch_name: str, commit_oid: str) -> Json:
        return self.call("validate_aml_project", body={"branch_name": branch_name, "commit_oid": commit_oid})

    def list_tags(self) -> list[Json]:
        """The production tags (``{name, description, color}``)."""
        return self.call("list_tags") or []

    def add_object_tags(
        self, uname: str, object_type: str, tags: Sequence[str], *, project_id: int | None = None
    ) -> Json:
        """Tag an AML data set or dashboard; returns the Job."""
        return self.call("add_object_tags", body=_tag_body("add_object_tags", uname, object_type, tags, project_id))

    def remove_object_tags(
        self, uname: str, object_type: str, tags: Sequence[str] = (), *, project_id: int | None = None
    ) -> Json:
        """Untag an AML data set or dashboard (no tags: remove them all); returns the Job."""
        body = _tag_body("remove_object_tags", uname, object_type, tags, project_id)
        return self.call("remove_object_tags", body=body)

    def recommend_archivable_objects(self) -> list[Json]:
        """AML dashboards and data sets not viewed for more than 30 days."""
        return self.call("recommend_archivable_objects") or []


def _tag_body(name: str, uname: str, object_type: str, tags: Sequence[str], project_id: int | None) -> Json:
    if not isinstance(uname, str) or not uname:
        raise AnalyticsParameterError(f"{name}: uname must be a non-empty string")
    check_choice(name, "object_type", object_type, TAG_OBJECT_TYPES)
    if isinstance(tags, str) or not all(isinstance(t, str) and t for t in tags):
        raise AnalyticsParameterError(f"{name}: tags must be a list of tag names")
    body: Json = {"object_params": {"uname": uname, "type": object_type}, "tags": list(tags)}
    if project_id is not None:
        body["project_id"] = project_id
    return body
