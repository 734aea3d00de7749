"""The deliveries' saved plan: which resources its changes touch (the compared fields of each
schedule and alert it updates or deletes; the key of each it creates), and its apply: those
resources read again, then exactly its changes sent in its order, or nothing when one changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analytics_provider.deliveries.check import marker_of
from analytics_provider.deliveries.plan import ORDER, SHOWN, Json
from analytics_provider.plans.apply import Step, apply_steps
from analytics_provider.plans.plan import Change, Plan
from analytics_provider.plans.saved import Touched, loaded, refuse_if_stale, saved_plan, stale
from analytics_provider.plans.writes import KINDS, Write, send_write


def save_deliveries(plan: Plan, seen: Mapping[tuple[str, int], Json], *, scope: str | None, prune: bool) -> Json:
    """The plan as a saved plan (``seen``: the resources read while planning, by kind and id)."""
    changes = [c for action in ORDER for c in plan.of(action)]
    return saved_plan(plan, changes, [_touched(c, seen) for c in changes], {"scope": scope, "prune": prune})


def _touched(change: Change[Write], seen: Mapping[tuple[str, int], Json]) -> Touched:
    write, key = change.sent, change.target
    shown = SHOWN[write.kind.name]
    if write.id is None:
        return Touched(write.kind.name, None, key, f"{shown} {key} (to create)", None)
    held = seen[(write.kind.name, write.id)]
    compared = list(write.fields) if write.fields is not None else ["title"]  # a delete compared the marker
    return Touched(write.kind.name, write.id, key, f"{shown} {write.id} ({key})",
                   {name: held.get(name) for name in compared})


def apply_saved_deliveries(hook: Any, data: Any, task_id: str, created: list[tuple[str, int]] | None = None) -> int:
    """Apply a saved plan exactly: refused if it is not one of this version, edited, or stale
    (nothing written); otherwise its changes, in its order, one request each. The number applied."""
    changes, touched, params = loaded(data, task_id, "deliveries")
    scope = params.get("scope")
    held = {name: list(KINDS[name].list(hook)) for name in sorted({t.kind for t in touched})}
    by_id = {(name, int(r["id"])): r for name, resources in held.items() for r in resources}

    def current(then: Touched) -> Json | str | None:
        if then.id is None:
            made = [r for r in held[then.kind] if _carries(r, scope, then.key)]
            return f"made since the plan: {SHOWN[then.kind]} {made[0]['id']} carries its key" if made else None
        now = by_id.get((then.kind, then.id))
        return None if now is None else {name: now.get(name) for name in then.fields or {}}

    refuse_if_stale(task_id, stale(touched, current))
    plan = Plan("deliveries", "resource", "key", changes=list(changes))

    def send(chunk: Sequence[Change[Write]]) -> None:
        for change in chunk:
            answer = send_write(hook, change)
            if change.sent.id is None and created is not None and isinstance(answer, dict) and answer.get("id"):
                created.append((change.sent.kind.name, int(answer["id"])))

    return apply_steps(task_id, plan, [Step(plan.changes, 1, send)])


def _carries(resource: Json, scope: Any, key: str) -> bool:
    """Whether the resource carries the key in the scope, or without a scope (it would be adopted)."""
    marker = marker_of(resource.get("title"))
    return marker is not None and marker[1] == key and marker[0] in (scope, None)
