"""Planning and applying delivery files: declared objects matched with the service's resources by key.

A resource is the files' when its title carries a key (``... [managed: weekly-sales]``,
:func:`~analytics_provider.deliveries.check.managed_title`); every other schedule and alert is
never read further, changed or deleted. A declared object without its resource is created; one
whose resource differs in a field the file gives is updated (fields the file leaves out are the
service's: its defaults never count as a change); a resource whose key no file declares any more
is deleted only with ``prune``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analytics_provider.access.apply import Step, apply_steps
from analytics_provider.access.plan import CHANGE, CREATE, REMOVE, Change, Plan
from analytics_provider.api.operations import MAX_PAGE_SIZE
from analytics_provider.deliveries.check import KINDS, Declared, key_of

Json = dict[str, Any]
API = {"schedules": "data_schedule", "alerts": "data_alert"}
"""Each section's name in the hook's methods (``list_data_schedules``, ``create_data_alert``...)."""


def plan_deliveries(hook: Any, declared: Sequence[Declared], *, prune: bool = False) -> Plan:
    plan = Plan("deliveries", "resource", "key")
    for section, api in API.items():
        managed: dict[str, Json] = {}
        for resource in getattr(hook, f"list_{api}s")(limit=MAX_PAGE_SIZE):
            key = key_of(resource.get("title"))
            if key is not None:
                managed.setdefault(key, resource)
        for item in (d for d in declared if d.section == section):
            resource = managed.pop(item.key, None)
            if resource is None:
                plan.changes.append(Change(CREATE, KINDS[section], item.key, "", item.where,
                                           write=(section, None, item.body)))
                continue
            changed = differences(item.body, resource)
            if changed:
                plan.changes.append(Change(CHANGE, f"{KINDS[section]} {resource['id']}", item.key,
                                           "; ".join(f"{k} {v!r}" for k, v, _ in changed),
                                           "; ".join(f"{k} {w!r}" for k, _, w in changed),
                                           write=(section, resource["id"], item.body)))
        for key, resource in sorted(managed.items()):
            shown = f"{KINDS[section]} {resource['id']} ({key})"
            if prune:
                plan.changes.append(Change(REMOVE, f"{KINDS[section]} {resource['id']}", key, "in no file", "",
                                           write=(section, resource["id"], None)))
            else:
                plan.left.append(shown)
    return plan


def targets(plan: Plan) -> list[tuple[str, int]]:
    """The resources the plan changes or deletes (for lineage): ``("data_schedules", 12)``."""
    return [(f"{API[c.write[0]]}s", int(c.write[1])) for c in plan.changes if c.write[1] is not None]


def differences(declared: Any, held: Any, where: str = "") -> list[tuple[str, Any, Any]]:
    """``(field, held, declared)`` for each field the declaration gives that the service holds
    otherwise; fields it does not give are not compared (the service's defaults)."""
    if isinstance(declared, dict):
        if not isinstance(held, dict):
            return [(where or "(all)", held, declared)]
        found = []
        for name, value in declared.items():
            found += differences(value, held.get(name), f"{where}.{name}" if where else str(name))
        return found
    if isinstance(declared, list) and isinstance(held, list) and len(declared) == len(held):
        return [d for index, (a, b) in enumerate(zip(declared, held, strict=True))
                for d in differences(a, b, f"{where}[{index}]")]
    if _same(declared, held):
        return []
    return [(where, held, declared)]


def _same(declared: Any, held: Any) -> bool:
    if isinstance(declared, int) and not isinstance(declared, bool) and isinstance(held, str):
        return held == str(declared)  # an id the service answers as a string (a widget's)
    return bool(declared == held)


def apply_deliveries(hook: Any, plan: Plan, task_id: str, created: list[tuple[str, int]] | None = None) -> int:
    """Create, then update, then delete (prune), one request each; the number applied. The
    resources created are added to ``created`` (``("data_schedules", 12)``)."""

    def send(chunk: Sequence[Change]) -> None:
        for change in chunk:
            section, ident, body = change.write
            api = API[section]
            if change.action == CREATE:
                answer = getattr(hook, f"create_{api}")(body)
                if created is not None and isinstance(answer, dict) and answer.get("id") is not None:
                    created.append((f"{api}s", int(answer["id"])))
            elif change.action == CHANGE:
                getattr(hook, f"update_{api}")(ident, body)
            else:
                getattr(hook, f"delete_{api}")(ident)

    return apply_steps(task_id, plan, [Step(plan.of(action), 1, send) for action in (CREATE, CHANGE, REMOVE)])
