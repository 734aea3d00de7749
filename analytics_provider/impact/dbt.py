"""What a dbt run built, from its ``run_results.json`` and, when given, its ``manifest.json``
(parsed; no I/O). Read: run results of schema v1 to v6 (dbt 0.19 to 1.12), manifests v1 to v12.

A result counts when its node is a model, seed or snapshot (they write relations) and its status
is ``success`` or ``partial success`` (a microbatch model some of whose batches failed: its table
changed all the same). Its relation is, first found: the result's own ``relation_name`` (dbt 1.7+),
the manifest node's ``relation_name``, or the node's ``database.schema.alias`` quoted as its
adapter quotes by default (manifests of dbt before 1.1 may give none). Relations are kept as dbt
wrote them (each part in backticks for BigQuery, ``"analytics"."public"."orders"``): they are
matched by the rules of the data source of each model (:mod:`.tables`), and only to models of data
sources of the run's warehouse (its ``adapter_type``, which the manifest carries).

Ephemeral models write no relation and are left out. Results that did not build (``error``,
``skipped``...) are reported apart, and so are built nodes whose relation neither file names (files
of two invocations: a node added since the manifest was written; without a manifest, seeds, whose
results name no relation, and every node of dbt before 1.7), so that what can be resolved is
refreshed and the rest is named. Refused with
:class:`~analytics_provider.exceptions.AnalyticsParameterError`, naming the file: files whose
``adapter_type`` differ (two targets: a Snowflake run's relations read with a PostgreSQL
manifest went to PostgreSQL's data sources); a run of a
command that builds nothing (``args.which``: ``compile``, ``docs generate``, ``test``...); a file
without ``args.which`` (every dbt from 0.19 on writes it, dbt Fusion too: without it a compile
could pass for a build); a run that built no relation (all its models failed or were skipped, or
it ran only tests or ephemeral models: nothing to refresh, and it would go green having refreshed
nothing); files of another shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from analytics_provider.exceptions import AnalyticsParameterError

BUILDING_TYPES = ("model", "seed", "snapshot")
BUILT_STATUSES = ("success", "partial success")
BUILDING_COMMANDS = ("build", "run", "seed", "snapshot", "retry", "clone")
"""``args.which`` of the commands that write relations (``retry`` reruns one of them)."""
COMMAND_NAMES = {"generate": "docs generate", "serve": "docs serve", "list": "ls", "freshness": "source freshness",
                 "run-operation": "run-operation"}
QUOTES_BY_ADAPTER = {"bigquery": "`", "spark": "`", "databricks": "`", "snowflake": ""}
"""How an adapter quotes a relation's parts by default (others: double quotes)."""
_SCHEMA = re.compile(r"/dbt/([a-z-]+)/v(\d+)\.json$")


class DbtRun(NamedTuple):
    relations: list[str]
    """The relations built or refreshed, in the run's order, each once, as dbt wrote them."""
    not_built: list[str]
    """Unique ids of the relation-writing nodes that did not succeed (``error``, ``skipped``...)."""
    unresolved: list[str]
    """Unique ids of nodes built whose relation neither file names (files of two invocations)."""
    command: str | None
    """What ran (``args.which``: ``build``, ``run``...), when the file says."""
    dbt_version: str | None
    adapter: str | None = None
    """The adapter that ran (``metadata.adapter_type`` of the manifest, or of the run results should
    they carry it): the warehouse its relations are in; None when neither file says."""


UNREAD_MANIFEST_KEYS = frozenset({
    "raw_code", "compiled_code", "raw_sql", "compiled_sql", "columns", "description", "depends_on", "docs",
    "meta", "tags", "refs", "sources", "fqn", "checksum", "patch_path", "original_file_path", "path", "root_path",
    "unrendered_config", "config_call_dict", "contract", "constraints", "macros", "exposures", "metrics",
    "groups", "selectors", "disabled", "parent_map", "child_map", "group_map", "saved_queries",
    "semantic_models", "unit_tests", "extra_ctes", "env", "docs_blocks"})
"""Keys of a manifest's objects that :func:`built_relations` never reads (code, columns, docs, maps)."""


def slim_manifest_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A ``json`` ``object_pairs_hook``: each object of a manifest without the keys never read, so
    that a large manifest's code and columns are freed as it is parsed, not kept until the end."""
    return {key: value for key, value in pairs if key not in UNREAD_MANIFEST_KEYS}


def artifact_schema(document: Mapping[str, Any]) -> tuple[str, int] | None:
    """``("run-results", 6)`` from ``metadata.dbt_schema_version``; None when it names none."""
    metadata = document.get("metadata")
    found = _SCHEMA.search(str(metadata.get("dbt_schema_version") or "")) if isinstance(metadata, Mapping) else None
    return (found.group(1), int(found.group(2))) if found else None


def _check_kind(document: Any, kind: str, what: str, where: str, name: str, needs: str) -> None:
    if not isinstance(document, Mapping):
        raise AnalyticsParameterError(f"{where}: {name} is not a dbt {what} (a JSON {type(document).__name__}, "
                                      f"not an object)")
    schema = artifact_schema(document)
    if schema is not None and schema[0] != kind:
        raise AnalyticsParameterError(f"{where}: {name} is a dbt {schema[0]} file (schema v{schema[1]}), "
                                      f"not a {what}")
    shape = {"results": list, "nodes": Mapping}[needs]
    if not isinstance(document.get(needs), shape):
        raise AnalyticsParameterError(f"{where}: {name} is not a dbt {what} (no {needs!r} "
                                      f"{'list' if shape is list else 'object'})")


def run_command(run_results: Mapping[str, Any]) -> str | None:
    args = run_results.get("args")
    which = args.get("which") if isinstance(args, Mapping) else None
    return which.strip().lower() if isinstance(which, str) and which.strip() else None


def built_relations(run_results: Any, manifest: Any = None, where: str = "dbt", *,
                    run_results_name: str = "dbt_run_results", manifest_name: str = "dbt_manifest") -> DbtRun:
    """The relations a run built (see the module's text). ``where`` (the task) and the two names
    (the parameters, with their files) are those the errors give."""
    _check_kind(run_results, "run-results", "run_results.json", where, run_results_name, "results")
    if manifest is not None:
        _check_kind(manifest, "manifest", "manifest.json", where, manifest_name, "nodes")
    command = run_command(run_results)
    if command is None:
        raise AnalyticsParameterError(
            f"{where}: {run_results_name} does not say which dbt command wrote it (no args.which, which every dbt "
            "from 0.19 on writes, dbt Fusion too), so it cannot tell a run that built from one that only compiled; "
            "give the run_results.json as dbt wrote it, or the tables as tables")
    if command not in BUILDING_COMMANDS:
        raise AnalyticsParameterError(
            f"{where}: {run_results_name} is of 'dbt {COMMAND_NAMES.get(command, command)}', which builds nothing; "
            f"give the run_results.json of dbt {', '.join(BUILDING_COMMANDS[:-1])} or {BUILDING_COMMANDS[-1]}")
    if run_results["args"].get("empty") is True:
        raise AnalyticsParameterError(
            f"{where}: {run_results_name} is of 'dbt {command} --empty', which writes no rows (it checks the "
            "models' SQL against empty relations): nothing to refresh")
    nodes: Mapping[str, Any] = manifest["nodes"] if manifest is not None else {}
    if _adapter(manifest) and _adapter(run_results) and _adapter(manifest) != _adapter(run_results):
        raise AnalyticsParameterError(
            f"{where}: {run_results_name} was written by dbt-{_adapter(run_results)} and {manifest_name} by "
            f"dbt-{_adapter(manifest)}: files of two projects or targets (their relations are in different "
            "warehouses); give the manifest.json of the run's own target")
    adapter = _adapter(manifest) or _adapter(run_results)
    quote = QUOTES_BY_ADAPTER.get(str(adapter or ""), '"')
    relations: list[str] = []
    not_built: list[str] = []
    unresolved: list[str] = []
    for index, result in enumerate(run_results["results"]):
        if not isinstance(result, Mapping):
            raise AnalyticsParameterError(f"{where}: {run_results_name}: results[{index}] is a "
                                          f"{type(result).__name__}, not an object")
        unique_id = result.get("unique_id")
        if not isinstance(unique_id, str) or not unique_id:
            raise AnalyticsParameterError(f"{where}: {run_results_name}: results[{index}] has no unique_id")
        if unique_id.split(".", 1)[0] not in BUILDING_TYPES:
            continue
        node = nodes.get(unique_id)
        if node is None and isinstance(result.get("node"), Mapping):
            node = result["node"]  # run results of dbt before 0.19 carry their node
        if node is not None and not isinstance(node, Mapping):
            raise AnalyticsParameterError(f"{where}: {manifest_name}: nodes[{unique_id!r}] is a "
                                          f"{type(node).__name__}, not an object")
        config = node.get("config") if node is not None else None
        if isinstance(config, Mapping) and config.get("materialized") == "ephemeral":
            continue
        if result.get("status") not in BUILT_STATUSES:
            not_built.append(unique_id)
            continue
        named = result.get("relation_name")
        if named is not None and not (isinstance(named, str) and named.strip()):
            raise AnalyticsParameterError(f"{where}: {run_results_name}: results[{index}] ({unique_id}): relation_name "
                                          f"is {named!r}, not a relation's name (a text, or null)")
        relation = _relation(result, node, quote)
        if relation is None:
            if "relation_name" in result and node is None and unique_id.startswith("model."):
                continue  # dbt 1.7+ names no relation for an ephemeral model (nor for a seed: unresolved)
            unresolved.append(unique_id)
        elif relation not in relations:
            relations.append(relation)
    if not relations and not unresolved:
        raise AnalyticsParameterError(f"{where}: {run_results_name}: the dbt run ({command}) built nothing to refresh: "
                                      + _why_nothing(run_results["results"], not_built))
    return DbtRun(relations, not_built, unresolved, command, _version(run_results), adapter)


def _adapter(document: Mapping[str, Any] | None) -> str | None:
    metadata = (document or {}).get("metadata")
    adapter = metadata.get("adapter_type") if isinstance(metadata, Mapping) else None
    return adapter.strip().lower() if isinstance(adapter, str) and adapter.strip() else None


def _why_nothing(results: list[Any], not_built: list[str]) -> str:
    """Why a run built no relation: its models failed, or it ran none (tests only, ephemeral models)."""
    if not_built:
        statuses = {str(r.get("unique_id")): str(r.get("status")) for r in results}
        shown = ", ".join(f"{uid} ({statuses.get(uid)})" for uid in not_built[:10])
        return (f"none of its {len(not_built)} model(s), seed(s) and snapshot(s) succeeded: {shown}"
                + (f" and {len(not_built) - 10} more" if len(not_built) > 10 else ""))
    kinds = sorted({str(r.get("unique_id")).split(".", 1)[0] for r in results})
    return (f"its {len(results)} result(s) are of {', '.join(kinds)} nodes, no model, seed or snapshot that writes "
            "a table" if results else "its results list no node (nothing was selected)")


def _relation(result: Mapping[str, Any], node: Mapping[str, Any] | None, quote: str) -> str | None:
    for named in (result.get("relation_name"), (node or {}).get("relation_name")):
        if isinstance(named, str) and named.strip():
            return named.strip()
    if node is None:
        return None
    parts = [node.get("database"), node.get("schema"), node.get("alias") or node.get("name")]
    if any(p is not None and not isinstance(p, str) for p in parts):
        return None  # a part of another shape (a list): unresolved, not a relation without that part
    texts = [p for p in parts if p]
    if not texts or texts[-1] != parts[-1]:
        return None
    closing = {"`": "`", '"': '"', "": ""}[quote]
    return ".".join(f"{quote}{t.replace(closing, closing * 2) if closing else t}{closing}" for t in texts)


def _version(document: Mapping[str, Any]) -> str | None:
    metadata = document.get("metadata")
    version = metadata.get("dbt_version") if isinstance(metadata, Mapping) else None
    return str(version) if version else None
