"""Refresh what a load touched: from warehouse tables (or a dbt run) to the dashboards that read them."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.common.compat.sdk import BaseOperator, conf

from analytics_provider.exceptions import (
    AnalyticsApiError,
    AnalyticsJobError,
    AnalyticsJobTimeout,
    AnalyticsParameterError,
    naming_the_task,
    refused,
)
from analytics_provider.fresh_retry import FreshRetryMixin
from analytics_provider.hook_task import HookTask
from analytics_provider.job_tasks import DEFAULT_MAX_OUTAGE, check_max_outage, check_wait
from analytics_provider.lineage_mixin import LineageFunction, OpenLineageMixin
from analytics_provider.operators.analytics import is_templated
from analytics_provider.operators.dbt import _holds_xcom_arg

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

BOOK_KEY = "analytics_refresh_jobs"
"""The task state store's key (Airflow 3.3+) of the jobs a try submitted: a retry resumes them."""
PLAN_KEY = "refresh_plan"
"""The XCom key of this try's plan and jobs (read back after a deferral)."""
UNMATCHED = ("fail", "warn")
"""What a table given by name that no data model reads does (``unmatched_tables``)."""


def _path_or_none(value: Any) -> bool:
    return value is None or isinstance(value, (str, os.PathLike)) or hasattr(value, "open")


class AnalyticsRefreshImpactedOperator(HookTask, OpenLineageMixin, FreshRetryMixin, BaseOperator):
    """Bust the caches and preload the dashboards that read the tables a load wrote.

    :param tables: warehouse tables (``schema.table`` or ``db.schema.table``, bare or quoted as the
        warehouse quotes: ``"..."``, ```...```, ``[...]``; templated), matched to the data models'
        ``table_name`` as the warehouse of each model's data source compares names (its ``dbtype``:
        :mod:`analytics_provider.impact.tables`).
    :param dbt_run_results: a dbt ``run_results.json`` of ``dbt build``, ``run``, ``seed``,
        ``snapshot``, ``retry`` or ``clone`` (a path, a URL or an ``ObjectStoragePath``; templated):
        the relations of the models, seeds and snapshots it built (``success`` or ``partial
        success``) are added to ``tables`` (:mod:`analytics_provider.impact.dbt`), matched only to
        models of data sources of the run's warehouse (the manifest's ``adapter_type``; without it,
        by name in every data source, noted; a relation quoted with backticks only in BigQuery, Databricks,
        MySQL or ClickHouse data sources). A run of another command (``compile``, ``docs
        generate``, ``test``...) is refused.
    :param dbt_manifest: the run's ``manifest.json`` (as ``dbt_run_results``): needed for dbt
        before 1.7, whose results do not name their relations; given, it fills in what they lack.
        A node built but in neither file is named in the log and the result's ``dbt_unresolved``.
    :param tables_from_assets: add the tables the run's triggering asset events name (a DAG
        scheduled on the load DAGs' table assets refreshes what they wrote): the URIs providers
        register for tables (``postgres://host:port/db/schema/table``, ``mysql://host:port/db/table``,
        ``trino://host:port/catalog/schema/table``, ``bigquery://project/dataset/table``) and
        OpenLineage's naming of Snowflake, Redshift and Databricks tables
        (:mod:`analytics_provider.impact.asset_tables`). An asset that names no table is logged and
        ignored; a run whose events name none fails (nothing would be refreshed). Like a dbt run's
        relations, a table of an event that no model reads is only logged.
    :param data_sources: the data sources whose models may be matched (default None: every one):
        a list of data source ids and warehouse types (``[1, "snowflake"]``: a data source's
        ``dbtype``), or a mapping of data source ids to where each reads
        (``{1: "postgres://warehouse:5432/analytics", 4: "bigquery://acme-prod"}``, or None). Hand-typed
        ``tables`` and a dbt run without its manifest say no warehouse and match every data source
        without it. With a location, a table an asset names on another server, or a table of another
        database (a dbt dev target's), is not that data source's: it is an unmatched table
        (``unmatched_tables``). The API never says which server a data source reads: without a
        location, a match whose server or database could not be checked is made, logged as a
        warning and listed in the result's ``unchecked_tables`` (:mod:`analytics_provider.impact.scope`).
    :param project_ids: the AML projects whose models are matched (default: those of the dashboards);
        so are the models of every data source those models, ``data_sources`` (by id) or the
        dashboards name, in a project or not.
    :param default_schema: the schema of a table named without one, overriding the warehouse's
        (``public`` for PostgreSQL and Redshift, ``PUBLIC`` for Snowflake, ``dbo``, ``main``...).
    :param fold: what unquoted names fold to, overriding the warehouse's: ``lower`` or ``upper``
        (default None: as the data source's ``dbtype`` says; Snowflake needs nothing set).
    :param unmatched_tables: what a table of ``tables`` that no data model reads does: ``fail``
        (the default: a misspelt name fails the task before any job, naming the closest model
        tables) or ``warn`` (logged with its closest model tables, and in the result's
        ``unmatched_tables``). Relations of a dbt run that no model reads are always only logged.
        When no data model can be found at all (no AML project nor data source known), the task
        fails either way.
    :param bust_cache: bust each impacted data source's cache once; a dashboard is preloaded only
        after the busts of the data sources it reads succeeded (a failed bust leaves them
        unpreloaded, without an asset event, and fails the task naming both; a retry busts again).
        False: no data source's cache is busted, and each preload ignores what its dashboard's
        widgets have cached instead (else the service skips every cached widget: a preload that
        refreshes nothing).
    :param preload: preload each impacted dashboard once. ``bust_cache`` and ``preload`` both
        False, or ``bust_cache=False`` with an ``exclude_titles`` of ``"*"``, is refused at parse.
    :param dashboards_filter: keep or leave out dashboards: ``{"include_tags": ["certified"],
        "exclude_titles": ["Old *"]}`` (also ``include_titles``, ``exclude_tags``; titles compared
        without case, ``*`` and ``?`` wildcards). An ``include_titles`` entry no dashboard's title
        matches fails the task before any job, naming the closest titles; an ``exclude_titles``
        one is logged.
    :param dry_run: log the plan and return it; submit nothing.
    :param max_active_jobs: the most jobs pending at once (the fan-out stays within the key's quota).
    :param poll_interval: seconds between two reads of the pending jobs (one request per 100 jobs).
    :param timeout: seconds for all jobs together.
    :param deferrable: wait in the triggerer (default ``[operators] default_deferrable``).
    :param max_outage: seconds of failures in a row a deferred wait outlasts.
    :param durable: keep the submitted jobs in the task state store (Airflow 3.3+), so that a retry
        resumes them instead of submitting them again.
    :param warehouse_namespace: the OpenLineage namespace of the tables (``postgres://host:5432``);
        default: the service's.

    Logs the plan first: every table, data source and dashboard with why. All jobs are waited for
    together; a failed job does not stop the others, and the task fails at the end naming each
    failed job (and each preload its failed bust held back, ``status`` ``blocked``). Returns the
    tables, what reads them, the jobs and their counts: every key is on docs/operators/refresh.rst
    ("Result"). Each refreshed
    dashboard is an asset event on :func:`~analytics_provider.assets.dashboard_asset` (through the
    task's outlets: by default the alias ``analytics-refreshed-dashboards``). On Airflow 3.3+ the
    submitted jobs are kept in the task state store: a retried try submits none of them again
    (a failed or stale one is submitted anew); a cleared task busts and preloads anew.
    """

    describe_lineage = LineageFunction("describe_refresh")
    template_fields: Sequence[str] = ("analytics_conn_id", "tables", "dbt_run_results", "dbt_manifest",
                                      "dashboards_filter", "is_dry_run", "unmatched_tables")
    template_fields_renderers: ClassVar[dict[str, str]] = {"tables": "json", "dashboards_filter": "json"}
    ui_color = "#dfeefc"

    def __init__(
        self,
        *,
        tables: Any = None,
        dbt_run_results: Any = None,
        dbt_manifest: Any = None,
        tables_from_assets: bool = False,
        data_sources: Any = None,
        project_ids: Sequence[int] | None = None,
        default_schema: str | None = None,
        fold: str | None = None,
        unmatched_tables: str = "fail",
        bust_cache: bool = True,
        preload: bool = True,
        dashboards_filter: dict[str, list[str]] | None = None,
        dry_run: bool = False,
        max_active_jobs: int = 5,
        analytics_conn_id: str = "analytics_default",
        poll_interval: float = 5.0,
        timeout: float = 3600.0,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        max_outage: float = DEFAULT_MAX_OUTAGE,
        warehouse_namespace: str | None = None,
        durable: bool = True,
        **kwargs: Any,
    ) -> None:
        if "outlets" not in kwargs:
            from airflow.providers.common.compat.sdk import AssetAlias

            from analytics_provider.assets import DASHBOARDS_ALIAS

            kwargs["outlets"] = [AssetAlias(DASHBOARDS_ALIAS)]
        super().__init__(**kwargs)
        self.tables = tables
        self.dbt_run_results = dbt_run_results
        self.dbt_manifest = dbt_manifest
        self.tables_from_assets = tables_from_assets
        self.data_sources = data_sources
        self.project_ids = project_ids
        self.default_schema = default_schema
        self.fold = fold
        self.unmatched_tables = unmatched_tables
        self.bust_cache = bust_cache
        self.preload = preload
        self.dashboards_filter = dashboards_filter
        self.is_dry_run = dry_run  # dry_run() is a method of Airflow's BaseOperator
        self.max_active_jobs = max_active_jobs
        self.analytics_conn_id = analytics_conn_id
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.deferrable = deferrable
        self.max_outage = max_outage
        self.warehouse_namespace = warehouse_namespace
        self.durable = durable
        if not isinstance(tables_from_assets, bool):
            raise refused(self.task_id, "tables_from_assets", tables_from_assets, "True or False")
        self._check_sources()
        for name in ("bust_cache", "preload"):
            if not isinstance(getattr(self, name), bool):
                raise refused(self.task_id, name, getattr(self, name), "True or False")
        if fold not in (None, "lower", "upper"):
            raise refused(self.task_id, "fold", fold, "None (the data source's rules), 'lower' or 'upper'")
        if not is_templated(unmatched_tables) and unmatched_tables not in UNMATCHED:
            raise refused(self.task_id, "unmatched_tables", unmatched_tables, " or ".join(map(repr, UNMATCHED)))
        if isinstance(max_active_jobs, bool) or not isinstance(max_active_jobs, int) or max_active_jobs < 1:
            raise refused(self.task_id, "max_active_jobs", max_active_jobs, "a positive integer")
        check_wait(self.task_id, poll_interval, timeout)
        check_max_outage(self.task_id, max_outage, None)
        if not is_templated(tables) and not _holds_xcom_arg(tables):
            self._check_tables()
        if not is_templated(dashboards_filter):
            with naming_the_task(self.task_id):
                from analytics_provider.impact.refresh import check_dashboards_filter

                self._check_some_job(check_dashboards_filter(dashboards_filter))
        else:
            self._check_some_job({})
        self.plan: dict[str, Any] = {}
        self.dbt_unresolved: list[str] = []
        self.table_origins: dict[str, list[Any]] = {}
        """Each table a load said it wrote, and where (:class:`~analytics_provider.impact.graph.TableOrigin`)."""
        self.source_scope: Any = None
        if data_sources is not None:
            from analytics_provider.impact.scope import source_scope

            self.source_scope = source_scope(data_sources, self.task_id)
        self.book: dict[str, dict[str, Any]] = {}

    # -- inputs ---------------------------------------------------------------------------------

    def _check_tables(self) -> list[str]:
        tables = self.tables
        if tables is None:
            return []
        if isinstance(tables, str) or not isinstance(tables, Sequence):
            raise refused(self.task_id, "tables", tables, "a list of 'schema.table' or 'db.schema.table' names")
        from analytics_provider.impact.tables import parse_table

        for table in tables:
            try:
                parse_table(table, default_schema=self.default_schema, fold=self.fold)
            except AnalyticsParameterError as exc:
                raise refused(self.task_id, "tables", table, f"a table's name ({exc})") from None
        return list(tables)

    def _check_some_job(self, rules: Mapping[str, Sequence[str]]) -> None:
        """Refuse settings under which no run could submit a job (a green task doing nothing)."""
        from analytics_provider.impact.refresh import never_refreshes

        why = never_refreshes(self.bust_cache, self.preload, rules)
        if why is not None:
            raise AnalyticsParameterError(f"{self.task_id}: {why}")

    def check_inputs(self) -> None:
        """Refuse bad (rendered) parameters before any request."""
        from analytics_provider.impact.refresh import check_dashboards_filter

        self._check_tables()
        with naming_the_task(self.task_id):
            self.dashboards_filter = check_dashboards_filter(self.dashboards_filter)
        self._check_some_job(self.dashboards_filter)
        if isinstance(self.is_dry_run, str) and self.is_dry_run.strip().lower() in ("true", "false"):
            self.is_dry_run = self.is_dry_run.strip().lower() == "true"  # rendered from a template
        if not isinstance(self.is_dry_run, bool):
            raise refused(self.task_id, "dry_run", self.is_dry_run, "True or False")
        if self.unmatched_tables not in UNMATCHED:
            raise refused(self.task_id, "unmatched_tables", self.unmatched_tables, " or ".join(map(repr, UNMATCHED)))
        self._check_sources()
        for name in ("dbt_run_results", "dbt_manifest"):
            if not _path_or_none(getattr(self, name)):
                raise refused(self.task_id, name, getattr(self, name), "a path, a URL or an ObjectStoragePath")

    def _check_sources(self) -> None:
        if self.dbt_manifest is not None and self.dbt_run_results is None:
            raise refused(self.task_id, "dbt_run_results", None,
                          "given with dbt_manifest (a manifest alone does not say what a run built)")
        empty = self.tables is None or (isinstance(self.tables, (list, tuple)) and not self.tables)
        if empty and self.dbt_run_results is None and not self.tables_from_assets:
            raise refused(self.task_id, "tables", self.tables, "a non-empty list of tables, dbt_run_results (with "
                                                               "dbt_manifest for dbt before 1.7), or tables_from_assets"
                                                               "=True (nothing would be refreshed)")

    def asset_tables(self, context: Mapping[str, Any]) -> list[str]:
        """The tables the run's triggering asset events name (Airflow 2.11: dataset events), each once."""
        from analytics_provider.impact.asset_tables import tables_of

        events = context.get("triggering_asset_events") or context.get("triggering_dataset_events") or {}
        uris: list[str] = []
        for key, of_key in events.items():
            for event in of_key:
                asset = getattr(event, "asset", None) or getattr(event, "dataset", None)
                uri = getattr(asset, "uri", None) or (key if isinstance(key, str) else getattr(key, "uri", None))
                if isinstance(uri, str) and uri not in uris:
                    uris.append(uri)
        found, ignored = tables_of(uris)
        for asset in ignored:
            self.log.info("Asset %s names no warehouse table (%s): ignored", asset.uri, asset.why_not)
        if not found:
            raise AnalyticsParameterError(
                f"{self.task_id}: tables_from_assets: the run's triggering asset events name no warehouse table ("
                + (f"{len(uris)} asset(s): {', '.join(uris[:5])}" if uris else "the run has no asset events: "
                   "triggered by hand or on a schedule?") + "); nothing would be refreshed")
        from analytics_provider.impact.graph import TableOrigin

        self.log.info("The run's asset events name %d table(s): %s", len(found),
                      ", ".join(f"{t.table} ({t.uri})" for t in found))
        for t in found:
            if t.table:
                self.table_origins.setdefault(t.table, []).append(TableOrigin(t.warehouse, t.server))
        return list(dict.fromkeys(t.table for t in found if t.table))

    def refreshed_tables(self, context: Mapping[str, Any] | None = None) -> list[str]:
        """``tables``, the tables of the run's asset events (``tables_from_assets``) and the relations
        the dbt run built, each once, in order."""
        tables = self._check_tables()
        if self.tables_from_assets and context is not None:
            tables += [t for t in self.asset_tables(context) if t not in tables]
        if self.dbt_run_results is not None:
            from analytics_provider.operators.dbt import dbt_run

            run = dbt_run(self.dbt_run_results, self.dbt_manifest, self.task_id)
            self.log.info("The dbt run (%s) built %d relation(s)%s", run.command or "dbt", len(run.relations),
                          f"; not built: {', '.join(run.not_built)}" if run.not_built else "")
            if run.unresolved:
                why = ("dbt_run_results names no relation for them and dbt_manifest was not given (dbt 1.7+ names "
                       "its models' relations; seeds and older runs need the manifest)" if self.dbt_manifest is None
                       else "neither dbt_run_results nor dbt_manifest names their relation (files of two invocations?)")
                if not run.relations and not tables:
                    raise AnalyticsParameterError(f"{self.task_id}: the dbt run built {len(run.unresolved)} node(s) "
                                                  f"and none can be refreshed: {why}")
                self.log.warning("Not refreshed: %d node(s) the dbt run built: %s; %s", len(run.unresolved),
                                 ", ".join(run.unresolved), why)
            self.dbt_unresolved = run.unresolved
            from analytics_provider.impact.graph import TableOrigin

            for relation in run.relations:
                self.table_origins.setdefault(relation, []).append(TableOrigin(run.adapter))
            tables += [r for r in run.relations if r not in tables]
        for named in self._check_tables():
            self.table_origins.pop(named, None)  # given by name: any warehouse
        return tables

    # -- the flow -------------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        from analytics_provider.impact.refresh import describe_plan, keeps, plan_actions

        with self.closing_hook():
            self.check_inputs()
            self._check_filter_titles()
            tables = self.refreshed_tables(context)
            with naming_the_task(self.task_id):
                impact = self.hook.find_impacted(tables=tables, project_ids=self.project_ids,
                                                 default_schema=self.default_schema, fold=self.fold,
                                                 warehouses=self.table_origins,
                                                 data_sources=self.source_scope) if tables else {
                    "tables": [], "data_sources": [], "data_models": [], "data_sets": [], "dashboards": [],
                    "notes": [], "unchecked": []}
            unmatched = [{"table": t["table"], "closest": t.get("closest") or [],
                          **({"left_out": t["left_out"]} if t.get("left_out") else {})}
                         for t in impact["tables"] if not t["data_model_ids"]]
            for table in unmatched:
                self.log.warning("Table %s: no data model reads it%s", table["table"], _unmatched_why(table, "; "))
            unchecked = list(impact.get("unchecked") or ())
            for entry in unchecked:
                self.log.warning("Table %s matched in data source %s by its name alone: its %s could not be "
                                 "checked (data_sources={%s: 'scheme://host:port/database'} says where it reads)",
                                 entry["table"], entry["data_source_id"], " and ".join(entry["not_checked"]),
                                 entry["data_source_id"])
            rules = self.dashboards_filter or {}
            kept = [d for d in impact["dashboards"] if keeps(d, rules)]
            left_out = [d for d in impact["dashboards"] if not keeps(d, rules)]
            actions = plan_actions(impact["data_sources"], kept, bust_cache=self.bust_cache, preload=self.preload)
            self.plan = {
                "tables": tables,
                "unmatched_tables": unmatched,
                "unchecked_tables": unchecked,
                "data_sources": [_row(s, "name") for s in impact["data_sources"]],
                "data_models": [_row(m, "name") for m in impact["data_models"]],
                "data_sets": [_row(d, "name") for d in impact["data_sets"]],
                "dashboards": [_row(d, "title") for d in kept],
                "actions": actions,
                "deadline": self._clock() + self.timeout,
                "dbt_unresolved": self.dbt_unresolved,
                "notes": list(impact.get("notes") or ()),
            }
            for line in describe_plan({**impact, "dashboards": kept}, dry_run=self.is_dry_run, actions=actions,
                                      left_out=left_out, notes=impact.get("notes") or ()):
                self.log.info("%s", line)
            named = {str(t) for t in self._check_tables()}
            misspelt = [t for t in unmatched if t["table"] in named]
            if misspelt and self.unmatched_tables == "fail":
                raise AnalyticsParameterError(
                    f"{self.task_id}: no data model reads " + "; ".join(
                        f"{t['table']}" + _unmatched_why(t, " (", ")") for t in misspelt)
                    + " (parameter tables; unmatched_tables='warn' refreshes the others and only logs these)")
            if tables and not impact["data_models"]:
                self._nothing_matched(unmatched)
            if not actions:
                self.plan["nothing_refreshed"] = _why_no_job(impact, kept, left_out, self.bust_cache, self.preload)
                self.log.warning("Nothing to refresh: %s", self.plan["nothing_refreshed"])
            if self.is_dry_run:
                return self._result([])
            self.book = self._resumed_book(context)
            return self._run(context)

    def _check_filter_titles(self) -> None:
        """Refuse an ``include_titles`` entry no dashboard has (a misspelt title would leave every
        dashboard out), naming the closest titles, before any job (one ``GET
        /dashboards/list_metadata``); an ``exclude_titles`` one is logged (it leaves out nothing)."""
        from analytics_provider.impact.refresh import titles_matching_none

        rules = self.dashboards_filter or {}
        if not rules.get("include_titles") and not rules.get("exclude_titles"):
            return
        try:
            listed = self.hook.list_dashboards_metadata()
        except AnalyticsApiError as exc:
            if exc.status not in (403, 404):
                raise
            self.log.warning("dashboards_filter: its titles could not be checked (GET /dashboards/list_metadata "
                             "answered %s)", exc.status)
            return
        problems = titles_matching_none(rules, [str(d.get("title") or "") for d in listed])
        for line in problems.get("exclude_titles", []):
            self.log.warning("%s: it leaves out nothing", line)
        if problems.get("include_titles"):
            raise AnalyticsParameterError(f"{self.task_id}: " + "; ".join(problems["include_titles"])
                                          + " (titles are compared without case; * and ? are wildcards)")

    def _nothing_matched(self, unmatched: Sequence[Mapping[str, Any]]) -> None:
        """No data model reads any input table (a dbt dev target's schemas, the assets of another
        warehouse): fails unless ``unmatched_tables='warn'`` (then said, and the result says why)."""
        shown = "; ".join(f"{t['table']}" + _unmatched_why(t, " (", ")") for t in unmatched[:10])
        shown += f"; and {len(unmatched) - 10} more" if len(unmatched) > 10 else ""
        why = f"no data model reads any of the {len(unmatched)} table(s): {shown}"
        if self.unmatched_tables == "fail":
            raise AnalyticsParameterError(
                f"{self.task_id}: nothing to refresh: {why} (from {self._sources_named()}; a dbt target or "
                "warehouse other than the one the data models read? unmatched_tables='warn' lets such a run "
                "succeed having refreshed nothing)")

    def _sources_named(self) -> str:
        named = [("tables", self.tables), ("dbt_run_results", self.dbt_run_results),
                 ("tables_from_assets", self.tables_from_assets or None)]
        return ", ".join(name for name, value in named if value)

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger: read every pending job, submit what is next, wait again or finish."""
        ti = context["ti"]
        kept = ti.xcom_pull(task_ids=self.task_id, key=PLAN_KEY, map_indexes=ti.map_index) or {}
        self.plan, self.book = kept.get("plan") or {}, kept.get("book") or {}
        with self.closing_hook():
            return self._run(context)

    def _run(self, context: Context) -> Any:
        from analytics_provider.impact.refresh import action_key, blocked, is_final, next_actions, submitted

        while True:
            self._read_pending()
            for action in next_actions(self.plan["actions"], self.book, self.max_active_jobs):
                self._submit(context, action)
            pending = [e["job_id"] for e in self.book.values() if not is_final(str(e.get("status")))]
            if not pending:
                held = blocked(self.plan["actions"], self.book)
                if all(submitted(self.book, action_key(a)) or action_key(a) in held for a in self.plan["actions"]):
                    return self._finish(context)
                continue
            left = self.plan["deadline"] - self._clock()
            if left <= 0:
                self._keep(context)
                raise AnalyticsJobTimeout(f"{self.task_id}: {len(pending)} job(s) still pending after "
                                          f"{self.timeout:g} s: {self._describe_pending()}",
                                          job_id=int(pending[0]), status="timeout")
            if self.deferrable:
                self._defer(context, int(pending[0]))
            self.hook.sleep(min(self.poll_interval, left))

    @staticmethod
    def _clock() -> float:
        """Unix time, the clock of the trigger's deadline (tests swap it with the trigger's)."""
        from analytics_provider.triggers.analytics import AnalyticsJobTrigger

        return AnalyticsJobTrigger.clock()

    def _submit(self, context: Context, action: Mapping[str, Any]) -> None:
        from analytics_provider.impact.refresh import action_key, follow_earlier

        key = action_key(action)
        earlier = self.book.get(key) or {}
        what = f"{action['kind']} of {'data source' if action['kind'] == 'bust' else 'dashboard'} {action['id']}"
        if action["kind"] == "bust":
            job = self.hook.bust_data_source_cache(action["id"])
        else:
            job = self.hook.preload_dashboard(action["id"], bust_cache=bool(action.get("bust_cache")))
        entry: dict[str, Any] = {"job_id": int(job["id"]), "status": str(job.get("status") or "created")}
        if earlier.get("earlier"):
            entry["earlier"] = earlier["earlier"]
        if entry["status"] == "already_existed" and job.get("existing_job_id") is not None:
            entry = follow_earlier(earlier, int(job["existing_job_id"]))
            self._said_earlier(f"Submitted {what}", entry)
        else:
            self.log.info("Submitted %s: job %s", what, entry["job_id"])
        self.book[key] = entry
        self._store_book(context)

    def _said_earlier(self, what: str, entry: Mapping[str, Any]) -> None:
        """Log an earlier job the service pointed an action at (``already_existed``)."""
        if entry.get("following"):
            self.log.warning("%s: the service answered already_existed, job %s, started before this "
                             "request (its rows may predate the cache bust): waiting for it to end, then submitting "
                             "anew", what, entry["job_id"])
        else:
            self.log.warning("%s: the service answered already_existed %d times in a row (jobs %s): "
                             "given up (stale)", what, len(entry["earlier"]), ", ".join(map(str, entry["earlier"])))

    def _read_pending(self) -> None:
        """Every pending job's status, a request per 100 (List Jobs); a job the answer leaves out is read alone."""
        from analytics_provider.api.jobs.status import JobOutcome, job_state
        from analytics_provider.impact.refresh import follow_earlier, is_final, waited_out

        pending = {int(e["job_id"]): e for e in self.book.values() if not is_final(str(e.get("status")))}
        if not pending:
            return
        from analytics_provider.api.jobs.batch import refuses_batches

        try:
            found = {int(j["id"]): j for j in self.hook.list_jobs(sorted(pending)) if "id" in j}
        except Exception as exc:
            if not refuses_batches(exc):
                raise
            found = {}  # a service that does not answer List Jobs: each job is read alone
        for job_id, entry in pending.items():
            job = found.get(job_id) or self.hook.get_job(job_id)
            state = job_state(job, job_id)
            if state.outcome is JobOutcome.FOLLOW and state.existing_job_id is not None:
                followed = follow_earlier(entry, state.existing_job_id)
                entry.clear()
                entry.update(followed)
                self._said_earlier(f"Job {job_id}", entry)
                continue
            entry["status"] = state.status
            if state.last_error_log:
                entry["last_error_log"] = state.last_error_log
            waited_out(entry)

    def _defer(self, context: Context, job_id: int) -> None:
        from analytics_provider.triggers.analytics import AnalyticsJobTrigger

        self._keep(context)
        self.defer(
            trigger=AnalyticsJobTrigger(
                analytics_conn_id=self.analytics_conn_id, job_id=job_id, poll_interval=self.poll_interval,
                end_time=float(self.plan["deadline"]), max_outage=self.max_outage,
                try_number=context["ti"].try_number,
            ),
            method_name="execute_complete",
        )

    def _store_book(self, context: Context) -> None:
        """The book where a retry finds it (the task state store, Airflow 3.3+): written after each
        submit, before anything else can fail."""
        store = context.get("task_state_store") if self.durable else None
        if store is not None:
            kept = ("job_id", "status", "following", "earlier", "resubmit")
            store.set(BOOK_KEY, {"try": _try_of(context),
                                 "jobs": {k: {f: v[f] for f in kept if f in v} for k, v in self.book.items()}})

    def _forget_book(self, context: Context) -> None:
        """Every job succeeded: the book is emptied, so that the task cleared and run again (a new load)
        busts and preloads anew; Airflow keeps a task's state store across a clear. Only a retry of a
        try that failed resumes its jobs."""
        store = context.get("task_state_store") if self.durable else None
        if store is not None:
            store.set(BOOK_KEY, {})

    def _keep(self, context: Context) -> None:
        """The book where a retry finds it, and the plan where the resumed task does (XCom)."""
        self._store_book(context)
        context["ti"].xcom_push(key=PLAN_KEY, value={"plan": self.plan, "book": self.book})

    def _resumed_book(self, context: Context) -> dict[str, dict[str, Any]]:
        """An earlier try's jobs (Airflow 3.3+): those not failed are waited on, not submitted again."""
        from analytics_provider.impact.refresh import STALE, resumable

        store = context.get("task_state_store") if self.durable else None
        kept: Any = store.get(BOOK_KEY) if store is not None else None
        if not isinstance(kept, dict) or not kept:
            return {}
        earlier: dict[str, Any] = kept["jobs"] if isinstance(kept.get("jobs"), dict) else kept
        why_not = _not_a_retry(kept.get("try"), _try_of(context))
        if why_not:
            self.log.info("Not resuming the %d job(s) kept in the task state store: %s; busting and preloading "
                          "anew", len(earlier), why_not)
            return {}
        stored = {str(k): dict(v) for k, v in earlier.items() if isinstance(v, dict)}
        # a stale action's job is another party's, started before the bust: never read again (it would
        # end in success and be counted), submitted anew as the failed try's error said
        self.book = {k: v for k, v in stored.items() if v.get("status") != STALE}
        for entry in self.book.values():
            if entry.get("status") != "success":
                entry["status"] = "created"  # read again now: it may have ended since
        self._read_pending()
        book = resumable(self.book)
        self.log.info("Resuming %d job(s) an earlier try submitted; %d failed or stale one(s) are submitted anew",
                      len(book), len(stored) - len(book))
        self.book = book
        self._store_book(context)  # now this try's: a retry of this one resumes them
        return book

    def _describe_pending(self) -> str:
        from analytics_provider.impact.refresh import is_final

        return ", ".join(f"{k} (job {v['job_id']})" for k, v in self.book.items() if not is_final(str(v["status"])))

    def _finish(self, context: Context) -> Any:
        from analytics_provider.assets import dashboard_asset_uri, emit_dashboard_events
        from analytics_provider.impact.refresh import STALE, action_key, blocked
        from analytics_provider.job_tasks import describe_job_failure

        held = blocked(self.plan["actions"], self.book)
        not_sent = {"job_id": None, "status": "blocked"}
        jobs = [{"kind": a["kind"], "id": a["id"], **self.book.get(action_key(a), not_sent)}
                for a in self.plan["actions"]]
        failed = [j for j in jobs if j["status"] != "success"]
        fresh = {j["id"] for j in jobs if j["kind"] == "preload" and j["status"] == "success"}
        base_url = self.hook.settings.base_url
        events = [(dashboard_asset_uri(base_url, d["id"]), {"dashboard_id": d["id"], "title": d["title"],
                                                             "job_id": next(j["job_id"] for j in jobs
                                                                            if j["kind"] == "preload"
                                                                            and j["id"] == d["id"])})
                  for d in self.plan["dashboards"] if d["id"] in fresh]
        result = self._result(jobs)
        self.lineage_result = result
        self.plan["outcome"] = {"jobs": result["jobs"], "job_counts": result["job_counts"]}  # XCom, when it fails
        self._keep(context)
        if failed:
            not_sent = sum(j["status"] == "blocked" for j in failed)
            stories = [f"{j['kind']} of {'data source' if j['kind'] == 'bust' else 'dashboard'} {j['id']}: "
                       + (f"not submitted: the cache bust of {_bust_names(held[action_key(j)])} failed, so "
                          "preloading would cache stale rows (no asset event; a retry busts again, then preloads)"
                          if j["status"] == "blocked" else
                          f"the service answered already_existed {len(j.get('earlier') or ())} times in a row (jobs "
                          f"{', '.join(map(str, j.get('earlier') or ()))}), each started before this request, whose "
                          "rows may predate the cache bust: not counted (no asset event; a retry submits it anew)"
                          if j["status"] == STALE else
                          describe_job_failure(self.hook, j["job_id"], j["status"], j.get("last_error_log")))
                       for j in failed]
            first = next(j for j in failed if j["job_id"] is not None)
            raise AnalyticsJobError(f"{self.task_id}: {len(failed) - not_sent} of {len(jobs)} job(s) failed, "
                                    f"{not_sent} blocked (not submitted), {len(jobs) - len(failed)} succeeded:\n"
                                    + "\n".join(stories),
                                    job_id=int(first["job_id"]), status=str(first["status"]))
        emit_dashboard_events(self, context, events)
        self._forget_book(context)
        self.log.info("Refreshed %d data source(s) and %d dashboard(s)%s", sum(j["kind"] == "bust" for j in jobs),
                      len(fresh), f" (nothing to refresh: {self.plan['nothing_refreshed']})"
                      if self.plan.get("nothing_refreshed") else "")
        return result

    def _result(self, jobs: list[dict[str, Any]]) -> dict[str, Any]:
        keys = ("tables", "unmatched_tables", "unchecked_tables", "data_sources", "data_models", "data_sets",
                "dashboards", "notes")
        counted = {"succeeded": sum(j["status"] == "success" for j in jobs),
                   "blocked": sum(j["status"] == "blocked" for j in jobs)}
        return {**{k: self.plan.get(k, []) for k in keys}, "dry_run": self.is_dry_run,
                **({"dbt_unresolved": self.plan["dbt_unresolved"]} if self.plan.get("dbt_unresolved") else {}),
                **({"nothing_refreshed": self.plan["nothing_refreshed"]} if self.plan.get("nothing_refreshed") else {}),
                "jobs": [{**{k: j[k] for k in ("kind", "id", "job_id", "status")},
                          **({"earlier": j["earlier"]} if j.get("earlier") else {})} for j in jobs],
                "job_counts": {**counted, "failed": len(jobs) - counted["succeeded"] - counted["blocked"]}}


def _why_no_job(impact: Mapping[str, Any], kept: Sequence[Any], left_out: Sequence[Any], bust_cache: bool,
                preload: bool) -> str:
    """Why a plan holds no job, for the warning and the result's ``nothing_refreshed``."""
    if not impact["data_models"]:
        return "no data model reads any of the tables (unmatched_tables='warn')"
    if left_out and not kept:
        return f"dashboards_filter left out all {len(left_out)} impacted dashboard(s), and bust_cache is False"
    return "no dashboard reads the impacted data models, and bust_cache is False"


def _try_of(context: Mapping[str, Any]) -> dict[str, Any]:
    """What tells this try apart: its run, its try number, the run's clear count and the task's
    ``max_tries`` (a clear raises both; a retry neither). None where Airflow does not say."""
    ti, dag_run = context.get("ti"), context.get("dag_run")
    return {"run_id": context.get("run_id") or getattr(dag_run, "run_id", None),
            "try_number": getattr(ti, "try_number", None),
            "clear_number": getattr(dag_run, "clear_number", None),
            "max_tries": getattr(ti, "max_tries", None)}


def _not_a_retry(stored: Any, now: Mapping[str, Any]) -> str:
    """Why a kept book is not the previous try's of this run without a clear in between ('' when it is).
    What cannot be told (an older book, a try or clear count Airflow does not give) is not a retry:
    a duplicate bust costs little, a stale dashboard marked fresh a lot."""
    if not isinstance(stored, Mapping):
        return "they were kept without their try (an earlier version of the provider)"
    if not isinstance(now["try_number"], int) or stored.get("try_number") != now["try_number"] - 1:
        return f"they are try {stored.get('try_number')}'s, and this is try {now['try_number']}, not its retry"
    if now["clear_number"] is None:
        return "Airflow does not give the run's clear count, so a clear cannot be told from a retry"
    for name, what in (("run_id", "run"), ("clear_number", "clear count of the run"), ("max_tries", "max_tries")):
        if stored.get(name) != now[name]:
            return f"the task was cleared since (the {what} was {stored.get(name)}, now {now[name]})"
    return ""


def _unmatched_why(table: Mapping[str, Any], before: str, after: str = "") -> str:
    """Why no model reads an unmatched table: its models left out (by data_sources, warehouse, server
    or database), else the model tables closest by spelling."""
    if table.get("left_out"):
        return f"{before}{table['left_out']}{after}"
    if table["closest"]:
        return f"{before}closest{' model tables' if before == '; ' else ''}: {', '.join(table['closest'])}{after}"
    return f"{before}no model table is close{after}" if before == "; " else ""


def _bust_names(keys: Sequence[str]) -> str:
    return ", ".join(f"data source {k.split(':', 1)[1]}" for k in keys)


def _row(item: dict[str, Any], label: str) -> dict[str, Any]:
    return {"id": item["id"], label: item.get(label), "why": item.get("why")}

