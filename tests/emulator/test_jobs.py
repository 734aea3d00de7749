"""Jobs: statuses move with the clock, de-duplication, logs, results, failures, AML publish outcomes."""

from __future__ import annotations

import time
from typing import Any

import pytest

from analytics_provider.testing.emulator.jobs import JobBook, iso

from .conftest import Api, error_of

DIAGNOSTIC = {"category": "error", "code": 1001, "message": "Unexpected token '}'",
              "file_path": "models/orders.model.aml", "start": 0, "end": 1}


def test_statuses_follow_the_clock() -> None:
    now = [1000.0]
    book = JobBook(clock=lambda: now[0])
    job = book.submit("preload_dashboard", 1, {"id": 1}, duration=6.0)
    seen = []
    for moment in (0, 0.5, 1.5, 2.5, 5.9, 6.0, 60):
        seen.append(job.status_at(1000.0 + moment))
    assert seen == ["created", "created", "queued", "running", "running", "success", "success"]
    doc = job.to_json(1000.0 + 1.0)
    assert doc["start_time"] is None and doc["end_time"] is None and doc["cancellable"] is True
    doc = job.to_json(1000.0 + 7)
    assert doc["start_time"] and doc["end_time"] and doc["cancellable"] is False and doc["last_error_log"] is None


def test_a_scripted_job_passes_through_flow_pending_and_cancelling() -> None:
    now = [1000.0]
    book = JobBook(clock=lambda: now[0])
    book.script_next("execute_data_schedule", [("queued", 1), ("flow_pending", 2), ("running", 1), ("success", 0)])
    job = book.submit("execute_data_schedule", 1, {"id": 1}, duration=60.0)
    seen = [job.status_at(1000.0 + moment) for moment in (0, 1, 2.9, 3, 3.9, 4, 99)]
    assert seen == ["queued", "flow_pending", "flow_pending", "running", "running", "success", "success"]
    assert job.to_json(1002)["start_time"] is None and job.to_json(1003.5)["start_time"] == iso(1003)
    assert job.to_json(1005)["end_time"] == iso(1004)
    assert [line["message"] for line in job.logs(1002)] == ["Job queued", "Job flow_pending"]
    assert book.submit("execute_data_schedule", 1, {"id": 2}, duration=6.0).status_at(1007) == "success"  # once

    book.script_next("preload_dashboard", [("running", 1), ("cancelling", 1), ("cancelled", 0)])
    job = book.submit("preload_dashboard", 1, {"id": 1}, duration=60.0)
    assert [job.status_at(1000.0 + m) for m in (0.5, 1.5, 2.5)] == ["running", "cancelling", "cancelled"]
    assert job.to_json(1001.5)["cancellable"] is False and job.to_json(1003)["end_time"]
    assert job.result(1003) == {"status": "cancelled", "error": None, "result": None}
    assert job.logs(1003)[-1]["message"] == "Job cancelled"


@pytest.mark.parametrize("script", [[], [("running", 1)], [("success", 1), ("success", 0)], [("queued", -1),
                                                                                               ("success", 0)]])
def test_a_script_must_end_in_a_final_status_and_only_there(script: Any) -> None:
    with pytest.raises(ValueError, match="script"):
        JobBook().script_next("preload_dashboard", script)


def test_scripted_jobs_over_http(api: Api, emu, monkeypatch) -> None:
    """Each step of a script read over HTTP as the world's clock passes it (a clock of the test's own:
    on the wall clock a loaded machine's first read came after the 0.2 s of flow_pending)."""
    now = [time.time()]
    monkeypatch.setattr(emu.world, "clock", lambda: now[0])

    def status(job_id: int) -> str:
        return str(api.get(f"/jobs/{job_id}").json()["job"]["status"])

    def after(seconds: float, job_id: int) -> str:
        now[0] += seconds
        return status(job_id)

    emu.script_next_job("bust_data_source_cache", [("flow_pending", 0.2), ("running", 0.05), ("success", 0)])
    job_id = api.post("/data_sources/1/bust_exploration_cache").json()["job"]["id"]
    assert [status(job_id), after(0.1, job_id), after(0.12, job_id), after(0.1, job_id)] == [
        "flow_pending", "flow_pending", "running", "success"]
    (added,) = emu.add_jobs(1, script=[("cancelling", 0.05), ("cancelled", 0)])
    assert [status(added), after(0.1, added)] == ["cancelling", "cancelled"]


def test_a_job_scripted_by_reads_moves_on_at_each_read_and_not_with_the_clock(api: Api, emu) -> None:
    emu.script_next_job("bust_data_source_cache", [("queued", 1), ("flow_pending", 2), ("success", 0)], by_reads=True)
    job_id = api.post("/data_sources/1/bust_exploration_cache").json()["job"]["id"]
    seen = [api.get(f"/jobs/{job_id}").json()["job"]["status"]]
    seen += [job["status"] for job in api.get("/jobs", params={"ids[]": [job_id]}).json()["jobs"]]
    seen += [api.get(f"/jobs/{job_id}").json()["job"]["status"] for _ in range(2)]
    assert seen == ["queued", "flow_pending", "flow_pending", "success"]
    (job,) = [j for j in emu.jobs if j.id == job_id]
    assert job.answered == seen


def test_a_job_is_seen_pending_then_successful(api: Api, emu) -> None:
    emu.job_duration = 3.0  # running for 2 s: many reads land in it, however slowly a busy machine answers
    submitted = api.post("/data_sources/1/bust_exploration_cache").json()["job"]
    assert submitted["status"] == "created"
    seen = [submitted["status"]]
    deadline = time.monotonic() + 60  # only turns a job that never ends into a failure
    while seen[-1] != "success" and time.monotonic() < deadline:
        seen.append(api.get(f"/jobs/{submitted['id']}").json()["job"]["status"])
        time.sleep(0.1)  # about 30 reads in all: well inside the rate limit
    assert seen[-1] == "success"
    order = ["created", "queued", "running", "success"]
    steps = [order.index(status) for status in seen]
    assert steps == sorted(steps) and "running" in seen  # never backwards
    job = api.get(f"/jobs/{submitted['id']}").json()["job"]
    assert set(job) >= {"id", "user_id", "start_time", "end_time", "cancellable", "last_error_log", "status"}
    assert job["user_id"] == 1


def test_pending_result_is_null_and_an_untyped_success_result_is_absent(api: Api) -> None:
    job_id = api.post("/dashboards/1/submit_preload", json={"bust_cache": False}).json()["job"]["id"]
    pending = api.get(f"/jobs/{job_id}/result").json()
    assert pending["result"] is None and pending["error"] is None and pending["status"] in ("created", "queued")
    api.wait_job(job_id)
    done = api.get(f"/jobs/{job_id}/result").json()
    # the vendor's JobResult types the results of AML and query jobs only: a preload's has none
    assert done == {"status": "success", "error": None}
    logs = api.get(f"/jobs/{job_id}/logs").json()["job_logs"]
    assert logs and {line["level"] for line in logs} == {"INFO"}
    assert all(set(line) == {"level", "message", "timestamp"} for line in logs)


def test_identical_pending_job_is_answered_already_existed(api: Api, emu) -> None:
    body = {"output": "xlsx"}
    first = api.post("/dashboard_widgets/101/submit_export", json=body).json()["job"]
    second = api.post("/dashboard_widgets/101/submit_export", json=body).json()["job"]
    assert second["status"] == "already_existed" and second["existing_job_id"] == first["id"] != second["id"]
    other_user = api.post("/dashboard_widgets/101/submit_export", json=body, key=emu.key_for("analyst")).json()
    assert other_user["job"]["status"] == "created"  # another user's identical export is its own job
    other_params = api.post("/dashboard_widgets/101/submit_export", json={"output": "pdf"}).json()["job"]
    assert other_params["status"] == "created"
    assert api.get(f"/jobs/{second['id']}").json()["job"]["existing_job_id"] == first["id"]
    api.wait_job(first["id"])
    third = api.post("/dashboard_widgets/101/submit_export", json=body).json()["job"]
    assert third["status"] == "created"  # the first one is final now
    assert [j.status for j in emu.jobs if j.id == second["id"]] == ["already_existed"]


def test_fail_next_job(api: Api, emu) -> None:
    emu.fail_next_job("execute_data_schedule", last_error_log="SMTP server refused the message")
    job_id = api.post("/data_schedules/1/submit_execute").json()["job"]["id"]
    job = api.wait_job(job_id)
    assert job["status"] == "failure" and job["last_error_log"] == "SMTP server refused the message"
    errors = [line for line in api.get(f"/jobs/{job_id}/logs").json()["job_logs"] if line["level"] == "ERROR"]
    assert [line["message"] for line in errors] == ["SMTP server refused the message"]
    result = api.get(f"/jobs/{job_id}/result").json()
    assert result == {"status": "failure", "error": "JobExecutionError"}  # a failed result is typed only for AML
    next_one = api.post("/data_schedules/1/submit_execute").json()["job"]["id"]
    assert api.wait_job(next_one)["status"] == "success"  # only the next one fails
    inspected = emu.jobs
    assert [(j.kind, j.status) for j in inspected] == [("execute_data_schedule", "failure"),
                                                         ("execute_data_schedule", "success")]
    assert inspected[0].params == {"id": 1} and inspected[0].created <= inspected[1].created


def test_jobs_of_others_are_hidden_from_non_admins(api: Api, emu) -> None:
    job_id = api.post("/data_sources/1/bust_exploration_cache").json()["job"]["id"]
    viewer = emu.key_for("user")
    assert api.get(f"/jobs/{job_id}", key=viewer).status_code == 404
    own = api.post("/dashboards/1/submit_preload", json={}, key=viewer).json()["job"]["id"]
    assert api.get(f"/jobs/{own}", key=viewer).status_code == 200
    assert api.get(f"/jobs/{own}").status_code == 200  # admins see every job


def test_publish_success_result(api: Api) -> None:
    job_id = api.post("/aml_studio/projects/submit_publish", json={}).json()["job"]["id"]
    assert api.wait_job(job_id)["status"] == "success"
    result = api.get(f"/jobs/{job_id}/result").json()["result"]
    assert result["type"] == "AmlStudio::Publish.call"
    data = result["data"]
    assert data["status"] == "success" and len(data["target_commit"]) == 40
    assert set(data["preparing_production_job"]) == {"job_id", "status"}
    assert {o["type"] for o in data["objects_status"]} == {"Dataset", "Dashboard"}
    assert all(set(o) == {"id", "type", "uname", "title", "status"} for o in data["objects_status"])


def test_publish_with_diagnostics_fails_with_the_syntax_errors(api: Api, emu) -> None:
    emu.set_publish_diagnostics([DIAGNOSTIC])
    job_id = api.post("/aml_studio/projects/submit_publish", json={}).json()["job"]["id"]
    job = api.wait_job(job_id)
    assert job["status"] == "failure" and "syntax error" in job["last_error_log"]
    result = api.get(f"/jobs/{job_id}/result").json()
    assert result["status"] == "failure" and result["error"]
    data = result["result"]["data"]
    assert result["result"]["type"] == "AmlStudio::Publish.call"
    assert data["status"] == "error" and data["error_type"] == "syntax_error" and data["target_commit"]
    assert data["error_details"]["diagnostics"] == [DIAGNOSTIC]
    errors = [x["message"] for x in api.get(f"/jobs/{job_id}/logs").json()["job_logs"] if x["level"] == "ERROR"]
    assert any("models/orders.model.aml" in line for line in errors)
    validate = api.post("/aml_studio/projects/submit_validate", json={"branch_name": "b", "commit_oid": "c"})
    assert api.wait_job(validate.json()["job"]["id"])["status"] == "failure"
    emu.clear_publish_diagnostics()
    again = api.post("/aml_studio/projects/submit_publish", json={}).json()["job"]["id"]
    assert api.wait_job(again)["status"] == "success"


def test_publish_checks_the_object_mapping_and_validate_its_parameters(api: Api) -> None:
    bad = api.post("/aml_studio/projects/submit_publish", json={"object_mapping": {"datasets": [1]}})
    assert bad.status_code == 422 and error_of(bad)["type"] == "RecordError"
    missing = api.post("/aml_studio/projects/submit_validate", json={"branch_name": "master"})
    assert missing.status_code == 400 and "commit_oid" in error_of(missing)["message"]


def test_job_duration_is_settable_and_reset_restores_it(api: Api, emu) -> None:
    emu.job_duration = 30
    job_id = api.post("/data_sources/1/bust_exploration_cache").json()["job"]["id"]
    time.sleep(0.05)
    assert api.get(f"/jobs/{job_id}").json()["job"]["status"] in ("created", "queued", "running")
    assert api.post("/data_sources/1/bust_exploration_cache").json()["job"]["status"] == "already_existed"
    emu.job_duration = 0
    assert api.post("/dashboards/1/submit_preload", json={}).json()["job"]["status"] == "success"
    emu.reset()
    assert emu.job_duration != 30 and emu.jobs == []
    assert api.get(f"/jobs/{job_id}").status_code == 404


def test_alert_execution_reports_whether_it_triggered(api: Api) -> None:
    alert: dict[str, Any] = {"title": "Any revenue", "source_type": "DashboardWidget", "source_id": "101",
             "schedule": {"repeat": "0 * * * *", "paused": False}, "dynamic_filter_presets": [],
             "dest": {"type": "EmailDest", "recipients": ["a@example.org"]},
             "viz_conditions": [{"field_path": {"field_name": "revenue", "model_id": 1}, "aggregation": "sum",
                                 "condition": {"operator": "greater_than", "values": [1]}}]}
    job_id = api.post("/data_alerts/submit_execute", json={"test_data_alert": alert}).json()["job"]["id"]
    api.wait_job(job_id)

    def said(job: int) -> str:
        return " ".join(line["message"] for line in api.get(f"/jobs/{job}/logs").json()["job_logs"])

    assert "condition met: notifying" in said(job_id)
    alert["viz_conditions"][0]["condition"]["values"] = [10**12]
    job_id = api.post("/data_alerts/submit_execute", json={"test_data_alert": alert}).json()["job"]["id"]
    api.wait_job(job_id)
    assert "not met: nothing sent" in said(job_id)


def test_list_jobs_answers_the_jobs_it_may_show_and_takes_at_most_100_ids(api: Api, emu) -> None:
    ids = emu.add_jobs(101, seconds=0.0)
    viewer_own = api.post("/dashboards/1/submit_preload", json={}, key=emu.key_for("user")).json()["job"]["id"]
    asked = [*ids[:98], 999_999, viewer_own]  # one that does not exist, one of another user
    listed = api.get("/jobs", params={"ids[]": asked}).json()["jobs"]
    assert [j["id"] for j in listed] == [*ids[:98], viewer_own]  # admins see every job
    as_viewer = api.get("/jobs", params={"ids[]": asked}, key=emu.key_for("user")).json()["jobs"]
    assert [j["id"] for j in as_viewer] == [viewer_own]  # the others' are left out, not refused
    too_many = api.get("/jobs", params={"ids[]": ids})
    assert too_many.status_code == 400 and "at most 100" in error_of(too_many)["message"]


def test_requests_are_counted_per_operation_and_status_even_when_not_kept(api: Api, emu) -> None:
    (job_id,) = emu.add_jobs(1, seconds=0.0)
    emu.set_recording(False)
    api.get(f"/jobs/{job_id}")
    api.get("/jobs", params={"ids[]": [job_id]})
    api.get("/jobs/999999")
    emu.set_rate_limit(quota=1, operation="list_jobs")
    api.get("/jobs", params={"ids[]": [job_id]})
    assert emu.requests == []
    assert emu.request_counts() == {"get_job": {"200": 1, "404": 1}, "list_jobs": {"200": 1, "429": 1}}
    emu.clear_requests()
    assert emu.request_counts() == {}


def test_a_fault_of_get_job_reaches_list_jobs_unless_it_has_its_own(api: Api, emu) -> None:
    (job_id,) = emu.add_jobs(1, seconds=0.0)
    emu.inject("get_job", status=503, times=2)
    assert api.get("/jobs", params={"ids[]": [job_id]}).status_code == 503  # a trigger's read meets the outage
    emu.inject("list_jobs", status=500)
    assert api.get("/jobs", params={"ids[]": [job_id]}).status_code == 500  # its own comes first
    assert api.get(f"/jobs/{job_id}").status_code == 503
    assert api.get(f"/jobs/{job_id}").status_code == 200
