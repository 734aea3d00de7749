"""Asset events for the files the export operator writes: one stable asset per export.

An export's file changes name every day (``.../{{ ds }}/revenue.xlsx``), but what a consumer
waits for is "the revenue export", so the asset is the export, not the file:
``analytics://exports/<name>``, its name given by the task (``asset="revenue.xlsx"``) or, by
default, its widget and format (``widget-101.xlsx``). Each event's extra says which file it was
(``uri``, ``path``), for which day (``date``) and from which job (``job_id``). Declared in a DAG
(:func:`export_asset` in a consumer's ``schedule``, or as an export's own outlet), the asset is
known to Airflow before its first event, and Airflow's asset table holds one row per export
however many files it writes. On Airflow 2.11 the asset is a ``Dataset`` with the same URI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from analytics_provider.locations import StorageLocation

EXPORT_URI_PREFIX = "analytics://exports/"
_NAME = re.compile(r"^[^\s/][^/]*(/[^\s/][^/]*)*$")  # one or more path-like segments, none empty
ASSET_NAME_RULE = (
    "a non-empty text such as 'revenue-by-region.xlsx' or 'finance/revenue.xlsx' "
    "(segments separated by '/', none empty, no space at either end)"
)


def check_export_asset_name(name: Any) -> str:
    """The name as given, or ``ValueError`` saying what an export asset's name may be."""
    if not isinstance(name, str) or not _NAME.match(name) or name != name.strip():
        raise ValueError(f"{name!r} is not an export asset's name: {ASSET_NAME_RULE}")
    return name


def export_asset(name: str) -> Any:
    """The ``Asset`` of an export named ``name``: list it in a consumer DAG's ``schedule`` (so that
    Airflow knows it before the export's first event) or in the export task's own ``outlets``."""
    from airflow.providers.common.compat.sdk import Asset

    from analytics_provider.version_compat import AIRFLOW_V_3_0_PLUS

    check_export_asset_name(name)
    uri = EXPORT_URI_PREFIX + quote(name, safe="/")
    if not AIRFLOW_V_3_0_PLUS:  # Airflow 2.11's Dataset has a URI and no name
        return Asset(uri=uri)
    return Asset(name=f"analytics-export:{name}", uri=uri)


def default_export_asset_name(widget_id: Any, export_format: str) -> str:
    """An export's asset name when its task names none: the widget and the format."""
    return f"widget-{widget_id}.{export_format}"


def emit_export_asset_event(operator: Any, context: Mapping[str, Any], name: str, extra: dict[str, Any]) -> bool:
    """Announce the export's new file on its asset ``name``; True when an event was emitted.

    The asset listed in the task's ``outlets`` gets its extra (Airflow emits that event when the
    task succeeds); otherwise each ``AssetAlias`` in ``outlets`` gets an event on the asset. A task
    with neither emits nothing. ``extra`` is the event's extra (plain JSON values).
    """
    from airflow.providers.common.compat.sdk import Asset, AssetAlias

    asset = export_asset(name)
    outlets = list(operator.outlets or ())
    own = [outlet for outlet in outlets if isinstance(outlet, Asset) and outlet.uri == asset.uri]
    for outlet in own:
        context["outlet_events"][outlet].extra.update(extra)
        operator.log.info("Asset event for %s (file %s)", asset.uri, extra.get("uri"))
    if own:
        return True
    aliases = [outlet for outlet in outlets if isinstance(outlet, AssetAlias)]
    for alias in aliases:
        context["outlet_events"][alias].add(asset, extra=extra)
        operator.log.info("Asset event for %s (file %s) through alias %r", asset.uri, extra.get("uri"), alias.name)
    return bool(aliases)


def run_day(context: Mapping[str, Any]) -> str | None:
    """The run's day (``YYYY-MM-DD``): its logical date, or when it ran for a run without one."""
    when = context.get("logical_date") or getattr(context.get("dag_run"), "run_after", None)
    return when.strftime("%Y-%m-%d") if when is not None else None


def file_uri(location: str) -> str:
    """A written file's URI as an event's extra gives it (``file:///abs/path``, ``s3://bucket/key``)."""
    return StorageLocation.parse(location).uri


# -- dashboards: "this dashboard is fresh" ------------------------------------------------------
# A refreshed dashboard's asset is named by the service's address and the dashboard's id:
# ``analytics://eu.holistics.io/dashboards/2`` (``analytics://host:port[/prefix]/dashboards/<id>``
# for a base-address override): the OpenLineage dataset of the dashboard has the same name.

SERVICE_SCHEME = "analytics"
DASHBOARDS_ALIAS = "analytics-refreshed-dashboards"
"""The alias the refresh operator emits its dashboards' events through, unless its outlets say otherwise."""


def service_namespace(base_url: str) -> str:
    """The service at ``base_url`` as assets and OpenLineage name it: ``analytics://eu.holistics.io``
    (``analytics://host:port[/prefix]`` for a base-address override)."""
    parts = urlsplit(base_url)
    prefix = parts.path.rstrip("/").removesuffix("/api/v2")
    return f"{SERVICE_SCHEME}://{parts.netloc.rpartition('@')[2]}{prefix}"


def dashboard_asset_uri(service: str, dashboard_id: Any) -> str:
    """``analytics://<host>/dashboards/<id>``; ``service``: a region (``eu``), a host
    (``eu.holistics.io``) or a base URL (``https://host:8443/api/v2``)."""
    from analytics_provider.get_provider_info import REGION_BASE_URLS

    text = str(service).strip()
    if not text:
        raise ValueError("service must be a region, a host or a base URL")
    base_url = REGION_BASE_URLS.get(text.lower()) or (text if "://" in text else f"https://{text}")
    if isinstance(dashboard_id, bool) or not str(dashboard_id).strip().isdigit():
        raise ValueError(f"a dashboard id is a positive integer; got {dashboard_id!r}")
    return f"{service_namespace(base_url)}/dashboards/{int(str(dashboard_id).strip())}"


def dashboard_asset(dashboard_id: Any, service: str = "eu") -> Any:
    """The ``Asset`` of a dashboard's freshness: list it in a DAG's ``schedule`` to run after the
    dashboard was refreshed (:class:`~analytics_provider.operators.refresh.AnalyticsRefreshImpactedOperator`).
    On Airflow 2.11, a ``Dataset`` with the same URI."""
    return _asset_of(dashboard_asset_uri(service, dashboard_id))


def emit_dashboard_events(operator: Any, context: Mapping[str, Any], events: list[tuple[str, dict[str, Any]]]) -> int:
    """An event per refreshed dashboard (``(uri, extra)``): on the task's outlet of that URI, or
    through each ``AssetAlias`` of its outlets. Returns the events emitted."""
    from airflow.providers.common.compat.sdk import Asset, AssetAlias

    outlets = list(operator.outlets or ())
    aliases = [o for o in outlets if isinstance(o, AssetAlias)]
    emitted = 0
    for uri, extra in events:
        own = [o for o in outlets if isinstance(o, Asset) and o.uri == uri]
        for outlet in own:
            context["outlet_events"][outlet].extra.update(extra)
        for alias in [] if own else aliases:
            context["outlet_events"][alias].add(_asset_of(uri), extra=extra)
        if own or aliases:
            emitted += 1
            operator.log.info("Asset event for %s (dashboard %s is fresh)", uri, extra.get("dashboard_id"))
    return emitted


def _asset_of(uri: str) -> Any:
    from airflow.providers.common.compat.sdk import Asset

    from analytics_provider.version_compat import AIRFLOW_V_3_0_PLUS

    if not AIRFLOW_V_3_0_PLUS:
        return Asset(uri=uri)
    return Asset(name=f"analytics-dashboard:{uri.split('://', 1)[1]}", uri=uri)
