"""AnalyticsHook: one method per operation of the service's public API v2.

Path ids are positional; resource bodies are plain dicts without their wrapper key (the hook
wraps them); query options are keyword arguments, checked against the API document's values
before any request. ``list_*`` methods return lazy iterators that follow the cursors. Methods
that start a job return the Job (``{"id", "status"}``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

from analytics_provider.api.filters import FilterConditions, check_data_set_query, check_filter_conditions
from analytics_provider.api.operations import (
    DASHBOARD_CATEGORIES,
    EXPORT_OUTPUTS,
    GITHUB_EVENTS,
    GITLAB_EVENTS,
    MAX_JOB_IDS,
    MAX_UPSERT_ENTRIES,
    PERMISSION_ACTIONS,
    TAG_OBJECT_TYPES,
    USER_ROLES,
)
from analytics_provider.api.pagination import Pages
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.client import AnalyticsClientHook
from analytics_provider.hooks.names import NamedLookups, is_id

Id = int | str
Json = dict[str, Any]
Manifest = str | os.PathLike[str] | tuple[str, IO[bytes]]
"""A dbt manifest to upload: a local path, or ``(file name, binary file object)``."""


class AnalyticsHook(NamedLookups, AnalyticsClientHook):
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

    # -- users ---------------------------------------------------------------------------------

    def get_current_user(self) -> Json:
        """The user the API key belongs to."""
        return self.call("get_current_user")

    def list_users(
        self,
        *,
        search_term: str | None = None,
        status: str | None = None,
        statuses: Sequence[str] | None = None,
        ids: Sequence[int] | None = None,
        role: str | None = None,
        has_authentication_token: bool | None = None,
        exclude_deleted: bool | None = None,
        sort: str | None = None,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Pages:
        """Users (lazily, page by page); ``status`` (or several ``statuses``): active, deleted, pending;
        ``ids`` narrows to those users. The live service was seen to ignore ``statuses`` and ``ids``
        (it answered every user): filter the items again where it matters."""
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

    def get_job(
        self, job_id: Id, *, include_data_source_stats: bool | None = None, include_source: bool | None = None
    ) -> Json:
        return self.call("get_job", job_id, query=locals_query(locals(), exclude=("job_id",)))

    def get_job_result(self, job_id: Id) -> Json:
        """``{status, error, result}``: ``result.data`` holds an AML publish's outcome (its diagnostics on
        failure) or a data-set query's rows (``{fields, values, meta}``); the vendor types no
        ``result`` for other kinds of job."""
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
        before: str | None = None,
    ) -> Pages:
        return self.paginate("list_dashboards", locals_query(locals()))

    def build_dashboard_url(
        self,
        dashboard_id: Id,
        filter_states: FilterConditions | None = None,
        *,
        filters: Mapping[str, Any] | None = None,
    ) -> Json:
        """``{dashboard_url, fstate_hash}`` for the dashboard with preset filter states: by filter id
        (``filter_states``) and by label (``filters={"Region": ["EU"]}``, checked against the
        filter's options). ``dashboard_id`` may be a dashboard's title too (see :meth:`find_dashboard`)."""
        states = check_filter_conditions(filter_states or [])
        if filters or not is_id(dashboard_id):
            board = self.find_dashboard(int(dashboard_id) if is_id(dashboard_id) else dashboard_id)
            dashboard_id, states = board["id"], [*states, *self.filter_conditions(board, filters or {})]
        return self.call("build_dashboard_url", dashboard_id, body={"filter_states": states})

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
        search_term: str | None = None,
        sort: str | None = None,
        creator_roles: Sequence[str] | None = None,
        page: int | None = None,
        dest_type: str | None = None,
        source_type: str | None = None,
        source_id: int | None = None,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
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
        before: str | None = None,
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
        before: str | None = None,
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

    def list_user_attributes(
        self, *, limit: int | None = None, after: str | None = None, before: str | None = None
    ) -> Pages:
        return self.paginate("list_user_attributes", locals_query(locals()))

    def update_user_attribute(self, attribute_id: Id, user_attribute: Mapping[str, Any]) -> Json:
        return self.call("update_user_attribute", attribute_id, body=dict(user_attribute))

    def list_user_attribute_entries(
        self, subject_type: str, subject_id: int, *, limit: int | None = None, after: str | None = None,
        before: str | None = None,
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

    # -- the rest of the vendor's operations ------------------------------------------------------
    # users

    def restore_user(self, user_id: Id) -> Json:
        """Undo a soft delete; answers ``{message}``."""
        return self.call("restore_user", user_id)

    def resend_user_invite(self, user_id: Id) -> Json:
        """E-mail a pending user's invitation again; returns the Job. Never re-sent once received."""
        return self.call("resend_user_invite", user_id)

    def revoke_user_api_key(self, user_id: Id) -> Json:
        """The user's API key stops working at once (an admin may revoke anyone's, a user their own)."""
        return self.call("revoke_user_api_key", user_id)

    # jobs

    def list_jobs(
        self,
        job_ids: Sequence[int],
        *,
        include_data_source_stats: bool | None = None,
        include_source: bool | None = None,
    ) -> list[Json]:
        """Several jobs, a request per 100 ids (the service's limit); ids that do not exist, or
        that the key may not see, are left out of the answer."""
        if isinstance(job_ids, (str, bytes)) or not job_ids:
            raise AnalyticsParameterError("list_jobs: job_ids must be a non-empty list of job ids")
        options = locals_query(locals(), exclude=("job_ids",))
        ids = list(job_ids)
        found: list[Json] = []
        for start in range(0, len(ids), MAX_JOB_IDS):
            found += self.call("list_jobs", query={"ids": ids[start:start + MAX_JOB_IDS], **options}) or []
        return found

    def list_job_queues(self) -> list[Json]:
        """The service's job queues with their total and busy workers."""
        return self.call("list_job_queues") or []

    # dashboards and widgets

    def delete_dashboard(self, dashboard_id: Id) -> Json:
        return self.call("delete_dashboard", dashboard_id)

    def list_dashboards_metadata(
        self, *, version: int | Sequence[int] | None = None, permission_action: str | None = None
    ) -> list[Json]:
        """``{id, title, uname, project_id, version}`` of every dashboard the key may act on."""
        if permission_action is not None:
            _check_choice("list_dashboards_metadata", "permission_action", permission_action, PERMISSION_ACTIONS)
        versions = [version] if isinstance(version, int) else version
        return self.call("list_dashboards_metadata", query=locals_query(
            {"version": list(versions) if versions is not None else None, "permission_action": permission_action}
        )) or []

    def clone_canvas_dashboard(
        self,
        dashboard_id: Id,
        new_uname: str,
        *,
        category_type: str = "ReportCategory",
        category_id: int | None = None,
        new_title: str | None = None,
    ) -> Json:
        """Copy a canvas dashboard under a new uname; returns the Job. Never re-sent once received."""
        if not isinstance(new_uname, str) or not new_uname:
            raise AnalyticsParameterError("clone_canvas_dashboard: new_uname must be a non-empty string")
        _check_choice("clone_canvas_dashboard", "category_type", category_type, DASHBOARD_CATEGORIES)
        body = {"new_uname": new_uname, "category_type": category_type,
                **locals_query({"category_id": category_id, "new_title": new_title})}
        return self.call("clone_canvas_dashboard", dashboard_id, body=body)

    def delete_dashboard_widget(self, widget_id: Id) -> Json:
        return self.call("delete_dashboard_widget", widget_id)

    # data schedules

    def test_data_schedule(self, data_schedule: Mapping[str, Any]) -> Json:
        """Send an unsaved schedule once (for example to check its destination); returns the Job."""
        return self.call("test_data_schedule", body=dict(data_schedule))

    # groups

    def delete_group(self, group_id: Id) -> Json:
        return self.call("delete_group", group_id)

    def add_user_to_group(self, group_id: Id, user_id: Id) -> Json:
        return self.call("add_user_to_group", group_id, user_id)

    def remove_user_from_group(self, group_id: Id, user_id: Id) -> Json:
        return self.call("remove_user_from_group", group_id, user_id)

    # shareable links

    def create_shareable_link(self, shareable_link: Mapping[str, Any]) -> Json:
        """Create a public link to a dashboard; never re-sent once it may have reached the service."""
        link = dict(shareable_link)
        if link.get("dynamic_filter_presets"):
            link["dynamic_filter_presets"] = check_filter_conditions(
                link["dynamic_filter_presets"], "dynamic_filter_presets", condition_key="preset_condition"
            )
        return self.call("create_shareable_link", body=link)

    def list_shareable_links(
        self,
        *,
        sort: str | None = None,
        resource_type: str | None = None,
        resource_id: int | None = None,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Pages:
        return self.paginate("list_shareable_links", locals_query(locals()))

    def get_shareable_link(self, link_id: Id) -> Json:
        return self.call("get_shareable_link", link_id)

    def update_shareable_link(self, link_id: Id, shareable_link: Mapping[str, Any]) -> Json:
        return self.call("update_shareable_link", link_id, body=dict(shareable_link))

    def delete_shareable_link(self, link_id: Id) -> Json:
        return self.call("delete_shareable_link", link_id)

    # data sources and sets

    def delete_data_source(self, data_source_id: Id) -> Json:
        return self.call("delete_data_source", data_source_id)

    def upload_dbt_manifests(self, manifests: Sequence[Manifest], *, data_source_name: str | None = None) -> Json:
        """Upload up to 5 dbt ``manifest.json`` files (200 MB each) in one atomic request; returns the Job.

        The files are streamed, never read into memory whole. Sizes and count are checked before
        anything is sent; a malformed manifest fails the job, not the request. Never re-sent once
        the body may have reached the service.
        """
        from analytics_provider.hooks.upload import send_manifests

        return send_manifests(self, manifests, data_source_name)

    def submit_data_set_query(self, data_set_id: Id, query: Mapping[str, Any]) -> Json:
        """Run a query (metrics, dimensions, filters...) on a data set.

        Returns either the Job (``{"id", "status"}``: wait for it, then read the rows from
        ``get_job_result(job_id)["result"]["data"]``) or, when the service answers from its
        cache, that data at once: ``{"fields", "values", "meta"}``. :func:`is_job` tells which.
        """
        answer = self.call("submit_data_set_query", data_set_id, body={"query": check_data_set_query(query)})
        return answer["job"] if isinstance(answer, dict) and isinstance(answer.get("job"), dict) else answer

    def generate_data_set_sql(self, data_set_id: Id, query: Mapping[str, Any]) -> str:
        """The SQL the service would run for ``query`` on the data set."""
        return str(self.call("generate_data_set_sql", data_set_id, body={"query": check_data_set_query(query)}))

    # user attributes

    def delete_user_attribute(self, attribute_id: Id) -> Json:
        return self.call("delete_user_attribute", attribute_id)

    # modelling, tags, AI

    def validate_ddl(self, ddl: str) -> str:
        """Check a data model persistence's custom DDL: ``"success"``, or the service's 422 raised."""
        if not isinstance(ddl, str) or not ddl.strip():
            raise AnalyticsParameterError("validate_ddl: ddl must be a non-empty string")
        return str(self.call("validate_ddl", body={"ddl": ddl}))

    def list_tags(self) -> list[Json]:
        """The production tags (``{name, description, color}``)."""
        return self.call("list_tags") or []

    def add_object_tags(
        self, uname: str, object_type: str, tags: Sequence[str], *, project_id: int | None = None
    ) -> Json:
        """Tag an AML data set or dashboard; returns the Job."""
        return self.call("add_object_tags", body=_tag_body("add_object_tags", uname, object_type, tags, project_id))

    def remove_object_tags(
        self, uname: str, object_type: str, tags: Sequence[str] = (), *, project_id: int | None = None
    ) -> Json:
        """Untag an AML data set or dashboard (no tags: remove them all); returns the Job."""
        body = _tag_body("remove_object_tags", uname, object_type, tags, project_id)
        return self.call("remove_object_tags", body=body)

    def recommend_archivable_objects(self) -> list[Json]:
        """AML dashboards and data sets not viewed for more than 30 days."""
        return self.call("recommend_archivable_objects") or []

    def list_ai_skills(self) -> list[Json]:
        return self.call("list_ai_skills") or []

    # git webhooks (relayed events; the service checks their signature, not the key)

    def send_github_event(
        self, payload: Mapping[str, Any] | bytes, *, event: str, hook_id: str, signature: str
    ) -> list[Json]:
        """Relay a GitHub webhook delivery: ``payload`` as received (bytes keep the signed bytes exact)."""
        _check_choice("send_github_event", "event", event, GITHUB_EVENTS)
        headers = {"X-GitHub-Event": event, "X-GitHub-Hook-ID": hook_id, "X-Hub-Signature-256": signature}
        return self._send_event("send_github_event", payload, headers) or []

    def send_gitlab_event(self, payload: Mapping[str, Any] | bytes, *, event: str, token: str) -> list[Json]:
        """Relay a GitLab webhook delivery (``token``: its ``X-Gitlab-Token``)."""
        _check_choice("send_gitlab_event", "event", event, GITLAB_EVENTS)
        return self._send_event("send_gitlab_event", payload, {"X-Gitlab-Event": event, "X-Gitlab-Token": token}) or []

    def send_github_app_event(self, payload: Mapping[str, Any] | bytes, *, event: str, signature: str) -> Json:
        """Relay a GitHub App webhook delivery; answers ``{status: skipped or processed, data}``."""
        headers = {"X-GitHub-Event": event, "X-Hub-Signature-256": signature}
        return self._send_event("send_github_app_event", payload, headers)

    def _send_event(self, name: str, payload: Mapping[str, Any] | bytes, headers: Mapping[str, str]) -> Any:
        from analytics_provider.hooks.upload import send_json_with_headers

        for header, value in headers.items():
            if not isinstance(value, str) or not value:
                raise AnalyticsParameterError(f"{name}: the {header} header value must be a non-empty string")
        body = payload if isinstance(payload, bytes) else json.dumps(dict(payload)).encode("utf-8")
        return send_json_with_headers(self, name, body, headers)

    # -- impact: what a load touched (refresh by impact) ---------------------------------------
    # The rules are in analytics_provider.impact (no I/O); the reads in hooks/impact_reads.py.

    def find_impacted(
        self,
        tables: Sequence[str] = (),
        data_models: Sequence[Id] = (),
        data_sets: Sequence[Id] = (),
        *,
        project_ids: Sequence[int] | None = None,
        default_schema: str = "public",
        fold: str = "lower",
    ) -> Json:
        """The data sources, data models, data sets, reports, widgets and dashboards that read the
        given warehouse tables (``schema.table`` or ``db.schema.table``, compared as the warehouse
        compares names: :mod:`analytics_provider.impact.tables`), data models or data sets (ids or
        names), each with why; ``notes`` say which inputs nothing reads and where the answer is
        wider than it might be (:mod:`analytics_provider.impact.graph`).

        ``project_ids``: the AML projects whose models are matched (default: those of the
        dashboards, one ``GET /dashboards/list_metadata``). What is read, once per call and never
        across calls: :class:`~analytics_provider.hooks.impact_reads.ImpactReads`. Bad input is
        refused before any request.
        """
        from analytics_provider.hooks.impact_reads import find_impacted

        return find_impacted(self, tables, data_models, data_sets, project_ids=project_ids,
                             default_schema=default_schema, fold=fold)
    # -- end of impact ---------------------------------------------------------------------------


def is_job(answer: Mapping[str, Any]) -> bool:
    """Whether :meth:`AnalyticsHook.submit_data_set_query` answered a Job (else the rows themselves)."""
    return "id" in answer and "status" in answer and "values" not in answer


def _tag_body(name: str, uname: str, object_type: str, tags: Sequence[str], project_id: int | None) -> Json:
    if not isinstance(uname, str) or not uname:
        raise AnalyticsParameterError(f"{name}: uname must be a non-empty string")
    _check_choice(name, "object_type", object_type, TAG_OBJECT_TYPES)
    if isinstance(tags, str) or not all(isinstance(t, str) and t for t in tags):
        raise AnalyticsParameterError(f"{name}: tags must be a list of tag names")
    body: Json = {"object_params": {"uname": uname, "type": object_type}, "tags": list(tags)}
    if project_id is not None:
        body["project_id"] = project_id
    return body


def locals_query(values: Mapping[str, Any], exclude: Sequence[str] = ()) -> dict[str, Any]:
    """A method's keyword options as a query: ``self`` and unset (None) values dropped."""
    return {k: v for k, v in values.items() if k != "self" and k not in exclude and v is not None}


def _check_choice(name: str, param: str, value: Any, choices: Sequence[str]) -> None:
    if value not in choices:
        raise AnalyticsParameterError(f"{name}: {param} must be one of {', '.join(choices)}; got {value!r}")
