"""The group member sync's saved plan: which resources its changes touch (each user whose managed
groups it changes, with the managed groups they were in; each group it creates and each e-mail it
invites, absent), and its apply: those read again, then exactly its changes in its order (groups,
invitations, memberships), or nothing when one changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analytics_provider.access.groups import GroupMemberSync, Membership, same_name
from analytics_provider.access.plan import AccessPlan
from analytics_provider.access.users import Invitation, shown
from analytics_provider.api.operations import MAX_PAGE_SIZE
from analytics_provider.plans.plan import Action
from analytics_provider.plans.saved import (
    Touched,
    loaded,
    refuse_if_stale,
    saved_plan,
    stale,
    write_json,
    write_of,
)
from analytics_provider.plans.writes import Write

Json = dict[str, Any]
ORDER = (Action.CREATE, Action.INVITE, Action.ADD, Action.REMOVE)
"""The order the sync sends its changes in (:meth:`GroupMemberSync.apply`): groups, invitations, memberships."""


def save_group_members(sync: GroupMemberSync, plan: AccessPlan) -> Json:
    """The sync's plan (just made by ``sync.plan``) as a saved plan."""
    managed = sorted(g for g in sync.managed if isinstance(g, int))
    changes = [c for action in ORDER for c in plan.of(action)]
    touched: dict[str, Touched] = {}
    for change in changes:
        write = change.sent
        if isinstance(write, Membership):
            user = sync.users_read[write.user_id]
            touched.setdefault(f"user {write.user_id}", Touched(
                "users", write.user_id, str(write.user_id), f"user {shown(user)}",
                {"managed_group_ids": sorted(g for g in user.get("group_ids") or [] if g in managed)}))
        elif isinstance(write, Invitation):
            touched[f"email {write.email}"] = Touched("users", None, write.email, f"user {write.email} (to invite)",
                                                      None)
        else:
            touched[f"group {change.target}"] = Touched("groups", None, change.target,
                                                        f"group {change.target} (to create)", None)
    return saved_plan(plan, changes, list(touched.values()), {"managed_group_ids": managed}, encode=_encode)


def apply_saved_group_members(hook: Any, data: Any, task_id: str) -> int:
    """Apply a saved plan of the group member sync exactly, or nothing (stale, edited, another
    version's); the number applied."""
    changes, touched, params = loaded(data, task_id, _decode)
    managed = set(params.get("managed_group_ids") or [])
    users = {int(u["id"]): u for u in hook.list_users(exclude_deleted=True, limit=MAX_PAGE_SIZE)
             if not u.get("is_deleted")}
    emails = {str(u.get("email") or "").lower(): u for u in users.values()}
    groups = ({same_name(g["name"]): g for g in hook.list_groups(limit=MAX_PAGE_SIZE)}
              if any(t.kind == "groups" for t in touched) else {})

    def held(user: Json) -> Json:
        return {"managed_group_ids": sorted(g for g in user.get("group_ids") or [] if g in managed)}

    def current(then: Touched) -> Json | str | None:
        if then.kind == "groups":
            made = groups.get(same_name(then.key))
            return f"made since the plan: group {made['id']} has its name" if made else None
        if then.id is None:
            made = emails.get(then.key.lower())
            return f"made since the plan: user {made['id']} has this e-mail" if made else None
        user = users.get(then.id)
        return None if user is None else held(user)

    refuse_if_stale(task_id, stale(touched, current))
    plan = AccessPlan(str(data.get("what") or "group members"), "user", "group", changes=list(changes))
    return GroupMemberSync(hook, task_id).apply(plan)


def _encode(write: Any) -> Json:
    if isinstance(write, Membership):
        return {"membership": {"group": write.group, "user_id": write.user_id}}
    if isinstance(write, Invitation):
        return {"invitation": {"email": write.email, "role": write.role, "group_ids": list(write.group_ids)}}
    assert isinstance(write, Write)
    return write_json(write)


def _decode(data: Mapping[str, Any]) -> Any:
    if "membership" in data:
        found = data["membership"]
        return Membership(found["group"], int(found["user_id"]))
    if "invitation" in data:
        found = data["invitation"]
        return Invitation(str(found["email"]), str(found["role"]), tuple(int(g) for g in found["group_ids"]))
    return write_of(data)
