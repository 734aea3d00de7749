"""Planning and applying delivery files: declared objects matched with the service's resources by key.

A resource is the files' when its title carries their scope and a key (``... [managed:
sales/weekly-sales]``, :func:`~analytics_provider.deliveries.check.managed_title`); every other
schedule and alert (made by hand, by another tool, or by the files of another scope) is never
changed or deleted. A declared object without its resource is created; one whose resource differs
in a field the file gives is updated (fields the file leaves out are the service's: its defaults
never count as a change); a resource of the scope whose key no file declares any more is deleted
only with ``prune``. A resource made before scopes (``[managed: weekly-sales]``) is adopted by the
first scope that declares its key (its title is updated); it is never pruned by a scope.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analytics_provider.deliveries.check import KINDS, Declared, marker_of, scope_problem, scoped
from analytics_provider.deliveries.shown import compared, sends, untold
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.plans.apply import NotApplied
from analytics_provider.plans.plan import Action, Change, Plan
from analytics_provider.plans.writes import DATA_ALERTS, DATA_SCHEDULES, Kind, Write

Json = dict[str, Any]
SECTIONS: dict[str, Kind] = {"schedules": DATA_SCHEDULES, "alerts": DATA_ALERTS}
"""The kind of resource each section of the files declares."""
SHOWN = {kind.name: KINDS[section] for section, kind in SECTIONS.items()}
"""Each kind as messages name it (``data schedule``)."""
ORDER = (Action.CREATE, Action.CHANGE, Action.REMOVE)
"""The order changes are sent in: creates, then updates, then deletes (prune)."""


def check_scope(scope: Any, prune: bool, where: str) -> None:
    """Refuse a malformed scope, and ``prune`` without one (it would reach every file's resources)."""
    problem = scope_problem(scope)
    if problem:
        raise AnalyticsParameterError(f"{where}: scope must be {problem}; got {scope!r}")
    if prune and scope is None:
        raise AnalyticsParameterError(
            f"{where}: prune needs a scope (the name the files' resources carry: [managed: <scope>/<key>]), so "
            "that it deletes only what these files made; resources made without one are adopted, never pruned")


def plan_deliveries(hook: Any, declared: Sequence[Declared], *, scope: str | None = None,
                    prune: bool = False, seen: dict[tuple[str, int], Json] | None = None,
                    titles: Mapping[tuple[str, int], str] | None = None) -> Plan:
    """The plan; ``seen`` receives each resource read, by ``(kind name, id)`` (to save the plan).
    A create's row says what it sends (:func:`~analytics_provider.deliveries.shown.sends` and every
    other field it sends, :func:`~analytics_provider.deliveries.shown.untold`: the
    sources by their ``titles`` when known) and where it is declared; an update's, the fields it
    changes (URLs with their tokens masked: :func:`~analytics_provider.deliveries.shown.compared`)."""
    check_scope(scope, prune, "plan")
    plan = Plan("deliveries", "resource", "key", scope=f"scope {scope!r}" if scope else "",
                declared=len(declared), kept=0)
    for section, kind in SECTIONS.items():
        owned: dict[str, list[Json]] = {}
        unscoped: dict[str, list[Json]] = {}  # made before scopes: adopted when declared
        in_scopes: dict[str, list[tuple[str, Json]]] = {}  # of a scope: a plan without one does not make its key
        for resource in kind.list(hook):
            if seen is not None:
                seen[(kind.name, int(resource["id"]))] = resource
            marker = marker_of(resource.get("title"))
            if marker is not None and marker[0] in (scope, None):
                (owned if marker[0] == scope else unscoped).setdefault(marker[1], []).append(resource)
            elif marker is not None and scope is None:
                in_scopes.setdefault(marker[1], []).append((str(marker[0]), resource))
        for item in (d for d in declared if d.section == section):
            found = owned.pop(item.key, None) or unscoped.pop(item.key, None) or []
            body = scoped(item, scope)
            if len(found) > 1:
                plan.conflicts.append((f"{KINDS[section]} {item.key}", [f"{KINDS[section]} {r['id']}" for r in found]))
                continue
            if not found and item.key in in_scopes:
                plan.left += [f"{KINDS[section]} {r['id']} ({item.key}, of scope {held_by}: not made again without "
                              "a scope)" for held_by, r in in_scopes[item.key]]
                continue
            if not found:
                plan.changes.append(Change(Action.CREATE, KINDS[section], item.key, "",
                                           f"{sends(body, titles)}{''.join(f'; {f}' for f in untold(body))} "
                                           f"({item.where})", write=Write(kind, None, body)))
                continue
            resource = found[0]
            plan.kept = (plan.kept or 0) + 1
            changed = differences(body, resource)
            if changed:
                plan.changes.append(Change(Action.CHANGE, f"{KINDS[section]} {resource['id']}", item.key,
                                           "; ".join(f"{k} {compared(v, w, k)[0]}" for k, v, w in changed),
                                           "; ".join(f"{k} {compared(v, w, k)[1]}" for k, v, w in changed),
                                           write=Write(kind, int(resource["id"]), body)))
        for key, resources in sorted(owned.items()):
            for resource in resources:
                if prune:
                    plan.changes.append(Change(Action.REMOVE, f"{KINDS[section]} {resource['id']}", key,
                                               "in no file", "", write=Write(kind, int(resource["id"]))))
                else:
                    plan.left.append(f"{KINDS[section]} {resource['id']} ({key})")
        if scope is not None:
            plan.left += [f"{KINDS[section]} {r['id']} ({key}, made without a scope)"
                          for key, resources in sorted(unscoped.items()) for r in resources]
    return plan


def targets(plan: Plan) -> list[tuple[str, int]]:
    """The resources the plan changes or deletes (for lineage): ``("data_schedules", 12)``."""
    return [(c.sent.kind.name, c.sent.id) for c in plan.changes if c.sent.id is not None]


class _Reset:
    def __repr__(self) -> str:
        return "(not in the file: reset)"


RESET = _Reset()
"""The declared side of a field the service holds and the file no longer gives: the update
(which sends the whole object) removes it."""


def differences(declared: Any, held: Any, where: str = "") -> list[tuple[str, Any, Any]]:
    """``(field, held, declared)`` for each field the declaration gives that the service holds
    otherwise, and for each field inside it that the service holds (not empty) and the file no
    longer gives (declared :data:`RESET`). At the top, fields the file does not give are the
    service's own (its id, owner, dates) and not compared."""
    if isinstance(declared, dict):
        if not isinstance(held, dict):
            return [(where or "(all)", held, declared)]
        found = []
        for name, value in declared.items():
            found += differences(value, held.get(name), f"{where}.{name}" if where else str(name))
        if where:
            found += [(f"{where}.{name}", value, RESET) for name, value in held.items()
                      if name not in declared and value not in (None, "", [], {})]
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


def same_key(found: Any, scope: str | None, key: str) -> bool:
    """Whether a resource titled ``found`` carries ``key`` as a plan of ``scope`` sees it: in the
    scope or made without one (which the scope adopts); for a plan without a scope, in any scope
    (which it does not make again)."""
    marker = marker_of(found)
    return marker is not None and marker[1] == key and (scope is None or marker[0] in (scope, None))


def create_once(hook: Any, write: Write, created: list[tuple[str, int]] | None = None) -> Json:
    """Create the resource unless one carrying its key as its plan sees it (:func:`same_key`) exists,
    then read the kind again: when another apply made one too meanwhile (two applies racing, with or
    without a scope), the first made (the lowest id) is kept and this apply deletes its own copy.
    Either way the change is reported as not applied (:class:`NotApplied`), naming the resource kept.
    The service's answer."""
    scope, key = marker_of((write.fields or {})["title"]) or (None, "")
    shown = SHOWN[write.kind.name]
    for resource in write.kind.list(hook):
        if same_key(resource.get("title"), scope, key):
            raise NotApplied(f"{shown} {resource['id']} carrying its key was created meanwhile (another apply?): "
                             "not created twice; the next run plans against it", rerun_helps=True)
    answer = write.kind.create(hook, write.fields or {})
    ident = int(answer["id"]) if isinstance(answer, dict) and answer.get("id") is not None else None
    if ident is None:
        return answer
    carrying = sorted(int(r["id"]) for r in write.kind.list(hook) if same_key(r.get("title"), scope, key))
    if carrying and carrying[0] != ident:
        write.kind.delete(hook, ident)
        raise NotApplied(f"another apply created {shown} {carrying[0]} with this key at the same time: this apply's "
                         f"copy ({shown} {ident}) was deleted, {shown} {carrying[0]} is kept (one per key)",
                         rerun_helps=False)
    if created is not None:
        created.append((write.kind.name, ident))
    return answer
