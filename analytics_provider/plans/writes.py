"""What a plan's create, update or delete writes: a kind of the service's resources, named as the
API names its collection, with the hook's methods that read and write it (no method looked up by
its name), and the write of one resource."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analytics_provider.api.wire.operations import MAX_PAGE_SIZE
from analytics_provider.plans.plan import Action, Change

if TYPE_CHECKING:
    from analytics_provider.hooks.analytics import AnalyticsHook

Json = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """A kind of resource a plan writes. ``name`` is the API's name of its collection
    (``data_schedules``): lineage, messages and saved plans name the kind by it."""

    name: str
    list: Callable[[AnalyticsHook], Iterable[Json]]
    """Every resource of the kind (page by page)."""
    get: Callable[[AnalyticsHook, int], Json]
    """One resource by its id (:class:`~analytics_provider.exceptions.NotFoundError` when absent)."""
    create: Callable[[AnalyticsHook, Json], Json]
    update: Callable[[AnalyticsHook, int, Json], Json]
    delete: Callable[[AnalyticsHook, int], Json]


DATA_SCHEDULES = Kind(
    "data_schedules",
    list=lambda hook: hook.list_data_schedules(limit=MAX_PAGE_SIZE),
    get=lambda hook, ident: hook.get_data_schedule(ident),
    create=lambda hook, fields: hook.create_data_schedule(fields),
    update=lambda hook, ident, fields: hook.update_data_schedule(ident, fields),
    delete=lambda hook, ident: hook.delete_data_schedule(ident),
)
DATA_ALERTS = Kind(
    "data_alerts",
    list=lambda hook: hook.list_data_alerts(limit=MAX_PAGE_SIZE),
    get=lambda hook, ident: hook.get_data_alert(ident),
    create=lambda hook, fields: hook.create_data_alert(fields),
    update=lambda hook, ident, fields: hook.update_data_alert(ident, fields),
    delete=lambda hook, ident: hook.delete_data_alert(ident),
)
GROUPS = Kind(
    "groups",
    list=lambda hook: hook.list_groups(limit=MAX_PAGE_SIZE),
    get=lambda hook, ident: hook.get_group(ident),
    create=lambda hook, fields: hook.create_group(fields),
    update=lambda hook, ident, fields: hook.update_group(ident, fields),
    delete=lambda hook, ident: hook.delete_group(ident),
)
KINDS = {kind.name: kind for kind in (DATA_SCHEDULES, DATA_ALERTS, GROUPS)}
"""The kinds by name (a saved plan names a kind, and finds it here)."""


@dataclass(frozen=True)
class Write:
    """The write of one resource of ``kind``: ``id`` is the resource's (None: the write creates
    it), ``fields`` what is sent (the whole object; None for a delete)."""

    kind: Kind
    id: int | None = None
    fields: Json | None = None


def send_write(hook: AnalyticsHook, change: Change[Write]) -> Json:
    """Send a change's write as its action says: create, update (``change``) or delete (``remove``);
    the service's answer."""
    write = change.sent
    if change.action is Action.CREATE and write.fields is not None:
        return write.kind.create(hook, write.fields)
    if change.action is Action.CHANGE and write.id is not None and write.fields is not None:
        return write.kind.update(hook, write.id, write.fields)
    if change.action is Action.REMOVE and write.id is not None:
        return write.kind.delete(hook, write.id)
    raise ValueError(f"{change.action.value} {change.target}: not a write of {write.kind.name} ({write})")
