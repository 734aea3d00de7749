"""What a dbt run built, from its ``run_results.json`` and ``manifest.json`` (parsed; no I/O).

A node of the run counts when it is a model, seed or snapshot (they write relations) and its
result's status is ``success``: built or refreshed. Its relation is the manifest's
``relation_name`` (``"analytics"."public"."orders"``, quoted as dbt quotes it: matched by
:mod:`.tables`), or ``database.schema.alias`` where the manifest gives none. Ephemeral models
write no relation and are left out; so are failed, skipped and errored nodes (their tables did not
change), which :func:`built_relations` reports apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from analytics_provider.exceptions import AnalyticsParameterError

BUILDING_TYPES = ("model", "seed", "snapshot")


class DbtRun(NamedTuple):
    relations: list[str]
    """The relations built or refreshed, in the run's order, each once."""
    not_built: list[str]
    """Unique ids of the relation-writing nodes that did not succeed (``error``, ``skipped``...)."""


def built_relations(run_results: Any, manifest: Any, where: str = "dbt") -> DbtRun:
    """The relations a run built, from the two parsed files; a file of another shape is refused
    with :class:`~analytics_provider.exceptions.AnalyticsParameterError`, naming ``where``."""
    if not isinstance(run_results, Mapping) or not isinstance(run_results.get("results"), list):
        raise AnalyticsParameterError(f"{where}: dbt_run_results is not a dbt run_results.json (no 'results' list)")
    if not isinstance(manifest, Mapping) or not isinstance(manifest.get("nodes"), Mapping):
        raise AnalyticsParameterError(f"{where}: dbt_manifest is not a dbt manifest.json (no 'nodes' object)")
    nodes: Mapping[str, Any] = manifest["nodes"]
    relations: list[str] = []
    not_built: list[str] = []
    for result in run_results["results"]:
        unique_id = str((result or {}).get("unique_id") or "")
        if unique_id.split(".", 1)[0] not in BUILDING_TYPES:
            continue
        node = nodes.get(unique_id)
        if not isinstance(node, Mapping):
            raise AnalyticsParameterError(
                f"{where}: {unique_id} is in dbt_run_results but not in dbt_manifest (files of different runs?)")
        if (node.get("config") or {}).get("materialized") == "ephemeral":
            continue
        if result.get("status") != "success":
            not_built.append(unique_id)
            continue
        relation = node.get("relation_name") or ".".join(
            str(p) for p in (node.get("database"), node.get("schema"), node.get("alias") or node.get("name")) if p)
        if relation and relation not in relations:
            relations.append(relation)
    return DbtRun(relations, not_built)
