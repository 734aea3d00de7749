"""Requests for every operation of the vendor's document, judged by it: the counts of docs/emulator.rst.

``valid`` requests obey the emulator's business rules, so each must be answered with success and
a valid answer; ``invalid`` ones break the vendor's request schema, so each must be refused with
the documented error shape. :func:`measure` sends them all to a running emulator over loopback
and counts; ``python -m tests.emulator.contract_corpus`` prints the table (also for an older
emulator, which is how the issue's "before" figures were taken).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import requests

from .vendor_contract import judge
from .vendor_patches import patched_spec

SIGNATURE = "sha256=" + "ab" * 32
MANIFEST = b'{"metadata": {"dbt_version": "1.8.0"}, "nodes": {}}'
SCHEDULE = {"source_type": "Dashboard", "source_id": 1, "schedule": {"repeat": "0 7 * * *", "paused": False},
            "dest": {"type": "EmailDest", "title": "Daily {{$today}}", "recipients": ["ops@example.org"]}}
ALERT = {"title": "Revenue dropped", "source_type": "DashboardWidget", "source_id": 101, "dynamic_filter_presets": [],
         "schedule": {"repeat": "0 * * * *", "paused": False},
         "dest": {"type": "EmailDest", "recipients": ["ops@example.org"]},
         "viz_conditions": [{"field_path": {"field_name": "revenue", "model_id": 1}, "aggregation": "sum",
                             "condition": {"operator": "less_than", "values": [100]}}]}
QUERY = {"dimensions": [{"field": "orders.region"}], "metrics": [{"field": "orders.revenue", "aggregation": "sum"}]}


def cond(operator: str, *values: Any, **extra: Any) -> dict[str, Any]:
    return {"dynamic_filter_id": 1, "condition": {"operator": operator, "values": list(values), **extra}}


@dataclass(frozen=True)
class Case:
    """One request: ``kind`` is ``valid``, ``edge`` (valid, of a kind we once got wrong) or ``invalid``."""

    kind: str
    method: str
    path: str
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # a body sent as is (with headers' Content-Type)
    upload: int = 0  # a multipart upload of this many manifests
    key: bool = True
    before: tuple[tuple[str, str, Any], ...] = ()  # requests that prepare the state (method, path, json)


def V(method: str, path: str, body: Any = None, **kw: Any) -> Case:
    return Case("valid", method, path, body=body, **kw)


def E(method: str, path: str, body: Any = None, **kw: Any) -> Case:
    return Case("edge", method, path, body=body, **kw)


def X(method: str, path: str, body: Any = None, **kw: Any) -> Case:
    return Case("invalid", method, path, body=body, **kw)


EXPORT = ("POST", "/dashboard_widgets/101/submit_export", {"output": "csv"})
GITHUB = {"X-GitHub-Event": "pull_request", "X-GitHub-Hook-ID": "42", "X-Hub-Signature-256": SIGNATURE}
GITLAB = {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "gl-secret-token"}
APP = {"X-GitHub-Event": "installation", "X-Hub-Signature-256": SIGNATURE}

CASES: tuple[Case, ...] = (
    # users
    V("GET", "/users/me"), V("GET", "/users", query={"limit": 3, "sort": "name_desc", "statuses[]": ["active"]}),
    X("GET", "/users", query={"sort": "age"}), X("GET", "/users", query={"limit": 0}),
    X("GET", "/users", query={"limit": "ten"}), X("GET", "/users/me", key=False),
    V("PUT", "/users/6", {"user": {"title": "Lead", "group_ids": [1, 2]}}),
    X("PUT", "/users/6", {"user": {"role": "owner"}}), X("PUT", "/users/6", {"title": "no wrapper"}),
    X("PUT", "/users/6", {"user": {"enable_export_data": "sure"}}),
    X("PUT", "/users/abc", {"user": {"title": "x"}}),
    V("DELETE", "/users/7"), X("DELETE", "/users/seven"),
    V("POST", "/users/invite", {"emails": ["new.person@example.org"], "role": "explorer"}),
    X("POST", "/users/invite", {"emails": ["a@example.org"]}), X("POST", "/users/invite", {"role": "admin"}),
    V("GET", "/users/check_holistics_user", query={"email": "maya.chen@example.com"}),
    E("GET", "/users/check_holistics_user"),
    V("POST", "/users/9/restore"), X("POST", "/users/x/restore"),
    V("POST", "/users/8/resend_invite"), V("POST", "/users/6/revoke_authentication_token"),
    # jobs
    V("GET", "/jobs/1", before=(EXPORT,)), V("GET", "/jobs/1", query={"include_source": "true"}, before=(EXPORT,)),
    X("GET", "/jobs/1", query={"include_source": "maybe"}, before=(EXPORT,)),
    V("GET", "/jobs", query={"ids[]": [1]}, before=(EXPORT,)), X("GET", "/jobs"),
    X("GET", "/jobs", query={"ids[]": ["one"]}),
    V("GET", "/jobs/1/result", before=(EXPORT,)), V("GET", "/jobs/1/logs", before=(EXPORT,)),
    V("GET", "/job_queues"),
    # exports
    V("POST", "/dashboard_widgets/102/submit_export", {"output": "pdf", "dashboard_filter_conditions": [
        {"dynamic_filter_id": 1, "condition": {"operator": "is", "values": ["EU"]}}]}),
    E("POST", "/dashboard_widgets/101/submit_export", {"output": "csv", "dashboard_filter_conditions": [
        cond("last", 7, modifier="day")]}),
    E("POST", "/dashboard_widgets/101/submit_export", {"output": "csv", "dashboard_filter_conditions": [
        cond("is_true")]}),
    E("POST", "/dashboard_widgets/101/submit_export", {"output": "xlsx", "dashboard_filter_conditions": [
        {"dynamic_filter_id": "1", "condition": {"operator": "between", "values": [1, 5]}}]}),
    E("POST", "/dashboard_widgets/101/submit_export", {"output": "csv", "dashboard_filter_conditions": [
        cond("is")]}),
    X("POST", "/dashboard_widgets/101/submit_export", {"output": "docx"}),
    X("POST", "/dashboard_widgets/101/submit_export", {}),
    X("POST", "/dashboard_widgets/101/submit_export", {"output": "csv", "dashboard_filter_conditions": [
        cond("greater_than_or_equal", 1)]}),
    X("POST", "/dashboard_widgets/101/submit_export", {"output": "csv", "dashboard_filter_conditions": [
        cond("between", 1)]}),
    X("POST", "/dashboard_widgets/101/submit_export", {"output": "csv", "dashboard_filter_conditions": [
        cond("greater_than")]}),
    X("POST", "/dashboard_widgets/101/submit_export", {"output": "csv", "dashboard_filter_conditions": [
        {"dynamic_filter_id": 1, "condition": {"operator": "is"}}]}),
    X("POST", "/dashboard_widgets/101/submit_export", {"output": "csv", "dashboard_filter_conditions": [
        cond("last", 7, modifier="fortnight")]}),
    X("POST", "/dashboard_widgets/101/submit_export", raw=b'{"output": "csv"}',
      headers={"Content-Type": "text/plain"}),
    X("POST", "/dashboard_widgets/101/submit_export", raw=b'{"output": "csv"}', headers={"Content-Type": ""}),
    X("POST", "/dashboard_widgets/101/submit_export", raw=b'{"output": ', headers={"Content-Type": "application/json"}),
    V("GET", "/exports/download", query={"job_id": 1}, before=(EXPORT,)),
    X("GET", "/exports/download"), X("GET", "/exports/download", query={"job_id": "one"}),
    # dashboards and widgets
    V("GET", "/dashboards/2"), X("GET", "/dashboards/two"),
    V("GET", "/dashboards", query={"include_embed_info": "true", "sort": "id_desc"}),
    X("GET", "/dashboards", query={"sort": "random"}), E("GET", "/dashboards", query={"include_embed_info": "yes"}),
    X("GET", "/dashboards", query={"include_embed_info": "perhaps"}),
    V("DELETE", "/dashboards/2"),
    E("GET", "/dashboards/list_metadata"),
    V("GET", "/dashboards/list_metadata", query={"version[]": [3, 4], "permission_action": "update"}),
    X("GET", "/dashboards/list_metadata", query={"permission_action": "steal"}),
    V("POST", "/dashboards/3/clone_canvas_dashboard", {"new_uname": "exec_copy", "category_type": "ReportCategory"}),
    X("POST", "/dashboards/3/clone_canvas_dashboard", {"new_uname": "exec_copy"}),
    X("POST", "/dashboards/3/clone_canvas_dashboard", {"new_uname": "x", "category_type": "Drawer"}),
    V("POST", "/dashboards/1/build_url", {"filter_states": [cond("is", "EU")]}),
    E("POST", "/dashboards/1/build_url", {"filter_states": [cond("matches", "last 3 days")]}),
    X("POST", "/dashboards/1/build_url", {"filter_states": [{"condition": {"operator": "is", "values": []}}]}),
    V("POST", "/dashboards/1/submit_preload", {"dashboard_filter_conditions": [], "bust_cache": True}),
    E("POST", "/dashboards/1/submit_preload"),
    E("POST", "/dashboards/1/submit_preload", {"dashboard_filter_conditions": [cond("none")]}),
    X("POST", "/dashboards/1/submit_preload", {"bust_cache": "yes"}),
    X("POST", "/dashboards/1/submit_preload", {"dashboard_filter_conditions": [cond("none", "x")]}),
    V("GET", "/dashboard_widgets/201", query={"include_dashboard": "true", "include_report": "true",
                                              "include_url": "true"}),
    X("GET", "/dashboard_widgets/201", query={"include_url": "sometimes"}),
    V("DELETE", "/dashboard_widgets/102"),
    # data schedules
    V("POST", "/data_schedules", {"data_schedule": SCHEDULE}),
    E("POST", "/data_schedules", {"data_schedule": {**SCHEDULE, "dest": {**SCHEDULE["dest"], "options": {
        "attachment_formats": ["excel", "png"]}}}}),
    E("POST", "/data_schedules", {"data_schedule": {**SCHEDULE, "dynamic_filter_presets": [
        {"dynamic_filter_id": 1, "preset_condition": {"operator": "matches_user_attribute", "values": ["region"]}}]}}),
    E("POST", "/data_schedules", {"data_schedule": {**SCHEDULE, "dest": {
        "type": "SlackDest", "slack_channels": [{"id": "C1", "name": "sales"}]}}}),
    X("POST", "/data_schedules", {"data_schedule": {**SCHEDULE, "schedule": {"repeat": "0 7 * * *"}}}),
    X("POST", "/data_schedules", {"data_schedule": {**SCHEDULE, "dest": {"type": "SlackDest"}}}),
    X("POST", "/data_schedules", {"data_schedule": {**SCHEDULE, "dest": {"type": "EmailDest"}}}),
    X("POST", "/data_schedules", {"data_schedule": {**SCHEDULE, "dest": {"type": "FaxDest"}}}),
    X("POST", "/data_schedules", {"data_schedule": {**SCHEDULE, "dest": {**SCHEDULE["dest"], "options": {
        "attachment_formats": ["docx"]}}}}),
    X("POST", "/data_schedules", {"data_schedule": {**SCHEDULE, "source_type": "Widget"}}),
    X("POST", "/data_schedules", {"data_schedule": {"source_type": "Dashboard", "source_id": 1}}),
    X("POST", "/data_schedules", {}), X("POST", "/data_schedules"),
    X("POST", "/data_schedules", raw=json.dumps({"data_schedule": SCHEDULE}).encode(),
      headers={"Content-Type": "text/plain"}),
    V("GET", "/data_schedules", query={"dest_type": "SlackDest", "sort": "title_asc"}),
    X("GET", "/data_schedules", query={"dest_type": "FaxDest"}), X("GET", "/data_schedules", query={"page": 0}),
    V("GET", "/data_schedules/2"),
    V("PUT", "/data_schedules/1", {"data_schedule": {**SCHEDULE, "schedule": {"repeat": "0 8 * * *", "paused": True}}}),
    X("PUT", "/data_schedules/1", {"data_schedule": {"schedule": {"repeat": "0 8 * * *", "paused": True}}}),
    V("DELETE", "/data_schedules/2"), V("POST", "/data_schedules/1/submit_execute"),
    V("POST", "/data_schedules/submit_execute", {"test_data_schedule": SCHEDULE}),
    X("POST", "/data_schedules/submit_execute", {"data_schedule": SCHEDULE}),
    # data alerts
    V("POST", "/data_alerts", {"data_alert": ALERT}),
    E("POST", "/data_alerts", {"data_alert": {k: v for k, v in ALERT.items() if k != "title"}}),
    E("POST", "/data_alerts", {"data_alert": {**ALERT, "viz_conditions": None}}),
    E("POST", "/data_alerts", {"data_alert": {**ALERT, "source_id": "101"}}),
    X("POST", "/data_alerts", {"data_alert": {k: v for k, v in ALERT.items() if k != "dynamic_filter_presets"}}),
    X("POST", "/data_alerts", {"data_alert": {**ALERT, "viz_conditions": [{**ALERT["viz_conditions"][0],
                                                                          "aggregation": "mode"}]}}),
    X("POST", "/data_alerts", {"data_alert": {**ALERT, "viz_conditions": [{**ALERT["viz_conditions"][0],
                                                                          "transformation": "datetrunc decade"}]}}),
    X("POST", "/data_alerts", {"data_alert": {**ALERT, "dest": {"type": "SlackDest"}}}),
    X("POST", "/data_alerts", {"data_alert": {**ALERT, "schedule": {"repeat": "0 * * * *"}}}),
    V("GET", "/data_alerts", query={"search_term": "spend", "source_type": "DashboardWidget"}),
    X("GET", "/data_alerts", query={"source_type": "Report"}),
    V("GET", "/data_alerts/1"), V("PUT", "/data_alerts/1", {"data_alert": {**ALERT, "title": "Renamed"}}),
    X("PUT", "/data_alerts/1", {"data_alert": {"title": "Renamed"}}),
    V("DELETE", "/data_alerts/2"), V("POST", "/data_alerts/1/submit_execute"),
    V("POST", "/data_alerts/submit_execute", {"test_data_alert": ALERT}),
    X("POST", "/data_alerts/submit_execute", {"test_data_alert": {"title": "no source"}}),
    # data sources, sets, models, reports
    V("GET", "/data_sources/1"),
    V("PUT", "/data_sources/1", {"data_source": {"name": "DWH", "settings": {"query_timeout": 120}}}),
    X("PUT", "/data_sources/1", {"data_source": {"settings": {"query_timeout": "long"}}}),
    V("DELETE", "/data_sources/2"), V("POST", "/data_sources/1/bust_exploration_cache"),
    V("POST", "/data_sources/upload_multiple_dbt_manifests", upload=1),
    X("POST", "/data_sources/upload_multiple_dbt_manifests", {"files": []}),
    V("POST", "/data_sets/1/submit_query", {"query": QUERY}),
    E("POST", "/data_sets/1/submit_query", {"query": {**QUERY, "filters": [
        {"field": "orders.region", "operator": "is_not", "values": ["EU"]}], "page_size": -1}}),
    X("POST", "/data_sets/1/submit_query", {"query": {**QUERY, "limit": 0}}),
    X("POST", "/data_sets/1/submit_query", {"query": {"metrics": [{"aggregation": "sum"}]}}),
    X("POST", "/data_sets/1/submit_query", {"query": {**QUERY, "filters": [
        {"field": "orders.region", "operator": "between", "values": ["EU"]}]}}),
    X("POST", "/data_sets/1/submit_query", {"query": {**QUERY, "timezone": "CET"}}),
    X("POST", "/data_sets/1/submit_query", {}),
    V("POST", "/data_sets/1/generate_sql", {"query": QUERY}),
    X("POST", "/data_sets/1/generate_sql", {"query": {**QUERY, "order": [{"id": "x", "order": "up"}]}}),
    V("GET", "/data_sets/1", query={"include_models": "true", "include_reports": "true"}),
    V("DELETE", "/data_sets/3"),
    V("GET", "/data_models", query={"project_id": 1, "branch_name": "master"}), X("GET", "/data_models"),
    V("GET", "/query_reports/11", query={"include_data_set": "true"}),
    # dependencies, groups, links, embedding
    V("GET", "/dependencies/downstream_dependencies", query={"id": 1, "type": "DataSource"}),
    X("GET", "/dependencies/downstream_dependencies", query={"id": 1, "type": "Widget"}),
    V("POST", "/groups", {"group": {"name": "Finance"}}), X("POST", "/groups", {"group": {}}),
    X("POST", "/groups", {"group": {"name": 7}}),
    V("GET", "/groups", query={"include_users": "true"}), V("GET", "/groups/2", query={"include_users": "true"}),
    V("PUT", "/groups/2", {"group": {"name": "Ops"}}), E("PUT", "/groups/2", {"group": {}}),
    V("DELETE", "/groups/2"), V("POST", "/groups/2/add_user/4"), V("POST", "/groups/2/remove_user/5"),
    X("POST", "/groups/2/add_user/four"),
    V("POST", "/shareable_links", {"shareable_link": {"resource_type": "Dashboard", "resource_id": 2}}),
    X("POST", "/shareable_links", {"shareable_link": {"resource_type": "Report", "resource_id": 2}}),
    V("GET", "/shareable_links", query={"resource_type": "Dashboard"}), V("GET", "/shareable_links/1"),
    V("PUT", "/shareable_links/1", {"shareable_link": {"resource_type": "Dashboard", "resource_id": 1,
                                                       "title": "Renamed"}}),
    V("DELETE", "/shareable_links/1"),
    V("POST", "/embed/embed002x7k2/shorten_token", {"token": "t" * 500}),
    X("POST", "/embed/embed002x7k2/shorten_token", {"token": 5}),
    # user attributes
    V("POST", "/user_attributes", {"user_attribute": {"name": "tier", "attribute_type": "string", "label": "Tier"}}),
    X("POST", "/user_attributes", {"user_attribute": {"name": "tier"}}),
    V("GET", "/user_attributes"),
    V("PUT", "/user_attributes/3", {"user_attribute": {"name": "region", "attribute_type": "string",
                                                       "label": "Sales region"}}),
    V("DELETE", "/user_attributes/4"),
    V("GET", "/user_attribute_entries", query={"subject_type": "Group", "subject_id": 2}),
    X("GET", "/user_attribute_entries", query={"subject_type": "Team", "subject_id": 2}),
    V("GET", "/user_attribute_entries/computed_values", query={"subject_type": "User", "subject_id": 6}),
    X("GET", "/user_attribute_entries/computed_values", query={"subject_type": "User"}),
    V("PUT", "/user_attribute_entries/upsert", {"user_attribute_entries": [
        {"user_attribute_id": 3, "input_type": "manual", "values": ["APAC"], "subject_type": "User",
         "subject_id": 6}]}),
    E("PUT", "/user_attribute_entries/upsert", {"user_attribute_entries": [
        {"user_attribute_name": "region", "input_type": "all", "subject_type": "Group", "subject_id": 2}]}),
    X("PUT", "/user_attribute_entries/upsert", {"user_attribute_entries": [
        {"user_attribute_id": 3, "input_type": "manual", "values": ["APAC"], "subject_type": "User"}]}),
    X("PUT", "/user_attribute_entries/upsert", {"user_attribute_entries": [
        {"user_attribute_id": 3, "input_type": "some", "subject_type": "User", "subject_id": 6}]}),
    # AML, modelling, tags, AI, webhooks
    V("POST", "/aml_studio/projects/submit_publish", {"object_mapping": {"datasets": {"1": "sales"}}}),
    E("POST", "/aml_studio/projects/submit_publish"),
    V("POST", "/aml_studio/projects/submit_validate", {"branch_name": "master", "commit_oid": "abc123"}),
    X("POST", "/aml_studio/projects/submit_validate", {"branch_name": "master"}),
    V("POST", "/data_model_persistences/validate_ddl", {"ddl": "CREATE TABLE {{ #SOURCE }} AS (select 1)"}),
    X("POST", "/data_model_persistences/validate_ddl", {"sql": "CREATE TABLE t"}),
    V("GET", "/tags"), V("GET", "/tags/recommend_archivable_objects"),
    V("POST", "/tags/submit_add_object_tags", {"object_params": {"uname": "sales", "type": "dataset"},
                                               "tags": ["finance"]}),
    X("POST", "/tags/submit_add_object_tags", {"object_params": {"uname": "sales", "type": "report"},
                                               "tags": ["finance"]}),
    V("POST", "/tags/submit_remove_object_tags", {"object_params": {"uname": "sales", "type": "dataset"}, "tags": []}),
    X("POST", "/tags/submit_remove_object_tags", {"object_params": {"uname": "sales", "type": "dataset"}}),
    V("GET", "/ai/skills"),
    V("POST", "/git_webhooks/github_event", {"action": "opened"}, headers=GITHUB, key=False),
    X("POST", "/git_webhooks/github_event", {"action": "opened"}, headers={**GITHUB, "X-GitHub-Event": "fork"},
      key=False),
    X("POST", "/git_webhooks/github_event", {"action": "opened"}, key=False),
    V("POST", "/git_webhooks/gitlab_event", {"object_kind": "push"}, headers=GITLAB, key=False),
    X("POST", "/git_webhooks/gitlab_event", {"object_kind": "push"}, headers={"X-Gitlab-Event": "Push Hook"},
      key=False),
    V("POST", "/git_webhooks/github_app_event", {"action": "created"}, headers=APP, key=False),
    X("POST", "/git_webhooks/github_app_event", headers=APP, key=False),
    # no such operation
    X("GET", "/no_such_thing"), X("PATCH", "/dashboards/1", {"title": "x"}),
)


@dataclass
class Counts:
    operations: int = 0
    operations_served: int = 0
    answers: int = 0
    answers_valid: int = 0
    invalid: int = 0
    invalid_refused: int = 0
    edge: int = 0
    edge_accepted: int = 0
    errors: int = 0
    errors_right: int = 0
    problems: list[str] = field(default_factory=list)

    def rows(self) -> list[tuple[str, str]]:
        return [
            ("operations of the vendor document served", f"{self.operations_served} of {self.operations}"),
            ("answers to valid requests that validate against the vendor's response schemas",
             f"{self.answers_valid} of {self.answers}"),
            ("invalid requests (by the vendor's schemas) refused with the documented error shape",
             f"{self.invalid_refused} of {self.invalid}"),
            ("valid edge-case requests accepted", f"{self.edge_accepted} of {self.edge}"),
            ("error answers with the right type and status", f"{self.errors_right} of {self.errors}"),
        ]

    def table(self) -> str:
        width = max(len(check) for check, _ in self.rows())
        line = "=" * width + "  " + "=" * 12
        body = [f"{check:<{width}}  {result}" for check, result in self.rows()]
        return "\n".join([line, f"{'check':<{width}}  result", line, *body, line]) + "\n"


def vendor_operations() -> set[tuple[str, str]]:
    spec = patched_spec("X-Service-Key")
    return {(method.upper(), path) for path, item in spec["paths"].items() for method in item
            if method in ("get", "post", "put", "delete") and item[method].get("operationId") != "Users_Me_Post"}


def _template(path: str, templates: set[tuple[str, str]], method: str) -> str | None:
    parts = path.strip("/").split("/")
    for found_method, template in sorted(templates, key=lambda t: t[1].count("{")):
        pieces = template.strip("/").split("/")
        if found_method == method and len(pieces) == len(parts) and all(
            a == b or a.startswith("{") for a, b in zip(pieces, parts, strict=True)
        ):
            return template
    return None


def send(session: requests.Session, base_url: str, key_header: str, api_key: str, case: Case) -> requests.Response:
    headers = dict(case.headers)
    if case.key:
        headers[key_header] = api_key
    url = base_url + case.path
    kwargs: dict[str, Any] = {"params": case.query, "headers": headers, "allow_redirects": False, "timeout": 10}
    if case.upload:
        kwargs["files"] = [("files", (f"manifest{i}.json", MANIFEST, "application/json")) for i in range(case.upload)]
    elif case.raw is not None:
        kwargs["data"] = case.raw
        if headers.get("Content-Type") == "":
            del headers["Content-Type"]
            kwargs["headers"] = headers
    elif case.body is not None:
        kwargs["json"] = case.body
    return session.request(case.method, url, **kwargs)


def measure(emulator: Any, cases: tuple[Case, ...] = CASES) -> Counts:
    """Send every case (each on a fresh seed) and count, judging each exchange by the vendor's document."""
    from analytics_provider.testing.emulator.api import ApiService

    counts = Counts()
    templates = vendor_operations()
    counts.operations = len(templates)
    served: set[tuple[str, str]] = set()
    session = requests.Session()
    seen: list[Any] = []
    original = ApiService.answer

    def recording(self: Any, request: Any) -> Any:
        body = None
        if getattr(request, "stream", None) is not None:
            body = request.stream.read()
            request.stream.seek(0)
        outcome = original(self, request)
        seen.append((request, outcome, body))
        return outcome

    ApiService.answer = recording  # type: ignore[method-assign]
    try:
        for case in cases:
            emulator.reset()
            emulator.job_duration = 0.0
            for method, path, body in case.before:
                session.request(method, emulator.base_url + path, json=body, timeout=10,
                                headers={emulator.header_name: emulator.api_key})
            seen.clear()
            send(session, emulator.base_url, emulator.header_name, emulator.api_key, case)
            request, outcome, body = seen[-1]
            verdict = judge(request, outcome, emulator.header_name, f"http://{request.headers['host']}", body)
            _count(counts, case, verdict, outcome, served, templates)
    finally:
        ApiService.answer = original  # type: ignore[method-assign]
        session.close()
    counts.operations_served = len(served)
    return counts


def _count(counts: Counts, case: Case, verdict: Any, outcome: Any, served: set[tuple[str, str]],
           templates: set[tuple[str, str]]) -> None:
    where = f"{case.kind} {case.method} {case.path} {case.query or ''} -> {outcome.status}"
    problems = verdict.problems
    success = 200 <= outcome.status < 400
    if case.kind in ("valid", "edge") and verdict.request_valid and success:
        template = _template(case.path, templates, case.method)
        if template is not None:
            served.add((case.method, template))
    if case.kind in ("valid", "edge"):
        if not verdict.request_valid:
            counts.problems.append(f"{where}: the corpus's valid request is not valid: {verdict.request_problem}")
        if success:
            counts.answers += 1
            counts.answers_valid += not any(p.startswith("answer not valid") or "RateLimit" in p for p in problems)
    if case.kind == "edge":
        counts.edge += 1
        counts.edge_accepted += success
    if case.kind == "invalid":
        counts.invalid += 1
        if verdict.request_valid:
            counts.problems.append(f"{where}: the corpus's invalid request is valid by the vendor's document")
        documented = not any(p.startswith("error") for p in problems)
        counts.invalid_refused += verdict.refused and documented
    if outcome.status >= 400:
        counts.errors += 1
        wrong = ("error type", "the vendor declares", "error answer")
        counts.errors_right += not any(p.startswith(wrong) for p in problems)
    if problems or (case.kind != "invalid" and not success):
        counts.problems.append(f"{where}: {'; '.join(problems) or outcome.body[:200]!r}")


def main() -> None:
    from analytics_provider.testing.emulator.app import AnalyticsEmulator

    with AnalyticsEmulator() as emulator:
        counts = measure(emulator)
    print(counts.table())
    for problem in counts.problems:
        print(" -", problem)


if __name__ == "__main__":
    main()
