"""Shareable links, tags, AI skills and the git webhooks."""

from __future__ import annotations

import copy
import re
import secrets
from typing import Any

from analytics_provider.api.wire.operations import TAG_OBJECT_TYPES
from analytics_provider.testing.emulator.errors import invalid_operation
from analytics_provider.testing.emulator.handlers import Call, handles, public
from analytics_provider.testing.emulator.handlers.content import dashboard_uname
from analytics_provider.testing.emulator.handlers.delivery import check_presets_of
from analytics_provider.testing.emulator.pagination import page
from analytics_provider.testing.emulator.state import Json, State
from analytics_provider.testing.emulator.tables import check_condition
from analytics_provider.testing.emulator.validation import Record

SIGNATURE = re.compile(r"^sha256=[0-9a-f]{64}$")
AI_SKILLS = (
    {"name": "explain_chart", "label": "Explain a chart", "description": "Describes what a visualization shows",
     "activation": "auto", "allow_user_control": True},
    {"name": "write_aml", "label": "Write AML", "description": "Drafts AML models and datasets",
     "activation": "always", "allow_user_control": False},
    {"name": "sql_helper", "label": None, "description": "Suggests SQL for a question", "activation": "never",
     "allow_user_control": True},
)


# -- shareable links ---------------------------------------------------------------------------------


def _check_link(state: State, body: Json) -> None:
    record = Record()
    record.choice(body, "resource_type", ("Dashboard",))
    resource_id = record.require(body, "resource_id")
    dashboard = None
    if resource_id is not None:
        if isinstance(resource_id, bool) or not isinstance(resource_id, (int, float)):
            record.add("resource_id", "is not a number")
        else:
            dashboard = state.dashboards.get(int(resource_id))
            if dashboard is None or dashboard.get("_deleted"):
                record.add("resource_id", f"Dashboard {resource_id} does not exist", rule="exists")
    for name in ("title", "expired_at"):
        if body.get(name) is not None and not isinstance(body[name], str):
            record.add(name, "must be a string")
    if "password_enabled" in body and not isinstance(body["password_enabled"], bool):
        record.add("password_enabled", "must be true or false")
    if body.get("password_enabled") and not body.get("password"):
        record.add("password", "can't be blank when password_enabled is true", rule="not-blank")
    filter_ids = {f["id"] for f in dashboard["dynamic_filters"]} if dashboard else None
    check_presets_of(record, body, filter_ids)
    rules = body.get("permission_rules")
    if rules is not None:
        row_based = rules.get("row_based") if isinstance(rules, dict) else None
        if not isinstance(rules, dict) or (row_based is not None and not isinstance(row_based, list)):
            record.add("permission_rules", "must be {row_based: [{condition, field_path}]}")
        for index, rule in enumerate(row_based or []):
            if not isinstance(rule, dict):
                record.add(f"permission_rules.row_based[{index}]", "must be an object")
            elif rule.get("condition") is not None:
                check_condition(rule["condition"], f"permission_rules.row_based[{index}].condition")
    record.check()


def _link_json(link: Json) -> Json:
    found = {k: copy.deepcopy(v) for k, v in public(link).items() if k != "password"}
    found["password"] = None  # never answered
    return found


@handles("create_shareable_link")
def create_shareable_link(call: Call) -> Json:
    _check_link(call.state, call.body)
    link_id = call.state.new_id("ShareableLink")
    link = {"dynamic_filter_presets": [], "permission_rules": {"row_based": []}, "title": None,
            "password_enabled": False, "expired_at": None, **copy.deepcopy(call.body), "id": link_id,
            "owner_id": call.user["id"], "hash_code": secrets.token_hex(5)}
    call.state.shareable_links[link_id] = link
    return {"shareable_link": _link_json(link)}


@handles("list_shareable_links")
def list_shareable_links(call: Call) -> Json:
    q = call.query
    links = [link for link in call.state.shareable_links.values()
             if (q.get("resource_id") is None or int(link["resource_id"]) == q["resource_id"])
             and (q.get("resource_type") is None or link["resource_type"] == q["resource_type"])]
    links.sort(key=lambda link: link["id"], reverse=q.get("sort") == "id_desc")
    items, cursors = page(links, q)
    return {"shareable_links": [_link_json(link) for link in items], "cursors": cursors}


@handles("get_shareable_link")
def get_shareable_link(call: Call) -> Json:
    return {"shareable_link": _link_json(call.find("ShareableLink"))}


@handles("update_shareable_link")
def update_shareable_link(call: Call) -> Json:
    link = call.find("ShareableLink")
    _check_link(call.state, call.body)  # a whole link (the vendor's schema requires resource_type and id)
    merged = {**copy.deepcopy(link), **copy.deepcopy(call.body), "id": link["id"]}
    link.update(merged)
    return {"shareable_link": _link_json(link)}


@handles("delete_shareable_link")
def delete_shareable_link(call: Call) -> Json:
    del call.state.shareable_links[call.find("ShareableLink")["id"]]
    return {"message": f"Shareable link {call.path['id']} has been deleted"}


# -- tags --------------------------------------------------------------------------------------------


@handles("list_tags")
def list_tags(call: Call) -> Json:
    return {"tags": copy.deepcopy(call.state.tags)}


def _tag_job(call: Call, adding: bool) -> Json:
    body = call.body
    record = Record()
    target = body.get("object_params")
    if not isinstance(target, dict):
        record.add("object_params", "can't be blank (an object with uname and type)")
        target = {}
    for name in ("uname", "type"):
        if name in target and not isinstance(target[name], str):
            record.add(f"object_params.{name}", "must be a string")
    record.choice(body, "object_params.type", TAG_OBJECT_TYPES, required=False)
    tags = body.get("tags")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        record.add("tags", "must be an array of tag names")
    if body.get("project_id") is not None and (isinstance(body["project_id"], bool)
                                               or not isinstance(body["project_id"], (int, float))):
        record.add("project_id", "must be a number or null")
    record.check()
    kind, uname = target.get("type"), target.get("uname")
    known = {t["name"] for t in call.state.tags}
    failure = None
    if not _object_exists(call.state, kind, uname):
        failure = (f"No {kind or 'object'} named {uname!r} in the AML project", "AmlStudio::ObjectNotFound", None)
    elif unknown := sorted(set(tags) - known):
        failure = (f"Unknown tag(s): {', '.join(unknown)} (not in tags.aml)", "AmlStudio::TagNotFound", None)
    else:
        current = call.state.object_tags.setdefault((str(kind), str(uname)), [])
        if adding:
            current.extend(t for t in tags if t not in current)
        else:
            current[:] = [t for t in current if tags and t not in tags]  # no tags: remove them all
    verb = "Adding" if adding else "Removing"
    return call.start_job({"object_params": target, "tags": tags, "adding": adding},
                          result_type="TaggingSystem.submit", failure=failure,
                          notes=(f"{verb} tags {tags} on {kind} {uname}",))


def _object_exists(state: State, kind: Any, uname: Any) -> bool:
    if kind == "dataset":
        return any(d["uname"] == uname and d["from_aml"] and not d.get("_deleted") for d in state.data_sets.values())
    if kind == "dashboard":
        return any(dashboard_uname(d) == uname and not d.get("_deleted") for d in state.dashboards.values())
    return False


@handles("add_object_tags")
def add_object_tags(call: Call) -> Json:
    return _tag_job(call, adding=True)


@handles("remove_object_tags")
def remove_object_tags(call: Call) -> Json:
    return _tag_job(call, adding=False)


@handles("recommend_archivable_objects")
def recommend_archivable_objects(call: Call) -> Json:
    found = []
    for board in call.state.dashboards.values():
        if board.get("_deleted") or board.get("_last_viewed_at", "") >= "2025-04-01":
            continue
        uname = dashboard_uname(board)
        found.append({
            "id": board["id"], "title": board["title"], "type": "Dashboard", "description": None,
            "tags": list(call.state.object_tags.get(("dashboard", uname), [])) or None, "uname": uname,
            "owner_name": call.state.users[board["owner_id"]]["name"], "project_id": 1,
            "permissions": {"can_live_update": True, "can_edit": True}, "last_viewed_at": board["_last_viewed_at"],
            "email_schedules_count": sum(1 for s in call.state.data_schedules.values()
                                         if s["source_type"] == "Dashboard" and s["source_id"] == board["id"]),
            "data_alerts_count": 0,
        })
    return {"archivable_objects": found}


# -- AI and webhooks -----------------------------------------------------------------------------------


@handles("list_ai_skills")
def list_ai_skills(call: Call) -> Json:
    return {"skills": [dict(skill) for skill in AI_SKILLS]}


def _tenant(call: Call, status: str, message: str) -> Json:
    return {"status": status, "base_url": call.world.app_url, "tenant_name": "Emulated account", "tenant_id": 1,
            "message": message}


def _check_signature(call: Call) -> None:
    signature = call.headers.get("x-hub-signature-256", "")
    if not SIGNATURE.match(signature):
        raise invalid_operation("X-Hub-Signature-256 must be sha256=<64 hex digits> (the payload's HMAC)", "webhook")


@handles("send_github_event")
def send_github_event(call: Call) -> Json:
    _check_signature(call)
    event = call.headers["x-github-event"]
    status = "skipped" if event == "ping" else "success"
    return {"data": [_tenant(call, status, f"GitHub {event} event received")]}


@handles("send_gitlab_event")
def send_gitlab_event(call: Call) -> Json:
    if len(call.headers.get("x-gitlab-token", "")) < 8:
        raise invalid_operation("X-Gitlab-Token does not match the project's webhook token", "webhook")
    event = call.headers["x-gitlab-event"]
    status = "skipped" if event == "System Hook" else "success"
    return {"data": [_tenant(call, status, f"GitLab {event} received")]}


@handles("send_github_app_event")
def send_github_app_event(call: Call) -> Json:
    _check_signature(call)
    event = call.headers["x-github-event"]
    if event not in ("installation", "installation_repositories", "push", "pull_request"):
        return {"status": "skipped", "data": []}
    return {"status": "processed", "data": [_tenant(call, "success", f"GitHub App {event} event processed")]}
