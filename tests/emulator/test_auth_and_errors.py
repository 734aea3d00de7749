"""Keys, roles, and every error class the emulator answers, in the document's body shapes."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.testing.emulator.permissions import ADMIN_OPERATIONS, ANALYST_OPERATIONS

from .conftest import Api, error_of


def test_missing_and_invalid_keys_get_401_auth_error(api: Api) -> None:
    for key in (None, "not-a-real-key"):
        answer = api.get("/users/me", key=key)
        assert answer.status_code == 401
        assert error_of(answer)["type"] == "AuthError" and error_of(answer)["message"]


def test_the_key_is_read_from_either_name_by_default(api: Api, emu) -> None:
    for name in ("X-Service-Key", "X-Holistics-Key", "x-holistics-key"):
        assert api.get("/users/me", key=None, headers={name: emu.api_key}).status_code == 200, name
    assert emu.requests[-1].headers["x-holistics-key"] == "***"
    answer = api.get("/users/me", key=None, headers={"X-Other-Key": emu.api_key})
    assert answer.status_code == 401
    assert "X-Service-Key or X-Holistics-Key" in error_of(answer)["message"]


def test_current_user_answers_get_and_post(api: Api) -> None:
    for method in ("GET", "POST"):
        answer = api.call(method, "/users/me")
        assert answer.status_code == 200
        user = answer.json()["user"]
        assert user["role"] == "admin" and user["has_authentication_token"] is True


@pytest.mark.parametrize("role", ["user", "explorer", "analyst", "admin", "growth_admin", "it_admin"])
def test_every_role_has_a_seeded_key(api: Api, emu, role: str) -> None:
    assert api.get("/users/me", key=emu.key_for(role)).json()["user"]["role"] == role


def test_viewer_alias_and_unknown_role(emu) -> None:
    assert emu.key_for("viewer") == emu.key_for("user")
    with pytest.raises(ValueError, match="unknown role"):
        emu.key_for("superuser")


@pytest.mark.parametrize(
    ("role", "method", "path", "body"),
    [
        ("user", "POST", "/groups", {"group": {"name": "x"}}),
        ("explorer", "GET", "/users", None),
        ("analyst", "PUT", "/data_sources/1", {"data_source": {"name": "x"}}),
        ("analyst", "POST", "/aml_studio/projects/submit_publish", {}),
        ("analyst", "DELETE", "/data_sets/2", None),
        ("user", "POST", "/data_schedules/1/submit_execute", None),
        ("explorer", "GET", "/data_sources/1", None),
    ],
)
def test_roles_below_the_rule_get_403(api: Api, emu, role: str, method: str, path: str, body) -> None:
    answer = api.call(method, path, key=emu.key_for(role), json=body)
    assert answer.status_code == 403
    assert error_of(answer)["type"] == "PermissionDeniedError"


def test_permission_rule_covers_known_operations() -> None:
    assert "publish_aml_project" in ADMIN_OPERATIONS and "create_group" in ADMIN_OPERATIONS
    assert "execute_data_schedule" in ANALYST_OPERATIONS and not ADMIN_OPERATIONS & ANALYST_OPERATIONS


def test_analyst_may_run_a_schedule_and_growth_admin_may_publish(api: Api, emu) -> None:
    assert api.post("/data_schedules/1/submit_execute", key=emu.key_for("analyst")).status_code == 200
    assert api.post("/aml_studio/projects/submit_publish", key=emu.key_for("growth_admin"), json={}).status_code == 200


def test_a_deleted_user_loses_api_access(api: Api, emu) -> None:
    key = emu.key_for("explorer")
    assert api.get("/users/me", key=key).status_code == 200
    user_id = api.get("/users/me", key=key).json()["user"]["id"]
    assert api.delete(f"/users/{user_id}").json()["message"]
    assert api.get("/users/me", key=key).status_code == 401
    again = api.delete(f"/users/{user_id}")
    assert again.status_code == 422 and error_of(again)["type"] == "InvalidOperationError"


def test_revoking_api_access_takes_effect(api: Api, emu) -> None:
    key = emu.key_for("analyst")
    user_id = api.get("/users/me", key=key).json()["user"]["id"]
    assert api.put(f"/users/{user_id}", json={"user": {"allow_authentication_token": False}}).status_code == 200
    assert error_of(api.get("/users/me", key=key))["type"] == "AuthError"


def test_bad_enum_names_the_parameter_and_allowed_values(api: Api) -> None:
    answer = api.get("/users", params={"role": "wizard"})
    assert answer.status_code == 400
    error = error_of(answer)
    assert error["type"] == "InvalidParameterError"
    assert "role" in error["message"] and "analyst" in error["message"] and "it_admin" in error["message"]


def test_email_check_without_an_email_is_no_user(api: Api) -> None:
    # the vendor's schema makes email optional: an absent one is no one's address, not a bad request
    assert api.get("/users/check_holistics_user").json() == {"is_already_user": False}


def test_missing_required_query_parameter_is_400(api: Api) -> None:
    for path, params, name in [
        ("/dependencies/downstream_dependencies", {"id": 1}, "type"),
        ("/user_attribute_entries", {"subject_type": "User"}, "subject_id"),
        ("/data_models", {}, "project_id"),
        ("/exports/download", {}, "job_id"),
    ]:
        answer = api.get(path, params=params)
        assert answer.status_code == 400, path
        assert error_of(answer)["type"] == "InvalidParameterError" and name in error_of(answer)["message"]


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"limit": "ten"}, {"include_embed_info": "maybe"}])
def test_bad_query_values_are_400(api: Api, params) -> None:
    answer = api.get("/dashboards", params=params)
    assert answer.status_code == 400 and error_of(answer)["type"] == "InvalidParameterError"


def test_missing_wrapper_key_or_wrong_structure_is_400(api: Api) -> None:
    for body in ({"name": "no wrapper"}, {"group": "not an object"}, ["a list"]):
        answer = api.post("/groups", json=body)
        assert answer.status_code == 400, body
        assert error_of(answer)["type"] == "InvalidParameterError"
    answer = api.put("/user_attribute_entries/upsert", json={"user_attribute_entries": {"not": "a list"}})
    assert answer.status_code == 400
    broken = api.post("/groups", data=b"{not json", headers={"Content-Type": "application/json"})
    assert broken.status_code == 400 and "JSON" in error_of(broken)["message"]


def test_unknown_ids_are_404_base_error(api: Api) -> None:
    answer = api.get("/dashboards/999")
    assert answer.status_code == 404
    assert error_of(answer) == {"type": "BaseError", "message": "Couldn't find Dashboard with id=999"}
    for path in ("/dashboard_widgets/999", "/jobs/424242", "/query_reports/5", "/data_schedules/77", "/groups/9"):
        assert api.get(path).status_code == 404, path
    assert error_of(api.get("/dashboards/abc"))["message"] == "Couldn't find Dashboard with id=abc"


def test_unknown_route_is_404(api: Api) -> None:
    answer = api.get("/no/such/thing")
    assert answer.status_code == 404 and error_of(answer)["type"] == "BaseError"
    assert api.get("/users/me", key=None).status_code == 401  # the prefix is required
    outside = api.session.get(api.emulator.base_url.replace("/api/v2", "/api/v1") + "/users/me", timeout=5)
    assert outside.status_code == 404


def test_record_errors_name_the_fields(api: Api) -> None:
    answer = api.post("/data_schedules", json={"data_schedule": {"source_type": "Nope"}})
    assert answer.status_code == 422
    error = error_of(answer)
    assert error["type"] == "RecordError"
    assert set(error["record"]) >= {"source_type", "source_id", "schedule", "dest"}
    assert all(isinstance(m, list) and m for m in error["record"].values())


def test_export_output_is_one_of_the_references_values(api: Api) -> None:
    for refused in ("docx", "excel"):  # excel: an early tutorial's spelling, not in the reference's enum
        answer = api.post("/dashboard_widgets/101/submit_export", json={"output": refused})
        assert answer.status_code == 422, refused
        assert "csv, xlsx, pdf" in " ".join(error_of(answer)["record"]["output"])
    missing = api.post("/dashboard_widgets/101/submit_export", json={})
    assert missing.status_code == 422 and error_of(missing)["record"]["output"] == ["can't be blank"]
    job_id = api.export(output="xlsx")
    location = api.get("/exports/download", params={"job_id": job_id}).headers["Location"]
    assert location.endswith(".xlsx")


def test_schedule_and_alert_field_checks(api: Api) -> None:
    schedule = {"source_type": "Dashboard", "source_id": 1, "schedule": {"repeat": "every day"},
                "dest": {"type": "FaxDest"}}
    record = error_of(api.post("/data_schedules", json={"data_schedule": schedule}))["record"]
    assert set(record) == {"schedule.repeat", "schedule.paused", "dest.type"}
    alert: dict[str, Any] = {
        "title": "t", "source_type": "DashboardWidget", "source_id": 101, "dynamic_filter_presets": [],
        "schedule": {"repeat": "0 * * * *", "paused": False},
        "dest": {"type": "EmailDest", "recipients": ["not-an-email"]},
        "viz_conditions": [{"field_path": {"field_name": "revenue"}, "condition": {"operator": "sorta"}}],
    }
    answer = api.post("/data_alerts", json={"data_alert": alert})
    assert answer.status_code == 422 and "viz_conditions[0].condition.operator" in error_of(answer)["record"]
    alert["viz_conditions"][0]["condition"] = {"operator": "less_than", "values": [1]}
    record = error_of(api.post("/data_alerts", json={"data_alert": alert}))["record"]
    assert record == {"dest.recipients": ["must be a list of valid e-mail addresses"]}


def test_invitation_with_malformed_emails(api: Api) -> None:
    answer = api.post("/users/invite", json={"emails": ["ok@example.org", "nope"], "role": "analyst"})
    assert answer.status_code == 422
    error = error_of(answer)
    assert error["type"] == "InvalidEmailsInvitationError" and error["data"] == [
        {"email": "nope", "reason": "is not a valid e-mail address"}
    ]
    bad_role = api.post("/users/invite", json={"emails": ["ok@example.org"], "role": "owner"})
    # a role outside the enum is a wrong structure (400): the vendor keeps 422 for the e-mails
    assert bad_role.status_code == 400 and "role must be one of" in error_of(bad_role)["message"]


def test_data_set_from_aml_cannot_be_deleted(api: Api) -> None:
    answer = api.delete("/data_sets/1")
    assert answer.status_code == 422 and error_of(answer)["type"] == "InvalidOperationError"
    assert api.delete("/data_sets/2").json()["message"]
    assert api.get("/data_sets/2").status_code == 404


def test_upsert_of_more_than_100_entries_is_422(api: Api) -> None:
    entry = {"user_attribute_name": "region", "input_type": "manual", "values": ["EU"], "subject_type": "User",
             "subject_id": 1}
    answer = api.put("/user_attribute_entries/upsert", json={"user_attribute_entries": [entry] * 101})
    assert answer.status_code == 422 and error_of(answer)["type"] == "InvalidOperationError"
    assert api.put("/user_attribute_entries/upsert", json={"user_attribute_entries": [entry] * 100}).ok


def test_creates_answer_the_table_status(api: Api) -> None:
    assert api.post("/groups", json={"group": {"name": "Finance"}}).status_code == 201
    taken = api.post("/groups", json={"group": {"name": "finance"}})
    assert taken.status_code == 422 and error_of(taken)["record"] == {"name": ["has already been taken"]}
    created = api.post("/user_attributes", json={"user_attribute": {
        "name": "tier", "attribute_type": "string", "label": "Tier", "description": ""}})
    assert created.status_code == 200 and created.json()["status"] == "created"
    token = api.post("/embed/embed001x7k2/shorten_token", json={"token": "x" * 400})
    assert token.status_code == 201 and token.json()["shortened_token"]
    assert api.post("/embed/embed001x7k2/shorten_token", json={}).status_code == 400
    assert api.post("/embed/unknown/shorten_token", json={"token": "t"}).status_code == 404
