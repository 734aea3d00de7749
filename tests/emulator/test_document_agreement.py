"""Four places where the emulator once differed from the API document, each checked against the
vendor's facts (the committed document) as well as against the answers."""

from __future__ import annotations

from vendor_facts import vendor_document

from analytics_provider.testing.emulator.app import AnalyticsEmulator

from .conftest import Api, error_of

VENDOR = vendor_document()
SCHEMAS = VENDOR["components"]["schemas"]


def test_submit_export_takes_the_vendors_outputs_only(api: Api) -> None:
    body = VENDOR["paths"]["/dashboard_widgets/{id}/submit_export"]["post"]["requestBody"]
    outputs = body["content"]["application/json"]["schema"]["properties"]["output"]["enum"]
    assert outputs == ["csv", "xlsx", "pdf"]
    for output in outputs:
        assert api.post("/dashboard_widgets/101/submit_export", json={"output": output}).status_code == 200
    refused = api.post("/dashboard_widgets/101/submit_export", json={"output": "excel"})
    assert refused.status_code == 422 and error_of(refused)["type"] == "RecordError"


def test_a_schedule_to_azure_blob_storage_is_accepted(api: Api) -> None:
    # the document lists Adls2Dest among the destinations and the list filter; the vendor's YAML does too
    params = VENDOR["paths"]["/data_schedules"]["get"]["parameters"]
    list_filter = next(p for p in params if p.get("name") == "dest_type")
    assert "Adls2Dest" in list_filter["schema"]["enum"]
    schedule = {"source_type": "Dashboard", "source_id": 1, "schedule": {"repeat": "0 6 * * *", "paused": False},
                "dest": {"type": "Adls2Dest"}}
    made = api.post("/data_schedules", json={"data_schedule": schedule})
    assert made.status_code == 201, made.text
    listed = api.get("/data_schedules", params={"dest_type": "Adls2Dest"}).json()["data_schedules"]
    assert [s["id"] for s in listed] == [made.json()["data_schedule"]["id"]]


def test_an_export_jobs_result_is_a_result_object(api: Api) -> None:
    assert "result" in SCHEMAS["WithData"]["properties"]  # the document's JobResult carries one
    job_id = api.export(output="xlsx")
    result = api.get(f"/jobs/{job_id}/result").json()
    assert result["status"] == "success" and result["result"]["type"] == "DashboardWidget.export"
    assert result["result"]["data"]["output"] == "xlsx" and result["result"]["data"]["file_name"].endswith(".xlsx")


def test_a_system_attribute_update_is_a_record_error_as_the_document_declares(api: Api, emu: AnalyticsEmulator) -> None:
    declared = VENDOR["paths"]["/user_attributes/{id}"]["put"]["responses"]["422"]
    assert declared == {"$ref": "#/components/responses/RecordError"}
    system = next(a for a in api.get("/user_attributes").json()["user_attributes"] if a["is_system_attribute"])
    body = {"user_attribute": {"name": system["name"], "attribute_type": "string", "label": "E-mail"}}
    answer = api.put(f"/user_attributes/{system['id']}", json=body)
    error = error_of(answer)
    assert answer.status_code == 422 and error["type"] == "RecordError", error
    assert error["record"] == {"base": [f"System attribute {system['name']} cannot be changed"]}
    own = next(a for a in api.get("/user_attributes").json()["user_attributes"] if not a["is_system_attribute"])
    bad = {"user_attribute": {"name": own["name"], "attribute_type": "colour", "label": own["label"]}}
    field_error = api.put(f"/user_attributes/{own['id']}", json=bad)  # a field error stays a RecordError
    assert field_error.status_code == 422 and error_of(field_error)["type"] == "RecordError"
