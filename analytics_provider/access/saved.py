"""The access syncs' saved plans: which resources their changes touch, and their apply: those read
again, then exactly the changes in their order, or nothing when one changed. The group member sync
records each user whose managed groups it changes (with the managed groups they were in), each
group it creates and each e-mail it invites (absent); the user attribute sync records the values
each user had of each attribute it writes, and each e-mail it invites. Each records what it
manages (the groups, the attributes): a change of anything else refuses the whole apply."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from analytics_provider.access.attributes import UserAttributeSync
from analytics_provider.access.groups import GroupMemberSync, Membership, same_name
from analytics_provider.access.plan import AccessPlan
from analytics_provider.access.users import Invitation, shown
from analytics_provider.api.wire.operations import MAX_PAGE_SIZE
from analytics_provider.plans.once import AppliedPlans, applied_once, held
from analytics_provider.plans.plan import Action, Change
from analytics_provider.plans.saved import (
    Consent,
    SavedPlanError,
    Touched,
    loaded,
    origin,
    refuse_if_stale,
    saved_plan,
    stale,
    write_json,
    write_of,
)
from analytics_provider.plans.writes import GROUPS, Write

Json = dict[str, Any]
ORDER = (Action.CREATE, Action.INVITE, Action.ADD, Action.REMOVE)
"""The order the sync sends its changes in (:meth:`GroupMemberSync.apply`): groups, invitations, memberships."""


def save_group_members(sync: GroupMemberSync, plan: AccessPlan) -> Json:
    """The sync's plan (just made by ``sync.plan``) as a saved plan."""
    managed = sorted(g for g in sync.managed if isinstance(g, int))
    changes = [c for action in ORDER for c in plan.of(action)]
    return saved_plan(plan, changes, _member_touched(sync, changes), {"managed_group_ids": managed},
                      origin(sync.hook), encode=_encode)


def _member_touched(sync: GroupMemberSync, changes: Iterable[Change[Any]]) -> list[Touched]:
    """The resources the group member sync's ``changes`` touch, as read when planning."""
    managed = {g for g in sync.managed if isinstance(g, int)}
    touched: dict[str, Touched] = {}
    for change in changes:
        write = change.sent
        if isinstance(write, Membership):
            user = sync.users_read[write.user_id]
            touched.setdefault(f"user {write.user_id}", Touched(
                "users", write.user_id, str(write.user_id), f"user {shown(user)}",
                {"managed_group_ids": sorted(g for g in user.get("group_ids") or [] if g in managed)}))
        elif isinstance(write, Invitation):
            touched[f"email {write.email}"] = _invited(write)
        else:
            touched[f"group {change.target}"] = Touched("groups", None, change.target,
                                                        f"group {change.target} (to create)", None)
    return list(touched.values())


def apply_saved_group_members(hook: Any, data: Any, task_id: str, consent: Consent | None = None,
                              ready: Callable[[], None] | None = None, bound: set[Any] | None = None) -> int:
    """Apply a saved plan of the group member sync exactly, or nothing (stale, not the approved one,
    made elsewhere, writing outside the groups it manages, or outside ``bound``: the groups the
    apply task manages, ids and names of groups to create; inviting into no group; another
    version's); the number applied."""
    changes, touched, params = loaded(data, task_id, "group members", hook, consent := consent or Consent(), _decode)
    managed = set(params.get("managed_group_ids") or [])
    made = _made_groups(changes)
    allowed, allowed_made, named = managed, made, "the groups the plan manages"
    if bound is not None:
        allowed = managed & {g for g in bound if isinstance(g, int)}
        allowed_made = made & {same_name(g) for g in bound if isinstance(g, str)}
        named = "the groups this task manages (groups=, group_ids=)"
    _refuse_outside(task_id, named, [
        c for c in changes
        if not (isinstance(c.sent, Membership) and (c.sent.group in allowed or (
            isinstance(c.sent.group, str) and same_name(c.sent.group) in allowed_made)))
        and not (isinstance(c.sent, Invitation) and c.sent.group_ids and set(c.sent.group_ids) <= allowed)
        and not (isinstance(c.sent, Write) and c.action is Action.CREATE
                 and same_name((c.sent.fields or {}).get("name")) in allowed_made)])
    names = {int(g["id"]): str(g["name"]) for g in hook.list_groups(limit=MAX_PAGE_SIZE)} if managed else {}
    with held(consent.once, task_id, *_locks(GroupMemberSync, managed, changes, names)):
        _refuse_stale_members(hook, task_id, touched, managed)
        plan = AccessPlan("group members", "user", "group", changes=list(changes))
        return applied_once(task_id, data, consent.once, ready, lambda: GroupMemberSync(hook, task_id).apply(plan))


def _refuse_stale_members(hook: Any, task_id: str, touched: list[Touched], managed: set[Any]) -> None:
    """Read the users and groups ``touched`` names again: refused as stale when one changed since the plan."""
    users = {int(u["id"]): u for u in hook.list_users(exclude_deleted=True, limit=MAX_PAGE_SIZE)
             if not u.get("is_deleted")}
    emails = {str(u.get("email") or "").lower(): u for u in users.values()}
    groups = ({same_name(g["name"]): g for g in hook.list_groups(limit=MAX_PAGE_SIZE)}
              if any(t.kind == "groups" for t in touched) else {})

    def managed_of(user: Json) -> Json:
        return {"managed_group_ids": sorted(g for g in user.get("group_ids") or [] if g in managed)}

    def current(then: Touched) -> Json | str | None:
        if then.kind == "groups":
            made = groups.get(same_name(then.key))
            return f"made since the plan: group {made['id']} has its name" if made else None
        if then.id is None:
            return _made(emails, then)
        user = users.get(then.id)
        return None if user is None else managed_of(user)

    refuse_if_stale(task_id, stale(touched, current))


ATTRIBUTE_ORDER = (Action.INVITE, Action.ADD, Action.CHANGE, Action.REMOVE)
"""The order the user attribute sync sends its changes in: invitations, then the entries."""


def save_user_attributes(sync: UserAttributeSync, plan: AccessPlan) -> Json:
    """The sync's plan (just made by ``sync.plan``) as a saved plan."""
    changes, touched = _attribute_touched(sync, plan)
    return saved_plan(plan, changes, touched, {"managed_attribute_ids": sorted(sync.managed)},
                      origin(sync.hook), encode=_encode)


def _attribute_touched(sync: UserAttributeSync, plan: AccessPlan) -> tuple[list[Change[Any]], list[Touched]]:
    """The user attribute sync's changes in the order they are sent, and the resources they touch as read."""
    invites = plan.of(Action.INVITE)
    entries = [c for c in plan.changes if c.action in ATTRIBUTE_ORDER[1:]]
    touched = [_invited(c.sent) for c in invites]
    for change in entries:
        user_id, attr_id = int(change.sent["subject_id"]), int(change.sent["user_attribute_id"])
        touched.append(Touched("user_attribute_values", user_id, change.target,
                               f"user {change.subject}, attribute {change.target}",
                               {"values": sync.values_read[(user_id, attr_id)]}))
    return [*invites, *entries], touched


def apply_saved_user_attributes(hook: Any, data: Any, task_id: str, consent: Consent | None = None,
                                ready: Callable[[], None] | None = None, bound: set[int] | None = None) -> int:
    """Apply a saved plan of the user attribute sync exactly, or nothing (stale, not the approved
    one, made elsewhere, writing other attributes than it manages or than ``bound``, the ids of those
    the apply task manages; another version's); the number applied."""
    changes, touched, params = loaded(data, task_id, "user attributes", hook, consent := consent or Consent(), _decode)
    managed = set(params.get("managed_attribute_ids") or [])
    allowed = managed if bound is None else managed & bound
    named = "the attributes the plan manages" if bound is None else "the attributes this task manages (attributes=)"
    _refuse_outside(task_id, named, [
        c for c in changes
        if not (isinstance(c.sent, dict) and c.sent.get("user_attribute_id") in allowed
                and c.action in ATTRIBUTE_ORDER[1:])
        and not (isinstance(c.sent, Invitation) and c.action is Action.INVITE)])
    with held(consent.once, task_id, *_locks(UserAttributeSync, managed, changes)):
        _refuse_stale_attributes(hook, task_id, touched)
        plan = AccessPlan("user attributes", "user", "attribute", changes=list(changes))
        return applied_once(task_id, data, consent.once, ready, lambda: UserAttributeSync(hook, task_id).apply(plan))


def _refuse_stale_attributes(hook: Any, task_id: str, touched: list[Touched]) -> None:
    """Read the users' values ``touched`` names again: refused as stale when one changed since the plan."""
    emails = _emails(hook) if any(t.id is None for t in touched) else {}
    values: dict[int, Json] = {}

    def current(then: Touched) -> Json | str | None:
        if then.id is None:
            return _made(emails, then)
        if then.id not in values:
            values[then.id] = hook.compute_user_attribute_values("User", then.id) or {}
        return {"values": sorted(values[then.id].get(then.key) or [])}

    refuse_if_stale(task_id, stale(touched, current))


def apply_held(sync: GroupMemberSync | UserAttributeSync, plan: AccessPlan, task_id: str,
               once: AppliedPlans | None) -> int:
    """Apply a plan just made by ``sync`` as a saved plan of it is applied: under the apply locks
    it takes (of its managed groups, by id and name, and the groups it creates, or of its
    attributes), so that it never writes while a reviewed apply of the same groups or attributes
    runs (one holding them refuses it, nothing written), and with the resources it touches read
    again once they are held (another apply changed them since this plan was made: refused as
    stale, nothing written; run again, it plans anew); ``once`` None: no locks."""
    names = getattr(sync, "_by_id", {})
    with held(once, task_id, *_locks(type(sync), sync.managed, plan.changes, names)):
        if isinstance(sync, GroupMemberSync):
            managed = {g for g in sync.managed if isinstance(g, int)}
            _refuse_stale_members(sync.hook, task_id, _member_touched(sync, plan.changes), managed)
        else:
            _refuse_stale_attributes(sync.hook, task_id, _attribute_touched(sync, plan)[1])
        return sync.apply(plan)


def _locks(sync: type, managed: Iterable[Any], changes: Iterable[Change[Any]],
           names: Mapping[int, str] | None = None) -> tuple[str, list[str]]:
    """The kind and scopes of the apply locks of a plan of ``sync`` managing ``managed``. A group is
    locked by its name (``group named finance``, as :func:`same_name` spells it) whether the plan
    creates it or finds it (``names``: the service's, by id), and by its id when it has one: a plan
    that creates a group and one that finds it once made take one lock."""
    if sync is UserAttributeSync:
        return "user attributes", [f"attribute {a}" for a in managed if isinstance(a, int)]
    ids = sorted(g for g in managed if isinstance(g, int))
    named = _made_groups(changes) | {same_name(names[g]) for g in ids if names and g in names}
    return "group members", [*(f"group {g}" for g in ids), *(f"group named {name}" for name in sorted(named))]


def _made_groups(changes: Iterable[Change[Any]]) -> set[str]:
    """The names of the groups ``changes`` create (as :func:`same_name` spells them)."""
    return {same_name(c.sent.fields.get("name")) for c in changes
            if isinstance(c.sent, Write) and c.sent.kind is GROUPS and c.sent.id is None
            and c.action is Action.CREATE and c.sent.fields}


def _refuse_outside(task_id: str, managed: str, outside: list[Any]) -> None:
    if outside:
        named = "; ".join(f"{c.action.value} {c.target} for {c.subject}" for c in outside[:20])
        raise SavedPlanError(f"{task_id}: {len(outside)} change(s) of the plan write outside {managed}: {named}; "
                             "nothing was written")


def _invited(write: Invitation) -> Touched:
    return Touched("users", None, write.email, f"user {write.email} (to invite)", None)


def _emails(hook: Any) -> dict[str, Json]:
    return {str(u.get("email") or "").lower(): u for u in hook.list_users(exclude_deleted=True, limit=MAX_PAGE_SIZE)
            if not u.get("is_deleted")}


def _made(emails: Mapping[str, Json], then: Touched) -> str | None:
    made = emails.get(then.key.lower())
    return f"made since the plan: user {made['id']} has this e-mail" if made else None


def _encode(write: Any) -> Json:
    if isinstance(write, dict):
        return {"entry": write}
    if isinstance(write, Membership):
        return {"membership": {"group": write.group, "user_id": write.user_id}}
    if isinstance(write, Invitation):
        return {"invitation": {"email": write.email, "role": write.role, "group_ids": list(write.group_ids)}}
    assert isinstance(write, Write)
    return write_json(write)


def _decode(data: Mapping[str, Any]) -> Any:
    if "entry" in data:
        return dict(data["entry"])
    if "membership" in data:
        found = data["membership"]
        return Membership(found["group"], int(found["user_id"]))
    if "invitation" in data:
        found = data["invitation"]
        return Invitation(str(found["email"]), str(found["role"]), tuple(int(g) for g in found["group_ids"]))
    return write_of(data)
