"""AnalyticsHook: one method per operation of the service's public API v2.

Path ids are positional; resource bodies are plain dicts without their wrapper key (the hook
wraps them); query options are keyword arguments, checked against the API document's values
before any request. ``list_*`` methods return lazy iterators that follow the cursors. Methods
that start a job return the Job (``{"id", "status"}``). The methods are written by resource in
:mod:`analytics_provider.hooks.resources`; this is the class users import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analytics_provider.hooks.client import AnalyticsClientHook
from analytics_provider.hooks.resources.aml import AmlMethods
from analytics_provider.hooks.resources.attributes import UserAttributeMethods
from analytics_provider.hooks.resources.base import Id, Json
from analytics_provider.hooks.resources.dashboards import DashboardMethods
from analytics_provider.hooks.resources.data_sources import DataSourceMethods, Manifest
from analytics_provider.hooks.resources.groups import GroupMethods
from analytics_provider.hooks.resources.integrations import IntegrationMethods
from analytics_provider.hooks.resources.jobs import JobMethods
from analytics_provider.hooks.resources.reports import ReportMethods, is_job
from analytics_provider.hooks.resources.schedules import ScheduleMethods
from analytics_provider.hooks.resources.sharing import SharingMethods
from analytics_provider.hooks.resources.users import UserMethods

__all__ = ["AnalyticsHook", "Id", "Json", "Manifest", "is_job"]


class AnalyticsHook(
    UserMethods,
    GroupMethods,
    UserAttributeMethods,
    DashboardMethods,
    ReportMethods,
    DataSourceMethods,
    JobMethods,
    ScheduleMethods,
    AmlMethods,
    SharingMethods,
    IntegrationMethods,
    AnalyticsClientHook,
):
    """Interact with the analytics service's public API v2; find dashboards, widgets and filters by
    name (:class:`~analytics_provider.hooks.names.NamedLookups`).

    :param analytics_conn_id: an ``analytics`` connection: the API key in its password, the
        region (or a base-address override) in its extras.
    :param max_attempts: tries per call, the first included (default 5).
    :param max_retry_time: seconds after which no further retry starts (default 300).
    :param timeout: read timeout in seconds (default: the connection's, else 60).
    :param connect_timeout: connect timeout in seconds (default: the connection's, else 10).
    """

    # The connection form for Airflow 3.0 and 3.1 (later versions read get_provider_info). Airflow
    # looks for these in this class's own __dict__, hence here and not on AnalyticsClientHook.
    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        from analytics_provider.hooks.connection_form import form_widgets

        return form_widgets()

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        from analytics_provider.hooks.connection_form import field_behaviour

        return field_behaviour()

    # -- impact: what a load touched (refresh by impact) ---------------------------------------
    # The rules are in analytics_provider.impact (no I/O); the reads in hooks/impact_reads.py.

    def find_impacted(
        self,
        tables: Sequence[str] = (),
        data_models: Sequence[Id] = (),
        data_sets: Sequence[Id] = (),
        *,
        project_ids: Sequence[int] | None = None,
        default_schema: str | None = None,
        fold: str | None = None,
        warehouses: Mapping[str, Any] | None = None,
        data_sources: Any = None,
    ) -> Json:
        """The data sources, data models, data sets, reports, widgets and dashboards that read the
        given warehouse tables (``schema.table`` or ``db.schema.table``, compared as the warehouse
        of each model's data source compares names, by its ``dbtype``: :mod:`analytics_provider.impact.tables`;
        ``fold`` and ``default_schema`` override its rules), data models or data sets (ids or
        names), each with why; ``notes`` say which inputs nothing reads and where the answer is
        wider than it might be (:mod:`analytics_provider.impact.graph`). Query models count: those
        built on a changed model (followed transitively) and those whose SQL reads a table
        (:mod:`analytics_provider.impact.sql`). A table no model reads has ``closest`` model tables
        in ``tables``; when no model can be found at all (no AML project known),
        :class:`~analytics_provider.exceptions.AnalyticsLookupError` says so.

        ``warehouses``: the warehouse some of the tables are known to be in (table -> a dbt
        ``adapter_type`` or a ``dbtype``; None: a dbt run that does not say; or a list of them, or
        of :class:`~analytics_provider.impact.graph.TableOrigin` with an asset's server): such a
        table matches only models of data sources of that warehouse (and server, where known)
        (:class:`~analytics_provider.impact.graph.TableMatcher`); ``unchecked`` lists the matches
        whose server or database could not be checked. ``data_sources``: the data sources whose
        models may be matched, and where some are (a :class:`~analytics_provider.impact.graph.SourceScope`,
        made by :func:`~analytics_provider.impact.scope.source_scope`).
        ``project_ids``: the AML projects whose models are matched (default: those of the
        dashboards, one ``GET /dashboards/list_metadata``). What is read, once per call and never
        across calls: :class:`~analytics_provider.hooks.impact_reads.ImpactReads`. Bad input is
        refused before any request.
        """
        from analytics_provider.hooks.impact_reads import find_impacted

        return find_impacted(self, tables, data_models, data_sets, project_ids=project_ids,
                             default_schema=default_schema, fold=fold, warehouses=warehouses,
                             data_sources=data_sources)
    # -- end of impact ---------------------------------------------------------------------------
