"""The hook against the emulator over real loopback sockets: every operation, and the failure modes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from analytics_provider import exceptions as exc
from analytics_provider.hooks.analytics import AnalyticsHook


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> AnalyticsHook:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def wait_success(hook: AnalyticsHook, job: dict[str, Any]) -> int:
    state = hook.wait_for_job(job["id"], poll_interval=0.05, timeout=30)
    assert state.status == "success", state
    return state.job_id


def api_requests(emulator, operation: str) -> list[Any]:
    return [r for r in emulator.requests if r.origin == "api" and r.operation == operation]


def test_users_and_groups(hook: AnalyticsHook, analytics_emulator) -> None:
    me = hook.get_current_user()
    assert me["role"] == "admin" and "@" in me["email"]
    ok, message = hook.test_connection()
    assert ok and me["email"] in message
    users = list(hook.list_users(limit=5))
    assert len(users) >= 6  # more than one page, every role seeded
    assert {u["role"] for u in users} >= {"user", "explorer", "analyst", "admin"}
    analysts = list(hook.list_users(role="analyst"))
    assert analysts and all(u["role"] == "analyst" for u in analysts)
    target = next(u for u in users if u["role"] == "explorer")
    updated = hook.update_user(target["id"], {"title": "Head of Sales"})
    assert updated["title"] == "Head of Sales"
    assert hook.is_email_used(target["email"]) is True
    assert hook.is_email_used("nobody-here@example.org") is False
    assert "message" in hook.delete_user(target["id"])
    assert wait_success(hook, hook.invite_users(["new.analyst@example.org"], "analyst"))

    group = hook.create_group({"name": "Finance"})
    assert group["name"] == "Finance"
    assert hook.get_group(group["id"], include_users=True)["id"] == group["id"]
    assert hook.update_group(group["id"], {"name": "Finance EU"})["name"] == "Finance EU"
    assert group["id"] in [g["id"] for g in hook.list_groups(limit=1)]


def test_dashboards_widgets_reports_and_sources(hook: AnalyticsHook) -> None:
    dashboards = list(hook.list_dashboards(sort="id_asc", limit=1))
    assert len(dashboards) >= 2
    dashboard = hook.get_dashboard(dashboards[0]["id"])
    assert dashboard["widgets"] and dashboard["dynamic_filters"]
    widget = hook.get_dashboard_widget(dashboard["widgets"][0]["id"], include_report=True, include_url=True)
    assert widget["query_report"]["id"]
    report = hook.get_query_report(widget["query_report"]["id"], include_data_set=True)
    assert report["data_set"]["id"] == report["data_set_id"]
    data_set = hook.get_data_set(report["data_set_id"], include_models=True)
    assert data_set["data_models"]
    dependants = hook.get_dependants(data_set["id"], "DataSet")
    assert isinstance(dependants, dict) and set(dependants) <= {"data_model_ids", "data_set_ids"}
    source = hook.get_data_source(report["data_source_id"])
    assert hook.update_data_source(source["id"], {"name": "warehouse"})["name"] == "warehouse"
    assert wait_success(hook, hook.bust_data_source_cache(source["id"]))
    filter_id = dashboard["dynamic_filters"][0]["id"]
    condition = {"dynamic_filter_id": filter_id, "condition": {"operator": "is", "values": ["EU"]}}
    url = hook.build_dashboard_url(dashboard["id"], [condition])
    assert url["dashboard_url"] and url["fstate_hash"]
    assert wait_success(hook, hook.preload_dashboard(dashboard["id"], [condition], bust_cache=True))
    models = list(hook.list_data_models(1))
    assert models and all("fields" in m or "name" in m for m in models)


def test_data_sets_from_aml_cannot_be_deleted(hook: AnalyticsHook) -> None:
    dashboards = list(hook.list_dashboards())
    seen: list[dict[str, Any]] = []
    for d in dashboards:
        for w in hook.get_dashboard(d["id"])["widgets"]:
            report = hook.get_query_report(
                hook.get_dashboard_widget(w["id"], include_report=True)["query_report"]["id"]
            )
            seen.append(hook.get_data_set(report["data_set_id"]))
    from_aml = next(s for s in seen if s.get("from_aml"))
    plain = next(s for s in seen if not s.get("from_aml"))
    with pytest.raises(exc.InvalidOperationError):
        hook.delete_data_set(from_aml["id"])
    assert "message" in hook.delete_data_set(plain["id"])
    with pytest.raises(exc.NotFoundError):
        hook.get_data_set(plain["id"])


def test_schedules_and_alerts(hook: AnalyticsHook) -> None:
    dashboard_id = next(iter(hook.list_dashboards()))["id"]
    schedule_body = {
        "source_type": "Dashboard",
        "source_id": dashboard_id,
        "schedule": {"repeat": "0 7 * * *", "paused": False},
        "dest": {
            "type": "EmailDest",
            "title": "Daily {{$today}}",
            "recipients": ["ops@example.org"],
            "options": {"attachment_formats": ["pdf"]},
        },
    }
    schedule = hook.create_data_schedule(schedule_body)
    assert hook.get_data_schedule(schedule["id"])["id"] == schedule["id"]
    # an update carries the whole schedule (the vendor's schema requires it)
    paused = hook.update_data_schedule(schedule["id"], {**schedule_body, "schedule": {"repeat": "0 7 * * *",
                                                                                      "paused": True}})
    assert paused["schedule"]["paused"] is True
    assert schedule["id"] in [s["id"] for s in hook.list_data_schedules(dest_type="EmailDest")]
    assert wait_success(hook, hook.execute_data_schedule(schedule["id"]))
    hook.delete_data_schedule(schedule["id"])
    with pytest.raises(exc.NotFoundError):
        hook.get_data_schedule(schedule["id"])

    widget_id = hook.get_dashboard(dashboard_id)["widgets"][0]["id"]
    alert_body = {
        "title": "Revenue dropped",
        "source_type": "DashboardWidget",
        "source_id": widget_id,
        "dest": {"type": "EmailDest", "title": "Alert", "recipients": ["ops@example.org"]},
        "schedule": {"repeat": "0 * * * *", "paused": False},
        "dynamic_filter_presets": [],
        "viz_conditions": [
            {
                "field_path": {"field_name": "revenue", "model_id": 1},
                "aggregation": "sum",
                "condition": {"operator": "less_than", "values": [100]},
            }
        ],
    }
    alert = hook.create_data_alert(alert_body)
    assert hook.get_data_alert(alert["id"])["title"] == "Revenue dropped"
    assert hook.update_data_alert(alert["id"], {**alert_body, "title": "Revenue fell"})["title"] == "Revenue fell"
    assert alert["id"] in [a["id"] for a in hook.list_data_alerts(search_term="Revenue")]
    assert wait_success(hook, hook.execute_data_alert(alert["id"]))
    assert wait_success(hook, hook.test_data_alert(alert_body))
    hook.delete_data_alert(alert["id"])


def test_user_attributes(hook: AnalyticsHook) -> None:
    attribute = hook.create_user_attribute(
        {"name": "sales_region", "attribute_type": "string", "label": "Sales region", "description": "d"}
    )
    assert attribute["name"] == "sales_region"
    assert (
        hook.update_user_attribute(
            attribute["id"], {"name": "sales_region", "attribute_type": "string", "label": "Region", "description": "d"}
        )["label"]
        == "Region"
    )
    assert "sales_region" in [a["name"] for a in hook.list_user_attributes()]
    user_id = hook.get_current_user()["id"]
    entries = [
        {
            "user_attribute_name": "sales_region",
            "input_type": "manual",
            "values": ["EU"],
            "subject_type": "User",
            "subject_id": user_id,
        }
    ]
    assert hook.upsert_user_attribute_entries(entries)
    assert any(e["subject_id"] == user_id for e in hook.list_user_attribute_entries("User", user_id))
    assert hook.compute_user_attribute_values("User", user_id)["sales_region"] == ["EU"]


def test_embed_token_jobs_and_aml(hook: AnalyticsHook) -> None:
    dashboard = next(iter(hook.list_dashboards(include_embed_info=True)))
    hashcode = (dashboard.get("embed_info") or {}).get("hash_code") or "demo"
    assert hook.create_shortened_embed_token(hashcode, "x" * 300)
    job_id = wait_success(hook, hook.publish_aml_project())
    result = hook.get_job_result(job_id)
    assert result["result"]["data"]["status"] == "success" and result["result"]["data"]["target_commit"]
    assert hook.get_job(job_id)["status"] == "success"
    assert any(line["level"] == "INFO" for line in hook.get_job_logs(job_id))
    assert wait_success(hook, hook.validate_aml_project("master", "abc123"))


@pytest.mark.parametrize("output", ["csv", "xlsx", "pdf"])
def test_export_and_download(hook: AnalyticsHook, analytics_emulator, tmp_path: Path, output: str) -> None:
    widget_id = hook.get_dashboard(next(iter(hook.list_dashboards()))["id"])["widgets"][0]["id"]
    job = hook.submit_widget_export(widget_id, output)
    with pytest.raises(exc.ExportJobNotReady):
        hook.download_export(job["id"], tmp_path / "early")
    wait_success(hook, job)
    result = hook.download_export(job["id"], str(tmp_path) + "/")
    data = Path(result["path"]).read_bytes()
    assert result["bytes"] == len(data) > 0
    magic = {"csv": b"", "xlsx": b"PK", "pdf": b"%PDF"}[output]
    assert data.startswith(magic)
    files = [r for r in analytics_emulator.requests if r.origin == "files"]
    assert files and not any(r.carried_key for r in files)  # the key never went to the file host


def test_250_users_arrive_whole_in_3_requests(hook: AnalyticsHook, analytics_emulator) -> None:
    total = sum(1 for _ in hook.list_users(limit=100))
    analytics_emulator.add_users(250 - total)
    analytics_emulator.clear_requests()
    users = list(hook.list_users(limit=100))
    assert len(users) == 250 and len({u["id"] for u in users}) == 250
    assert len(api_requests(analytics_emulator, "list_users")) == 3


def test_forced_429_is_waited_out_once(hook: AnalyticsHook, analytics_emulator) -> None:
    analytics_emulator.inject("get_current_user", status=429, retry_after=2)
    started = time.monotonic()
    assert hook.get_current_user()["id"]
    assert time.monotonic() - started >= 2
    assert [r.status for r in api_requests(analytics_emulator, "get_current_user")] == [429, 200]


def test_500_500_200_on_a_get_succeeds(hook: AnalyticsHook, analytics_emulator) -> None:
    hook.retry_policy = type(hook.retry_policy)(initial_wait=0.05)
    analytics_emulator.inject("get_dashboard", status=500, times=2)
    assert hook.get_dashboard(next(iter(hook.list_dashboards()))["id"])["id"]
    assert [r.status for r in api_requests(analytics_emulator, "get_dashboard")] == [500, 500, 200]


def test_500_on_create_data_schedule_raises_after_one_request(hook: AnalyticsHook, analytics_emulator) -> None:
    analytics_emulator.inject("create_data_schedule", status=500)
    with pytest.raises(exc.InternalServiceError) as raised:
        hook.create_data_schedule(
            {
                "source_type": "Dashboard",
                "source_id": 1,
                "schedule": {"repeat": "0 7 * * *"},
                "dest": {"type": "EmailDest", "recipients": ["a@example.org"]},
            }
        )
    assert raised.value.debug_id or "debug" in str(raised.value).lower()
    assert len(api_requests(analytics_emulator, "create_data_schedule")) == 1


def test_dropped_connection_then_success(hook: AnalyticsHook, analytics_emulator) -> None:
    hook.retry_policy = type(hook.retry_policy)(initial_wait=0.05)
    analytics_emulator.inject("get_current_user", drop=True)
    assert hook.get_current_user()["id"]


def test_truncated_download_is_retried(hook: AnalyticsHook, analytics_emulator, tmp_path: Path) -> None:
    hook.retry_policy = type(hook.retry_policy)(initial_wait=0.05)
    widget_id = hook.get_dashboard(next(iter(hook.list_dashboards()))["id"])["widgets"][0]["id"]
    job_id = wait_success(hook, hook.submit_widget_export(widget_id, "csv"))
    analytics_emulator.inject("download_file", truncate=True)
    result = hook.download_export(job_id, tmp_path / "out.csv")
    assert Path(result["path"]).stat().st_size == result["bytes"]
    assert len([r for r in analytics_emulator.requests if r.origin == "files"]) == 2


@pytest.mark.parametrize(
    ("setup", "call", "error", "fragment"),
    [
        ("bad_key", lambda h: h.get_current_user(), exc.AuthError, "401 AuthError on GET /users/me"),
        ("viewer", lambda h: h.create_group({"name": "x"}), exc.PermissionDeniedError, "403 PermissionDeniedError"),
        (None, lambda h: h.get_dashboard(999999), exc.NotFoundError, "404"),
        (None, lambda h: h.create_data_schedule({"source_type": "Nope"}), exc.RecordError, "422 RecordError"),
    ],
)
def test_client_errors_raise_at_once_with_the_service_message(
    analytics_emulator, monkeypatch, setup, call, error, fragment
) -> None:
    key = {"bad_key": "not-a-key-123456", "viewer": analytics_emulator.key_for("user")}.get(setup)
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", analytics_emulator.connection_json(api_key=key))
    hook = AnalyticsHook()
    analytics_emulator.clear_requests()
    with pytest.raises(error) as raised:
        call(hook)
    assert fragment in str(raised.value)
    assert raised.value.message  # the service's own words
    assert len([r for r in analytics_emulator.requests if r.origin == "api"]) == 1


def test_list_jobs_asks_100_ids_a_request(hook: AnalyticsHook, analytics_emulator) -> None:
    ids = analytics_emulator.add_jobs(250, seconds=0.0)
    listed = hook.list_jobs([*ids, 999_999])
    assert [j["id"] for j in listed] == ids  # the unknown id is left out, as the service does
    assert [len(r.query["ids[]"]) for r in api_requests(analytics_emulator, "list_jobs")] == [100, 100, 51]


def test_dashboards_widgets_and_filters_are_found_by_name(hook: AnalyticsHook, analytics_emulator) -> None:
    board = hook.find_dashboard("sales  overview")
    assert board["id"] == 1 and board["url"] and board["widgets"]  # whole: GET /dashboards/{id}
    assert hook.find_widget("Sales overview", "Orders by channel")["id"] == "102"
    assert hook.find_widget(board, "revenue by region and MONTH")["id"] == "101"
    assert hook.filter_conditions(1, {"Region": ["EU"], "channel": ["Web"]}) == [
        {"dynamic_filter_id": 1, "condition": {"operator": "is", "values": ["EU"]}},
        {"dynamic_filter_id": 2, "condition": {"operator": "is", "values": ["Web"]}},
    ]
    operations = [r.operation for r in analytics_emulator.requests]
    assert operations.count("list_dashboards_metadata") == 1  # the titles: one request, once per hook
    assert operations.count("list_dashboards") == 0


def test_an_ambiguous_title_names_each_dashboard_with_its_url(hook: AnalyticsHook, analytics_emulator) -> None:
    (twin,) = analytics_emulator.add_dashboards(["Sales overview"])
    with pytest.raises(exc.AnalyticsParameterError) as error:
        hook.find_dashboard("Sales overview")
    text = str(error.value)
    assert text.startswith("2 dashboards are named 'Sales overview': 'Sales overview' (id 1, http")
    assert f"'Sales overview' (id {twin}, http" in text and text.endswith("give its id instead (dashboard=<id>)")
    assert hook.find_dashboard(twin)["title"] == "Sales overview"  # the id still works


def test_widgets_with_one_title_on_a_dashboard_are_ambiguous(hook: AnalyticsHook, analytics_emulator) -> None:
    with analytics_emulator.world.lock:
        analytics_emulator.world.state.widgets["102"]["source_title"] = "Revenue by region and month"
    with pytest.raises(exc.AnalyticsParameterError,
                       match=r"2 widgets are named 'Revenue by region and month' on dashboard 'Sales overview' "
                             r"\(id 1\): 'Revenue by region and month' \(id 101, http.*give its id instead "
                             r"\(widget_id=<id>\)"):
        hook.find_widget(1, "Revenue by region and month")


def test_titles_are_read_page_by_page_where_the_metadata_list_is_refused(hook, analytics_emulator) -> None:
    ids = analytics_emulator.add_dashboards([f"Region report {n}" for n in range(150)])
    analytics_emulator.inject("list_dashboards_metadata", status=404)
    assert hook.find_dashboard("Region report 149")["id"] == ids[-1]
    assert [r.operation for r in analytics_emulator.requests].count("list_dashboards") == 2  # 153 titles, 100 a page


def test_a_dashboard_url_by_title_and_filter_label_is_the_one_by_ids(hook: AnalyticsHook, analytics_emulator) -> None:
    by_ids = hook.build_dashboard_url(1, [{"dynamic_filter_id": 1, "condition": {"operator": "is", "values": ["EU"]}}])
    by_names = hook.build_dashboard_url("Sales overview", filters={"Region": ["EU"]})
    assert by_names == by_ids and by_ids["fstate_hash"]
    with pytest.raises(exc.AnalyticsParameterError, match="Region has no option 'EMEA'"):
        hook.build_dashboard_url("Sales overview", filters={"Region": ["EMEA"]})
    assert [r.operation for r in analytics_emulator.requests].count("build_dashboard_url") == 2  # not the refused one
