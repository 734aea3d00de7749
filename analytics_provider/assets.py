"""Asset events for the files the operators write, through the asset aliases in their outlets.

A templated destination is only known once rendered, so a DAG cannot list the file as an
``Asset`` outlet. It lists an ``AssetAlias`` instead; the operator then adds an event for the
file it wrote (``file:///abs/path``, ``s3://bucket/key``...) to every alias in its outlets, and
DAGs scheduled on the alias run when a file arrives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analytics_provider.locations import StorageLocation


def emit_file_asset_events(operator: Any, context: Mapping[str, Any], location: str, extra: dict[str, Any]) -> str:
    """Add an event for the file at ``location`` to each asset alias in the operator's outlets.

    Returns the file's asset URI. ``extra`` becomes the event's extra (plain JSON values).
    """
    from airflow.providers.common.compat.sdk import Asset, AssetAlias

    uri = StorageLocation.parse(location).uri
    for outlet in operator.outlets or ():
        if isinstance(outlet, AssetAlias):
            context["outlet_events"][outlet].add(Asset(uri=uri), extra=extra)
            operator.log.info("Asset event for %s through alias %r", uri, outlet.name)
    return uri
