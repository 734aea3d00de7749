"""OpenLineage for the operators: which objects of the service and which files a task used.

The OpenLineage provider (the ``openlineage`` extra) calls the ``get_openlineage_facets_on_*``
methods :class:`~analytics_provider.lineage_mixin.OpenLineageMixin` gives every operator; only
those calls import this module, and only its functions import the OpenLineage client: without the
extra, nothing of it is ever imported.

Objects of the service are datasets named like the API's resource paths (``dashboards/12``,
``dashboard_widgets/101``, ``data_sources/3``, ``data_sets/7``, ``data_schedules/4``,
``aml_projects/production``), in one namespace per service address: ``analytics://eu.holistics.io``
for a region, ``analytics://host:port[/prefix]`` for a base-address override. Files are named by
OpenLineage's conventions for their scheme (:class:`~analytics_provider.locations.StorageLocation`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from analytics_provider.assets import SERVICE_SCHEME, service_namespace  # noqa: F401 (named here too)
from analytics_provider.locations import StorageLocation

log = logging.getLogger(__name__)

PRODUCTION_PROJECT = "aml_projects/production"
PUBLISH_FACET = "analyticsPublish"
FACETS_URL = "https://airflow-provider-analytics.readthedocs.io/en/stable/_static/lineage/"
FACET_SCHEMA_URL = f"{FACETS_URL}AnalyticsPublishRunFacet.json"
STATS_FACET = "analyticsDataSourceStats"
STATS_FACET_SCHEMA_URL = f"{FACETS_URL}AnalyticsDataSourceStatsRunFacet.json"
START, COMPLETE, FAIL = "start", "complete", "fail"
OBJECT_KINDS = {"Dataset": "data_sets", "DataSet": "data_sets", "Dashboard": "dashboards"}
SCHEDULE_SOURCE_KINDS = {"Dashboard": "dashboards", "QueryReport": "query_reports"}


@dataclass
class LineageRun:
    """What a description of an operator's lineage can know: the operator (its fields rendered),
    the phase, and once the job finished, its id and the task's result."""

    operator: Any
    phase: str

    @functools.cached_property
    def namespace(self) -> str:
        return service_namespace(self.operator.hook.settings.base_url)

    @property
    def result(self) -> Mapping[str, Any]:
        value = self.operator.lineage_result if self.phase == COMPLETE else None
        return value if isinstance(value, Mapping) else {}

    @property
    def job_id(self) -> int | None:
        return None if self.phase == START else self.operator.lineage_job_id

    def ask(self, what: str, call: Callable[[Any], Any]) -> Any:
        """One lookup in the service through the operator's hook; None when it fails."""
        try:
            return call(self.operator.hook)
        except Exception as exc:
            log.warning("OpenLineage: %s could not be read from the service: %s", what, exc)
            return None

    def service_object(
        self, kind: str, object_id: Any, *, output: bool = False, facets: dict[str, Any] | None = None
    ) -> Any:
        from openlineage.client.event_v2 import InputDataset, OutputDataset

        cls = OutputDataset if output else InputDataset
        return cls(namespace=self.namespace, name=f"{kind}/{object_id}", facets=facets or None)

    def job_facets(self) -> dict[str, Any]:
        """The run facet naming the service's job (``externalQuery``), once there is one; and what
        it cost (``analyticsDataSourceStats``) when the task read it."""
        if self.job_id is None:
            return {}
        from openlineage.client.facet_v2 import external_query_run

        facet = external_query_run.ExternalQueryRunFacet(externalQueryId=str(self.job_id), source=self.namespace)
        facets: dict[str, Any] = {"externalQuery": facet}
        stats = self.result.get("data_source_stats")
        if isinstance(stats, list):
            facets[STATS_FACET] = _stats_facet_type()(jobId=self.job_id, stats=[dict(s) for s in stats])
        return facets


def file_dataset(location: Any, *, output: bool, size: int | None = None, rows: int | None = None) -> Any:
    """A file as a dataset named by OpenLineage's conventions; its size (bytes, rows) when known."""
    from openlineage.client.event_v2 import InputDataset, OutputDataset
    from openlineage.client.facet_v2 import output_statistics_output_dataset as stats

    namespace, name = StorageLocation.parse(str(location)).openlineage_name()
    if not output:
        return InputDataset(namespace=namespace, name=name)
    facets: dict[str, Any] = {}
    if size is not None or rows is not None:
        facets["outputStatistics"] = stats.OutputStatisticsOutputDatasetFacet(size=size, rowCount=rows)
    return OutputDataset(namespace=namespace, name=name, outputFacets=facets or None)


def written_file(run: LineageRun, destination: Any) -> list[Any]:
    """The file a task wrote (its result's ``path``), or before that the destination it names."""
    path = run.result.get("path")
    if path:
        return [file_dataset(path, output=True, size=run.result.get("bytes"), rows=run.result.get("rows"))]
    planned = str(destination or "")
    if planned and not planned.endswith("/"):  # a folder gets the file's name only once written
        return [file_dataset(planned, output=True)]
    return []


def operator_lineage(operator: Any, phase: str) -> Any:
    """The ``OperatorLineage`` of ``operator`` at ``phase``, or None for an operator without one."""
    describe = _describer(type(operator))
    if describe is None:
        return None
    from airflow.providers.openlineage.extractors import OperatorLineage

    inputs, outputs, run_facets = describe(LineageRun(operator, phase))
    return OperatorLineage(inputs=inputs, outputs=outputs, run_facets=run_facets)


Description = tuple[list[Any], list[Any], dict[str, Any]]


def describe_export(run: LineageRun) -> Description:
    """Input the widget and its dashboard; output the file written."""
    op = run.operator
    if op.widget_id is None:  # named, and not resolved (yet): the service objects are not known
        return [], written_file(run, op.destination), run.job_facets()
    inputs = [run.service_object("dashboard_widgets", op.widget_id)]
    dashboard_id = (getattr(op, "resolved", None) or {}).get("dashboard_id")
    if dashboard_id is None and run.phase != START:
        widget = run.ask("the widget", lambda hook: hook.get_dashboard_widget(op.widget_id, include_dashboard=True))
        dashboard_id = ((widget or {}).get("dashboard") or {}).get("id")
    if dashboard_id is not None:
        inputs.append(run.service_object("dashboards", dashboard_id))
    return inputs, written_file(run, op.destination), run.job_facets()


def describe_preload(run: LineageRun) -> Description:
    """Output the dashboard whose cache was filled."""
    dashboard_id = run.operator.dashboard_id
    outputs = [] if dashboard_id is None else [run.service_object("dashboards", dashboard_id, output=True)]
    return [], outputs, run.job_facets()


def describe_bust_cache(run: LineageRun) -> Description:
    """Output the data source whose cache was invalidated."""
    return [], [run.service_object("data_sources", run.operator.data_source_id, output=True)], run.job_facets()


def describe_validate(run: LineageRun) -> Description:
    """Input the project checkout (when given); a validation writes nothing."""
    op = run.operator
    return ([file_dataset(op.project_dir, output=False)] if op.project_dir else []), [], run.job_facets()


def describe_review(run: LineageRun) -> Description:
    """A review reads and writes nothing of the service (the apply after it does)."""
    return [], [], {}


def describe_execute_schedule(run: LineageRun) -> Description:
    """Input what the schedule sends (its dashboard or report); output the schedule's delivery."""
    op = run.operator
    inputs = []
    if run.phase != START:
        schedule = run.ask("the schedule's source", lambda h: h.get_data_schedule(op.data_schedule_id)) or {}
        kind = SCHEDULE_SOURCE_KINDS.get(str(schedule.get("source_type")))
        if kind and schedule.get("source_id") is not None:
            inputs.append(run.service_object(kind, schedule["source_id"]))
    return inputs, [run.service_object("data_schedules", op.data_schedule_id, output=True)], run.job_facets()


def describe_publish(run: LineageRun) -> Description:
    """Input the project checkout (when given); output the production project at the published
    commit and the data sets and dashboards it created or updated; the job's diagnostics on failure."""
    from openlineage.client.facet_v2 import dataset_version_dataset

    op = run.operator
    inputs = [file_dataset(op.project_dir, output=False)] if op.project_dir else []
    data: Mapping[str, Any] = {}
    if run.phase == COMPLETE:
        data = {"status": "success", **run.result}
    elif run.phase == FAIL and run.job_id is not None:
        data = run.ask("the publish result", lambda _: op._result_data(run.job_id)) or {}
    commit = data.get("target_commit")
    version: dict[str, Any] = {}
    if commit:
        version["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(commit))
    project_kind, project_name = PRODUCTION_PROJECT.split("/")
    outputs = [run.service_object(project_kind, project_name, output=True, facets=version)]
    for obj in data.get("objects") or []:
        kind = OBJECT_KINDS.get(str(obj.get("type")))
        if kind and obj.get("id") is not None:
            outputs.append(run.service_object(kind, obj["id"], output=True))
    facets = run.job_facets()
    if data and run.job_id is not None:
        facets[PUBLISH_FACET] = publish_facet(run.job_id, data, op.project_dir)
    return inputs, outputs, facets


def describe_query(run: LineageRun) -> Description:
    """Input the data set; output the file written (none when the rows are returned)."""
    op = run.operator
    return [run.service_object("data_sets", op.data_set_id)], written_file(run, op.destination), run.job_facets()


def describe_dbt_upload(run: LineageRun) -> Description:
    """Input the manifests; output the data source they were synced into (by name: the API's key)."""
    op = run.operator
    manifests = [op.manifests] if isinstance(op.manifests, str) else op.manifests
    inputs = [file_dataset(m, output=False) for m in manifests if isinstance(m, str)]
    source = run.service_object("data_sources", op.data_source_name or "default", output=True)
    return inputs, [source], run.job_facets()


def describe_access_sync(run: LineageRun) -> Description:
    """Input the query's tables (when rows come from a query); output the attributes or groups synced."""
    op = run.operator
    inputs = query_tables(op.sql_conn_id, op.sql) if op.sql and op.sql_conn_id else []
    outputs = [run.service_object(kind, ident, output=True) for kind, ident in op.lineage_targets]
    return inputs, outputs, {}


def describe_deliveries(run: LineageRun) -> Description:
    """Input the delivery files; output the schedules and alerts written (created ones once created)."""
    from analytics_provider.deliveries.files import files_under

    op = run.operator
    files = files_under(op.resolved_path()) if op.path else []  # a saved plan's apply reads no file
    inputs = [file_dataset(str(p.resolve()), output=False) for p in files]
    outputs = [run.service_object(kind, ident, output=True) for kind, ident in op.lineage_targets]
    return inputs, outputs, {}


def describe_refresh(run: LineageRun) -> Description:
    """Input the tables refreshed (in ``warehouse_namespace``, default the service's); output the
    dashboards refreshed (before the run ends: none yet known)."""
    from openlineage.client.event_v2 import InputDataset

    op = run.operator
    tables = run.result.get("tables") or ([] if is_templated_value(op.tables) else list(op.tables or []))
    namespace = op.warehouse_namespace or run.namespace
    inputs = [InputDataset(namespace=namespace, name=str(table)) for table in tables]
    refreshed = {j.get("id") for j in run.result.get("jobs") or [] if j.get("kind") == "preload"
                 and j.get("status") == "success"}
    outputs = [run.service_object("dashboards", d["id"], output=True) for d in run.result.get("dashboards") or []
               if d.get("id") in refreshed]
    return inputs, outputs, {}


def is_templated_value(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, (list, tuple)) and any("{{" in str(v) for v in value))


def query_tables(conn_id: str, sql: str) -> list[Any]:
    """The tables ``sql`` reads, named as the SQL operators of ``common.sql`` name them; where the
    database's hook gives no OpenLineage details (SQLite), the parsed names in the namespace
    ``<conn type>://<host>``."""
    from airflow.providers.openlineage.sqlparser import SQLParser, get_openlineage_facets_with_sql

    from analytics_provider.access.rows import sql_hook

    try:
        hook = sql_hook(conn_id)
        found = get_openlineage_facets_with_sql(hook=hook, sql=sql, conn_id=conn_id, database=None,
                                                use_connection=False)
        if found is not None:
            return list(found.inputs)
        connection = hook.get_connection(conn_id)
        meta = SQLParser(dialect=hook.get_openlineage_database_dialect(connection)).parse(sql)
    except Exception as exc:  # lineage never fails a task
        log.warning("OpenLineage: the tables of the query on %s could not be named: %s", conn_id, exc)
        return []
    from openlineage.client.event_v2 import InputDataset

    namespace = f"{connection.conn_type}://{connection.host or ''}"
    return [InputDataset(namespace=namespace, name=table.qualified_name) for table in (meta.in_tables if meta else [])]


def publish_facet(job_id: int, data: Mapping[str, Any], project_dir: str | None) -> Any:
    """The ``analyticsPublish`` run facet: the publish's status, commit, objects and diagnostics."""
    from analytics_provider.aml.diagnostics import format_diagnostic

    details = data.get("error_details")
    diagnostics = (details.get("diagnostics") or []) if isinstance(details, Mapping) else []
    return _publish_facet_type()(
        jobId=job_id,
        status=str(data.get("status") or "unknown"),
        targetCommit=data.get("target_commit"),
        errorType=data.get("error_type"),
        diagnostics=[{**d, "text": format_diagnostic(d, project_dir)} for d in diagnostics if isinstance(d, Mapping)],
        objects=[dict(o) for o in data.get("objects") or [] if isinstance(o, Mapping)],
    )


@functools.cache
def _publish_facet_type() -> type:
    import attr
    from openlineage.client.generated.base import RunFacet

    @attr.define
    class AnalyticsPublishRunFacet(RunFacet):
        """An AML publish: the job, its status, the commit, the objects and the compiler's diagnostics."""

        jobId: int  # OpenLineage facets are camelCase
        status: str
        targetCommit: str | None = None
        errorType: str | None = None
        diagnostics: list[dict[str, Any]] = attr.field(factory=list)
        objects: list[dict[str, Any]] = attr.field(factory=list)

        @staticmethod
        def _get_schema() -> str:
            return FACET_SCHEMA_URL

    return AnalyticsPublishRunFacet


@functools.cache
def _stats_facet_type() -> type:
    import attr
    from openlineage.client.generated.base import RunFacet

    @attr.define
    class AnalyticsDataSourceStatsRunFacet(RunFacet):
        """What a job's queries cost in the data source: ``[{"id", "cost", "cost_unit"}]`` as the service reports."""

        jobId: int  # OpenLineage facets are camelCase
        stats: list[dict[str, Any]] = attr.field(factory=list)

        @staticmethod
        def _get_schema() -> str:
            return STATS_FACET_SCHEMA_URL

    return AnalyticsDataSourceStatsRunFacet


def _describer(cls: type) -> Callable[[LineageRun], Description] | None:
    """The operator's own ``describe_lineage`` (inherited by its subclasses)."""
    found = getattr(cls, "describe_lineage", None)
    return found if callable(found) else None


