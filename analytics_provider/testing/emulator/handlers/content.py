"""Dashboards, widgets, query reports, data sources, data sets, data models, dependants, embedding."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import secrets

from analytics_provider.api.wire.operations import DASHBOARD_CATEGORIES
from analytics_provider.testing.emulator.errors import (
    by_rule,
    invalid_operation,
    invalid_parameter,
    not_found,
    record_error,
)
from analytics_provider.testing.emulator.handlers import Call, handles, public
from analytics_provider.testing.emulator.pagination import page
from analytics_provider.testing.emulator.permissions import allowed
from analytics_provider.testing.emulator.state import Json, find
from analytics_provider.testing.emulator.tables import check_condition
from analytics_provider.testing.emulator.validation import Record, object_list
from analytics_provider.testing.emulator.world import World

_DASHBOARD_PRIVATE = ("hash_code", "secret_key", "widget_ids")


def dashboard_url(world: World, dashboard: Json) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", dashboard["title"].lower()).strip("-")
    return f"{world.app_url}/dashboards/v3/{dashboard['id']}-{slug}"


def dashboard_json(world: World, dashboard: Json, include_embed: bool = False, listed: bool = False) -> Json:
    found = {k: copy.deepcopy(v) for k, v in public(dashboard).items() if k not in _DASHBOARD_PRIVATE}
    found["url"] = dashboard_url(world, dashboard)
    found.pop("uname", None)
    embed = world.answer_shapes["widget_reports"]
    if not listed or world.answer_shapes["listed_widgets"]:
        found["widgets"] = [widget_json(world, world.state.widgets[w], report=embed) for w in dashboard["widget_ids"]]
    found["tags"] = list(world.state.object_tags.get(("dashboard", dashboard_uname(dashboard)), []))
    found["embed_info"] = (
        {"hash_code": dashboard["hash_code"], "secret_key": dashboard["secret_key"]} if include_embed else None
    )
    return found


def widget_json(
    world: World, widget: Json, *, dashboard: bool = False, report: bool = False, url: bool = False
) -> Json:
    found = copy.deepcopy(public(widget))
    board = world.state.dashboards.get(widget["dashboard_id"])
    if url and board is not None:
        found["url"] = f"{dashboard_url(world, board)}?_widget={widget['id']}"
    if dashboard:
        found["dashboard"] = dashboard_json(world, board) if board is not None else {}
    if report and widget.get("source_type") == "QueryReport":
        found["query_report"] = report_json(world, world.state.query_reports[int(widget["source_id"])])
    return found


def report_json(world: World, report: Json, include_data_set: bool = False) -> Json:
    found = copy.deepcopy(public(report))
    if include_data_set:
        data_set = world.state.data_sets.get(report["data_set_id"])
        found["data_set"] = data_set_json(world, data_set) if data_set and not data_set.get("_deleted") else None
    return found


def data_set_json(world: World, data_set: Json, models: bool = False, reports: bool = False) -> Json:
    found = {k: copy.deepcopy(v) for k, v in public(data_set).items() if k != "model_ids"}
    if models:
        found["data_models"] = [copy.deepcopy(public(world.state.data_models[m])) for m in data_set["model_ids"]]
    if reports and world.answer_shapes["data_set_reports"]:
        found["reports"] = [
            report_json(world, r) for r in world.state.query_reports.values() if r["data_set_id"] == data_set["id"]
        ]
    return found


def check_filter_conditions(dashboard: Json, body: Json, field: str) -> list[Json]:
    """The DynamicFilterConditions ``body[field]`` of ``dashboard``: 400 when not a list of objects, 422 when wrong."""
    items = object_list(body.get(field), field, present=field in body)
    filter_ids = {f["id"] for f in dashboard["dynamic_filters"]}
    for index, item in enumerate(items):
        where = f"{field}[{index}]"
        filter_id = item.get("dynamic_filter_id")
        try:
            known = int(filter_id) in filter_ids  # type: ignore[arg-type]
        except (TypeError, ValueError):
            known = False
        if not known:
            raise record_error({f"{where}.dynamic_filter_id": [
                f"{filter_id!r} is not a dynamic filter of dashboard {dashboard['id']}"
            ]}, rules=("exists",))
        check_condition(item.get("condition"), f"{where}.condition")
    return items


@handles("get_dashboard")
def get_dashboard(call: Call) -> Json:
    return {"dashboard": dashboard_json(call.world, call.find("Dashboard"))}


@handles("list_dashboards")
def list_dashboards(call: Call) -> Json:
    boards = sorted((d for d in call.state.dashboards.values() if not d.get("_deleted")), key=lambda d: d["id"],
                    reverse=call.query.get("sort") == "id_desc")
    items, cursors = page(boards, call.query)
    embed = bool(call.query.get("include_embed_info"))
    return {"dashboards": [dashboard_json(call.world, d, embed, listed=True) for d in items], "cursors": cursors}


@handles("build_dashboard_url")
def build_dashboard_url(call: Call) -> Json:
    dashboard = call.find("Dashboard")
    states = check_filter_conditions(dashboard, call.body, "filter_states")
    url = dashboard_url(call.world, dashboard)
    if not states:
        return {"dashboard_url": url, "fstate_hash": None}
    fstate = hashlib.sha1(json.dumps(states, sort_keys=True).encode()).hexdigest()[:20]
    return {"dashboard_url": f"{url}?_fstate={fstate}", "fstate_hash": fstate}


@handles("get_dashboard_widget")
def get_dashboard_widget(call: Call) -> Json:
    q = call.query
    widget = call.find("DashboardWidget")
    found = widget_json(call.world, widget, dashboard=bool(q.get("include_dashboard")),
                        report=bool(q.get("include_report")), url=bool(q.get("include_url")))
    return {"dashboard_widget": found}


@handles("get_query_report")
def get_query_report(call: Call) -> Json:
    report = call.find("QueryReport")
    return {"query_report": report_json(call.world, report, bool(call.query.get("include_data_set")))}


@handles("get_data_source")
def get_data_source(call: Call) -> Json:
    return {"data_source": public(call.find("DataSource"))}


SETTING_TYPES: dict[str, type | tuple[type, ...]] = {
    "require_ssl": bool, "query_timeout": int, "enable_schema_info": bool, "use_connection_str": bool,
    "timezone": str,
}
DBCONFIG_FIELDS = ("database", "host", "port", "username", "password")


@handles("update_data_source")
def update_data_source(call: Call) -> Json:
    source = call.find("DataSource")
    body = call.body
    record = Record()
    name = body.get("name")  # nullable: null changes nothing
    if name is not None and not isinstance(name, str):
        record.add("name", "must be a string")
    elif isinstance(name, str) and not name.strip():
        record.add("name", "can't be blank", rule="not-blank")
    settings = body.get("settings") or {}
    if not isinstance(settings, dict):
        record.add("settings", "must be an object")
        settings = {}
    settings = {k: v for k, v in settings.items() if k in SETTING_TYPES}  # others are not the API's to set
    for key, value in settings.items():
        kind = SETTING_TYPES[key]
        if value is None and key == "query_timeout":
            continue
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            record.add(f"settings.{key}", "is invalid")
    dbconfig = body.get("dbconfig") or {}
    if not isinstance(dbconfig, dict) or any(
        k in DBCONFIG_FIELDS and v is not None and not isinstance(v, str) for k, v in dbconfig.items()
    ):
        record.add("dbconfig", f"must be an object of strings ({', '.join(DBCONFIG_FIELDS)})")
    record.check()
    if isinstance(name, str):
        source["name"] = name.strip()
    source["settings"].update(settings)
    if dbconfig:
        known = {k: v for k, v in dbconfig.items() if k in DBCONFIG_FIELDS}
        source["_dbconfig"] = {**source.get("_dbconfig", {}), **known}  # never answered
    return {"data_source": public(source)}


@handles("get_data_set")
def get_data_set(call: Call) -> Json:
    data_set = call.find("DataSet")
    q = call.query
    return {"data_set": data_set_json(call.world, data_set, bool(q.get("include_models")),
                                      bool(q.get("include_reports")))}


@handles("delete_data_set")
def delete_data_set(call: Call) -> Json:
    data_set = call.find("DataSet")
    if data_set["from_aml"]:
        raise invalid_operation(
            f"Data set {data_set['id']} ({data_set['uname']}) is defined in AML and cannot be deleted through the API",
            "aml",
        )
    data_set["_deleted"] = True
    return {"message": f"Data set {data_set['id']} has been deleted"}


@handles("list_data_models")
def list_data_models(call: Call) -> Json:
    project = find(call.state, "AmlProject", call.query["project_id"])
    commit, branch = call.query.get("commit_oid"), call.query.get("branch_name")
    if commit is not None and commit != project["commit_oid"]:  # the commit wins over the branch
        raise not_found("commit", commit, "oid")
    if commit is None and branch is not None and branch != project["default_branch"]:
        raise not_found("branch", branch, "name")
    model_ids = sorted({
        m for d in call.state.data_sets.values()
        if d.get("project_id") == project["id"] and not d.get("_deleted") for m in d["model_ids"]
    })
    return {"data_models": [copy.deepcopy(public(call.state.data_models[m])) for m in model_ids]}


@handles("get_dependants")
def get_dependants(call: Call) -> Json:
    kind, ident = call.query["type"], call.query["id"]
    sets = [d for d in call.state.data_sets.values() if not d.get("_deleted")]
    if kind == "DataSource":
        source = find(call.state, "DataSource", ident)
        models = [m["id"] for m in call.state.data_models.values() if m["data_source_id"] == source["id"]]
        return {"dependants": {"data_model_ids": models,
                               "data_set_ids": [d["id"] for d in sets if d["data_source_id"] == source["id"]]}}
    if kind == "DataModel":
        model = find(call.state, "DataModel", ident)
        built_on = [m["id"] for m in call.state.data_models.values() if model["id"] in m.get("_built_on", ())]
        return {"dependants": {"data_model_ids": built_on,
                               "data_set_ids": [d["id"] for d in sets if model["id"] in d["model_ids"]]}}
    find(call.state, "DataSet", ident)
    return {"dependants": {}}  # nothing of these kinds depends on a data set


@handles("create_shortened_embed_token")
def create_shortened_embed_token(call: Call) -> Json:
    hashcode = call.path["hashcode"]
    if not any(d["hash_code"] == hashcode for d in call.state.dashboards.values()):
        raise not_found("EmbedLink", hashcode, "hash_code")
    token = call.body.get("token")
    if not isinstance(token, str) or not token:
        raise by_rule(invalid_parameter("param is missing or the value is empty: token"), "not-blank")
    short = secrets.token_urlsafe(12)
    call.state.shortened_tokens[short] = {"hashcode": hashcode, "token": token}
    return {"shortened_token": short}



def dashboard_uname(dashboard: Json) -> str:
    """The dashboard's AML name (the emulator derives it from the title)."""
    return str(dashboard.get("uname") or re.sub(r"\W+", "_", dashboard["title"].lower()).strip("_"))


@handles("delete_dashboard")
def delete_dashboard(call: Call) -> Json:
    dashboard = call.find("Dashboard")
    dashboard["_deleted"] = True
    for widget_id in dashboard["widget_ids"]:
        call.state.widgets[widget_id]["_deleted"] = True
    return {"message": f"Dashboard {dashboard['id']} has been deleted"}


@handles("delete_dashboard_widget")
def delete_dashboard_widget(call: Call) -> Json:
    widget = call.find("DashboardWidget")
    widget["_deleted"] = True
    board = call.state.dashboards.get(widget["dashboard_id"])
    if board is not None and widget["id"] in board["widget_ids"]:
        board["widget_ids"].remove(widget["id"])
    return {"message": f"Dashboard widget {widget['id']} has been deleted"}


@handles("delete_data_source")
def delete_data_source(call: Call) -> Json:
    source = call.find("DataSource")
    used = [d["id"] for d in call.state.data_sets.values()
            if d["data_source_id"] == source["id"] and not d.get("_deleted")]
    if used:
        raise invalid_operation(f"Data source {source['id']} is used by data sets {used}; delete them first", "in-use")
    source["_deleted"] = True
    return {"message": f"Data source {source['id']} has been deleted"}


@handles("list_dashboards_metadata")
def list_dashboards_metadata(call: Call) -> Json:
    versions = call.query.get("version")
    action = call.query.get("permission_action") or "read"
    if action != "read" and not allowed(call.user["role"], "delete_dashboard"):
        return {"dashboards_metadata": []}  # viewers may only read
    boards = [d for d in call.state.dashboards.values() if not d.get("_deleted")
              and (not versions or d["version"] in versions)]
    return {"dashboards_metadata": [
        {"id": d["id"], "title": d["title"], "uname": dashboard_uname(d), "project_id": d.get("_project_id"),
         "version": d["version"]} for d in sorted(boards, key=lambda d: d["id"])
    ]}


@handles("clone_canvas_dashboard")
def clone_canvas_dashboard(call: Call) -> Json:
    source = call.find("Dashboard")
    body = call.body
    record = Record()
    uname = record.require(body, "new_uname", str)
    record.choice(body, "category_type", DASHBOARD_CATEGORIES)
    if body.get("new_title") is not None and not isinstance(body["new_title"], str):
        record.add("new_title", "must be a string")
    if body.get("category_id") is not None and (isinstance(body["category_id"], bool)
                                                or not isinstance(body["category_id"], int)):
        record.add("category_id", "must be an integer or null")
    record.check()
    if source["version"] != 4:
        raise invalid_operation(f"Dashboard {source['id']} is not a canvas dashboard (version 4)", "canvas")
    if any(dashboard_uname(d) == uname for d in call.state.dashboards.values() if not d.get("_deleted")):
        raise invalid_operation(f"A dashboard named {uname!r} already exists", "unique-name")
    new_id = call.state.new_id("Dashboard")
    clone = copy.deepcopy(source)
    clone.update(id=new_id, uname=uname, title=body.get("new_title") or f"{source['title']} (copy)",
                 owner_id=call.user["id"], category_id=body.get("category_id") or source["category_id"],
                 hash_code=f"embed{new_id}x7k2", widget_ids=[])
    for widget_id in source["widget_ids"]:
        copied_id = str(call.state.new_id("DashboardWidget"))
        call.state.widgets[copied_id] = {**copy.deepcopy(call.state.widgets[widget_id]), "id": copied_id,
                                         "dashboard_id": new_id}
        call.state.tables[copied_id] = call.state.tables[widget_id]
        clone["widget_ids"].append(copied_id)
    call.state.dashboards[new_id] = clone
    return call.start_job({"id": source["id"], "new_uname": uname}, result_type="Dashboard.clone",
                          source={"type": "Dashboard", "id": str(source["id"]), "action": "clone"},
                          notes=(f"Cloned dashboard {source['id']} as {new_id} ({uname})",))
