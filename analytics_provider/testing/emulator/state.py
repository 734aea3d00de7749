"""The emulated account's data, held in memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analytics_provider.testing.emulator.errors import not_found

Json = dict[str, Any]


@dataclass
class Table:
    """A widget's tabular result: what exports write."""

    columns: list[str]
    rows: list[list[Any]]


@dataclass
class State:
    """Every resource of the account, keyed by id. Widget ids are strings, as the API gives them."""

    users: dict[int, Json] = field(default_factory=dict)
    keys: dict[str, int] = field(default_factory=dict)
    groups: dict[int, Json] = field(default_factory=dict)
    data_sources: dict[int, Json] = field(default_factory=dict)
    data_models: dict[int, Json] = field(default_factory=dict)
    data_sets: dict[int, Json] = field(default_factory=dict)
    query_reports: dict[int, Json] = field(default_factory=dict)
    dashboards: dict[int, Json] = field(default_factory=dict)
    widgets: dict[str, Json] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    model_tables: dict[int, Table] = field(default_factory=dict)
    """Rows of a data model that no widget shows (the orders by day), by model id."""
    data_schedules: dict[int, Json] = field(default_factory=dict)
    data_alerts: dict[int, Json] = field(default_factory=dict)
    user_attributes: dict[int, Json] = field(default_factory=dict)
    attribute_entries: dict[tuple[str, int], dict[int, Json]] = field(default_factory=dict)
    """Each subject's (``("User", 4)``) entries, by attribute id."""
    projects: dict[int, Json] = field(default_factory=dict)
    shortened_tokens: dict[str, Json] = field(default_factory=dict)
    shareable_links: dict[int, Json] = field(default_factory=dict)
    tags: list[Json] = field(default_factory=list)
    object_tags: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """Tags of AML objects, keyed by (``dataset`` or ``dashboard``, uname)."""
    query_cache: dict[str, Json] = field(default_factory=dict)
    """Data-set query results by query fingerprint: answered at once once a job computed them."""
    next_ids: dict[str, int] = field(default_factory=dict)

    def new_id(self, kind: str) -> int:
        """The next id of a kind of resource, above every seeded one."""
        value = self.next_ids.get(kind, 1000)
        self.next_ids[kind] = value + 1
        return value

    def key_owner(self, key: str) -> Json | None:
        user_id = self.keys.get(key)
        return self.users.get(user_id) if user_id is not None else None

    def user_key(self, user_id: int) -> str | None:
        return next((k for k, uid in self.keys.items() if uid == user_id), None)


_COLLECTIONS = {
    "User": "users", "Group": "groups", "DataSource": "data_sources", "DataModel": "data_models",
    "DataSet": "data_sets", "QueryReport": "query_reports", "Dashboard": "dashboards",
    "DashboardWidget": "widgets", "DataSchedule": "data_schedules", "DataAlert": "data_alerts",
    "UserAttribute": "user_attributes", "AmlProject": "projects", "ShareableLink": "shareable_links",
}


def find(state: State, model: str, ident: Any, *, include_deleted: bool = False) -> Json:
    """The resource or a 404 ``Couldn't find <model> with id=<ident>``."""
    collection: dict[Any, Json] = getattr(state, _COLLECTIONS[model])
    key: Any = str(ident)
    if model != "DashboardWidget":
        try:
            key = int(ident)
        except (TypeError, ValueError):
            raise not_found(model, ident) from None
    found = collection.get(key)
    if found is None or (found.get("_deleted") and not include_deleted):
        raise not_found(model, ident)
    return found
