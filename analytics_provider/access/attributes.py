"""Sync user attributes from rows: each row names a user, an attribute and a value.

The service keeps, per user and attribute, an entry: ``manual`` with values, ``all`` (every
value) or ``inherit`` (the values of the user's groups). The sync writes ``manual`` entries with
the rows' values; removing one resets it to ``inherit``, the only removal the API has.

What the service holds is read per user: the values the user has (``GET
/user_attribute_entries/computed_values``, their own or their groups'); where some differ from the
rows' and are not empty, the user's own entries too (``GET /user_attribute_entries``, which has no
values), to tell an addition from a change. A user who already has the rows' values gets no write, whether the
values are their own or their groups' (if the groups' change, the next run writes them). Writes are
upserts of at most 100 entries.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from analytics_provider.access.plan import AccessPlan, shown_values
from analytics_provider.access.rows import AttributeColumns, RowErrors, UserKey, cells, user_key
from analytics_provider.access.users import invitable, invitations, invite_step, shown, unknown_users, walk_users
from analytics_provider.api.wire.operations import MAX_PAGE_SIZE, MAX_UPSERT_ENTRIES
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.plans.apply import Step, apply_steps
from analytics_provider.plans.plan import Action, Change

log = logging.getLogger(__name__)
Json = dict[str, Any]
Wanted = dict[int, set[str]]
"""Values per attribute id."""
ALL_VALUES = "(all values)"
MANAGED_ATTRIBUTES_NEEDED = ("delete_missing needs attributes=: the attributes this task manages (the attributes "
                             "the rows give values for leave out one whose every value became empty, and its "
                             "removals would never be applied)")


class UserAttributeSync:
    """Plan and apply the user attribute entries rows describe.

    :param attributes: the attributes (names or ids) this sync manages; default: those the rows
        name. Rows naming another are refused.
    :param delete_missing: reset to ``inherit`` the managed entries of users that the rows do
        not give a value for (every user of the service is read then); needs ``attributes``.
    :param invite_role: invite the unknown users named by e-mail, with this role; their
        attributes are set by the next run, once they exist.
    """

    def __init__(
        self,
        hook: Any,
        task_id: str,
        *,
        columns: AttributeColumns | None = None,
        attributes: Sequence[Any] | None = None,
        delete_missing: bool = False,
        invite_role: str | None = None,
    ) -> None:
        self.hook = hook
        self.task_id = task_id
        self.columns = columns or AttributeColumns()
        self.invite_role = invite_role
        self.attributes = attributes
        self.delete_missing = delete_missing
        if delete_missing and attributes is None:
            raise AnalyticsParameterError(f"{task_id}: {MANAGED_ATTRIBUTES_NEEDED}")
        self._by_id: dict[int, Json] = {}
        self._by_name: dict[str, Json] = {}
        self.managed: set[int] = set()
        self.values_read: dict[tuple[int, int], list[str]] = {}
        """The values each user had of each attribute the plan writes, by ``(user id, attribute
        id)``, as read while planning (what a saved plan records of them)."""

    # -- plan ---------------------------------------------------------------------------------

    def read_managed(self) -> set[int] | None:
        """The ids of the attributes ``attributes`` names, read from the service (None: not given,
        the rows will say)."""
        self._read_attributes()
        return None if self.attributes is None else {self._attribute(a, None) for a in self.attributes}

    def plan(self, rows: Iterable[Any], source: str = "the rows") -> AccessPlan:
        managed = self.read_managed()
        desired = self._desired(rows, source, managed)
        if managed is None:
            managed = {attr for wanted in desired.values() for attr in wanted}
        self.managed = managed
        plan = AccessPlan("user attributes", "user", "attribute", kept=0,
                    scope="attributes " + ", ".join(sorted(self._by_id[a]["name"] for a in managed)),
                    declared=sum(len(wanted) for wanted in desired.values()))
        for user, want in walk_users(self.hook, desired, _merge, every_user=self.delete_missing):
            plan.users_read += 1
            changes, held = self._user_changes(user, want or {}, managed)
            plan.changes.extend(changes)
            plan.kept = (plan.kept or 0) + held - sum(1 for c in changes if c.action is Action.REMOVE)
        plan.unknown = unknown_users(desired)
        if self.invite_role:
            plan.changes += invitations(invitable(self.hook, desired, plan), self.invite_role)
        return plan

    def targets(self) -> list[tuple[str, int]]:
        """The service's objects this sync writes (for lineage): the managed attributes."""
        return [("user_attributes", a) for a in sorted(self.managed)]

    def _read_attributes(self) -> None:
        for attribute in self.hook.list_user_attributes(limit=MAX_PAGE_SIZE):
            self._by_id[int(attribute["id"])] = attribute
            self._by_name[str(attribute["name"])] = attribute

    def _attribute(self, named: Any, errors: tuple[RowErrors, int] | None) -> int:
        """The id of the attribute ``named`` (a name or an id); unknown and system ones refused."""
        text = str(named).strip() if named is not None else ""
        found = self._by_id.get(int(text)) if text.isdigit() else self._by_name.get(text)
        problem = None
        if found is None:
            known = ", ".join(sorted(n for n, a in self._by_name.items() if not a.get("is_system_attribute")))
            problem = f"attribute {named!r} is not an attribute of the service (its attributes: {known or 'none'})"
        elif found.get("is_system_attribute"):
            problem = f"attribute {found['name']!r} is a system attribute: the service sets its values"
        if problem is None:
            return int(found["id"])  # type: ignore[index]
        if errors is None:
            raise AnalyticsParameterError(f"{self.task_id}: attributes: {problem}")
        errors[0].add(errors[1], problem)
        return -1

    def _desired(self, rows: Iterable[Any], source: str, managed: set[int] | None) -> dict[UserKey, Wanted]:
        errors = RowErrors(self.task_id, source)
        desired: dict[UserKey, Wanted] = {}
        for index, row in enumerate(rows):
            values = cells(row, self.columns.names(), index, errors)
            if values is None:
                continue
            user, attribute, value = values
            key = user_key(user)
            if key is None:
                errors.add(index, f"{self.columns.user} {user!r} is neither an e-mail address nor a user id")
                continue
            attr_id = self._attribute(attribute, (errors, index))
            if attr_id < 0:
                continue
            if managed is not None and attr_id not in managed:
                errors.add(index, f"attribute {self._by_id[attr_id]['name']!r} is not one of the attributes "
                                  f"this task manages ({', '.join(sorted(self._by_id[a]['name'] for a in managed))})")
                continue
            wanted = desired.setdefault(key, {})
            for item in value if isinstance(value, (list, tuple, set)) else [value]:
                if item is not None and str(item) != "":
                    wanted.setdefault(attr_id, set()).add(str(item))
        errors.check()
        return desired

    def _user_changes(self, user: Json, want: Wanted, managed: set[int]) -> tuple[list[Change[Json]], int]:
        """The user's changes, and how many managed attributes the user has values for: the
        values they have (one request) decide which attributes need a write; where one of those
        has values, the user's own entries are read (one more request) to tell a change of their
        own from values of their groups."""
        values = self.hook.compute_user_attribute_values("User", user["id"]) or {}
        effective = {a: set(values.get(self._by_id[a]["name"]) or []) for a in managed}
        in_question = [a for a in sorted(managed) if (effective[a] != want[a] if want.get(a) else
                                                       self.delete_missing and bool(effective[a]))]
        has_values = sum(1 for a in managed if effective[a])
        if not in_question:
            return [], has_values
        own: dict[int, str] = {}
        if any(effective[a] for a in in_question):  # without values there is no own entry to tell apart
            own = {
                int(e["user_attribute_id"]): str(e.get("input_type"))
                for e in self.hook.list_user_attribute_entries("User", user["id"], limit=MAX_PAGE_SIZE)
                if e.get("input_type") != "inherit"
            }
        changes = []
        for attr_id in in_question:
            self.values_read[(int(user["id"]), attr_id)] = sorted(effective[attr_id])
            kind, wanted = own.get(attr_id), want.get(attr_id)
            held = None if kind == "all" else effective[attr_id]  # own values override the groups'
            if wanted:
                changes.append(self._change(Action.ADD if kind is None else Action.CHANGE, user, attr_id, held, wanted))
            elif kind is not None:  # inherited values are the groups': nothing of the user's to remove
                changes.append(self._change(Action.REMOVE, user, attr_id, held, None))
        return changes, has_values

    def _change(self, action: Action, user: Json, attr_id: int, held: set[str] | None,
                wanted: set[str] | None) -> Change[Json]:
        """A change whose write is the user's upsert entry for the attribute."""
        before = "" if action is Action.ADD else ALL_VALUES if held is None else shown_values(held)
        entry = {"subject_type": "User", "subject_id": user["id"], "user_attribute_id": attr_id}
        if wanted:
            entry.update(input_type="manual", values=sorted(wanted))
        else:
            entry.update(input_type="inherit", values=[])
        after = shown_values(wanted) if wanted else "(inherit)"
        return Change(action, shown(user), self._by_id[attr_id]["name"], before, after, write=entry)

    # -- apply --------------------------------------------------------------------------------

    def apply(self, plan: AccessPlan) -> int:
        """Write the plan: the invitations, then the entries, 100 a request; the number of changes
        applied. A failure raises :class:`~analytics_provider.plans.apply.SyncApplyError`."""
        entries = [c for c in plan.changes if c.action in (Action.ADD, Action.CHANGE, Action.REMOVE)]
        return apply_steps(self.task_id, plan, [
            invite_step(self.hook, plan),
            Step(entries, MAX_UPSERT_ENTRIES, lambda chunk: self.hook.upsert_user_attribute_entries(
                [c.sent for c in chunk])),
        ])


def _merge(a: Wanted, b: Wanted) -> Wanted:
    for attr_id, values in b.items():
        a.setdefault(attr_id, set()).update(values)
    return a
