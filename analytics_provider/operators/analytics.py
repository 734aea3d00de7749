"""Operators for the service's jobs: widget exports, dashboard preloads, cache busts, schedules."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.exceptions import AirflowProviderDeprecationWarning

from analytics_provider.api.wire.choices import EXPORT_OUTPUTS
from analytics_provider.api.wire.filters import check_filter_conditions, check_filters
from analytics_provider.assets import (
    ASSET_NAME_RULE,
    check_export_asset_name,
    default_export_asset_name,
    emit_export_asset_event,
    file_uri,
    run_day,
)
from analytics_provider.exceptions import AnalyticsParameterError, naming_the_task, refused
from analytics_provider.file_modes import check_file_mode
from analytics_provider.lineage_mixin import LineageFunction
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
    """A job operator on a dashboard, named by its title or its id; its task links to it."""

    operator_extra_links = (AnalyticsDashboardLink(),)
    dashboard: Any = None
    filters: Any = None
    dashboard_filter_conditions: Any = None

    def uses_names(self) -> bool:
        return bool(self.dashboard is not None or getattr(self, "widget", None) is not None or self.filters)

    def check_named_filters(self) -> None:
        if self.filters is not None and not is_templated(self.filters):
            with naming_the_task(self.task_id):
                check_filters(self.filters)

    def resolve_filters(self, board: dict[str, Any]) -> None:
        """Add the conditions of ``filters`` (by label) to ``dashboard_filter_conditions`` (by id)."""
        if self.filters:
            from analytics_provider.api.wire.lookup import filter_conditions

            named = filter_conditions(board, self.filters)
            given = {str(c["dynamic_filter_id"]) for c in self.dashboard_filter_conditions or []}
            twice = [c for c in named if str(c["dynamic_filter_id"]) in given]
            if twice:
                raise AnalyticsParameterError(
                    f"filters and dashboard_filter_conditions both set the filter {twice[0]['dynamic_filter_id']}")
            self.dashboard_filter_conditions = [*(self.dashboard_filter_conditions or []), *named]
            self.resolved["dashboard_filter_conditions"] = self.dashboard_filter_conditions

    def board_url(self) -> str | None:
        """The resolved dashboard's URL, when a lookup read it."""
        return self.resolved.get("dashboard_url") or None


class AnalyticsExportWidgetOperator(_DashboardJobOperator):
    """Export a dashboard widget's data as csv, xlsx or pdf and download the file.

    :param dashboard: the dashboard, by its title, or its id as an int (templated); a text of digits
        is a title first (see :meth:`~analytics_provider.hooks.names.NamedLookups.find_dashboard`).
    :param widget: the title a widget shows on that dashboard (templated); give ``dashboard`` and
        ``widget``, or ``widget_id``.
    :param filters: the dashboard's filters by label (or ``uname``): ``{"Region": ["EU"]}`` (a
        list means ``is``) or ``{"Order date": {"operator": "last", "values": [7], "modifier":
        "day"}}`` (templated). Values outside a filter's options are refused before any job.
    :param widget_id: the dashboard widget by id (templated): a positive integer, refused
        otherwise before any request.
    :param destination: a local path, a folder (ending in ``/``: the service's file name is
        kept) or an object-storage URI such as ``s3://bucket/key.csv`` (templated).
    :param output: ``csv``, ``xlsx`` or ``pdf`` (templated; held as ``export_format``, since
        ``output`` names a task's XComArg in Airflow).
    :param dashboard_filter_conditions: ``[{"dynamic_filter_id": int, "condition":
        {"operator": ..., "values": [...]}}]`` (templated).
    :param file_mode: the local file's permission bits, an int from 0 to ``0o777`` (default: what
        a plain write gives, ``0666`` less the worker's umask), for example ``0o640``; anything
        else (a string, a setuid bit) is refused when the DAG is parsed.
    :param max_download_bytes: the file's size at most, decoded, in bytes (default: the
        connection's ``max_download_bytes``, else 16 GiB); a larger file is refused before it
        replaces anything.
    :param max_decode_ratio: decoded bytes per byte received at most, for a file the host
        compressed (default: the connection's ``max_decode_ratio``, else 100; files under 16 MiB
        pass whatever their ratio): a compression bomb is refused before it fills the disk.
    :param max_download_seconds: seconds the download may take at most, retries included
        (default: the connection's ``max_download_seconds``, else 21,600: 6 hours); a file host
        that drips the file is refused past it, and the destination keeps what it held.
    :param asset: the name of the export's asset, ``analytics://exports/<asset>`` (templated;
        default ``widget-<id>.<output>``). Each file written is an event on it, through the task's
        ``AssetAlias`` outlets or on the task's own outlet :func:`~analytics_provider.assets.export_asset`,
        with ``uri``, ``path``, ``date``, ``job_id`` and the export's summary in its extra.

    Names are resolved once per try, on the worker, before the job is submitted (the trigger gets
    ids only). Returns ``{"job_id", "path", "bytes", "content_type"}``, with ``dashboard_id`` and
    ``widget_id`` when names were resolved. The file appears at the
    destination only when complete; the destination is checked before the job is submitted. Each
    file written is an event on the export's stable asset (see ``asset``), so DAGs can be
    scheduled on it.
    """

    describe_lineage = LineageFunction("describe_export")
    template_fields: Sequence[str] = (
        *AnalyticsJobOperator.template_fields,
        "widget_id",
        "dashboard",
        "widget",
        "export_format",
        "destination",
        "dashboard_filter_conditions",
        "filters",
        "asset",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"dashboard_filter_conditions": "json", "filters": "json"}

    def __init__(
        self,
        *,
        destination: Any,
        widget_id: int | str | None = None,
        dashboard: int | str | None = None,
        widget: str | None = None,
        output: str = "csv",
        filters: dict[str, Any] | None = None,
        dashboard_filter_conditions: list[dict[str, Any]] | None = None,
        file_mode: int | None = None,
        asset: str | None = None,
        max_download_bytes: int | None = None,
        max_decode_ratio: float | None = None,
        max_download_seconds: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.asset = asset
        self.max_download_bytes = max_download_bytes
        self.max_decode_ratio = max_decode_ratio
        self.max_download_seconds = max_download_seconds
        self.widget_id = widget_id
        self.dashboard = dashboard
        self.widget = widget
        self.filters = filters
        self.destination = destination
        self.file_mode = file_mode
        self.export_format = output  # ``output`` is taken: BaseOperator.output is the task's XComArg
        self.dashboard_filter_conditions = dashboard_filter_conditions
        if widget_id is None and widget is None:
            raise refused(self.task_id, "widget", None, "a widget's title (with dashboard), or widget_id its id")
        if widget_id is not None and widget is not None:
            raise refused(self.task_id, "widget", widget, "left out when widget_id is given (one of the two)")
        if widget is not None and dashboard is None:
            raise refused(self.task_id, "dashboard", None, "the title (or id) of the dashboard that shows widget")
        if widget_id is not None and dashboard is not None:
            raise refused(self.task_id, "dashboard", dashboard,
                          "left out when widget_id is given (the widget's own dashboard is used)")
        with naming_the_task(self.task_id):
            check_file_mode(file_mode)
            self.max_download_bytes = self.max_decode_ratio = self.max_download_seconds = None
            if (max_download_bytes, max_decode_ratio, max_download_seconds) != (None, None, None):
                from analytics_provider.api.call.limits import download_overrides  # (5 ms of import: given only)

                self.max_download_bytes, self.max_decode_ratio, self.max_download_seconds = download_overrides(
                    max_download_bytes, max_decode_ratio, max_download_seconds, self.task_id)
            if not is_templated(output):
                self.export_format = normalize_output(output)
            if not is_templated(dashboard_filter_conditions):
                check_conditions(dashboard_filter_conditions)
        if not is_templated(asset):
            self.check_asset_name()
        self.check_named_filters()

    def check_asset_name(self) -> None:
        if self.asset is None:
            return
        try:
            check_export_asset_name(self.asset)
        except ValueError as exc:
            raise refused(self.task_id, "asset", self.asset, ASSET_NAME_RULE) from exc

    def check_inputs(self) -> None:
        self.export_format = normalize_output(self.export_format)
        self.dashboard_filter_conditions = check_conditions(self.dashboard_filter_conditions)
        from analytics_provider.api.call.request import check_path_id
        from analytics_provider.hooks.download import check_destination

        check_file_mode(self.file_mode)
        forget_dashboard_link(self)
        self.resolved = {}
        if self.widget is None:
            check_path_id("get_dashboard_widget", "id", self.widget_id, label=f"{self.task_id}: widget_id")
        else:
            for name in ("dashboard", "widget"):
                if not isinstance(getattr(self, name), (str, int)) or not str(getattr(self, name)).strip():
                    raise refused(self.task_id, name, getattr(self, name), "a title or an id")
        self.check_named_filters()
        self.check_asset_name()
        try:
            check_destination(self.destination)
        except AnalyticsParameterError as exc:
            raise AnalyticsParameterError(f"{self.task_id}: {exc}") from None

    def resolve(self, context: Context) -> None:
        if self.widget is None and not self.filters:
            return
        if self.widget is not None:
            board = self.hook.find_dashboard(self.dashboard)
            self.widget_id = str(self.hook.find_widget(board, str(self.widget))["id"])
        else:
            widget_id: Any = self.widget_id  # checked by check_inputs
            board = self.hook.get_dashboard_widget(widget_id, include_dashboard=True).get("dashboard") or {}
        self.resolved.update(dashboard_id=board.get("id"), widget_id=self.widget_id, dashboard_url=board.get("url"))
        self.resolve_filters(board)

    def submit(self, context: Context) -> dict[str, Any]:
        push_dashboard_link(self, context, lambda: self.board_url() or widget_dashboard_url(self.hook, self.widget_id))
        widget_id: Any = self.widget_id  # checked by check_inputs, or resolved
        return self.hook.submit_widget_export(widget_id, self.export_format, self.dashboard_filter_conditions)

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        from analytics_provider.hooks.download import task_named_on_write_failure

        with task_named_on_write_failure(self.task_id):  # the hook's text names the destination
            result = self.hook.download_export(job_id, self.destination, file_mode=self.file_mode,
                                               max_download_bytes=self.max_download_bytes,
                                               max_decode_ratio=self.max_decode_ratio,
                                               max_download_seconds=self.max_download_seconds)
        self.log.info("Downloaded %s bytes (%s) to %s", result["bytes"], result["content_type"], result["path"])
        summary = {"job_id": job_id, "widget_id": self.widget_id, "output": self.export_format, **result}
        asset = self.asset or default_export_asset_name(self.widget_id, self.export_format)
        extra = {**summary, "uri": file_uri(result["path"]), "date": run_day(context)}
        emit_export_asset_event(self, context, asset, extra=extra)
        names: dict[str, Any] = {k: self.resolved[k] for k in ("dashboard_id", "widget_id") if k in self.resolved}
        return {"job_id": job_id, **result, **names}


class AnalyticsPreloadDashboardOperator(_DashboardJobOperator):
    """Run a dashboard's widgets into the service's cache, so the first viewer waits for nothing.

    :param dashboard: the dashboard, by its title, or its id as an int (templated); a text of digits
        is a title first (see :meth:`~analytics_provider.hooks.names.NamedLookups.find_dashboard`).
    :param dashboard_id: the dashboard by id (templated); give ``dashboard`` or ``dashboard_id``.
    :param filters: the dashboard's filters by label (or ``uname``) to preload with, as for
        :class:`AnalyticsExportWidgetOperator` (templated).
    :param dashboard_filter_conditions: filter conditions by filter id (templated); a
        condition with operator ``none`` skips a filter's default.
    :param bust_cache: run every widget even when a cached result exists.

    Returns ``{"job_id", "status", "dashboard_id"}``.
    """

    describe_lineage = LineageFunction("describe_preload")
    template_fields: Sequence[str] = (
        *AnalyticsJobOperator.template_fields,
        "dashboard_id",
        "dashboard",
        "dashboard_filter_conditions",
        "filters",
        "bust_cache",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"dashboard_filter_conditions": "json", "filters": "json"}

    def __init__(
        self,
        *,
        dashboard_id: int | str | None = None,
        dashboard: int | str | None = None,
        filters: dict[str, Any] | None = None,
        dashboard_filter_conditions: list[dict[str, Any]] | None = None,
        bust_cache: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.dashboard_id = dashboard_id
        self.dashboard = dashboard
        self.filters = filters
        self.dashboard_filter_conditions = dashboard_filter_conditions
        self.bust_cache = bust_cache
        if (dashboard_id is None) == (dashboard is None):
            raise refused(self.task_id, "dashboard", dashboard,
                          "a dashboard's title (or id), or dashboard_id its id: one of the two")
        if not is_templated(dashboard_filter_conditions):
            with naming_the_task(self.task_id):
                check_conditions(dashboard_filter_conditions)
        self.check_named_filters()

    def check_inputs(self) -> None:
        from analytics_provider.api.call.request import check_path_id

        forget_dashboard_link(self)
        self.resolved = {}
        if self.dashboard is None:
            check_path_id("get_dashboard", "id", self.dashboard_id, label=f"{self.task_id}: dashboard_id")
        elif not isinstance(self.dashboard, (str, int)) or not str(self.dashboard).strip():
            raise refused(self.task_id, "dashboard", self.dashboard, "a title or an id")
        self.dashboard_filter_conditions = check_conditions(self.dashboard_filter_conditions)
        self.check_named_filters()
        if isinstance(self.bust_cache, str) and self.bust_cache.strip().lower() in ("true", "false"):
            self.bust_cache = self.bust_cache.strip().lower() == "true"  # rendered from a template
        if not isinstance(self.bust_cache, bool):
            raise refused(self.task_id, "bust_cache", self.bust_cache, "true or false")

    def resolve(self, context: Context) -> None:
        if self.dashboard is None and not self.filters:
            return
        # dashboard_id is an id even as text (checked by check_inputs); dashboard is a title unless an int
        board = self.hook.find_dashboard(self.dashboard if self.dashboard is not None
                                         else int(str(self.dashboard_id).strip()))
        self.dashboard_id = board.get("id")
        self.resolved.update(dashboard_id=self.dashboard_id, dashboard_url=board.get("url"))
        self.resolve_filters(board)

    def submit(self, context: Context) -> dict[str, Any]:
        push_dashboard_link(self, context, lambda: self.board_url() or dashboard_url(self.hook, self.dashboard_id))
        dashboard_id: Any = self.dashboard_id  # checked by check_inputs, or resolved
        return self.hook.preload_dashboard(dashboard_id, self.dashboard_filter_conditions, self.bust_cache)

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        return {"job_id": job_id, "status": "success", "dashboard_id": self.dashboard_id}


class AnalyticsBustDataSourceCacheOperator(AnalyticsJobOperator):
    """Invalidate a data source's exploration and report cache (after a warehouse load).

    :param data_source_id: the data source (templated).
    """

    describe_lineage = LineageFunction("describe_bust_cache")
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

    describe_lineage = LineageFunction("describe_execute_schedule")
    template_fields: Sequence[str] = (*AnalyticsJobOperator.template_fields, "data_schedule_id")

    def __init__(self, *, data_schedule_id: int | str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_schedule_id = data_schedule_id

    def submit(self, context: Context) -> dict[str, Any]:
        return self.hook.execute_data_schedule(self.data_schedule_id)

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        return {"job_id": job_id, "status": "success", "data_schedule_id": self.data_schedule_id}
