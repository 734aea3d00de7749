"""Users and groups."""

from __future__ import annotations

from typing import Any

from analytics_provider.api.wire.operations import USER_ROLES
from analytics_provider.testing.emulator.errors import (
    ApiError,
    by_rule,
    invalid_operation,
    invalid_parameter,
    record_error,
    rule_details,
)
from analytics_provider.testing.emulator.handlers import Call, handles, public
from analytics_provider.testing.emulator.pagination import page
from analytics_provider.testing.emulator.permissions import is_admin
from analytics_provider.testing.emulator.seed import make_user
from analytics_provider.testing.emulator.state import Json, State, find
from analytics_provider.testing.emulator.validation import EMAIL, Record

COUNTER_ROLES = {"user": "viewer", "explorer": "explorer", "analyst": "analyst", "admin": "admin",
                 "growth_admin": "growth_admin", "it_admin": "it_admin"}
USER_SORTS = {
    "natural": lambda u: u["id"], "id_asc": lambda u: u["id"], "name_asc": lambda u: (u["name"].lower(), u["id"]),
    "initials_asc": lambda u: (u["initials"], u["id"]),
}


def user_status(user: Json) -> str:
    if user["is_deleted"]:
        return "deleted"
    return "active" if user["is_activated"] else "pending"


def user_json(user: Json) -> Json:
    return public(user)


@handles("get_current_user")
def get_current_user(call: Call) -> Json:
    return {"user": user_json(call.user)}


@handles("list_users")
def list_users(call: Call) -> Json:
    q = call.query
    users = list(call.state.users.values())
    if term := (q.get("search_term") or "").lower():
        users = [u for u in users if _matches(call.state, u, term)]
    if q.get("status"):
        users = [u for u in users if user_status(u) == q["status"]]
    if q.get("statuses"):
        users = [u for u in users if user_status(u) in q["statuses"]]
    if q.get("ids"):
        wanted = set(q["ids"])
        users = [u for u in users if u["id"] in wanted]
    if q.get("role"):
        users = [u for u in users if u["role"] == q["role"]]
    if q.get("has_authentication_token") is not None:
        users = [u for u in users if u["has_authentication_token"] == q["has_authentication_token"]]
    if q.get("exclude_deleted"):
        users = [u for u in users if not u["is_deleted"]]
    sort = q.get("sort") or "natural"
    users.sort(key=USER_SORTS[sort.replace("_desc", "_asc")], reverse=sort.endswith("_desc"))
    by_role = dict.fromkeys(COUNTER_ROLES.values(), 0)
    for user in users:
        by_role[COUNTER_ROLES[user["role"]]] += 1
    counters = {"total": len(users), "by_role": by_role}
    items, cursors = page(users, q)
    group_ids = sorted({g for u in items for g in u["group_ids"]})
    groups = {str(g): {"id": g, "name": call.state.groups[g]["name"]} for g in group_ids if g in call.state.groups}
    return {"counters": counters, "users": [listed_user_json(u) for u in items], "groups": groups, "cursors": cursors}


LEFT_OUT_OF_THE_LIST = ("title", "job_title")
"""User fields the live list leaves out even when set (the update's answer has them)."""


def listed_user_json(user: Json) -> Json:
    """A user as the list shows one: without :data:`LEFT_OUT_OF_THE_LIST`."""
    return {k: v for k, v in user_json(user).items() if k not in LEFT_OUT_OF_THE_LIST}


def _matches(state: State, user: Json, term: str) -> bool:
    """The vendor's user search: name, e-mail, initials or the name of one of the user's groups."""
    groups = (state.groups[g]["name"] for g in user["group_ids"] if g in state.groups)
    return any(term in text.lower() for text in (user["name"] or "", user["email"], user["initials"] or "", *groups))


def _check_groups(state: State, record: Record, group_ids: Any) -> None:
    if group_ids is None:
        return
    if not isinstance(group_ids, list) or not all(isinstance(g, int) and g in state.groups for g in group_ids):
        record.add("group_ids", "must be ids of existing groups", rule="exists")


@handles("update_user")
def update_user(call: Call) -> Json:
    user = call.find("User")
    body = call.body
    record = Record()
    record.choice(body, "role", USER_ROLES, required=False)
    for flag in ("allow_authentication_token", "enable_export_data"):
        if flag in body and not isinstance(body[flag], bool):
            record.add(flag, "must be true or false")
    for text in ("name", "title", "job_title", "password"):
        if text in body and body[text] is not None and not isinstance(body[text], str):
            record.add(text, "must be a string")
    if "name" in body and not (body["name"] or "").strip():
        record.add("name", "can't be blank", rule="not-blank")
    if isinstance(body.get("password"), str) and len(body["password"]) < 8:
        record.add("password", "is too short (minimum is 8 characters)", rule="password")
    _check_groups(call.state, record, body.get("group_ids"))
    record.check()
    for name in ("name", "title", "job_title", "role", "allow_authentication_token", "enable_export_data",
                 "group_ids"):
        if name in body:
            user[name] = body[name]
    if "name" in body:
        user["initials"] = "".join(part[:1] for part in user["name"].split()[:2]).upper()
    return user_json(user)


@handles("delete_user")
def delete_user(call: Call) -> Json:
    user = call.find("User")
    if user["id"] == call.user["id"]:
        raise invalid_operation("You cannot delete yourself", "user-state")
    if user["is_deleted"]:
        raise invalid_operation(f"User {user['id']} is already deleted", "user-state")
    user["is_deleted"] = True
    for key in [k for k, uid in call.state.keys.items() if uid == user["id"]]:
        del call.state.keys[key]  # a deleted user's key stops working at once
    user["has_authentication_token"] = False
    return {"message": f"User {user['email']} has been deleted"}


@handles("invite_users")
def invite_users(call: Call) -> Json:
    body = call.body
    if body.get("role") not in USER_ROLES:  # a wrong structure (400): the 422 of this call is for e-mails
        raise invalid_parameter(f"role must be one of {', '.join(USER_ROLES)}; got {body.get('role')!r}")
    emails = body.get("emails")
    if not isinstance(emails, list) or not all(isinstance(e, str) for e in emails):
        raise invalid_parameter("param is missing or the value is empty: emails (an array of e-mail addresses)")
    if not emails:
        raise by_rule(invalid_parameter("emails is empty: give at least one address"), "not-blank")
    group_ids = body.get("group_ids")
    if group_ids is not None:  # the vendor keeps 422 of this call for e-mails: other faults are 400 or 404
        if not isinstance(group_ids, list) or not all(isinstance(g, int) and not isinstance(g, bool)
                                                      for g in group_ids):
            raise invalid_parameter("group_ids must be an array of group ids")
        for group_id in group_ids:
            find(call.state, "Group", group_id)
    used = {u["email"].lower() for u in call.state.users.values()}
    invalid = [{"email": str(e), "reason": "is not a valid e-mail address"}
               for e in emails if not isinstance(e, str) or not EMAIL.match(e)]
    invalid += [{"email": e, "reason": "is already a user"}
                for e in emails if isinstance(e, str) and e.lower() in used]
    if invalid:
        listed = ", ".join(item["email"] for item in invalid)
        raise ApiError(422, "InvalidEmailsInvitationError", f"Invalid e-mails: {listed}",
                       extra={"data": invalid, **rule_details("email")})
    for email in emails:
        user_id = call.state.new_id("User")
        user = make_user(user_id, email.split("@")[0].replace(".", " ").title() or email, body["role"],
                         list(body.get("group_ids") or []), "pending")
        user["email"] = email
        user["allow_authentication_token"] = bool(body.get("allow_authentication_token", False))
        user["enable_export_data"] = bool(body.get("enable_export_data", True))
        call.state.users[user_id] = user
    return call.start_job(
        {"emails": emails, "role": body["role"]}, result_type="User.invite",
        result_data={"invited_emails": emails}, notes=(f"Sending {len(emails)} invitation(s)",),
    )


@handles("is_email_used")
def is_email_used(call: Call) -> Json:
    email = (call.query.get("email") or "").strip().lower()  # optional in the vendor's schema: no one uses ""
    return {"is_already_user": any(u["email"].lower() == email for u in call.state.users.values())}


def group_json(state: State, group: Json, include_users: bool = False) -> Json:
    members = [u for u in state.users.values() if group["id"] in u["group_ids"]]
    found = {**public(group), "user_ids": [u["id"] for u in members]}
    if include_users:
        found["users"] = [user_json(u) for u in members]
    return found


def _group_name(call: Call, current_id: int | None = None) -> str:
    record = Record()
    name = record.require(call.body, "name", str)
    record.check()
    taken = any(g["name"].lower() == name.strip().lower() and g["id"] != current_id for g in call.state.groups.values())
    if taken:
        raise record_error({"name": ["has already been taken"]}, rules=("unique-name",))
    return name.strip()


@handles("create_group")
def create_group(call: Call) -> Json:
    name = _group_name(call)
    group_id = call.state.new_id("Group")
    call.state.groups[group_id] = {"id": group_id, "name": name}
    return {"group": group_json(call.state, call.state.groups[group_id])}


@handles("list_groups")
def list_groups(call: Call) -> Json:
    groups = sorted(call.state.groups.values(), key=lambda g: g["id"], reverse=call.query.get("sort") == "id_desc")
    items, cursors = page(groups, call.query)
    answer: Json = {"groups": [group_json(call.state, g) for g in items], "users": {}, "cursors": cursors}
    if call.query.get("include_users"):
        members = {uid for g in answer["groups"] for uid in g["user_ids"]}
        answer["users"] = {str(uid): user_json(call.state.users[uid]) for uid in sorted(members)}
    return answer


@handles("get_group")
def get_group(call: Call) -> Json:
    return {"group": group_json(call.state, call.find("Group"), bool(call.query.get("include_users")))}


@handles("update_group")
def update_group(call: Call) -> Json:
    group = call.find("Group")
    if "name" in call.body:  # the vendor's update takes an optional name
        group["name"] = _group_name(call, group["id"])
    return {"group": group_json(call.state, group)}


@handles("delete_group")
def delete_group(call: Call) -> Json:
    group = call.find("Group")
    del call.state.groups[group["id"]]
    for user in call.state.users.values():
        if group["id"] in user["group_ids"]:
            user["group_ids"].remove(group["id"])
    call.state.attribute_entries.pop(("Group", group["id"]), None)
    return {"message": f"Group {group['name']} has been deleted"}


@handles("add_user_to_group")
def add_user_to_group(call: Call) -> Json:
    group, user = call.find("Group"), call.find("User", "user_id")
    if user["is_deleted"]:
        raise by_rule(ApiError(422, "InvalidParameterError", f"User {user['id']} is deleted"), "user-state")
    if group["id"] not in user["group_ids"]:  # adding a member again changes nothing (a retry is safe)
        user["group_ids"].append(group["id"])
    return {"message": f"User {user['id']} is a member of group {group['name']}"}


@handles("remove_user_from_group")
def remove_user_from_group(call: Call) -> Json:
    group, user = call.find("Group"), call.find("User", "user_id")
    if group["id"] in user["group_ids"]:
        user["group_ids"].remove(group["id"])
    return {"message": f"User {user['id']} is not a member of group {group['name']}"}


@handles("restore_user")
def restore_user(call: Call) -> Json:
    user = call.find_any("User")
    if not user["is_deleted"]:
        raise invalid_operation(f"User {user['id']} is not deleted", "user-state")
    user["is_deleted"] = False
    return {"message": f"User {user['email']} has been restored"}


@handles("resend_user_invite")
def resend_user_invite(call: Call) -> Json:
    user = call.find("User")
    if user["is_activated"]:
        raise invalid_operation(f"Unable to locate an invitation of user {user['id']}: they have joined", "user-state")
    return call.start_job({"id": user["id"]}, result_type="User.resend_invite",
                          notes=(f"Sending the invitation to {user['email']} again",))


@handles("revoke_user_api_key")
def revoke_user_api_key(call: Call) -> Json:
    user = call.find("User")
    if user["id"] != call.user["id"] and not is_admin(call.user["role"]):
        raise ApiError(403, "PermissionDeniedError", "Only an admin may revoke another user's API key")
    for key in [k for k, uid in call.state.keys.items() if uid == user["id"]]:
        del call.state.keys[key]
    user["has_authentication_token"] = False
    return {"message": f"The API key of user {user['id']} has been revoked"}
