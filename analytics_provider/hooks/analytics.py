"""AnalyticsHook: one method per operation of the service's public API v2.

Path ids are positional; resource bodies are plain dicts without their wrapper key (the hook
wraps them); query options are keyword arguments, checked against the API document's values
before any request. ``list_*`` methods return lazy iterators that follow the cursors. Methods
that start a job return the Job (``{"id", "status"}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from analytics_provider.api.filters import FilterConditions, check_filter_conditions
from analytics_provider.api.operations import EXPORT_OUTPUTS, MAX_UPSERT_ENTRIES, USER_ROLES
from analytics_provider.api.pagination import Pages
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.client import AnalyticsClientHook

Id = int | str
Json = dict[str, Any]


class AnalyticsHook(AnalyticsClientHook):
    """Interact with the analytics service's public API v2.

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

    # -- users ---------------------------------------------------------------------------------

    def get_current_user(self) -> Json:
        """The user the API key belongs to."""
        return self.call("get_current_user")

    def list_users(
        self,
        *,
        search_term: str | None = None,
        status: str | None = None,
        role: str | None = None,
        has_authentication_token: bool | None = None,
        exclude_deleted: bool | None = None,
        sort: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> Pages:
        """Users (lazily, page by page); ``status``: active, deleted, pending."""
        return self.paginate("list_users", locals_query(locals()))

    def update_user(self, user_id: Id, user: Mapping[str, Any]) -> Json:
        return self.call("update_user", user_id, body=dict(user))

    def delete_user(self, user_id: Id) -> Json:
        """Soft-delete a user: access is revoked, their resources stay theirs."""
        return self.call("delete_user", user_id)

    def invite_users(
        self,
        emails: Sequence[str],
        role: str,
        *,
        allow_authentication_token: bool | None = None,
        enable_export_data: bool | None = None,
        group_ids: Sequence[int] | None = None,
        message: str | None = None,
    ) -> Json:
        """Invite users by e-mail; starts a job. Never retried once it may have been received."""
        if not emails or isinstance(emails, str):
            raise AnalyticsParameterError("invite_users: emails must be a non-empty list of addresses")
        _check_choice("invite_users", "role", role, USER_ROLES)
        body = {"emails": list(emails), "role": role, **locals_query(locals(), exclude=("emails", "role"))}
        return self.call("invite_users", body=body)

    def is_email_used(self, email: str) -> bool:
        return bool(self.call("is_email_used", query={"email": email}))

    # -- jobs ----------------------------------------------------------------------------------

    def get_job(self, job_id: Id) -> Json:
        return self.call("get_job", job_id)

    def get_job_result(self, job_id: Id) -> Json:
        """``{status, error, result}``; ``result.data`` holds e.g. a publish's diagnostics."""
        return self.call("get_job_result", job_id)

    def get_job_logs(self, job_id: Id) -> list[Json]:
        """The job's log lines: ``[{level, message, timestamp}]``."""
        return self.call("get_job_logs", job_id) or []

    # -- exports -------------------------------------------------------------------------------

    def submit_widget_export(
        self, widget_id: Id, output: str = "csv", dashboard_filter_conditions: FilterConditions | None = None
    ) -> Json:
        """Start exporting a dashboard widget's data as csv, xlsx or pdf; returns the Job."""
        _check_choice("submit_widget_export", "output", output, EXPORT_OUTPUTS)
        body: Json = {"output": output}
        if dashboard_filter_conditions:
            body["dashboard_filter_conditions"] = check_filter_conditions(dashboard_filter_conditions)
        return self.call("submit_widget_export", widget_id, body=body)

    # -- dashboards ----------------------------------------------------------------------------

    def get_dashboard(self, dashboard_id: Id) -> Json:
        return self.call("get_dashboard", dashboard_id)

    def list_dashboards(
        self,
        *,
        sort: str | None = None,
        include_embed_info: bool | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> Pages:
        return self.paginate("list_dashboards", locals_query(locals()))

    def build_dashboard_url(self, dashboard_id: Id, filter_states: FilterConditions | None = None) -> Json:
        """``{dashboard_url, fstate_hash}`` for the dashboard with preset filter states."""
        body = {"filter_states": check_filter_conditions(filter_states or [])}
        return self.call("build_dashboard_url", dashboard_id, body=body)

    def preload_dashboard(
        self,
        dashboard_id: Id,
        dashboard_filter_conditions: FilterConditions | None = None,
        bust_cache: bool = False,
    ) -> Json:
        """Run the dashboard's widgets into the cache; ``bust_cache`` ignores what is cached."""
        body = {
            "dashboard_filter_conditions": check_filter_conditions(dashboard_filter_conditions or []),
            "bust_cache": bool(bust_cache),
        }
        return self.call("preload_dashboard", dashboard_id, body=body)

    def get_dashboard_widget(
        self,
        widget_id: Id,
        *,
        include_dashboard: bool | None = None,
        include_report: bool | None = None,
        include_url: bool | None = None,
    ) -> Json:
        return self.call("get_dashboard_widget", widget_id, query=locals_query(locals(), exclude=("widget_id",)))

    # -- data schedules ------------------------------------------------------------------------

    def create_data_schedule(self, data_schedule: Mapping[str, Any]) -> Json:
        """Create a schedule; never re-sent once it may have reached the service."""
        return self.call("create_data_schedule", body=dict(data_schedule))

    def list_data_schedules(
        self,
        *,
        dest_type: str | None = None,
        source_type: str | None = None,
        source_id: int | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> Pages:
        return self.paginate("list_data_schedules", locals_query(locals()))

    def get_data_schedule(self, schedule_id: Id) -> Json:
        return self.call("get_data_schedule", schedule_id)

    def update_data_schedule(self, schedule_id: Id, data_schedule: Mapping[str, Any]) -> Json:
        return self.call("update_data_schedule", schedule_id, body=dict(data_schedule))

    def delete_data_schedule(self, schedule_id: Id) -> Json:
        return self.call("delete_data_schedule", schedule_id)

    def execute_data_schedule(self, schedule_id: Id) -> Json:
        """Send a schedule now (for example after a warehouse load); returns the Job."""
        return self.call("execute_data_schedule", schedule_id)

    # -- data alerts ---------------------------------------------------------------------------

    def create_data_alert(self, data_alert: Mapping[str, Any]) -> Json:
        """Create an alert; never re-sent once it may have reached the service."""
        return self.call("create_data_alert", body=dict(data_alert))

    def list_data_alerts(
        self,
        *,
        search_term: str | None = None,
        dest_type: str | None = None,
        source_id: Id | None = None,
        source_type: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> Pages:
        return self.paginate("list_data_alerts", locals_query(locals()))

    def get_data_alert(self, alert_id: Id) -> Json:
        return self.call("get_data_alert", alert_id)

    def update_data_alert(self, alert_id: Id, data_alert: Mapping[str, Any]) -> Json:
        return self.call("update_data_alert", alert_id, body=dict(data_alert))

    def delete_data_alert(self, alert_id: Id) -> Json:
        return self.call("delete_data_alert", alert_id)

    def execute_data_alert(self, alert_id: Id) -> Json:
        return self.call("execute_data_alert", alert_id)

    def test_data_alert(self, data_alert: Mapping[str, Any]) -> Json:
        """Run an unsaved alert once; returns the Job."""
        return self.call("test_data_alert", body=dict(data_alert))

    # -- dependencies, groups, embedding ---------------------------------------------------------

    def get_dependants(self, object_id: int, object_type: str) -> Json:
        """Downstream dependants of a DataSource, DataModel or DataSet."""
        return self.call("get_dependants", query={"id": object_id, "type": object_type})

    def create_group(self, group: Mapping[str, Any]) -> Json:
        return self.call("create_group", body=dict(group))

    def list_groups(
        self,
        *,
        sort: str | None = None,
        include_users: bool | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> Pages:
        return self.paginate("list_groups", locals_query(locals()))

    def get_group(self, group_id: Id, *, include_users: bool | None = None) -> Json:
        return self.call("get_group", group_id, query={"include_users": include_users})

    def update_group(self, group_id: Id, group: Mapping[str, Any]) -> Json:
        return self.call("update_group", group_id, body=dict(group))

    def create_shortened_embed_token(self, hashcode: str, token: str) -> str:
        """A short token for an embed URL that exceeds browser limits."""
        return self.call("create_shortened_embed_token", hashcode, body={"token": token})

    # -- data sources, sets, models, reports -----------------------------------------------------

    def get_data_source(self, data_source_id: Id) -> Json:
        return self.call("get_data_source", data_source_id)

    def update_data_source(self, data_source_id: Id, data_source: Mapping[str, Any]) -> Json:
        return self.call("update_data_source", data_source_id, body=dict(data_source))

    def bust_data_source_cache(self, data_source_id: Id) -> Json:
        """Invalidate the data source's exploration and report cache; returns the Job."""
        return self.call("bust_data_source_cache", data_source_id)

    def get_data_set(
        self, data_set_id: Id, *, include_models: bool | None = None, include_reports: bool | None = None
    ) -> Json:
        return self.call("get_data_set", data_set_id, query=locals_query(locals(), exclude=("data_set_id",)))

    def delete_data_set(self, data_set_id: Id) -> Json:
        return self.call("delete_data_set", data_set_id)

    def list_data_models(
        self, project_id: int, *, branch_name: str | None = None, commit_oid: str | None = None
    ) -> Pages:
        """The AML project's data models (``commit_oid`` wins over ``branch_name``)."""
        return self.paginate("list_data_models", locals_query(locals()))

    def get_query_report(self, report_id: Id, *, include_data_set: bool | None = None) -> Json:
        return self.call("get_query_report", report_id, query={"include_data_set": include_data_set})

    # -- user attributes -----------------------------------------------------------------------

    def create_user_attribute(self, user_attribute: Mapping[str, Any]) -> Json:
        return self.call("create_user_attribute", body=dict(user_attribute))

    def list_user_attributes(self, *, limit: int | None = None, after: str | None = None) -> Pages:
        return self.paginate("list_user_attributes", locals_query(locals()))

    def update_user_attribute(self, attribute_id: Id, user_attribute: Mapping[str, Any]) -> Json:
        return self.call("update_user_attribute", attribute_id, body=dict(user_attribute))

    def list_user_attribute_entries(
        self, subject_type: str, subject_id: int, *, limit: int | None = None, after: str | None = None
    ) -> Pages:
        return self.paginate("list_user_attribute_entries", locals_query(locals()))

    def compute_user_attribute_values(self, subject_type: str, subject_id: int) -> dict[str, list[str]]:
        query = {"subject_type": subject_type, "subject_id": subject_id}
        return self.call("compute_user_attribute_values", query=query)

    def upsert_user_attribute_entries(self, entries: Iterable[Mapping[str, Any]]) -> list[Json]:
        """Upsert any number of entries, in requests of at most 100; all are checked first.

        Each entry names its attribute by ``user_attribute_id`` or ``user_attribute_name``.
        An upsert is idempotent, so after a failure the whole call can simply be run again.
        """
        batch = [dict(entry) for entry in entries]
        for index, entry in enumerate(batch):
            if entry.get("user_attribute_id") is None and not entry.get("user_attribute_name"):
                raise AnalyticsParameterError(
                    f"upsert_user_attribute_entries: entry {index} names no attribute "
                    "(give user_attribute_id or user_attribute_name)"
                )
        upserted: list[Json] = []
        for start in range(0, len(batch), MAX_UPSERT_ENTRIES):
            chunk = batch[start : start + MAX_UPSERT_ENTRIES]
            upserted.extend(self.call("upsert_user_attribute_entries", body=chunk) or [])
        return upserted

    # -- AML projects --------------------------------------------------------------------------

    def publish_aml_project(self, object_mapping: Mapping[str, Any] | None = None) -> Json:
        """Publish the AML project to production; returns the Job (read its result for diagnostics)."""
        return self.call("publish_aml_project", body={"object_mapping": dict(object_mapping)} if object_mapping else {})

    def validate_aml_project(self, branch_name: str, commit_oid: str) -> Json:
        return self.call("validate_aml_project", body={"branch_name": branch_name, "commit_oid": commit_oid})


def locals_query(values: Mapping[str, Any], exclude: Sequence[str] = ()) -> dict[str, Any]:
    """A method's keyword options as a query: ``self`` and unset (None) values dropped."""
    return {k: v for k, v in values.items() if k != "self" and k not in exclude and v is not None}


def _check_choice(name: str, param: str, value: Any, choices: Sequence[str]) -> None:
    if value not in choices:
        raise AnalyticsParameterError(f"{name}: {param} must be one of {', '.join(choices)}; got {value!r}")
