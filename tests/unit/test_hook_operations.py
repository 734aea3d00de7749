"""The wire format of every hook method: method, path, query, headers, body and parsing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

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
) -> Any:
    return pytest.param(call, method, path, query or {}, body, answer, status, expected, id=name)


CASES = [
    case("get_current_user", lambda h: h.get_current_user(), "GET", "/users/me", answer={"user": USER}, expected=USER),
    case("get_job", lambda h: h.get_job(7), "GET", "/jobs/7", answer={"job": {"id": 7, "status": "running"}},
         expected={"id": 7, "status": "running"}),
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
    case(
        "get_dashboard_widget",
        lambda h: h.get_dashboard_widget("101", include_report=True),
        "GET",
        "/dashboard_widgets/101",
        query={"include_report": "true"},
        answer={"dashboard_widget": {"id": "101"}},
        expected={"id": "101"},
    ),
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
    case(
        "get_dependants",
        lambda h: h.get_dependants(4, "DataSet"),
        "GET",
        "/dependencies/downstream_dependencies",
        query={"id": "4", "type": "DataSet"},
        answer={"dependants": {"data_model_ids": [1]}},
        expected={"data_model_ids": [1]},
    ),
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
    case(
        "invite_users",
        lambda h: h.invite_users(["a@x.io"], "analyst", group_ids=[2]),
        "POST",
        "/users/invite",
        body={"emails": ["a@x.io"], "role": "analyst", "group_ids": [2]},
        answer=JOB,
        expected=JOB["job"],
    ),
    case(
        "is_email_used",
        lambda h: h.is_email_used("a@x.io"),
        "GET",
        "/users/check_holistics_user",
        query={"email": "a@x.io"},
        answer={"is_already_user": True},
        expected=True,
    ),
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
    case(
        "bust_data_source_cache",
        lambda h: h.bust_data_source_cache(2),
        "POST",
        "/data_sources/2/bust_exploration_cache",
        answer=JOB,
        expected=JOB["job"],
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
    case(
        "list_data_models",
        lambda h: list(h.list_data_models(1, commit_oid="abc")),
        "GET",
        "/data_models",
        query={"project_id": "1", "commit_oid": "abc"},
        answer={"data_models": [{"id": 8}]},
        expected=[{"id": 8}],
    ),
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
]


@pytest.mark.parametrize(("call", "method", "path", "query", "body", "answer", "status", "expected"), CASES)
def test_operation_wire_format(hook, mock, call, method, path, query, body, answer, status, expected) -> None:
    mock.register_uri(method, BASE + path, json=answer, status_code=status)

    assert call(hook) == expected

    sent = mock.request_history[0]
    assert len(mock.request_history) == 1
    assert sent.method == method
    assert urlsplit(sent.url).path == "/api/v2" + path
    assert dict(parse_qsl(urlsplit(sent.url).query)) == query
    assert sent.headers["X-Service-Key"] == KEY
    assert sent.headers["Accept"] == "application/json"
    assert sent.headers["User-Agent"].startswith("airflow-provider-analytics/")
    assert (sent.json() if sent.body else None) == body


def test_every_operation_has_a_wire_format_case() -> None:
    covered = {p.id for p in CASES} | {"download_export"}  # download: see test_download.py
    assert covered == set(OPERATIONS)


def test_every_operation_has_a_hook_method() -> None:
    assert all(callable(getattr(AnalyticsHook, name, None)) for name in OPERATIONS)


def test_array_query_parameters_use_brackets(hook, mock) -> None:
    from analytics_provider.api.request import encode_query

    pairs = encode_query(OPERATIONS["list_users"], {"role": ["admin", "analyst"]})
    assert pairs == (("role[]", "admin"), ("role[]", "analyst"))


def test_header_name_override(monkeypatch, mock) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps(
            {
                "conn_type": "analytics",
                "password": "k-123456",
                "extra": {"region": "us", "header_name": "X-Holistics-Key"},
            }
        ),
    )
    mock.get("https://us.holistics.io/api/v2/users/me", json={"user": USER})
    AnalyticsHook().get_current_user()
    assert mock.last_request.headers["X-Holistics-Key"] == "k-123456"
    assert "X-Service-Key" not in mock.last_request.headers


def test_timeouts_are_sent_on_every_request(hook, mock, monkeypatch) -> None:
    seen = []
    original = hook.session.request

    def spy(*args, **kwargs):
        seen.append(kwargs["timeout"])
        return original(*args, **kwargs)

    monkeypatch.setattr(hook.session, "request", spy)
    mock.get(BASE + "/users/me", json={"user": USER})
    hook.get_current_user()
    assert seen == [(10.0, 60.0)]
