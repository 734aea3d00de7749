"""Sync group membership from rows: each row names a user and a group, by its name (a name of
digits, "2024", is a name), or by its id in a column of its own (``group_id_column``).

What the service holds is read from the users' list (each user's ``group_ids``): one request
per 100 users. Writes are one request per membership (``POST /groups/{id}/add_user/{user_id}``
and ``remove_user``), after the groups to create, when told to create missing ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from analytics_provider.access.plan import AccessPlan
from analytics_provider.access.rows import MemberColumns, RowErrors, UserKey, cells, user_key
from analytics_provider.access.users import invitable, invitations, invite_step, shown, unknown_users, walk_users
from analytics_provider.api.wire.operations import MAX_PAGE_SIZE
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.plans.apply import Step, apply_steps
from analytics_provider.plans.plan import Action, Change
from analytics_provider.plans.writes import GROUPS, Write, send_write

Json = dict[str, Any]
MANAGED_GROUPS_NEEDED = ("delete_missing needs groups= or group_ids=: the groups this task manages (the groups the "
                         "rows name leave out one whose last member was removed from the rows, and that removal "
                         "would never be applied)")
GroupRef = Any
"""A group's id (int) or, for a group still to create, its name (str)."""


class Membership(NamedTuple):
    """The write of an ``add`` or ``remove`` change: ``user_id`` into or out of ``group``."""

    group: GroupRef
    user_id: int


class GroupMemberSync:
    """Plan and apply the group memberships rows describe.

    :param groups: the names of the groups this sync manages; default: those the rows name.
    :param group_ids: the ids of groups this sync manages (with ``groups``, or instead).
    :param delete_missing: remove users from managed groups the rows do not put them in; needs
        ``groups`` or ``group_ids`` (the groups the rows name would lose a group whose last member
        the rows no longer name, and with it that member's revocation).
    :param create_missing_groups: create the groups rows name that the service does not have
        (otherwise such rows are refused).
    :param invite_role: invite the unknown users named by e-mail with this role, into their groups.
    """

    def __init__(
        self,
        hook: Any,
        task_id: str,
        *,
        columns: MemberColumns | None = None,
        groups: Sequence[Any] | None = None,
        group_ids: Sequence[Any] | None = None,
        delete_missing: bool = False,
        create_missing_groups: bool = False,
        invite_role: str | None = None,
    ) -> None:
        self.hook = hook
        self.task_id = task_id
        self.columns = columns or MemberColumns()
        self.groups = groups
        self.group_ids = group_ids
        if delete_missing and groups is None and group_ids is None:
            raise AnalyticsParameterError(f"{task_id}: {MANAGED_GROUPS_NEEDED}")
        self.delete_missing = delete_missing
        self.create_missing_groups = create_missing_groups
        self.invite_role = invite_role
        self._by_id: dict[int, str] = {}
        self._by_name: dict[str, int] = {}
        self._to_create: dict[str, str] = {}  # ordered; a name as compared (:func:`same_name`), as first written
        self.managed: set[GroupRef] = set()
        self._created: dict[str, int] = {}
        self.users_read: dict[int, Json] = {}
        """The users read while planning, by id (what a saved plan records of them)."""

    # -- plan ---------------------------------------------------------------------------------

    def read_managed(self) -> set[GroupRef] | None:
        """The groups ``groups`` and ``group_ids`` name, read from the service: ids, and the names
        of groups to create (None: neither given, the rows will say)."""
        for group in self.hook.list_groups(limit=MAX_PAGE_SIZE):
            self._by_id[int(group["id"])] = str(group["name"])
            self._by_name.setdefault(same_name(group["name"]), int(group["id"]))
        if self.groups is None and self.group_ids is None:
            return None
        return ({self._group(g, None) for g in self.groups or ()}
                | {self._group(g, None, by_id=True) for g in self.group_ids or ()})

    def plan(self, rows: Iterable[Any], source: str = "the rows") -> AccessPlan:
        managed = self.read_managed()
        desired = self._desired(rows, source, managed)
        if managed is None:
            managed = {g for wanted in desired.values() for g in wanted}
        self.managed = managed
        plan = AccessPlan("group members", "user", "group", kept=0,
                    scope="groups " + ", ".join(sorted(self._name(g) for g in managed)),
                    declared=sum(len(wanted) for wanted in desired.values()))
        plan.changes += [Change(Action.CREATE, "", name, "", "created", write=Write(GROUPS, fields={"name": name}))
                         for name in self._to_create.values()]
        for user, want in walk_users(self.hook, desired, _merge, every_user=self.delete_missing):
            plan.users_read += 1
            self.users_read[int(user["id"])] = user
            held = {g for g in user.get("group_ids") or [] if g in managed}
            wanted = want or set()
            plan.kept = (plan.kept or 0) + len(held & wanted)
            for group in sorted(wanted - held, key=self._name):
                plan.changes.append(Change(Action.ADD, shown(user), self._name(group), "", "member",
                                           write=Membership(group, user["id"])))
            if self.delete_missing:
                for group in sorted(held - wanted, key=self._name):
                    plan.changes.append(Change(Action.REMOVE, shown(user), self._name(group), "member", "",
                                               write=Membership(group, user["id"])))
        plan.unknown = unknown_users(desired)
        if self.invite_role:
            emails = invitable(self.hook, desired, plan)
            group_ids = {e: sorted(g for g in desired[("email", e)] if isinstance(g, int)) for e in emails}
            plan.changes += invitations(emails, self.invite_role, group_ids)
        return plan

    def targets(self) -> list[tuple[str, int]]:
        """The service's objects this sync writes (for lineage): the managed groups that exist
        (those it creates, once created)."""
        ids = {g if isinstance(g, int) else self._created.get(g) for g in self.managed}
        return [("groups", g) for g in sorted(g for g in ids if g is not None)]

    def _name(self, group: GroupRef) -> str:
        return group if isinstance(group, str) else self._by_id[group]

    def _group(self, named: Any, errors: tuple[RowErrors, int] | None, *, by_id: bool = False) -> GroupRef:
        """The id of the group ``named`` (a name; an id when ``by_id``), or its name when it is to
        be created; unknown ones refused."""
        text = str(named).strip() if named is not None and not isinstance(named, bool) else ""
        if by_id:
            if text.isdigit() and int(text) in self._by_id:
                return int(text)
            problem = (f"group id {text} is not a group of the service" if text.isdigit()
                       else f"group id {named!r} is not an id (a whole number)")
        elif same_name(text) in self._by_name:
            return self._by_name[same_name(text)]
        elif text and self.create_missing_groups:
            return self._to_create.setdefault(same_name(text), text)
        else:
            known = ", ".join(sorted(self._by_id.values())) or "none"
            problem = (f"group {text!r} is not a group of the service (create_missing_groups=True creates it; "
                       f"its groups: {known})")
        if errors is None:
            raise AnalyticsParameterError(f"{self.task_id}: groups: {problem}")
        errors[0].add(errors[1], problem)
        return None

    def _desired(self, rows: Iterable[Any], source: str, managed: set[GroupRef] | None) -> dict[UserKey, set[GroupRef]]:
        errors = RowErrors(self.task_id, source)
        desired: dict[UserKey, set[GroupRef]] = {}
        for index, row in enumerate(rows):
            values = cells(row, self.columns.names(), index, errors)
            if values is None:
                continue
            user, group = values
            key = user_key(user)
            if key is None:
                errors.add(index, f"{self.columns.user} {user!r} is neither an e-mail address nor a user id")
                continue
            found = self._group(group, (errors, index), by_id=self.columns.group_id is not None)
            if found is None:
                continue
            if managed is not None and found not in managed:
                shown_groups = ", ".join(sorted(self._name(g) for g in managed))
                errors.add(index, f"group {self._name(found)!r} is not one of the groups this task manages "
                                  f"({shown_groups})")
                continue
            desired.setdefault(key, set()).add(found)
        errors.check()
        return desired

    # -- apply --------------------------------------------------------------------------------

    def apply(self, plan: AccessPlan) -> int:
        """Create the groups, send the invitations, then add and remove members, one request each;
        the number of changes applied. A failure raises
        :class:`~analytics_provider.plans.apply.SyncApplyError`."""
        created = self._created

        def create(chunk: Sequence[Change[Write]]) -> None:
            for change in chunk:
                created[change.target] = int(send_write(self.hook, change)["id"])

        def member(chunk: Sequence[Change[Membership]]) -> None:
            for change in chunk:
                group, user_id = change.sent
                group_id = created[group] if isinstance(group, str) else group
                if change.action is Action.ADD:
                    self.hook.add_user_to_group(group_id, user_id)
                else:
                    self.hook.remove_user_from_group(group_id, user_id)

        memberships = [c for c in plan.changes if c.action in (Action.ADD, Action.REMOVE)]
        return apply_steps(self.task_id, plan, [
            Step(plan.of(Action.CREATE), 1, create),
            invite_step(self.hook, plan),
            Step(memberships, 1, member),
        ])


def same_name(name: Any) -> str:
    """A group's name as the service compares names: without case, without surrounding spaces
    (it refuses a group "sales" when "Sales" exists)."""
    return str(name).strip().lower()


def _merge(a: set[GroupRef], b: set[GroupRef]) -> set[GroupRef]:
    return a | b
