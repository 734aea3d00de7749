"""The wire format of every hook method: method, path, query, headers, body and parsing."""

from __future__ import annotations

import email
import io
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests
from vendor_facts import vendor_document

from analytics_provider.api.conditions import OPERATOR_VALUES
from analytics_provider.api.operations import OPERATIONS
from analytics_provider.hooks.analytics import AnalyticsHook

from .conftest import BASE, KEY

JOB = {"job": {"id": 7, "status": "created"}}
USER = {"id": 1, "email": "ada@example.com", "role": "admin"}


def case(
    name: str,
    call: Callable[[AnalyticsHook], Any],
    method: str,
    path: str,
    *,
    query: dict[str, str] | None = None,
    body: Any = None,
    answer: Any = None,
    status: int = 200,
    expected: Any = None,
    headers: dict[str, str] | None = None,
) -> Any:
    return pytest.param(call, method, path, query or {}, body, answer, status, expected, headers or {}, id=name)


MESSAGE = {"message": "done"}
QUERY = {"dimensions": [{"field": "orders.region"}], "metrics": [{"field": "orders.revenue", "aggregation": "sum"}],
         "filters": [{"field": "orders.created_at", "operator": "last", "values": [7], "modifier": "day"}]}
DATA = {"fields": ["orders.region", "orders.revenue"], "values": [["EU", "10"]],
        "meta": {"page": 1, "page_size": 20, "num_rows": 1}}
SIGNATURE = "sha256=" + "ab" * 32


CASES = [
    # -- users (users.py) --------------------------------------------------------------------------
    case("get_current_user", lambda h: h.get_current_user(), "GET", "/users/me", answer={"user": USER}, expected=USER),
    case(
        "list_users",
        lambda h: list(h.list_users(role="analyst", status="active", exclude_deleted=False)),
        "GET",
        "/users",
        query={"role": "analyst", "status": "active", "exclude_deleted": "false"},
        answer={"users": [USER], "cursors": {"next": None}, "counters": {}},
        expected=[USER],
    ),
    case(
        "update_user",
        lambda h: h.update_user(1, {"title": "Dr"}),
        "PUT",
        "/users/1",
        body={"user": {"title": "Dr"}},
        answer=USER,
        expected=USER,
    ),
    case(
        "delete_user",
        lambda h: h.delete_user(1),
        "DELETE",
        "/users/1",
        answer={"message": "m"},
        expected={"message": "m"},
    ),
    case("restore_user", lambda h: h.restore_user(9), "POST", "/users/9/restore", answer=MESSAGE, expected=MESSAGE),
    case(
        "invite_users",
        lambda h: h.invite_users(["a@x.io"], "analyst", group_ids=[2]),
        "POST",
        "/users/invite",
        body={"emails": ["a@x.io"], "role": "analyst", "group_ids": [2]},
        answer=JOB,
        expected=JOB["job"],
    ),
    case("resend_user_invite", lambda h: h.resend_user_invite(8), "POST", "/users/8/resend_invite", answer=JOB,
         expected=JOB["job"]),
    case(
        "is_email_used",
        lambda h: h.is_email_used("a@x.io"),
        "GET",
        "/users/check_holistics_user",
        query={"email": "a@x.io"},
        answer={"is_already_user": True},
        expected=True,
    ),
    case("revoke_user_api_key", lambda h: h.revoke_user_api_key(6), "POST", "/users/6/revoke_authentication_token",
         answer=MESSAGE, expected=MESSAGE),

    # -- groups (groups.py) ------------------------------------------------------------------------
    case(
        "create_group",
        lambda h: h.create_group({"name": "Finance"}),
        "POST",
        "/groups",
        body={"group": {"name": "Finance"}},
        status=201,
        answer={"group": {"id": 3}},
        expected={"id": 3},
    ),
    case(
        "list_groups",
        lambda h: list(h.list_groups(include_users=True)),
        "GET",
        "/groups",
        query={"include_users": "true"},
        answer={"groups": [{"id": 3}], "cursors": {}},
        expected=[{"id": 3}],
    ),
    case("get_group", lambda h: h.get_group(3), "GET", "/groups/3", answer={"group": {"id": 3}}, expected={"id": 3}),
    case(
        "update_group",
        lambda h: h.update_group(3, {"name": "F"}),
        "PUT",
        "/groups/3",
        body={"group": {"name": "F"}},
        answer={"group": {"id": 3}},
        expected={"id": 3},
    ),
    case("delete_group", lambda h: h.delete_group(2), "DELETE", "/groups/2", answer=MESSAGE, expected=MESSAGE),
    case("add_user_to_group", lambda h: h.add_user_to_group(2, 4), "POST", "/groups/2/add_user/4", answer=MESSAGE,
         expected=MESSAGE),
    case("remove_user_from_group", lambda h: h.remove_user_from_group(2, 5), "POST", "/groups/2/remove_user/5",
         answer=MESSAGE, expected=MESSAGE),

    # -- user attributes (attributes.py) -----------------------------------------------------------
    case(
        "create_user_attribute",
        lambda h: h.create_user_attribute({"name": "region"}),
        "POST",
        "/user_attributes",
        body={"user_attribute": {"name": "region"}},
        answer={"user_attribute": {"id": 1}, "status": "created"},
        expected={"id": 1},
    ),
    case(
        "list_user_attributes",
        lambda h: list(h.list_user_attributes(limit=100)),
        "GET",
        "/user_attributes",
        query={"limit": "100"},
        answer={"user_attributes": [{"id": 1}], "cursors": {"next": None}},
        expected=[{"id": 1}],
    ),
    case(
        "update_user_attribute",
        lambda h: h.update_user_attribute(1, {"label": "R"}),
        "PUT",
        "/user_attributes/1",
        body={"user_attribute": {"label": "R"}},
        answer={"user_attribute": {"id": 1}},
        expected={"id": 1},
    ),
    case("delete_user_attribute", lambda h: h.delete_user_attribute(4), "DELETE", "/user_attributes/4",
         answer=MESSAGE, expected=MESSAGE),
    case(
        "list_user_attribute_entries",
        lambda h: list(h.list_user_attribute_entries("User", 1)),
        "GET",
        "/user_attribute_entries",
        query={"subject_type": "User", "subject_id": "1"},
        answer={"user_attribute_entries": [{"subject_id": 1}], "cursors": {}},
        expected=[{"subject_id": 1}],
    ),
    case(
        "compute_user_attribute_values",
        lambda h: h.compute_user_attribute_values("Group", 2),
        "GET",
        "/user_attribute_entries/computed_values",
        query={"subject_type": "Group", "subject_id": "2"},
        answer={"user_attribute_values": {"region": ["EU"]}},
        expected={"region": ["EU"]},
    ),
    case(
        "upsert_user_attribute_entries",
        lambda h: h.upsert_user_attribute_entries(
            [
                {
                    "user_attribute_name": "region",
                    "values": ["EU"],
                    "subject_type": "User",
                    "subject_id": 1,
                    "input_type": "manual",
                }
            ]
        ),
        "PUT",
        "/user_attribute_entries/upsert",
        body={
            "user_attribute_entries": [
                {
                    "user_attribute_name": "region",
                    "values": ["EU"],
                    "subject_type": "User",
                    "subject_id": 1,
                    "input_type": "manual",
                }
            ]
        },
        answer={"user_attribute_entries": [{"subject_id": 1}]},
        expected=[{"subject_id": 1}],
    ),

    # -- dashboards and widgets (dashboards.py) ----------------------------------------------------
    case(
        "get_dashboard",
        lambda h: h.get_dashboard(12),
        "GET",
        "/dashboards/12",
        answer={"dashboard": {"id": 12}},
        expected={"id": 12},
    ),
    case(
        "list_dashboards",
        lambda h: list(h.list_dashboards(sort="id_desc", include_embed_info=True, limit=5)),
        "GET",
        "/dashboards",
        query={"sort": "id_desc", "include_embed_info": "true", "limit": "5"},
        answer={"dashboards": [{"id": 1}], "cursors": {"next": None}},
        expected=[{"id": 1}],
    ),
    case("list_dashboards_metadata", lambda h: h.list_dashboards_metadata(version=[3, 4], permission_action="read"),
         "GET", "/dashboards/list_metadata", query={"version[]": ["3", "4"], "permission_action": "read"},
         answer={"dashboards_metadata": [{"id": 1}]}, expected=[{"id": 1}]),
    case(
        "build_dashboard_url",
        lambda h: h.build_dashboard_url(12),
        "POST",
        "/dashboards/12/build_url",
        body={"filter_states": []},
        answer={"dashboard_url": "u", "fstate_hash": None},
        expected={"dashboard_url": "u", "fstate_hash": None},
    ),
    case(
        "preload_dashboard",
        lambda h: h.preload_dashboard(12, bust_cache=True),
        "POST",
        "/dashboards/12/submit_preload",
        body={"dashboard_filter_conditions": [], "bust_cache": True},
        answer=JOB,
        expected=JOB["job"],
    ),
    case("clone_canvas_dashboard", lambda h: h.clone_canvas_dashboard(3, "copy", new_title="Copy"), "POST",
         "/dashboards/3/clone_canvas_dashboard",
         body={"new_uname": "copy", "category_type": "ReportCategory", "new_title": "Copy"}, answer=JOB,
         expected=JOB["job"]),
    case("delete_dashboard", lambda h: h.delete_dashboard(12), "DELETE", "/dashboards/12", answer=MESSAGE,
         expected=MESSAGE),
    case(
        "get_dashboard_widget",
        lambda h: h.get_dashboard_widget("101", include_report=True),
        "GET",
        "/dashboard_widgets/101",
        query={"include_report": "true"},
        answer={"dashboard_widget": {"id": "101"}},
        expected={"id": "101"},
    ),
    case("delete_dashboard_widget", lambda h: h.delete_dashboard_widget("101"), "DELETE", "/dashboard_widgets/101",
         answer=MESSAGE, expected=MESSAGE),
    case(
        "submit_widget_export",
        lambda h: h.submit_widget_export(
            "101", "xlsx", [{"dynamic_filter_id": 3, "condition": {"operator": "is", "values": ["EU"]}}]
        ),
        "POST",
        "/dashboard_widgets/101/submit_export",
        body={
            "output": "xlsx",
            "dashboard_filter_conditions": [
                {"dynamic_filter_id": 3, "condition": {"operator": "is", "values": ["EU"]}}
            ],
        },
        answer=JOB,
        expected=JOB["job"],
    ),

    # -- query reports and data sets (reports.py) --------------------------------------------------
    case(
        "get_query_report",
        lambda h: h.get_query_report(6, include_data_set=False),
        "GET",
        "/query_reports/6",
        query={"include_data_set": "false"},
        answer={"query_report": {"id": 6}},
        expected={"id": 6},
    ),
    case(
        "get_data_set",
        lambda h: h.get_data_set(4, include_models=True),
        "GET",
        "/data_sets/4",
        query={"include_models": "true"},
        answer={"data_set": {"id": 4}},
        expected={"id": 4},
    ),
    case(
        "delete_data_set",
        lambda h: h.delete_data_set(4),
        "DELETE",
        "/data_sets/4",
        answer={"message": "m"},
        expected={"message": "m"},
    ),
    case("submit_data_set_query", lambda h: h.submit_data_set_query(1, QUERY), "POST", "/data_sets/1/submit_query",
         body={"query": QUERY}, answer=DATA, expected=DATA),
    case("generate_data_set_sql", lambda h: h.generate_data_set_sql(1, QUERY), "POST", "/data_sets/1/generate_sql",
         body={"query": QUERY}, answer={"sql": "SELECT 1"}, expected="SELECT 1"),

    # -- data sources and models (data_sources.py) -------------------------------------------------
    case(
        "get_data_source",
        lambda h: h.get_data_source(2),
        "GET",
        "/data_sources/2",
        answer={"data_source": {"id": 2}},
        expected={"id": 2},
    ),
    case(
        "update_data_source",
        lambda h: h.update_data_source(2, {"name": "dw"}),
        "PUT",
        "/data_sources/2",
        body={"data_source": {"name": "dw"}},
        answer={"data_source": {"id": 2}},
        expected={"id": 2},
    ),
    case("delete_data_source", lambda h: h.delete_data_source(2), "DELETE", "/data_sources/2", answer=MESSAGE,
         expected=MESSAGE),
    case(
        "bust_data_source_cache",
        lambda h: h.bust_data_source_cache(2),
        "POST",
        "/data_sources/2/bust_exploration_cache",
        answer=JOB,
        expected=JOB["job"],
    ),
    case(
        "list_data_models",
        lambda h: list(h.list_data_models(1, commit_oid="abc")),
        "GET",
        "/data_models",
        query={"project_id": "1", "commit_oid": "abc"},
        answer={"data_models": [{"id": 8}]},
        expected=[{"id": 8}],
    ),
    case("validate_ddl", lambda h: h.validate_ddl("CREATE TABLE t AS (select 1)"), "POST",
         "/data_model_persistences/validate_ddl", body={"ddl": "CREATE TABLE t AS (select 1)"},
         answer={"status": "success"}, expected="success"),
    case(
        "get_dependants",
        lambda h: h.get_dependants(4, "DataSet"),
        "GET",
        "/dependencies/downstream_dependencies",
        query={"id": "4", "type": "DataSet"},
        answer={"dependants": {"data_model_ids": [1]}},
        expected={"data_model_ids": [1]},
    ),

    # -- jobs (jobs.py) ----------------------------------------------------------------------------
    case("get_job", lambda h: h.get_job(7), "GET", "/jobs/7", answer={"job": {"id": 7, "status": "running"}},
         expected={"id": 7, "status": "running"}),
    case("list_jobs", lambda h: h.list_jobs([7, 8], include_source=True), "GET", "/jobs",
         query={"ids[]": ["7", "8"], "include_source": "true"}, answer={"jobs": [{"id": 7}, {"id": 8}]},
         expected=[{"id": 7}, {"id": 8}]),
    case(
        "get_job_result",
        lambda h: h.get_job_result(7),
        "GET",
        "/jobs/7/result",
        answer={"status": "success", "error": None, "result": None},
        expected={"status": "success", "error": None, "result": None},
    ),
    case(
        "get_job_logs",
        lambda h: h.get_job_logs(7),
        "GET",
        "/jobs/7/logs",
        answer={"job_logs": [{"level": "INFO", "message": "m"}]},
        expected=[{"level": "INFO", "message": "m"}],
    ),
    case("list_job_queues", lambda h: h.list_job_queues(), "GET", "/job_queues",
         answer={"job_queues": [{"id": 1, "queue": "default"}]}, expected=[{"id": 1, "queue": "default"}]),

    # -- data schedules and alerts (schedules.py) --------------------------------------------------
    case(
        "create_data_schedule",
        lambda h: h.create_data_schedule({"source_id": 1}),
        "POST",
        "/data_schedules",
        body={"data_schedule": {"source_id": 1}},
        status=201,
        answer={"data_schedule": {"id": 5}},
        expected={"id": 5},
    ),
    case(
        "list_data_schedules",
        lambda h: list(h.list_data_schedules(dest_type="EmailDest", source_id=3)),
        "GET",
        "/data_schedules",
        query={"dest_type": "EmailDest", "source_id": "3"},
        answer={"data_schedules": [{"id": 5}], "cursors": {"next": None}},
        expected=[{"id": 5}],
    ),
    case(
        "get_data_schedule",
        lambda h: h.get_data_schedule(5),
        "GET",
        "/data_schedules/5",
        answer={"data_schedule": {"id": 5}},
        expected={"id": 5},
    ),
    case(
        "update_data_schedule",
        lambda h: h.update_data_schedule(5, {"schedule": {"paused": True}}),
        "PUT",
        "/data_schedules/5",
        body={"data_schedule": {"schedule": {"paused": True}}},
        answer={"data_schedule": {"id": 5}},
        expected={"id": 5},
    ),
    case(
        "delete_data_schedule",
        lambda h: h.delete_data_schedule(5),
        "DELETE",
        "/data_schedules/5",
        answer={"message": "deleted"},
        expected={"message": "deleted"},
    ),
    case(
        "execute_data_schedule",
        lambda h: h.execute_data_schedule(5),
        "POST",
        "/data_schedules/5/submit_execute",
        answer=JOB,
        expected=JOB["job"],
    ),
    case("test_data_schedule", lambda h: h.test_data_schedule({"source_id": 1}), "POST",
         "/data_schedules/submit_execute", body={"test_data_schedule": {"source_id": 1}}, answer=JOB,
         expected=JOB["job"]),
    case(
        "create_data_alert",
        lambda h: h.create_data_alert({"title": "t"}),
        "POST",
        "/data_alerts",
        body={"data_alert": {"title": "t"}},
        status=201,
        answer={"data_alert": {"id": 9}},
        expected={"id": 9},
    ),
    case(
        "list_data_alerts",
        lambda h: list(h.list_data_alerts(search_term="rev", source_type="VizBlock")),
        "GET",
        "/data_alerts",
        query={"search_term": "rev", "source_type": "VizBlock"},
        answer={"data_alerts": [], "cursors": {"next": None}},
        expected=[],
    ),
    case(
        "get_data_alert",
        lambda h: h.get_data_alert(9),
        "GET",
        "/data_alerts/9",
        answer={"data_alert": {"id": 9}},
        expected={"id": 9},
    ),
    case(
        "update_data_alert",
        lambda h: h.update_data_alert(9, {"title": "u"}),
        "PUT",
        "/data_alerts/9",
        body={"data_alert": {"title": "u"}},
        answer={"data_alert": {"id": 9}},
        expected={"id": 9},
    ),
    case(
        "delete_data_alert",
        lambda h: h.delete_data_alert(9),
        "DELETE",
        "/data_alerts/9",
        answer={"message": "ok"},
        expected={"message": "ok"},
    ),
    case(
        "execute_data_alert",
        lambda h: h.execute_data_alert(9),
        "POST",
        "/data_alerts/9/submit_execute",
        answer=JOB,
        expected=JOB["job"],
    ),
    case(
        "test_data_alert",
        lambda h: h.test_data_alert({"title": "t"}),
        "POST",
        "/data_alerts/submit_execute",
        body={"test_data_alert": {"title": "t"}},
        answer=JOB,
        expected=JOB["job"],
    ),

    # -- AML projects and tags (aml.py) ------------------------------------------------------------
    case(
        "publish_aml_project",
        lambda h: h.publish_aml_project({"datasets": {"3": "sales"}}),
        "POST",
        "/aml_studio/projects/submit_publish",
        body={"object_mapping": {"datasets": {"3": "sales"}}},
        answer=JOB,
        expected=JOB["job"],
    ),
    case(
        "validate_aml_project",
        lambda h: h.validate_aml_project("main", "abc"),
        "POST",
        "/aml_studio/projects/submit_validate",
        body={"branch_name": "main", "commit_oid": "abc"},
        answer=JOB,
        expected=JOB["job"],
    ),
    case("list_tags", lambda h: h.list_tags(), "GET", "/tags", answer={"tags": [{"name": "certified"}]},
         expected=[{"name": "certified"}]),
    case("add_object_tags", lambda h: h.add_object_tags("sales", "dataset", ["finance"], project_id=1), "POST",
         "/tags/submit_add_object_tags",
         body={"object_params": {"uname": "sales", "type": "dataset"}, "tags": ["finance"], "project_id": 1},
         answer=JOB, expected=JOB["job"]),
    case("remove_object_tags", lambda h: h.remove_object_tags("sales", "dataset"), "POST",
         "/tags/submit_remove_object_tags", body={"object_params": {"uname": "sales", "type": "dataset"}, "tags": []},
         answer=JOB, expected=JOB["job"]),
    case("recommend_archivable_objects", lambda h: h.recommend_archivable_objects(), "GET",
         "/tags/recommend_archivable_objects", answer={"archivable_objects": [{"id": 3}]}, expected=[{"id": 3}]),

    # -- shareable links and embedding (sharing.py) ------------------------------------------------
    case("create_shareable_link",
         lambda h: h.create_shareable_link({"resource_type": "Dashboard", "resource_id": 1, "dynamic_filter_presets": [
             {"dynamic_filter_id": 1, "preset_condition": {"operator": "matches_user_attribute",
                                                           "values": ["region"]}}]}),
         "POST", "/shareable_links",
         body={"shareable_link": {"resource_type": "Dashboard", "resource_id": 1, "dynamic_filter_presets": [
             {"dynamic_filter_id": 1, "preset_condition": {"operator": "matches_user_attribute",
                                                           "values": ["region"]}}]}},
         status=201, answer={"shareable_link": {"id": 3}}, expected={"id": 3}),
    case("list_shareable_links", lambda h: list(h.list_shareable_links(resource_id=1)), "GET", "/shareable_links",
         query={"resource_id": "1"}, answer={"shareable_links": [{"id": 3}], "cursors": {"next": None}},
         expected=[{"id": 3}]),
    case("get_shareable_link", lambda h: h.get_shareable_link(3), "GET", "/shareable_links/3",
         answer={"shareable_link": {"id": 3}}, expected={"id": 3}),
    case("update_shareable_link", lambda h: h.update_shareable_link(3, {"title": "t"}), "PUT", "/shareable_links/3",
         body={"shareable_link": {"title": "t"}}, answer={"shareable_link": {"id": 3}}, expected={"id": 3}),
    case("delete_shareable_link", lambda h: h.delete_shareable_link(3), "DELETE", "/shareable_links/3",
         answer=MESSAGE, expected=MESSAGE),
    case(
        "create_shortened_embed_token",
        lambda h: h.create_shortened_embed_token("abc", "tok"),
        "POST",
        "/embed/abc/shorten_token",
        body={"token": "tok"},
        status=201,
        answer={"shortened_token": "s"},
        expected="s",
    ),

    # -- webhooks and AI (integrations.py) ---------------------------------------------------------
    case("send_github_event",
         lambda h: h.send_github_event({"action": "opened"}, event="pull_request", hook_id="42", signature=SIGNATURE),
         "POST", "/git_webhooks/github_event", body={"action": "opened"},
         headers={"X-GitHub-Event": "pull_request", "X-GitHub-Hook-ID": "42", "X-Hub-Signature-256": SIGNATURE},
         answer={"data": [{"status": "success"}]}, expected=[{"status": "success"}]),
    case("send_gitlab_event", lambda h: h.send_gitlab_event(b'{"object_kind":"push"}', event="Push Hook", token="t0k"),
         "POST", "/git_webhooks/gitlab_event", body={"object_kind": "push"},
         headers={"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "t0k"},
         answer={"data": []}, expected=[]),
    case("send_github_app_event", lambda h: h.send_github_app_event({"action": "created"}, event="installation",
                                                                    signature=SIGNATURE),
         "POST", "/git_webhooks/github_app_event", body={"action": "created"},
         headers={"X-GitHub-Event": "installation", "X-Hub-Signature-256": SIGNATURE},
         answer={"status": "processed", "data": []}, expected={"status": "processed", "data": []}),
    case("list_ai_skills", lambda h: h.list_ai_skills(), "GET", "/ai/skills", answer={"skills": [{"name": "s"}]},
         expected=[{"name": "s"}]),
]


@pytest.mark.parametrize(("call", "method", "path", "query", "body", "answer", "status", "expected", "headers"), CASES)
def test_operation_wire_format(hook, mock, call, method, path, query, body, answer, status, expected, headers) -> None:
    mock.register_uri(method, BASE + path, json=answer, status_code=status)

    assert call(hook) == expected

    sent = mock.request_history[0]
    assert len(mock.request_history) == 1
    assert sent.method == method
    assert urlsplit(sent.url).path == "/api/v2" + path
    pairs = parse_qsl(urlsplit(sent.url).query)
    assert {k: [v for n, v in pairs if n == k] if k.endswith("[]") else v for k, v in pairs} == query
    assert sent.headers["X-Holistics-Key"] == KEY
    assert sent.headers["Accept"] == "application/json"
    assert sent.headers["User-Agent"].startswith("airflow-provider-analytics/")
    assert (sent.json() if sent.body else None) == body
    if body is not None:
        assert sent.headers["Content-Type"] == "application/json"
    assert {k: sent.headers.get(k) for k in headers} == headers


def test_every_operation_has_a_wire_format_case() -> None:
    # download: see test_download.py; the multipart upload: the tests below
    covered = {p.id for p in CASES} | {"download_export", "upload_dbt_manifests"}
    assert covered == set(OPERATIONS) and len(OPERATIONS) == 82


def test_every_operation_has_a_hook_method() -> None:
    assert all(callable(getattr(AnalyticsHook, name, None)) for name in OPERATIONS)


def test_array_query_parameters_use_brackets(hook, mock) -> None:
    from analytics_provider.api.request import encode_query

    pairs = encode_query(OPERATIONS["list_users"], {"role": ["admin", "analyst"]})
    assert pairs == (("role[]", "admin"), ("role[]", "analyst"))


@pytest.mark.parametrize(("extra", "url", "header"), [
    ({"region": "apac"}, "https://secure.holistics.io/api/v2", "X-Holistics-Key"),
    ({"region": "eu"}, "https://eu.holistics.io/api/v2", "X-Holistics-Key"),
    ({"region": "us"}, "https://us.holistics.io/api/v2", "X-Holistics-Key"),
    ({}, "https://eu.holistics.io/api/v2", "X-Holistics-Key"),  # the default region
    ({"base_url": "https://us.holistics.io/api/v2/"}, "https://us.holistics.io/api/v2", "X-Holistics-Key"),
    ({"base_url": "https://bi-gateway.example.com/api/v2"}, "https://bi-gateway.example.com/api/v2",
     "X-Service-Key"),
    ({"region": "us", "header_name": "X-Service-Key"}, "https://us.holistics.io/api/v2", "X-Service-Key"),
    ({"base_url": "https://gw.example.com/api/v2", "header_name": "X-Gateway-Key"}, "https://gw.example.com/api/v2",
     "X-Gateway-Key"),
], ids=["apac", "eu", "us", "no-region", "vendor-base-url", "gateway", "region-override", "gateway-override"])
def test_the_header_that_carries_the_key(monkeypatch, mock, extra, url, header) -> None:
    conn = {"conn_type": "analytics", "password": "k-123456", "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(conn))
    mock.get(url + "/users/me", json={"user": USER})
    AnalyticsHook().get_current_user()
    sent = mock.last_request
    names = ("x-holistics-key", "x-service-key", "x-gateway-key")
    keyed = sorted(name for name in sent.headers if name.lower() in names)
    print(f"{conn['extra']} -> GET {sent.url} with the key in {keyed}")
    assert sent.url == url + "/users/me" and keyed == [header] and sent.headers[header] == "k-123456"


def test_timeouts_are_sent_on_every_request(hook, mock, monkeypatch) -> None:
    seen = []
    original = requests.Session.request

    def spy(*args, **kwargs):
        seen.append(kwargs["timeout"])
        return original(*args, **kwargs)

    monkeypatch.setattr(requests.Session, "request", spy)
    mock.get(BASE + "/users/me", json={"user": USER})
    hook.get_current_user()
    assert seen == [(10.0, 60.0)]


# -- what each resource's methods check before sending, and which are never re-sent --------------------------

@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"metrics": [{"aggregation": "sum"}]}, r"query\.metrics\[0\]\.field is required"),
        ({"dimensions": [{"field": "a", "transformation": "datetrunc decade"}]},
         r"dimensions\[0\]\.transformation must be one of datetrunc year"),
        ({"filters": [{"field": "a", "operator": "between", "values": [1]}]}, r"filters\[0\]\.values between takes"),
        ({"limit": 0}, r"query\.limit must be an integer from 1 to 1000000; got 0"),
        ({"order": [{"id": "a", "order": "up"}]}, r"order\[0\]\.order must be one of asc, desc"),
        ({"timezone": "CET"}, r"timezone must be an IANA name"),
        ("rows please", r"query must be an object"),
    ],
)
def test_data_set_queries_are_checked_before_sending(hook, mock, query: Any, message: str) -> None:
    from analytics_provider.exceptions import AnalyticsParameterError

    with pytest.raises(AnalyticsParameterError, match=message):
        hook.submit_data_set_query(1, query)
    with pytest.raises(AnalyticsParameterError, match=message):
        hook.generate_data_set_sql(1, query)
    assert not mock.request_history


def test_a_data_set_query_answers_a_job_or_the_rows(hook, mock) -> None:
    from analytics_provider.hooks.analytics import is_job

    mock.post(BASE + "/data_sets/1/submit_query", [{"json": JOB}, {"json": DATA}])
    first, second = hook.submit_data_set_query(1, QUERY), hook.submit_data_set_query(1, QUERY)
    assert first == JOB["job"] and is_job(first)
    assert second == DATA and not is_job(second)


def test_upload_dbt_manifests_wire_format(hook, mock, tmp_path) -> None:
    first = tmp_path / "manifest.json"
    first.write_bytes(b'{"nodes": {}}')
    second = io.BytesIO(b'xx{"nodes": {"a": 1}}')
    second.read(2)  # a file object is sent from where it stands
    bodies: list[bytes] = []

    def answer(request: Any, context: Any) -> Any:
        bodies.append(request.body.read())  # the encoder streams while the request is being sent
        return JOB

    mock.post(BASE + "/data_sources/upload_multiple_dbt_manifests", json=answer)

    assert hook.upload_dbt_manifests([first, ("other.json", second)], data_source_name="DWH") == JOB["job"]

    sent = mock.request_history[0]
    assert sent.headers["X-Holistics-Key"] == KEY
    content_type = sent.headers["Content-Type"]
    assert content_type.startswith("multipart/form-data; boundary=")
    assert not isinstance(sent.body, bytes)  # streamed by the encoder, never joined in memory
    body = bodies[0]
    message = email.message_from_bytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    parts = [(p.get_param("name", header="content-disposition"), p.get_filename(), p.get_payload(decode=True))
             for p in message.get_payload()]
    assert parts == [("data_source_name", None, b"DWH"), ("files", "manifest.json", b'{"nodes": {}}'),
                     ("files", "other.json", b'{"nodes": {"a": 1}}')]
    assert int(sent.headers["Content-Length"]) == len(body)
    assert not second.closed  # the caller's file stays the caller's


@pytest.mark.parametrize(
    ("manifests", "message"),
    [
        ([], "give 1 to 5 manifests"),
        (["m.json"] * 6, "give 1 to 5 manifests"),
        ("manifest.json", "must be a list"),
        ([("x.json", "not a file")], "seekable binary file object"),
        (["/no/such/manifest.json"], "is not a file"),
    ],
)
def test_upload_dbt_manifests_refuses_bad_input_before_sending(hook, mock, manifests, message) -> None:
    from analytics_provider.exceptions import AnalyticsParameterError

    with pytest.raises(AnalyticsParameterError, match=message):
        hook.upload_dbt_manifests(manifests)
    assert not mock.request_history


def test_upload_dbt_manifests_refuses_a_file_over_200_mb(hook, mock, tmp_path) -> None:
    from analytics_provider.exceptions import AnalyticsParameterError

    big = tmp_path / "manifest.json"
    with big.open("wb") as handle:
        handle.truncate(200 * 1024 * 1024 + 1)  # sparse: no disk is used
    with pytest.raises(AnalyticsParameterError, match=r"manifests\[0\] \(manifest.json\) is 209715201 bytes"):
        hook.upload_dbt_manifests([big])
    assert not mock.request_history


def test_upload_is_never_sent_twice(hook, mock, tmp_path) -> None:
    import requests

    from analytics_provider.exceptions import AnalyticsTransportError

    manifest = tmp_path / "manifest.json"
    manifest.write_bytes(b"{}")
    url = BASE + "/data_sources/upload_multiple_dbt_manifests"
    mock.post(url, [{"exc": requests.exceptions.ReadTimeout("no answer")}, {"json": JOB}])
    with pytest.raises(AnalyticsTransportError):
        hook.upload_dbt_manifests([manifest])
    assert len(mock.request_history) == 1  # the body may have arrived: a second upload would duplicate the sync
    mock.post(url, [{"status_code": 503, "json": {"type": "MaintenanceError", "message": "m"}}, {"json": JOB}])
    assert hook.upload_dbt_manifests([manifest]) == JOB["job"]  # a 503 refused it before any work: sent again


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda h: h.list_dashboards_metadata(permission_action="steal"), "permission_action must be one of create"),
        (lambda h: h.clone_canvas_dashboard(3, ""), "new_uname must be a non-empty string"),
        (lambda h: h.clone_canvas_dashboard(3, "x", category_type="Drawer"), "category_type must be one of Report"),
        (lambda h: h.validate_ddl(" "), "ddl must be a non-empty string"),
        (lambda h: h.list_jobs([]), "job_ids must be a non-empty list"),
        (lambda h: h.add_object_tags("sales", "report", ["a"]), "object_type must be one of dataset, dashboard"),
        (lambda h: h.add_object_tags("sales", "dataset", "finance"), "tags must be a list of tag names"),
        (lambda h: h.create_shareable_link({"resource_type": "Dashboard", "resource_id": 1, "dynamic_filter_presets": [
            {"dynamic_filter_id": 1, "preset_condition": {"operator": "matches_user_attribute", "values": []}}]}),
         r"dynamic_filter_presets\[0\]\.preset_condition\.values matches_user_attribute takes at least 1 value"),
        (lambda h: h.send_github_event({}, event="fork", hook_id="1", signature=SIGNATURE), "event must be one of"),
        (lambda h: h.send_github_event({}, event="push", hook_id="", signature=SIGNATURE), "X-GitHub-Hook-ID header"),
        (lambda h: h.send_gitlab_event({}, event="Tag Hook", token="t"), "event must be one of Merge Request Hook"),
    ],
)
def test_operations_refuse_bad_input_before_sending(hook, mock, call, message: str) -> None:
    from analytics_provider.exceptions import AnalyticsParameterError

    with pytest.raises(AnalyticsParameterError, match=message):
        call(hook)
    assert not mock.request_history


@pytest.mark.parametrize(
    ("name", "creates"),
    [("resend_user_invite", True), ("delete_group", False), ("clone_canvas_dashboard", True),
     ("submit_data_set_query", False), ("upload_dbt_manifests", True), ("list_jobs", False),
     ("test_data_schedule", False), ("add_object_tags", False), ("create_shareable_link", True),
     ("send_github_event", True), ("send_gitlab_event", True), ("send_github_app_event", True)],
)
def test_retry_class_of_operations(name: str, creates: bool) -> None:
    # a create is never re-sent once it may have arrived: a duplicate link, dashboard, sync, e-mail or event
    assert OPERATIONS[name].creates is creates


# -- the table and the hook's checks against the vendor's own document --------------------------------------

VENDOR = vendor_document()


def _vendor_operations() -> dict[tuple[str, str], dict[str, Any]]:
    return {(method.upper(), path): op for path, item in VENDOR["paths"].items() for method, op in item.items()
            if method in ("get", "post", "put", "delete")}


def _parameter(param: dict[str, Any]) -> dict[str, Any]:
    return VENDOR["components"]["parameters"][param["$ref"].split("/")[-1]] if "$ref" in param else param


def test_the_table_has_every_operation_of_the_vendor_document_and_no_other() -> None:
    assert {(op.method, op.path) for op in OPERATIONS.values()} == set(_vendor_operations())


# where the API document adds to the vendor's options: its pagination envelope covers every list
API_DOCUMENT_QUERY = {"list_user_attribute_entries": {"before", "after", "limit"}}


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_each_operation_takes_the_vendor_query_options_and_answers_its_status(name: str) -> None:
    op = OPERATIONS[name]
    vendor_op = _vendor_operations()[(op.method, op.path)]
    common = VENDOR["paths"][op.path].get("parameters", [])
    params = [_parameter(p) for p in [*common, *vendor_op.get("parameters", [])]]
    query = {p["name"]: p for p in params if p["in"] == "query"}
    assert {p.name for p in op.query} == set(query) | API_DOCUMENT_QUERY.get(name, set())
    for param in op.query:
        if param.name not in query:
            continue
        schema = query[param.name].get("schema", {})
        items = schema.get("items", {}) if schema.get("type") == "array" else schema
        if "$ref" in items:
            items = VENDOR["components"]["schemas"][items["$ref"].split("/")[-1]]
        assert set(param.choices) == set(items.get("enum", [])), param.name
        assert param.required == bool(query[param.name].get("required")), param.name
        assert param.many == (schema.get("type") == "array" or "oneOf" in schema), param.name
    headers = {p["name"] for p in params if p["in"] == "header"}
    assert {h.name for h in op.headers} == headers
    successes = sorted(int(code) for code in vendor_op["responses"] if str(code).startswith(("2", "3")))
    # the download's 302 leads to the file, which the hook follows; the table holds the file's status
    assert op.status == (200 if successes == [302] else successes[0])
    assert op.keyless == (vendor_op.get("security") == [] and bool(headers))


def test_the_filter_operators_are_the_vendor_conditions() -> None:
    schemas = VENDOR["components"]["schemas"]
    mapping = schemas["Condition"]["discriminator"]["mapping"]
    assert set(OPERATOR_VALUES) == set(mapping)
    for operator, ref in mapping.items():
        values = next(p["properties"]["values"] for p in schemas[ref.split("/")[-1]]["allOf"]
                      if "values" in p.get("properties", {}))
        assert OPERATOR_VALUES[operator] == (values.get("minItems", 0), values.get("maxItems")), operator


def _values(operator: str) -> list[Any]:
    low, high = OPERATOR_VALUES[operator]
    return list(range(1, (low if high is None else high) + 1))


@pytest.mark.parametrize("operator", sorted(OPERATOR_VALUES))
def test_the_hook_sends_every_vendor_operator(hook, mock, operator: str) -> None:
    condition = {"operator": operator, "values": _values(operator)}
    if operator in ("last", "next", "transform_pop_relative"):
        condition["modifier"] = "week"
    mock.post(BASE + "/dashboard_widgets/101/submit_export", json=JOB)
    hook.submit_widget_export(101, "csv", [{"dynamic_filter_id": 1, "condition": condition}])
    assert mock.last_request.json()["dashboard_filter_conditions"][0]["condition"] == condition


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ({"operator": "greater_than_or_equal", "values": [1]}, r"operator must be one of is, is_not, .*; got 'greater"),
        ({"operator": "between", "values": [1]}, r"values between takes exactly 2 values; got 1"),
        ({"operator": "greater_than", "values": []}, r"values greater_than takes exactly 1 value; got 0"),
        ({"operator": "is"}, r"values must be a list \(is takes at least 0 values\)"),
        ({"operator": "is_null", "values": ["x"]}, r"values is_null takes no values; got 1"),
        ({"operator": "contains", "values": [None]}, r"values must hold strings, numbers or booleans"),
        ({"operator": "last", "values": [3], "modifier": "fortnight"}, r"modifier of last must be one of year, qu"),
    ],
)
def test_the_hook_refuses_what_the_vendor_refuses(hook, mock, condition: dict[str, Any], message: str) -> None:
    from analytics_provider.exceptions import AnalyticsParameterError

    with pytest.raises(AnalyticsParameterError, match=r"dashboard_filter_conditions\[0\]\.condition\." + message):
        hook.submit_widget_export(101, "csv", [{"dynamic_filter_id": 1, "condition": condition}])
    assert not mock.request_history
