"""Data sources and what is modelled on them: dbt manifests, data models, persistences' DDL, and
the dependants of a source, model or data set."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.resources.base import Id, Json, ResourceMethods

if TYPE_CHECKING:
    from analytics_provider.api.pagination import Pages

Manifest = str | os.PathLike[str] | tuple[str, IO[bytes]]
"""A dbt manifest to upload: a local path, or ``(file name, binary file object)``."""


class DataSourceMethods(ResourceMethods):
    def get_data_source(self, data_source_id: Id) -> Json:
        return self.call("get_data_source", data_source_id)

    def update_data_source(self, data_source_id: Id, data_source: Mapping[str, Any]) -> Json:
        return self.call("update_data_source", data_source_id, body=dict(data_source))

    def delete_data_source(self, data_source_id: Id) -> Json:
        return self.call("delete_data_source", data_source_id)

    def bust_data_source_cache(self, data_source_id: Id) -> Json:
        """Invalidate the data source's exploration and report cache; returns the Job."""
        return self.call("bust_data_source_cache", data_source_id)

    def upload_dbt_manifests(self, manifests: Sequence[Manifest], *, data_source_name: str | None = None) -> Json:
        """Upload up to 5 dbt ``manifest.json`` files (200 MB each) in one atomic request; returns the Job.

        The files are streamed, never read into memory whole. Sizes and count are checked before
        anything is sent; a malformed manifest fails the job, not the request. Never re-sent once
        the body may have reached the service.
        """
        from analytics_provider.hooks.upload import send_manifests

        return send_manifests(self, manifests, data_source_name)

    def list_data_models(
        self, project_id: int, *, branch_name: str | None = None, commit_oid: str | None = None
    ) -> Pages:
        """The AML project's data models (``commit_oid`` wins over ``branch_name``)."""
        return self.paginate("list_data_models", {
            "project_id": project_id, "branch_name": branch_name, "commit_oid": commit_oid,
        })

    def validate_ddl(self, ddl: str) -> str:
        """Check a data model persistence's custom DDL: ``"success"``, or the service's 422 raised."""
        if not isinstance(ddl, str) or not ddl.strip():
            raise AnalyticsParameterError("validate_ddl: ddl must be a non-empty string")
        return str(self.call("validate_ddl", body={"ddl": ddl}))

    def get_dependants(self, object_id: int, object_type: str) -> Json:
        """Downstream dependants of a DataSource, DataModel or DataSet."""
        return self.call("get_dependants", query={"id": object_id, "type": object_type})
