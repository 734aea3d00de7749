"""Operators for the service's jobs: widget exports, dashboard preloads, cache busts, schedules."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.exceptions import AirflowProviderDeprecationWarning

from analytics_provider.api.filters import check_filter_conditions
from analytics_provider.api.operations import EXPORT_OUTPUTS
from analytics_provider.api.request import check_path_id
from analytics_provider.assets import emit_file_asset_events
from analytics_provider.exceptions import AnalyticsParameterError, naming_the_task, refused
from analytics_provider.lineage import describe_bust_cache, describe_execute_schedule, describe_export, describe_preload
from analytics_provider.links import (
    AnalyticsDashboardLink,
    dashboard_url,
    forget_dashboard_link,
    push_dashboard_link,
    widget_dashboard_url,
)
from analytics_provider.operators.base import AnalyticsJobOperator

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

LEGACY_OUTPUTS = {"excel": "xlsx"}


def is_templated(value: Any) -> bool:
    """Whether a value still holds Jinja (so it can only be checked once rendered)."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(is_templated(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(is_templated(v) for v in value)
    return False


def normalize_output(output: Any) -> str:
    """``csv``, ``xlsx`` or ``pdf``; the older spelling ``excel`` is read as ``xlsx`` with a warning."""
    if output in LEGACY_OUTPUTS:
        warnings.warn(
            f"output={output!r} is deprecated; use {LEGACY_OUTPUTS[output]!r}",
            AirflowProviderDeprecationWarning,
            stacklevel=3,
        )
        return LEGACY_OUTPUTS[output]
    if output not in EXPORT_OUTPUTS:
        raise AnalyticsParameterError(f"output must be one of {', '.join(EXPORT_OUTPUTS)}; got {output!r}")
    return str(output)


def check_conditions(conditions: Any) -> list[dict[str, Any]]:
    return check_filter_conditions(conditions or [])


class _DashboardJobOperator(AnalyticsJobOperator):
    """A job operator whose task links to the dashboard it worked on."""

    operator_extra_links = (AnalyticsDashboardLink(),)


class AnalyticsExportWidgetOperator(_DashboardJobOperator):
    """Export a dashboard widget's data as csv, xlsx or pdf and download the file.

    :param widget_id: the dashboard widget (templated): a positive integer, refused otherwise
        before any request.
    :param destination: a local path, a folder (ending in ``/``: the service's file name is
        kept) or an object-storage URI such as ``s3://bucket/key.csv`` (templated).
    :param output: ``csv``, ``xlsx`` or ``pdf`` (templated; held as ``export_format``, since
        ``output`` names a task's XComArg in Airflow).
    :param dashboard_filter_conditions: ``[{"dynamic_filter_id": int, "condition":
        {"operator": ..., "values": [...]}}]`` (templated).
    :param file_mode: the local file's permission bits (default: what a plain write gives,
        ``0666`` less the worker's umask), for example ``0o640``.

    Returns ``{"job_id", "path", "bytes", "content_type"}``. The file appears at the
    destination only when complete; the destination is checked before the job is submitted. Each
    ``AssetAlias`` in ``outlets`` receives an asset event for the file written (its URI from the
    rendered destination), so DAGs can be scheduled on it.
    """

    describe_lineage = staticmethod(describe_export)
    template_fields: Sequence[str] = (
        *AnalyticsJobOperator.template_fields,
        "widget_id",
        "export_format",
        "destination",
        "dashboard_filter_conditions",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"dashboard_filter_conditions": "json"}

    def __init__(
        self,
        *,
        widget_id: int | str,
        destination: Any,
        output: str = "csv",
        dashboard_filter_conditions: list[dict[str, Any]] | None = None,
        file_mode: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.widget_id = widget_id
        self.destination = destination
        self.file_mode = file_mode
        self.export_format = output  # ``output`` is taken: BaseOperator.output is the task's XComArg
        self.dashboard_filter_conditions = dashboard_filter_conditions
        with naming_the_task(self.task_id):
            if not is_templated(output):
                self.export_format = normalize_output(output)
            if not is_templated(dashboard_filter_conditions):
                check_conditions(dashboard_filter_conditions)

    def check_inputs(self) -> None:
        self.export_format = normalize_output(self.export_format)
        self.dashboard_filter_conditions = check_conditions(self.dashboard_filter_conditions)
        from analytics_provider.hooks.download import check_destination

        forget_dashboard_link(self)
        check_path_id("get_dashboard_widget", "id", self.widget_id, label=f"{self.task_id}: widget_id")
        try:
            check_destination(self.destination)
        except AnalyticsParameterError as exc:
            raise AnalyticsParameterError(f"{self.task_id}: {exc}") from None

    def submit(self, context: Context) -> dict[str, Any]:
        push_dashboard_link(self, context, lambda: widget_dashboard_url(self.hook, self.widget_id))
        return self.hook.submit_widget_export(self.widget_id, self.export_format, self.dashboard_filter_conditions)

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        result = self.hook.download_export(job_id, self.destination, file_mode=self.file_mode)
        self.log.info("Downloaded %s bytes (%s) to %s", result["bytes"], result["content_type"], result["path"])
        summary = {"job_id": job_id, "widget_id": self.widget_id, "output": self.export_format, **result}
        emit_file_asset_events(self, context, result["path"], extra=summary)
        return {"job_id": job_id, **result}


class AnalyticsPreloadDashboardOperator(_DashboardJobOperator):
    """Run a dashboard's widgets into the service's cache, so the first viewer waits for nothing.

    :param dashboard_id: the dashboard (templated).
    :param dashboard_filter_conditions: filter conditions to preload with (templated); a
        condition with operator ``none`` skips a filter's default.
    :param bust_cache: run every widget even when a cached result exists.
    """

    describe_lineage = staticmethod(describe_preload)
    template_fields: Sequence[str] = (
        *AnalyticsJobOperator.template_fields,
        "dashboard_id",
        "dashboard_filter_conditions",
        "bust_cache",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"dashboard_filter_conditions": "json"}

    def __init__(
        self,
        *,
        dashboard_id: int | str,
        dashboard_filter_conditions: list[dict[str, Any]] | None = None,
        bust_cache: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.dashboard_id = dashboard_id
        self.dashboard_filter_conditions = dashboard_filter_conditions
        self.bust_cache = bust_cache
        if not is_templated(dashboard_filter_conditions):
            with naming_the_task(self.task_id):
                check_conditions(dashboard_filter_conditions)

    def check_inputs(self) -> None:
        forget_dashboard_link(self)
        check_path_id("get_dashboard", "id", self.dashboard_id, label=f"{self.task_id}: dashboard_id")
        self.dashboard_filter_conditions = check_conditions(self.dashboard_filter_conditions)
        if isinstance(self.bust_cache, str) and self.bust_cache.strip().lower() in ("true", "false"):
            self.bust_cache = self.bust_cache.strip().lower() == "true"  # rendered from a template
        if not isinstance(self.bust_cache, bool):
            raise refused(self.task_id, "bust_cache", self.bust_cache, "true or false")

    def submit(self, context: Context) -> dict[str, Any]:
        push_dashboard_link(self, context, lambda: dashboard_url(self.hook, self.dashboard_id))
        return self.hook.preload_dashboard(self.dashboard_id, self.dashboard_filter_conditions, self.bust_cache)

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        return {"job_id": job_id, "status": "success", "dashboard_id": self.dashboard_id}


class AnalyticsBustDataSourceCacheOperator(AnalyticsJobOperator):
    """Invalidate a data source's exploration and report cache (after a warehouse load).

    :param data_source_id: the data source (templated).
    """

    describe_lineage = staticmethod(describe_bust_cache)
    template_fields: Sequence[str] = (*AnalyticsJobOperator.template_fields, "data_source_id")

    def __init__(self, *, data_source_id: int | str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_source_id = data_source_id

    def submit(self, context: Context) -> dict[str, Any]:
        return self.hook.bust_data_source_cache(self.data_source_id)

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        return {"job_id": job_id, "status": "success", "data_source_id": self.data_source_id}


class AnalyticsExecuteDataScheduleOperator(AnalyticsJobOperator):
    """Send a data schedule now, for example right after the load it reports on.

    :param data_schedule_id: the schedule (templated).
    """

    describe_lineage = staticmethod(describe_execute_schedule)
    template_fields: Sequence[str] = (*AnalyticsJobOperator.template_fields, "data_schedule_id")

    def __init__(self, *, data_schedule_id: int | str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_schedule_id = data_schedule_id

    def submit(self, context: Context) -> dict[str, Any]:
        return self.hook.execute_data_schedule(self.data_schedule_id)

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        return {"job_id": job_id, "status": "success", "data_schedule_id": self.data_schedule_id}
