"""Data schedules and data alerts: create, list, read, update, delete, run now, test."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from analytics_provider.api.wire.destinations import ALERT_DESTS, SCHEDULE_DESTS, dest_value_problems
from analytics_provider.api.wire.queries import AGGREGATIONS, TRANSFORMATIONS
from analytics_provider.testing.emulator.errors import record_error
from analytics_provider.testing.emulator.handlers import Call, handles
from analytics_provider.testing.emulator.pagination import page
from analytics_provider.testing.emulator.state import Json, State
from analytics_provider.testing.emulator.tables import OPERATORS, check_condition
from analytics_provider.testing.emulator.validation import Record

CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z?LW#]+$")
COMPUTE: dict[str, Callable[[list[Any]], Any]] = {
    "sum": sum, "count": len, "max": max, "min": min,
    "avg": lambda values: sum(values) / len(values) if values else 0,
}


def _check_schedule(record: Record, body: Json) -> None:
    if not isinstance(body.get("schedule"), dict):
        record.add("schedule", "can't be blank (an object with repeat and paused)")
        return
    repeat = record.require(body, "schedule.repeat", str)
    if isinstance(repeat, str) and not (len(parts := repeat.split()) == 5 and all(map(CRON_FIELD.match, parts))):
        record.add("schedule.repeat", "is not a valid crontab expression", rule="crontab")
    paused = body["schedule"].get("paused")
    if not isinstance(paused, bool):
        record.add("schedule.paused", "must be true or false")


def _check_dest(record: Record, body: Json, dests: dict[str, tuple[str, ...]]) -> None:
    found = body.get("dest")
    if not isinstance(found, dict):
        record.add("dest", "can't be blank (an object with type)")
        return
    dest: Json = found
    dest_type = record.choice(body, "dest.type", dests)
    for name in dests.get(dest_type, ()):
        record.require(body, f"dest.{name}")
    if "recipients" in dest:
        record.emails("dest.recipients", dest["recipients"])
    for path, must, _ in dest_value_problems(dest):
        record.add(".".join(("dest", *path)), must)


def check_presets_of(record: Record, body: Json, filter_ids: set[int] | None) -> None:
    """The ``dynamic_filter_presets`` of a schedule, alert or shareable link."""
    presets = body.get("dynamic_filter_presets")
    if presets is None:
        return
    if not isinstance(presets, list) or not all(isinstance(p, dict) for p in presets):
        record.add("dynamic_filter_presets", "must be an array of objects")
        return
    for index, preset in enumerate(presets):
        where = f"dynamic_filter_presets[{index}]"
        raw_id = preset.get("dynamic_filter_id")
        if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)):
            record.add(f"{where}.dynamic_filter_id", "can't be blank")
            continue
        try:
            filter_id = int(raw_id)
        except ValueError:
            record.add(f"{where}.dynamic_filter_id", f"{raw_id!r} is not a filter of the source", rule="exists")
            continue
        if filter_ids is not None and filter_id not in filter_ids:
            record.add(f"{where}.dynamic_filter_id", f"{filter_id} is not a filter of the source", rule="exists")
        check_condition(preset.get("preset_condition"), f"{where}.preset_condition")


def _source_filter_ids(state: State, source_type: Any, source_id: Any) -> set[int] | None:
    if source_type == "Dashboard":
        board = state.dashboards.get(_int(source_id) or 0)
    elif source_type == "DashboardWidget":
        widget = state.widgets.get(str(source_id))
        board = state.dashboards.get(widget["dashboard_id"]) if widget else None
    else:
        return None
    return {f["id"] for f in board["dynamic_filters"]} if board else None


def _int(value: Any) -> int | None:
    try:
        return None if isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def check_schedule(state: State, body: Json) -> None:
    record = Record()
    source_type = record.choice(body, "source_type", ("QueryReport", "Dashboard"))
    source_id = record.require(body, "source_id")
    if source_id is not None and _int(source_id) is None:
        record.add("source_id", "is not a number")
    elif source_type and source_id is not None:
        found = (state.query_reports if source_type == "QueryReport" else state.dashboards).get(_int(source_id) or 0)
        if found is None:
            record.add("source_id", f"{source_type} {source_id} does not exist", rule="exists")
    if body.get("title") is not None and not isinstance(body["title"], str):
        record.add("title", "must be a string")
    _check_schedule(record, body)
    _check_dest(record, body, SCHEDULE_DESTS)
    check_presets_of(record, body, _source_filter_ids(state, source_type, source_id))
    record.check()


def check_alert(state: State, body: Json) -> None:
    record = Record()
    if body.get("title") is not None and not isinstance(body["title"], str):
        record.add("title", "must be a string")
    source_type = record.choice(body, "source_type", ("DashboardWidget", "VizBlock"))
    source_id = record.require(body, "source_id")
    if (source_id is not None and not isinstance(source_id, (int, str))) or isinstance(source_id, bool):
        record.add("source_id", "must be an integer or a string")
    elif source_type == "DashboardWidget" and source_id is not None and str(source_id) not in state.widgets:
        record.add("source_id", f"DashboardWidget {source_id} does not exist", rule="exists")
    _check_schedule(record, body)
    _check_dest(record, body, ALERT_DESTS)
    if not isinstance(body.get("dynamic_filter_presets"), list):
        record.add("dynamic_filter_presets", "can't be blank (an array, possibly empty)")
    conditions = body.get("viz_conditions")
    if conditions is not None and not isinstance(conditions, list):
        record.add("viz_conditions", "must be an array or null")
    for index, item in enumerate(conditions if isinstance(conditions, list) else []):
        where = f"viz_conditions[{index}]"
        if not isinstance(item, dict):
            record.add(where, "must be an object")
            continue
        field_path = item.get("field_path")
        if not isinstance(field_path, dict) or not isinstance(field_path.get("field_name"), str):
            record.add(f"{where}.field_path.field_name", "can't be blank")
        for name, allowed in (("aggregation", AGGREGATIONS), ("transformation", TRANSFORMATIONS)):
            if item.get(name) is not None and item[name] not in allowed:
                record.add(f"{where}.{name}", f"is not included in the list ({', '.join(allowed)})")
        check_condition(item.get("condition"), f"{where}.condition")
    check_presets_of(record, body, _source_filter_ids(state, source_type, source_id))
    record.check()


def _create(call: Call, collection: dict[int, Json], kind: str, body: Json) -> Json:
    wanted = body.get("id")
    if wanted is not None:
        if _int(wanted) is None or _int(wanted) in collection:
            raise record_error({"id": ["has already been taken" if _int(wanted) in collection else "is invalid"]},
                               rules=("unique-name",))
        ident = int(wanted)
    else:
        ident = call.state.new_id(kind)
    item = {**copy.deepcopy(body), "id": ident, "owner_id": call.user["id"]}
    item.setdefault("dynamic_filter_presets", [])
    collection[ident] = item
    return copy.deepcopy(item)


@handles("create_data_schedule")
def create_data_schedule(call: Call) -> Json:
    check_schedule(call.state, call.body)
    return {"data_schedule": _create(call, call.state.data_schedules, "DataSchedule", call.body)}


@handles("list_data_schedules")
def list_data_schedules(call: Call) -> Json:
    q = call.query
    term = (q.get("search_term") or "").lower()
    roles = set(q.get("creator_roles") or DEFAULT_CREATOR_ROLES)
    items = [
        s for s in call.state.data_schedules.values()
        if (not q.get("dest_type") or s["dest"]["type"] == q["dest_type"])
        and (not q.get("source_type") or s["source_type"] == q["source_type"])
        and (q.get("source_id") is None or _int(s["source_id"]) == q["source_id"])
        and (not term or term in (s["dest"].get("title") or "").lower() or term in _source_title(call, s).lower())
        and _creator_role(call, s) in roles
    ]
    sort = q.get("sort") or "id_asc"
    key = sort.rsplit("_", 1)[0]
    items.sort(key=lambda s: (SCHEDULE_SORT_KEYS.get(key, _by_id)(call, s), s["id"]), reverse=sort.endswith("_desc"))
    found, cursors = page(items, q)
    return {"data_schedules": copy.deepcopy(found), "total_count": len(items), "cursors": cursors}


DEFAULT_CREATOR_ROLES = ("admin", "growth_admin", "analyst", "user", "public", "explorer")
"""The vendor's default ``creator_roles``: every role but ``embed``."""


def _creator_role(call: Call, schedule: Json) -> str:
    owner = call.state.users.get(int(schedule.get("owner_id") or 0))
    return "public" if owner is None else str(owner["role"])


def _source_title(call: Call, schedule: Json) -> str:
    kind, ident = schedule["source_type"], _int(schedule["source_id"]) or 0
    source = (call.state.dashboards if kind == "Dashboard" else call.state.query_reports).get(ident)
    return str(source.get("title") or "") if source else ""


def _by_id(call: Call, schedule: Json) -> Any:
    return schedule["id"]


SCHEDULE_SORT_KEYS: dict[str, Any] = {
    # org_id and external_user_id sort embedded workspaces' schedules, which the emulator has none of
    "id": _by_id, "org_id": _by_id, "external_user_id": _by_id,
    "title": lambda call, s: (s["dest"].get("title") or "").lower(),
    "destination": lambda call, s: s["dest"]["type"],
    "source_title": lambda call, s: _source_title(call, s).lower(),
    "last_run": lambda call, s: s.get("last_run_at") or "",
}


@handles("get_data_schedule")
def get_data_schedule(call: Call) -> Json:
    return {"data_schedule": copy.deepcopy(call.find("DataSchedule"))}


def _update(call: Call, item: Json) -> Json:
    """The updated record: the body is a whole schedule or alert (the vendor's schema requires it)."""
    return {**copy.deepcopy(call.body), "id": item["id"], "owner_id": item["owner_id"],
            **({"created_at": item["created_at"]} if "created_at" in item else {})}


@handles("update_data_schedule")
def update_data_schedule(call: Call) -> Json:
    merged = _update(call, call.find("DataSchedule"))
    check_schedule(call.state, merged)
    call.state.data_schedules[merged["id"]] = merged
    return {"data_schedule": copy.deepcopy(merged)}


@handles("delete_data_schedule")
def delete_data_schedule(call: Call) -> Json:
    del call.state.data_schedules[call.find("DataSchedule")["id"]]
    return {"message": f"Data schedule {call.path['id']} has been deleted"}


@handles("execute_data_schedule")
def execute_data_schedule(call: Call) -> Json:
    schedule = call.find("DataSchedule")
    dest = schedule["dest"]
    note = f"Delivering {schedule['source_type']} {schedule['source_id']} to {dest['type']}"
    data = {"data_schedule_id": schedule["id"], "dest_type": dest["type"],
            "recipients": list(dest.get("recipients") or [])}
    source = {"type": "DataSchedule", "id": schedule["id"], "action": "execute"}
    return call.start_job({"id": schedule["id"]}, result_type="DataSchedule.execute", result_data=data,
                          source=source, notes=(note,))


@handles("test_data_schedule")
def test_data_schedule(call: Call) -> Json:
    check_schedule(call.state, call.body)
    dest = call.body["dest"]
    data = {"dest_type": dest["type"], "recipients": list(dest.get("recipients") or [])}
    note = f"Test delivery of {call.body['source_type']} {call.body['source_id']} to {dest['type']}"
    return call.start_job({"test_data_schedule": call.body}, result_type="DataSchedule.execute", result_data=data,
                          notes=(note,))


@handles("create_data_alert")
def create_data_alert(call: Call) -> Json:
    check_alert(call.state, call.body)
    return {"data_alert": _create(call, call.state.data_alerts, "DataAlert", call.body)}


@handles("list_data_alerts")
def list_data_alerts(call: Call) -> Json:
    q = call.query
    term = (q.get("search_term") or "").lower()
    items = [
        a for a in call.state.data_alerts.values()
        if term in (a.get("title") or "").lower()
        and (not q.get("dest_type") or a["dest"]["type"] == q["dest_type"])
        and (not q.get("source_type") or a["source_type"] == q["source_type"])
        and (q.get("source_id") is None or str(a["source_id"]) == str(q["source_id"]))
    ]
    found, cursors = page(items, q)
    return {"data_alerts": copy.deepcopy(found), "cursors": cursors}


@handles("get_data_alert")
def get_data_alert(call: Call) -> Json:
    return {"data_alert": copy.deepcopy(call.find("DataAlert"))}


@handles("update_data_alert")
def update_data_alert(call: Call) -> Json:
    merged = _update(call, call.find("DataAlert"))
    check_alert(call.state, merged)
    call.state.data_alerts[merged["id"]] = merged
    return {"data_alert": copy.deepcopy(merged)}


@handles("delete_data_alert")
def delete_data_alert(call: Call) -> Json:
    del call.state.data_alerts[call.find("DataAlert")["id"]]
    return {"message": f"Data alert {call.path['id']} has been deleted"}


def evaluate_alert(state: State, alert: Json) -> bool:
    """Whether every viz condition holds on the widget's data (aggregated over all rows)."""
    table = state.tables.get(str(alert["source_id"]))
    if table is None:
        return False
    for item in alert.get("viz_conditions") or []:
        column = item["field_path"]["field_name"]
        if column not in table.columns:
            return False
        values = [row[table.columns.index(column)] for row in table.rows]
        numbers = [v for v in values if isinstance(v, (int, float))]
        aggregate = COMPUTE.get(item.get("aggregation") or "sum", sum)(numbers or values)
        condition = item["condition"]
        if not OPERATORS[condition["operator"]](aggregate, condition.get("values") or []):
            return False
    return True


def _run_alert(call: Call, alert: Json, params: Json) -> Json:
    triggered = evaluate_alert(call.state, alert)
    note = f"Alert condition {'met: notifying' if triggered else 'not met: nothing sent'} ({alert['dest']['type']})"
    data = {"data_alert_id": alert.get("id"), "triggered": triggered}
    return call.start_job(params, result_type="DataAlert.execute", result_data=data, notes=(note,))


@handles("execute_data_alert")
def execute_data_alert(call: Call) -> Json:
    alert = call.find("DataAlert")
    return _run_alert(call, alert, {"id": alert["id"]})


@handles("test_data_alert")
def test_data_alert(call: Call) -> Json:
    check_alert(call.state, call.body)
    return _run_alert(call, call.body, {"test_data_alert": call.body})
