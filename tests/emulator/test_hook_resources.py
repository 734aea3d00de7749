"""The hook's methods against the emulator over loopback, by resource in the order of
``hooks/resources`` (each exchange judged by the vendor's document)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsApiError, NotFoundError
from analytics_provider.hooks.analytics import AnalyticsHook, is_job
from analytics_provider.testing.emulator.app import AnalyticsEmulator

QUERY = {"dimensions": [{"field": "orders.region"}], "metrics": [{"field": "orders.revenue", "aggregation": "sum"}],
         "order": [{"id": "orders.region", "order": "asc"}]}


@pytest.fixture
def hook(analytics_connection: str, emu: AnalyticsEmulator) -> AnalyticsHook:
    emu.job_duration = 0.05
    return AnalyticsHook(analytics_connection)


# -- users ---------------------------------------------------------------------------------------------------

def test_users_restore_reinvite_and_revoke(hook: AnalyticsHook, emu: AnalyticsEmulator) -> None:
    assert "restored" in hook.restore_user(9)["message"]
    with pytest.raises(AnalyticsApiError, match="is not deleted"):
        hook.restore_user(9)
    assert hook.wait_for_job(hook.resend_user_invite(8)["id"], poll_interval=0.02, timeout=10).status == "success"
    explorer_key = emu.key_for("explorer")
    hook.revoke_user_api_key(6)
    assert explorer_key not in emu.world.state.keys


# -- groups --------------------------------------------------------------------------------------------------

def test_group_membership_and_deletion(hook: AnalyticsHook) -> None:
    hook.add_user_to_group(2, 4)
    hook.add_user_to_group(2, 4)  # again: no change, no error (a retried call is safe)
    assert 4 in hook.get_group(2)["user_ids"]
    hook.remove_user_from_group(2, 4)
    assert 4 not in hook.get_group(2)["user_ids"]
    hook.delete_group(2)
    with pytest.raises(NotFoundError):
        hook.get_group(2)


# -- dashboards and widgets ----------------------------------------------------------------------------------

def test_dashboards_metadata_clone_and_delete(hook: AnalyticsHook) -> None:
    metadata = hook.list_dashboards_metadata(version=4)
    assert [(d["id"], d["version"]) for d in metadata] == [(3, 4)]
    job = hook.clone_canvas_dashboard(3, "executive_copy", new_title="Executive (copy)")
    assert hook.wait_for_job(job["id"], poll_interval=0.02, timeout=10).status == "success"
    assert "executive_copy" in {d["uname"] for d in hook.list_dashboards_metadata()}
    with pytest.raises(AnalyticsApiError, match="not a canvas dashboard"):
        hook.clone_canvas_dashboard(1, "sales_copy")
    hook.delete_dashboard_widget("102")
    assert [w["id"] for w in hook.get_dashboard(1)["widgets"]] == ["101"]
    hook.delete_dashboard(2)
    with pytest.raises(NotFoundError):
        hook.get_dashboard(2)


# -- query reports and data sets -----------------------------------------------------------------------------

def test_a_query_job_holds_the_rows_and_the_same_query_then_answers_at_once(hook: AnalyticsHook) -> None:
    job = hook.submit_data_set_query(1, QUERY)
    assert is_job(job)
    assert hook.wait_for_job(job["id"], poll_interval=0.02, timeout=10).status == "success"
    result = hook.get_job_result(job["id"])
    assert result["result"]["type"] == "DataModel.execute_model_query"
    data = result["result"]["data"]
    assert data["fields"] == ["orders.region", "orders.revenue"]
    assert [row[0] for row in data["values"]] == ["APAC", "EU", "LATAM", "US"]  # grouped by region, ordered
    assert data["meta"]["num_rows"] == 4
    cached = hook.submit_data_set_query(1, QUERY)
    assert not is_job(cached) and cached == data
    again = hook.submit_data_set_query(1, {**QUERY, "bust_cache": True})
    assert is_job(again)


def test_query_filters_narrow_the_rows(hook: AnalyticsHook) -> None:
    query = {**QUERY, "filters": [{"field": "orders.region", "operator": "is", "values": ["EU"]}]}
    job = hook.submit_data_set_query(1, query)
    hook.wait_for_job(job["id"], poll_interval=0.02, timeout=10)
    assert [row[0] for row in hook.get_job_result(job["id"])["result"]["data"]["values"]] == ["EU"]


def test_generated_sql_names_the_model_table(hook: AnalyticsHook) -> None:
    sql = hook.generate_data_set_sql(1, QUERY)
    assert "FROM public.orders" in sql and "SUM(revenue)" in sql and "GROUP BY 1" in sql
    with pytest.raises(AnalyticsApiError, match=r"has no field\(s\) nope"):
        hook.generate_data_set_sql(1, {"metrics": [{"field": "orders.nope"}]})


# -- data sources and models (and the deletes of attributes, which follow the same rules) --------------------

def test_manifests_are_uploaded_and_synced_by_a_job(hook: AnalyticsHook, tmp_path: Path) -> None:
    good = tmp_path / "manifest.json"
    good.write_text('{"metadata": {"dbt_version": "1.8.0"}, "nodes": {}}')
    with good.open("rb") as handle:
        job = hook.upload_dbt_manifests([good, ("second.json", handle)], data_source_name="Production warehouse")
    assert hook.wait_for_job(job["id"], poll_interval=0.02, timeout=10).status == "success"
    broken = tmp_path / "broken.json"
    broken.write_text('{"nodes": ')
    failed = hook.wait_for_job(hook.upload_dbt_manifests([broken])["id"], poll_interval=0.02, timeout=10)
    assert failed.status == "failure" and "broken.json" in (failed.last_error_log or "")
    with pytest.raises(NotFoundError):
        hook.upload_dbt_manifests([good], data_source_name="No such source")


def test_deletes_of_data_sources_and_attributes_follow_the_rules(hook: AnalyticsHook) -> None:
    with pytest.raises(AnalyticsApiError, match="used by data sets"):
        hook.delete_data_source(1)
    hook.delete_data_source(2)
    hook.delete_user_attribute(4)
    assert "department" not in {a["name"] for a in hook.list_user_attributes()}
    with pytest.raises(AnalyticsApiError) as refused:
        hook.delete_user_attribute(1)
    assert refused.value.status == 403


# -- data schedules and alerts -------------------------------------------------------------------------------

def test_data_schedule_test_run(hook: AnalyticsHook) -> None:
    schedule = {"source_type": "Dashboard", "source_id": 1, "schedule": {"repeat": "0 7 * * *", "paused": False},
                "dest": {"type": "EmailDest", "recipients": ["ops@example.org"]}}
    job = hook.test_data_schedule(schedule)
    assert hook.wait_for_job(job["id"], poll_interval=0.02, timeout=10).status == "success"


# -- AML tags (with the jobs, queues, AI skills and DDL check the catalog test reads) ------------------------

def test_tags_jobs_and_catalog(hook: AnalyticsHook, emu: AnalyticsEmulator) -> None:
    assert {t["name"] for t in hook.list_tags()} >= {"certified", "finance"}
    added = hook.add_object_tags("sales", "dataset", ["finance"])
    assert hook.wait_for_job(added["id"], poll_interval=0.02, timeout=10).status == "success"
    assert emu.world.state.object_tags[("dataset", "sales")] == ["certified", "finance"]
    unknown = hook.add_object_tags("sales", "dataset", ["nope"])
    assert hook.wait_for_job(unknown["id"], poll_interval=0.02, timeout=10).status == "failure"
    assert [o["id"] for o in hook.recommend_archivable_objects()] == [3]
    assert {s["activation"] for s in hook.list_ai_skills()} <= {"never", "always", "auto"}
    queues = hook.list_job_queues()
    assert {q["queue"] for q in queues} >= {"default", "export"}
    jobs = hook.list_jobs([added["id"], unknown["id"], 999])
    assert [j["id"] for j in jobs] == [added["id"], unknown["id"]]
    assert hook.validate_ddl("CREATE TABLE {{ #SOURCE }} AS (select 1)") == "success"


# -- shareable links -----------------------------------------------------------------------------------------

def test_shareable_link_life_cycle(hook: AnalyticsHook) -> None:
    link = hook.create_shareable_link({"resource_type": "Dashboard", "resource_id": 2, "title": "Public"})
    assert hook.get_shareable_link(link["id"])["title"] == "Public"
    assert {item["id"] for item in hook.list_shareable_links(resource_id=2)} == {link["id"]}
    updated = hook.update_shareable_link(link["id"], {"resource_type": "Dashboard", "resource_id": 2, "title": "T"})
    assert updated["title"] == "T" and updated["password"] is None
    hook.delete_shareable_link(link["id"])
    with pytest.raises(NotFoundError):
        hook.get_shareable_link(link["id"])


# -- webhooks ------------------------------------------------------------------------------------------------

def test_webhook_events_are_relayed_with_their_headers(hook: AnalyticsHook, emu: AnalyticsEmulator) -> None:
    signature = "sha256=" + "0f" * 32
    body = b'{"action":"opened","number":7}'
    results = hook.send_github_event(body, event="pull_request", hook_id="42", signature=signature)
    assert results[0]["status"] == "success"
    sent = emu.requests[-1]
    assert sent.headers["X-GitHub-Event"] == "pull_request" and sent.json == {"action": "opened", "number": 7}
    assert hook.send_gitlab_event({"object_kind": "push"}, event="Push Hook", token="gitlab-token")[0]["status"]
    app: dict[str, Any] = hook.send_github_app_event({"action": "created"}, event="ping", signature=signature)
    assert app == {"status": "skipped", "data": []}
    with pytest.raises(AnalyticsApiError, match="sha256"):
        hook.send_github_event({}, event="push", hook_id="1", signature="md5=abc")
