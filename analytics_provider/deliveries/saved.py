"""The deliveries' saved plan: which resources its changes touch (the compared fields of each
schedule and alert it updates or deletes; the key of each it creates), and its apply: those
resources read again, then exactly its changes sent in its order, or nothing when one changed or
when a change writes what a plan of its scope may not (another kind, a resource without its
marker, a delete without prune). Each update and delete reads its resource again just before it
is sent (another apply changed it since: not sent), each update just after (another apply
overwrote it at once: reported as lost). A plan just made (``manage apply PATH``, the operator
with ``path=``) is applied by the same code, under the same locks (:func:`locks`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from analytics_provider.deliveries.check import marker_of
from analytics_provider.deliveries.plan import ORDER, SECTIONS, SHOWN, Json, create_once, same_key
from analytics_provider.deliveries.shown import masked_fields
from analytics_provider.exceptions import NotFoundError
from analytics_provider.plans.apply import NotApplied, Step, apply_steps
from analytics_provider.plans.once import AppliedPlans, applied_once, held
from analytics_provider.plans.plan import Action, Change, Plan
from analytics_provider.plans.saved import (
    Consent,
    SavedPlanError,
    Touched,
    loaded,
    origin,
    refuse_if_stale,
    saved_plan,
    stale,
)
from analytics_provider.plans.writes import KINDS, Write, send_write

OWN_KINDS = frozenset(kind.name for kind in SECTIONS.values())
"""What a deliveries plan may write: data schedules and data alerts."""


def save_deliveries(hook: Any, plan: Plan, seen: Mapping[tuple[str, int], Json], *, scope: str | None,
                    prune: bool) -> Json:
    """The plan as a saved plan (``seen``: the resources read while planning, by kind and id)."""
    changes = [c for action in ORDER for c in plan.of(action)]
    return saved_plan(plan, changes, [_touched(c, seen) for c in changes], {"scope": scope, "prune": prune},
                      origin(hook))


def _touched(change: Change[Write], seen: Mapping[tuple[str, int], Json]) -> Touched:
    write, key = change.sent, change.target
    shown = SHOWN[write.kind.name]
    if write.id is None:
        return Touched(write.kind.name, None, key, f"{shown} {key} (to create)", None)
    held = seen[(write.kind.name, write.id)]
    compared = list(write.fields) if write.fields is not None else ["title"]  # a delete compared the marker
    return Touched.read(write.kind.name, write.id, key, f"{shown} {write.id} ({key})",
                        {name: held.get(name) for name in compared}, masked_fields)


def apply_saved_deliveries(hook: Any, data: Any, task_id: str, created: list[tuple[str, int]] | None = None,
                           consent: Consent | None = None, ready: Callable[[], None] | None = None) -> int:
    """Apply a saved plan exactly: refused if it is not one of this version, not the approved
    one, made against another service, beyond the ``consent``'s removals, writing outside its
    scope, or stale (nothing written); otherwise ``ready`` is called and its changes sent, in
    its order, one request each. The number applied."""
    consent = consent or Consent()
    changes, touched, params = loaded(data, task_id, "deliveries", hook, consent)
    return _checked(hook, data, task_id, changes, touched, params, created, consent.once, ready)


def apply_deliveries(hook: Any, plan: Plan, seen: Mapping[tuple[str, int], Json], task_id: str, *,
                     scope: str | None, prune: bool, created: list[tuple[str, int]] | None = None,
                     once: AppliedPlans | None = None) -> int:
    """Apply a plan just made (``manage apply PATH``, the operator with ``path=``) as a saved plan
    is applied, by the same code: under the same locks (``once``'s), its resources read again
    first (changed since it was planned, by another apply meanwhile: refused as stale, nothing
    written), each update and delete read again around its write. Only the record of a plan
    applied is not made (a plan made anew on each run is never applied twice). The resources
    created are added to ``created``; the number applied."""
    changes = [c for action in ORDER for c in plan.of(action)]
    return _checked(hook, None, task_id, changes, [_touched(c, seen) for c in changes],
                    {"scope": scope, "prune": prune}, created, once, None)


def locks(scope: Any, touched: Sequence[Touched]) -> list[str]:
    """The apply locks a deliveries plan of ``scope`` takes, so that two applies that may write one
    resource, or make one key twice, exclude each other: its scope's (``no scope`` for a plan made
    without one, which writes only resources made without a scope), and ``no scope``'s too when the
    plan adopts one of those (updates a resource whose title carried no scope when it was planned)
    or creates a key (which a plan without a scope may be creating too)."""
    adopts = scope is not None and any(_unscoped(t) or t.id is None for t in touched)
    return [f"scope {scope}"] * (scope is not None) + [NO_SCOPE] * (scope is None or adopts)


NO_SCOPE = "no scope"
"""The lock of the resources made without a scope: every plan that may write one takes it."""


def _unscoped(then: Touched) -> bool:
    """Whether the plan found the resource carrying its key without a scope (it adopts it)."""
    marker = marker_of(then.fields.get("title")) if then.id is not None and isinstance(then.fields, Mapping) else None
    return marker is not None and marker[0] is None


def _checked(hook: Any, data: Any, task_id: str, changes: list[Change[Write]], touched: list[Touched], params: Json,
             created: list[tuple[str, int]] | None, once: AppliedPlans | None, ready: Callable[[], None] | None) -> int:
    """The apply of a plan's ``changes`` (``data``: its saved plan, recorded as applied; None for a
    plan just made) under the :func:`locks` it takes."""
    foreign = sorted({c.sent.kind.name for c in changes} - OWN_KINDS)
    if foreign:
        raise SavedPlanError(f"{task_id}: a deliveries plan writes data schedules and alerts only; this one writes "
                             f"{', '.join(foreign)}: nothing was written")
    taken = locks(params.get("scope"), touched)
    with held(once, task_id, "deliveries", taken):
        return _apply(hook, data, task_id, changes, touched, params, created, once if data is not None else None,
                      ready, NO_SCOPE in taken)


def _apply(hook: Any, data: Any, task_id: str, changes: list[Change[Write]], touched: list[Touched], params: Json,
           created: list[tuple[str, int]] | None, once: AppliedPlans | None, ready: Callable[[], None] | None,
           adopting: bool) -> int:
    """The apply once its locks are held: the stale check (which sees what an apply before this one
    wrote), then the changes; ``adopting``: the lock of the resources made without a scope is held."""
    scope = params.get("scope")
    listed = {name: list(KINDS[name].list(hook))
            for name in sorted({t.kind for t in touched} | {c.sent.kind.name for c in changes})}
    by_id = {(name, int(r["id"])): r for name, resources in listed.items() for r in resources}
    outside = [line for c in changes if (line := _outside(c, scope, bool(params.get("prune")), by_id, adopting))]
    if outside:
        raise SavedPlanError(f"{task_id}: {len(outside)} change(s) of the plan write outside scope {scope!r}; "
                             "nothing was written:\n" + "\n".join(f"- {line}" for line in outside[:20]))

    def current(then: Touched) -> Json | str | None:
        if then.id is None:
            made = [r for r in listed[then.kind] if _carries(r, scope, then.key)]
            return f"made since the plan: {SHOWN[then.kind]} {made[0]['id']} carries its key" if made else None
        now = by_id.get((then.kind, then.id))
        return None if now is None else {name: now.get(name) for name in then.fields or {}}

    refuse_if_stale(task_id, stale(touched, current, masked_fields))
    plan = Plan("deliveries", "resource", "key", changes=list(changes))

    seen: dict[tuple[str, int | None], Touched] = {(t.kind, t.id): t for t in touched if t.id is not None}

    def send(chunk: Sequence[Change[Write]]) -> None:
        for change in chunk:
            if change.action is Action.CREATE:
                create_once(hook, change.sent, created)
            else:
                unchanged_until_now(hook, change.sent, seen.get((change.sent.kind.name, change.sent.id)))
                kept_after(hook, change.sent, send_write(hook, change))

    return applied_once(task_id, data, once, ready, lambda: apply_steps(task_id, plan, [Step(plan.changes, 1, send)]))


def unchanged_until_now(hook: Any, write: Write, then: Touched | None) -> None:
    """Read the resource an update or delete writes once more, right before the write: when it is no
    longer as the plan saw it (another apply wrote it since this one's stale check), the write is not
    sent (:class:`NotApplied`, naming what changed). The service has no conditional write: what is
    left is the moment between this read and the write."""
    found = None if then is None or write.id is None else _differs(hook, write, then)
    if found:
        raise NotApplied(f"changed since the plan, after this apply's stale check (another apply at the same "
                         f"time?): {found}; not written: plan again", rerun_helps=False)


def kept_after(hook: Any, write: Write, answer: Any) -> None:
    """Read an updated resource once more: when it no longer holds what the service answered to this
    update (another apply wrote it just after), the change is reported as not applied
    (:class:`NotApplied`, naming what the other write changed): its effect was lost."""
    if write.id is None or write.fields is None or not isinstance(answer, Mapping):
        return
    found = _differs(hook, write, Touched(write.kind.name, write.id, "", f"{SHOWN[write.kind.name]} {write.id}",
                                          {name: answer.get(name) for name in write.fields}))
    if found:
        raise NotApplied(f"written, then overwritten at once by another write (another apply at the same time?): "
                         f"{found}; its effect is lost: plan again", rerun_helps=False)


def _differs(hook: Any, write: Write, then: Touched) -> str | None:
    """How the resource ``write`` names differs now from ``then`` (None: it does not)."""
    try:
        now: Json | None = write.kind.get(hook, int(write.id or 0))
    except NotFoundError:
        now = None
    found = stale([then], lambda t: None if now is None else {name: now.get(name) for name in t.fields or {}})
    return found[0] if found else None


def _outside(change: Change[Write], scope: Any, prune: bool, by_id: Mapping[tuple[str, int], Json],
             adopting: bool) -> str | None:
    """Why the change writes what a plan of ``scope`` may not, or None: a create or update must send
    the scope's marker of its key; an update must be of a resource of the scope (or made without one,
    adopted, when ``adopting``: the lock of those is held); a delete of one of the scope, and only
    with prune (a resource gone since is left to the stale check)."""
    write, key = change.sent, change.target
    shown = f"{change.action.value} {SHOWN[write.kind.name]}{'' if write.id is None else f' {write.id}'} ({key})"
    mine, sent = (scope, key), marker_of((write.fields or {}).get("title"))
    if change.action is Action.REMOVE and not (prune and scope is not None):
        return f"{shown}: a delete, in a plan made without prune"
    if change.action is Action.CREATE:
        ours = write.id is None and sent == mine
    else:
        now = by_id.get((write.kind.name, write.id)) if write.id is not None else None
        held = None if now is None else marker_of(now.get("title"))
        allowed = (mine, (None, key)) if change.action is Action.CHANGE and adopting else (mine,)
        ours = (write.id is not None and (now is None or held in allowed)
                and (change.action is Action.REMOVE or sent == mine))
    return None if ours else f"{shown}: not a resource of the scope carrying [managed: {scope}/{key}]"

def _carries(resource: Json, scope: Any, key: str) -> bool:
    """Whether the resource carries the key as a plan of the scope sees it (:func:`same_key`)."""
    return same_key(resource.get("title"), scope, key)
