"""Jobs and the operations that start them: exports and downloads, preloads, cache busts, AML."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from analytics_provider.api.wire.operations import (
    EXPORT_OUTPUTS,
    MANIFEST_FIELD,
    MAX_MANIFEST_BYTES,
    MAX_MANIFEST_FILES,
)
from analytics_provider.testing.emulator.errors import (
    ApiError,
    by_rule,
    invalid_operation,
    invalid_parameter,
    not_found,
    rule_details,
)
from analytics_provider.testing.emulator.exports import ExportSpec
from analytics_provider.testing.emulator.handlers import Call, Reply, handles
from analytics_provider.testing.emulator.handlers.content import check_filter_conditions, dashboard_uname
from analytics_provider.testing.emulator.jobs import Job
from analytics_provider.testing.emulator.multipart import Form
from analytics_provider.testing.emulator.permissions import is_admin
from analytics_provider.testing.emulator.state import Json, State
from analytics_provider.testing.emulator.tables import apply_conditions
from analytics_provider.testing.emulator.validation import Record
from analytics_provider.testing.emulator.writers import file_name

PUBLISH_RESULT = "AmlStudio::Publish.call"
VALIDATE_RESULT = "AmlStudio::RemoteObjectValidation.call"
AML_ERROR = "AmlStudio::CompileError"


def visible_job(call: Call, ident: Any) -> Job:
    """The job, when it exists and the caller may see it (its owner, or an admin); else a 404."""
    try:
        job = call.world.jobs.jobs.get(int(ident))
    except (TypeError, ValueError):
        job = None
    if job is None or (job.user_id != call.user["id"] and not is_admin(call.user["role"])):
        raise not_found("Job", ident)
    return job


@handles("get_job")
def get_job(call: Call) -> Json:
    return {"job": visible_job(call, call.path["id"]).read(call.now, **_job_details(call.query))}


def _job_details(query: Mapping[str, Any]) -> dict[str, bool]:
    """The Job's optional parts the ``include_*`` options ask for."""
    return {"source": bool(query.get("include_source")),
            "data_source_stats": bool(query.get("include_data_source_stats"))}


@handles("get_job_result")
def get_job_result(call: Call) -> Json:
    return visible_job(call, call.path["id"]).result(call.now)


@handles("get_job_logs")
def get_job_logs(call: Call) -> Json:
    return {"job_logs": visible_job(call, call.path["id"]).logs(call.now)}


def filtered_rows(state: State, widget: Json, conditions: list[Json]) -> list[list[Any]]:
    """The widget's rows under the conditions of the filters mapped to it (others do not apply)."""
    dashboard = state.dashboards[widget["dashboard_id"]]
    filters = {f["id"]: f for f in dashboard["dynamic_filters"]}
    applied = []
    for item in conditions:
        mappings = filters[int(item["dynamic_filter_id"])]["mappings"]
        column = next((m["field_path"]["field_name"] for m in mappings
                       if str(m["viz_conditionable_id"]) == widget["id"]), None)
        if column is not None:
            applied.append((column, item["condition"]))
    return apply_conditions(state.tables[widget["id"]], applied)


@handles("submit_widget_export")
def submit_widget_export(call: Call) -> Json:
    widget = call.find("DashboardWidget")
    if not call.user["enable_export_data"] or not widget["permissions"]["can_export_data"]:
        raise ApiError(403, "PermissionDeniedError", "You are not allowed to export data of this widget")
    record = Record()
    output = record.choice(call.body, "output", EXPORT_OUTPUTS)  # the reference's values; not the tutorial's excel
    record.check()
    dashboard = call.state.dashboards[widget["dashboard_id"]]
    conditions = check_filter_conditions(dashboard, call.body, "dashboard_filter_conditions")
    rows = filtered_rows(call.state, widget, conditions)
    table = call.state.tables[widget["id"]]
    params = {"id": widget["id"], "output": output, "dashboard_filter_conditions": conditions}
    job = call.submit_job(
        params, result_type="DashboardWidget.export", source={"type": "DashboardWidget", "id": widget["id"],
                                                              "action": "export"},
        notes=(f"Exporting {len(rows)} row(s) of widget {widget['id']} as {output}",),
    )
    if job.existing_job_id is None:
        name = file_name(widget["source_title"], job.id, output)
        size = call.world.export_sizes.get(widget["id"]) if output == "csv" else None
        call.world.exports.register(ExportSpec(job.id, output, widget["source_title"], name, list(table.columns),
                                               [list(r) for r in rows], size))
        job.result_data = {"output": output, "file_name": name, "row_count": len(rows)}
    return job.async_result(call.now)


@handles("download_export")
def download_export(call: Call) -> Reply:
    job = visible_job(call, call.query["job_id"])
    if job.operation != "submit_widget_export":
        raise invalid_operation(f"Job {job.id} is not an export job", "export")
    status = job.status_at(call.now)
    if status != "success" or call.world.exports.spec(job.id) is None:
        raise by_rule(ApiError(422, "ExportJobNotReady",
                               f"Job {job.id} is not successful or not ready to be downloaded yet (status: {status})"),
                      "export")
    location = call.world.files_url + call.world.exports.signed_path(job.id)
    return Reply(302, None, {"Location": location})


@handles("preload_dashboard")
def preload_dashboard(call: Call) -> Json:
    dashboard = call.find("Dashboard")
    conditions = check_filter_conditions(dashboard, call.body, "dashboard_filter_conditions")
    bust_cache = call.body.get("bust_cache", False)
    if not isinstance(bust_cache, bool):
        raise invalid_parameter("bust_cache must be true or false")
    widgets = list(dashboard["widget_ids"])
    note = f"Executing {len(widgets)} widget(s)" + ("" if bust_cache else ", skipping those already cached")
    params = {"id": dashboard["id"], "dashboard_filter_conditions": conditions, "bust_cache": bust_cache}
    return call.start_job(params, result_type="Dashboard.preload",
                          result_data={"dashboard_id": dashboard["id"], "widget_ids": widgets},
                          source={"type": "Dashboard", "id": str(dashboard["id"]), "action": "preload"},
                          notes=(note,))


@handles("bust_data_source_cache")
def bust_data_source_cache(call: Call) -> Json:
    source = call.find("DataSource")
    return call.start_job({"id": source["id"]}, result_type="DataSource.bust_exploration_cache",
                          result_data={"data_source_id": source["id"]},
                          notes=(f"Invalidating exploration and report cache of data source {source['id']}",))


def _aml_failure(call: Call, what: str) -> tuple[str, str, Any] | None:
    diagnostics = call.world.publish_diagnostics
    if diagnostics is None:
        return None
    data = {"status": "error", "error_type": "syntax_error", "target_commit": _commit(call),
            "error_details": {"diagnostics": [dict(d) for d in diagnostics]}}
    return f"{what} failed: {len(diagnostics)} syntax error(s) in the AML project", AML_ERROR, data


def _commit(call: Call) -> str:
    return str(call.state.projects[1]["commit_oid"])


@handles("publish_aml_project")
def publish_aml_project(call: Call) -> Json:
    mapping = call.body.get("object_mapping")
    if mapping is not None:
        datasets = mapping.get("datasets", {}) if isinstance(mapping, dict) else None
        if not isinstance(datasets, dict) or not all(isinstance(v, str) for v in datasets.values()):
            raise ApiError(422, "RecordError", "object_mapping must be {datasets: {<data set id>: <uname>}}",
                           record={"object_mapping": ["is invalid"]}, extra=rule_details("aml"))
    aml_sets = [d for d in call.state.data_sets.values() if d["from_aml"] and not d.get("_deleted")]
    objects = [{"id": d["id"], "type": "Dataset", "uname": d["uname"], "title": d["label"], "status": "updated"}
               for d in aml_sets]
    objects += [{"id": b["id"], "type": "Dashboard", "uname": dashboard_uname(b), "title": b["title"],
                 "status": "updated"} for b in call.state.dashboards.values() if not b.get("_deleted")]
    preparing: Json = {"job_id": None, "status": "success"}
    data = {"status": "success", "target_commit": _commit(call), "objects_status": objects,
            "preparing_production_job": preparing}
    job = call.submit_job(dict(call.body), result_type=PUBLISH_RESULT, result_data=data,
                          failure=_aml_failure(call, "Publish"),
                          notes=(f"Publishing commit {_commit(call)[:10]} to production",))
    if job.existing_job_id is None:  # the follow-up job gets the next id (it is not itself emulated)
        preparing["job_id"] = call.world.jobs.reserve_id()
    return job.async_result(call.now)


@handles("validate_aml_project")
def validate_aml_project(call: Call) -> Json:
    for name in ("branch_name", "commit_oid"):
        if not isinstance(call.body.get(name), str) or not call.body[name]:
            raise by_rule(invalid_parameter(f"param is missing or the value is empty: {name}"), "not-blank")
    params = {"branch_name": call.body["branch_name"], "commit_oid": call.body["commit_oid"]}
    return call.start_job(params, result_type=VALIDATE_RESULT, result_data={"status": "success"},
                          failure=_aml_failure(call, "Validation"),
                          notes=(f"Validating {params['branch_name']} at {params['commit_oid']}",))


@handles("list_jobs")
def list_jobs(call: Call) -> Json:
    found = []
    for ident in call.query["ids"]:
        job = call.world.jobs.jobs.get(ident)
        if job is not None and (job.user_id == call.user["id"] or is_admin(call.user["role"])):
            found.append(job.read(call.now, **_job_details(call.query)))
    return {"jobs": found}


JOB_QUEUES = (("default", 8), ("export", 4), ("aml", 2), ("query", 6))


@handles("list_job_queues")
def list_job_queues(call: Call) -> Json:
    pending = [j for j in call.world.jobs.jobs.values() if j.status_at(call.now) == "running"]
    return {"job_queues": [
        {"id": index + 1, "queue": name, "total_workers": workers,
         "busy_workers": min(workers, sum(1 for j in pending if _queue_of(j.operation) == name))}
        for index, (name, workers) in enumerate(JOB_QUEUES)
    ]}


def _queue_of(operation: str) -> str:
    if operation == "submit_widget_export":
        return "export"
    if operation in ("publish_aml_project", "validate_aml_project", "upload_dbt_manifests"):
        return "aml"
    return "query" if operation in ("submit_data_set_query", "preload_dashboard") else "default"


JSON_CHECKED_BYTES = 16 * 1024 * 1024
"""Manifests up to this size are parsed; a bigger one is only checked to be one JSON object."""


@handles("upload_dbt_manifests")
def upload_dbt_manifests(call: Call) -> Json:
    form: Form = call.body
    files = [f for f in form.files if f.name in (MANIFEST_FIELD, MANIFEST_FIELD + "[]")]
    if not files:
        raise invalid_parameter("param is missing or the value is empty: files")
    if len(files) > MAX_MANIFEST_FILES:
        raise by_rule(invalid_parameter(f"at most {MAX_MANIFEST_FILES} files per request, got {len(files)}"),
                      "upload-limits")
    too_big = [f.filename for f in files if f.size > MAX_MANIFEST_BYTES]
    if too_big:
        raise by_rule(invalid_parameter(f"files larger than {MAX_MANIFEST_BYTES >> 20} MB: {', '.join(too_big)}"),
                      "upload-limits")
    names = form.fields.get("data_source_name")
    sources = [s for s in call.state.data_sources.values() if not s.get("_deleted")]
    if names:
        source = next((s for s in sources if s["name"] == names[-1]), None)
        if source is None:
            raise not_found("DataSource", names[-1], "name")
    else:
        source = next(s for s in sources if s["is_default"])
    broken = [f.filename for f in files if not _is_json_object(f.content, f.size)]
    failure = (f"Malformed manifest(s): {', '.join(broken)}", "Dbt::ManifestParseError", None) if broken else None
    params = {"data_source_id": source["id"], "files": [[f.filename, f.size] for f in files]}
    return call.start_job(params, result_type="DataSource.upload_dbt_manifests", failure=failure,
                          notes=(f"Syncing {len(files)} dbt manifest(s) into data source {source['id']}",))


def _is_json_object(content: Any, size: int) -> bool:
    try:
        if size <= JSON_CHECKED_BYTES:
            return isinstance(json.load(content), dict)
        head = content.read(64).lstrip()
        content.seek(max(0, size - 64))
        tail = content.read().rstrip()
        return head.startswith(b"{") and tail.endswith(b"}")
    except (ValueError, UnicodeDecodeError):
        return False
    finally:
        content.close()


DDL = re.compile(r"^\s*create\s+(or\s+replace\s+)?(temporary\s+)?(table|view)\s+\S+", re.IGNORECASE)


@handles("validate_ddl")
def validate_ddl(call: Call) -> Json:
    ddl = call.body.get("ddl")
    if not isinstance(ddl, str):
        raise invalid_parameter("param is missing or the value is empty: ddl")
    if not DDL.match(ddl):
        raise invalid_operation("The custom DDL must create a table or a view (CREATE TABLE <name> ...)", "ddl")
    return {"status": "success"}
