"""Every operation of the table is served, at its method and path, with its status and result key."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.api.wire.operations import OPERATIONS
from analytics_provider.testing.emulator.handlers import load_handlers

from .conftest import Api

MANIFEST = b'{"metadata": {"dbt_version": "1.8.0"}, "nodes": {}}'
SCHEDULE = {"source_type": "Dashboard", "source_id": 1, "schedule": {"repeat": "0 7 * * *", "paused": False},
            "dest": {"type": "EmailDest", "title": "Daily {{$today}}", "recipients": ["ops@example.org"]}}
ALERT = {"title": "Revenue dropped", "source_type": "DashboardWidget", "source_id": 101, "dynamic_filter_presets": [],
         "schedule": {"repeat": "0 * * * *", "paused": False},
         "dest": {"type": "EmailDest", "recipients": ["ops@example.org"]},
         "viz_conditions": [{"field_path": {"field_name": "revenue", "model_id": 1}, "aggregation": "sum",
                             "condition": {"operator": "less_than", "values": [100]}}]}
ENTRY = {"user_attribute_id": 3, "input_type": "manual", "values": ["APAC"], "subject_type": "User", "subject_id": 6}
CONDITION = {"dynamic_filter_id": 1, "condition": {"operator": "is", "values": ["EU"]}}

# operation: (path arguments, query, body)
CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any], Any]] = {
    "get_current_user": ((), {}, None),
    "list_users": ((), {"limit": 3, "sort": "name_desc"}, None),
    "update_user": ((6,), {}, {"user": {"title": "Lead", "group_ids": [1, 2]}}),
    "delete_user": ((7,), {}, None),
    "invite_users": ((), {}, {"emails": ["new.person@example.org"], "role": "explorer", "group_ids": [1]}),
    "is_email_used": ((), {"email": "MAYA.CHEN@example.com"}, None),
    "get_job": ((1,), {}, None),
    "get_job_result": ((1,), {}, None),
    "get_job_logs": ((1,), {}, None),
    "submit_widget_export": (("102",), {}, {"output": "pdf", "dashboard_filter_conditions": [CONDITION]}),
    "get_dashboard": ((2,), {}, None),
    "list_dashboards": ((), {"include_embed_info": "true", "sort": "id_desc"}, None),
    "build_dashboard_url": ((1,), {}, {"filter_states": [CONDITION]}),
    "preload_dashboard": ((1,), {}, {"dashboard_filter_conditions": [], "bust_cache": True}),
    "get_dashboard_widget": (("201",), {"include_dashboard": "true", "include_report": "true",
                                        "include_url": "true"}, None),
    "create_data_schedule": ((), {}, {"data_schedule": SCHEDULE}),
    "list_data_schedules": ((), {"dest_type": "SlackDest"}, None),
    "get_data_schedule": ((2,), {}, None),
    "update_data_schedule": ((1,), {}, {"data_schedule": {**SCHEDULE, "schedule": {"repeat": "0 8 * * *",
                                                                                   "paused": True}}}),
    "delete_data_schedule": ((2,), {}, None),
    "execute_data_schedule": ((1,), {}, None),
    "create_data_alert": ((), {}, {"data_alert": ALERT}),
    "list_data_alerts": ((), {"search_term": "spend", "source_type": "DashboardWidget"}, None),
    "get_data_alert": ((1,), {}, None),
    "update_data_alert": ((1,), {}, {"data_alert": {**ALERT, "title": "Renamed"}}),
    "delete_data_alert": ((2,), {}, None),
    "execute_data_alert": ((1,), {}, None),
    "test_data_alert": ((), {}, {"test_data_alert": ALERT}),
    "get_dependants": ((), {"id": 1, "type": "DataSource"}, None),
    "create_group": ((), {}, {"group": {"name": "Finance"}}),
    "list_groups": ((), {"include_users": "true"}, None),
    "get_group": ((2,), {"include_users": "true"}, None),
    "update_group": ((2,), {}, {"group": {"name": "Ops"}}),
    "create_shortened_embed_token": (("embed002x7k2",), {}, {"token": "t" * 500}),
    "get_data_source": ((1,), {}, None),
    "update_data_source": ((1,), {}, {"data_source": {"name": "DWH", "settings": {"query_timeout": 120},
                                                      "dbconfig": {"host": "db", "password": "s3cret"}}}),
    "bust_data_source_cache": ((1,), {}, None),
    "get_data_set": ((1,), {"include_models": "true", "include_reports": "true"}, None),
    "delete_data_set": ((3,), {}, None),
    "list_data_models": ((), {"project_id": 1, "branch_name": "master"}, None),
    "get_query_report": ((11,), {"include_data_set": "true"}, None),
    "create_user_attribute": ((), {}, {"user_attribute": {"name": "tier", "attribute_type": "string",
                                                          "label": "Tier", "description": "Plan"}}),
    "list_user_attributes": ((), {}, None),
    "update_user_attribute": ((3,), {}, {"user_attribute": {"name": "region", "attribute_type": "string",
                                                            "label": "Sales region", "description": ""}}),
    "list_user_attribute_entries": ((), {"subject_type": "Group", "subject_id": 2}, None),
    "compute_user_attribute_values": ((), {"subject_type": "User", "subject_id": 6}, None),
    "upsert_user_attribute_entries": ((), {}, {"user_attribute_entries": [ENTRY]}),
    "publish_aml_project": ((), {}, {"object_mapping": {"datasets": {"1": "sales"}}}),
    "validate_aml_project": ((), {}, {"branch_name": "master", "commit_oid": "abc123"}),
    "restore_user": ((9,), {}, None),
    "resend_user_invite": ((8,), {}, None),
    "revoke_user_api_key": ((6,), {}, None),
    "list_jobs": ((), {"ids[]": [1, 2]}, None),
    "list_job_queues": ((), {}, None),
    "delete_dashboard": ((2,), {}, None),
    "list_dashboards_metadata": ((), {"version[]": [3], "permission_action": "update"}, None),
    "clone_canvas_dashboard": ((3,), {}, {"new_uname": "exec_copy", "category_type": "ReportCategory"}),
    "delete_dashboard_widget": (("102",), {}, None),
    "test_data_schedule": ((), {}, {"test_data_schedule": SCHEDULE}),
    "delete_group": ((2,), {}, None),
    "add_user_to_group": ((2, 4), {}, None),
    "remove_user_from_group": ((2, 5), {}, None),
    "create_shareable_link": ((), {}, {"shareable_link": {"resource_type": "Dashboard", "resource_id": 2,
                                                          "title": "Public marketing"}}),
    "list_shareable_links": ((), {"resource_type": "Dashboard", "resource_id": 1}, None),
    "get_shareable_link": ((1,), {}, None),
    "update_shareable_link": ((1,), {}, {"shareable_link": {"resource_type": "Dashboard", "resource_id": 1,
                                                            "title": "Renamed"}}),
    "delete_shareable_link": ((1,), {}, None),
    "delete_data_source": ((2,), {}, None),
    "upload_dbt_manifests": ((), {}, None),
    "submit_data_set_query": ((1,), {}, {"query": {"dimensions": [{"field": "orders.region"}],
                                                   "metrics": [{"field": "orders.revenue", "aggregation": "sum"}]}}),
    "generate_data_set_sql": ((1,), {}, {"query": {"dimensions": [{"field": "orders.region"}],
                                                   "metrics": [{"field": "orders.revenue", "aggregation": "sum"}]}}),
    "delete_user_attribute": ((4,), {}, None),
    "validate_ddl": ((), {}, {"ddl": "CREATE TABLE {{ #SOURCE }} AS (select 1)"}),
    "list_tags": ((), {}, None),
    "add_object_tags": ((), {}, {"object_params": {"uname": "sales", "type": "dataset"}, "tags": ["finance"]}),
    "remove_object_tags": ((), {}, {"object_params": {"uname": "sales", "type": "dataset"}, "tags": []}),
    "recommend_archivable_objects": ((), {}, None),
    "list_ai_skills": ((), {}, None),
    "send_github_event": ((), {}, {"action": "opened"}),
    "send_gitlab_event": ((), {}, {"object_kind": "push"}),
    "send_github_app_event": ((), {}, {"action": "created"}),
}
HEADERS = {
    "send_github_event": {"X-GitHub-Event": "pull_request", "X-GitHub-Hook-ID": "42",
                          "X-Hub-Signature-256": "sha256=" + "ab" * 32},
    "send_gitlab_event": {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "gl-secret-token"},
    "send_github_app_event": {"X-GitHub-Event": "installation", "X-Hub-Signature-256": "sha256=" + "cd" * 32},
}


def test_the_table_is_covered() -> None:
    assert set(CALLS) | {"download_export"} == set(OPERATIONS)
    assert set(load_handlers()) == set(OPERATIONS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_operation_answers(api: Api, name: str) -> None:
    op = OPERATIONS[name]
    api.emulator.job_duration = 0.05
    if name.startswith("get_job") or name == "list_jobs":
        api.export("101")  # job 1
    args, query, body = CALLS[name]
    path = op.path.format(**dict(zip(op.path_params, map(str, args), strict=True)))
    if name == "upload_dbt_manifests":
        answer = api.call(op.method, path, files=[("files", ("manifest.json", MANIFEST, "application/json"))],
                          data={"data_source_name": "Production warehouse"})
    else:
        answer = api.call(op.method, path, params=query, json=body, headers=HEADERS.get(name, {}))
    assert answer.status_code == op.status, answer.text
    data = answer.json()
    if op.result_key is not None:
        assert op.result_key in data, data
    if op.items_key is not None:
        assert isinstance(data[op.items_key], list) and data[op.items_key]
    if op.result_key is not None and isinstance(data[op.result_key], list) and name != "get_job_logs":
        assert data[op.result_key], data  # list answers of the seed are not empty
    if op.starts_job and name == "submit_data_set_query" and "job" not in data:
        assert data["values"]
    elif op.starts_job:
        assert set(data["job"]) >= {"id", "status"}
        assert api.wait_job(data["job"]["id"])["status"] == "success"


def test_answers_carry_the_shapes_of_the_document(api: Api) -> None:
    user = api.put("/users/6", json={"user": {"title": "Lead"}}).json()
    assert user["id"] == 6 and user["title"] == "Lead"  # unwrapped
    dashboard = api.get("/dashboards/1").json()["dashboard"]
    assert {"id", "owner_id", "title", "category_id", "version", "dynamic_filters", "widgets", "url"} <= set(dashboard)
    widget = dashboard["widgets"][0]
    assert widget["id"] == "101" and widget["source_type"] == "QueryReport" and isinstance(widget["source_id"], str)
    definition = dashboard["dynamic_filters"][0]["definition"]
    assert definition["filter_source"]["manual_options"] and "default_condition" in definition
    mapping = dashboard["dynamic_filters"][0]["mappings"][0]
    assert mapping["viz_conditionable_type"] == "DashboardWidget" and mapping["field_path"]["field_name"]
    report = api.get("/query_reports/11", params={"include_data_set": "true"}).json()["query_report"]
    assert report["viz_setting"]["fields"] and report["data_set"]["id"] == report["data_set_id"]
    data_set = api.get("/data_sets/1", params={"include_models": "true"}).json()["data_set"]
    assert data_set["from_aml"] is True and data_set["data_models"][0]["fields"]
    source = api.get("/data_sources/1").json()["data_source"]
    assert "dbconfig" not in source and source["settings"]["timezone"]
    embed = api.get("/dashboards", params={"include_embed_info": "true"}).json()["dashboards"][0]["embed_info"]
    assert embed["hash_code"] and embed["secret_key"]
    assert api.get("/dashboards").json()["dashboards"][0]["embed_info"] is None
    url = api.post("/dashboards/1/build_url", json={"filter_states": []}).json()
    assert url["dashboard_url"].startswith("http") and url["fstate_hash"] is None


def test_attribute_values_are_computed_from_users_and_groups(api: Api) -> None:
    values = api.get("/user_attribute_entries/computed_values",
                     params={"subject_type": "User", "subject_id": 6}).json()["user_attribute_values"]
    assert values["region"] == ["LATAM", "US"]  # inherited from the Operations group
    assert values["h_email"] == ["jonas.berg@example.com"]
    assert api.put("/user_attribute_entries/upsert", json={"user_attribute_entries": [ENTRY]}).ok
    values = api.get("/user_attribute_entries/computed_values",
                     params={"subject_type": "User", "subject_id": 6}).json()["user_attribute_values"]
    assert values["region"] == ["APAC"]
    unknown = dict(ENTRY, user_attribute_id=None, user_attribute_name="nope")
    assert api.put("/user_attribute_entries/upsert", json={"user_attribute_entries": [unknown]}).status_code == 404


def test_dependants_by_type(api: Api) -> None:
    def dependants(kind: str, ident: int) -> dict[str, Any]:
        return api.get("/dependencies/downstream_dependencies", params={"id": ident, "type": kind}).json()["dependants"]

    assert dependants("DataSource", 1) == {"data_model_ids": [1, 2, 3, 4, 5, 6], "data_set_ids": [1, 2, 3, 4, 5]}
    assert dependants("DataSource", 3) == {"data_model_ids": [7], "data_set_ids": [6]}
    assert dependants("DataModel", 3) == {"data_model_ids": [], "data_set_ids": [2]}
    # the query model orders_by_region is built on orders: a dependant of it, as in the document's example
    assert dependants("DataModel", 1) == {"data_model_ids": [5], "data_set_ids": [1]}
    assert api.get("/dependencies/downstream_dependencies", params={"id": 9, "type": "DataSet"}).status_code == 404
