"""Cursor pagination: before/after/limit, opaque cursors, null at the ends, counters and totals."""

from __future__ import annotations

from typing import Any

from .conftest import Api, error_of


def walk(api: Api, path: str, key: str, **params: Any) -> tuple[list[dict[str, Any]], int]:
    """Every item by following ``cursors.next``; returns the items and the request count."""
    items: list[dict[str, Any]] = []
    after = None
    for requests_made in range(1, 100):
        page = api.get(path, params={**params, **({"after": after} if after else {})}).json()
        items += page[key]
        after = page["cursors"]["next"]
        if after is None:
            return items, requests_made
    raise AssertionError("the cursors never ended")


def test_first_and_last_pages_have_null_cursors(api: Api) -> None:
    first = api.get("/users", params={"limit": 4}).json()
    assert first["cursors"]["previous"] is None and isinstance(first["cursors"]["next"], str)
    second = api.get("/users", params={"limit": 4, "after": first["cursors"]["next"]}).json()
    assert second["cursors"]["previous"] and second["users"][0]["id"] == first["users"][-1]["id"] + 1
    last = api.get("/users", params={"limit": 4, "after": second["cursors"]["next"]}).json()
    assert last["cursors"]["next"] is None and len(last["users"]) == 1
    back = api.get("/users", params={"limit": 4, "before": second["cursors"]["previous"]}).json()
    assert [u["id"] for u in back["users"]] == [u["id"] for u in first["users"]]
    assert back["cursors"]["previous"] is None


def test_default_page_size_is_20(api: Api, emu) -> None:
    emu.add_users(30)
    page = api.get("/users").json()
    assert len(page["users"]) == 20 and page["counters"]["total"] == 39


def test_250_users_in_3_pages_of_100(api: Api, emu) -> None:
    seeded = api.get("/users").json()["counters"]["total"]
    ids = emu.add_users(250 - seeded)
    assert len(ids) == 250 - seeded
    users, requests_made = walk(api, "/users", "users", limit=100)
    assert len(users) == 250 and len({u["id"] for u in users}) == 250 and requests_made == 3
    assert len({u["email"] for u in users}) == 250 and {u["role"] for u in users} >= {"user", "analyst", "admin"}


def test_list_users_counters_groups_and_filters(api: Api) -> None:
    page = api.get("/users", params={"limit": 3}).json()
    assert set(page) == {"counters", "users", "groups", "cursors"}
    assert set(page["counters"]["by_role"]) >= {"viewer", "explorer", "analyst", "admin", "growth_admin"}
    assert page["counters"]["total"] == sum(page["counters"]["by_role"].values())
    for group_id, group in page["groups"].items():
        assert str(group["id"]) == group_id and group["name"]
    assert all(set(u["group_ids"]) <= {int(g) for g in page["groups"]} for u in page["users"])
    assert {u["role"] for u in api.get("/users", params={"role": "analyst"}).json()["users"]} == {"analyst"}
    statuses = {s: api.get("/users", params={"status": s}).json()["counters"]["total"]
                for s in ("active", "pending", "deleted")}
    assert statuses == {"active": 7, "pending": 1, "deleted": 1}
    assert api.get("/users", params={"exclude_deleted": "true"}).json()["counters"]["total"] == 8
    found = api.get("/users", params={"search_term": "ROSSI"}).json()["users"]
    assert [u["name"] for u in found] == ["Sofia Rossi"]
    names = [u["name"] for u in api.get("/users", params={"sort": "name_desc", "limit": 100}).json()["users"]]
    assert names == sorted(names, key=str.lower, reverse=True)


def test_other_lists_page_too(api: Api) -> None:
    dashboards, made = walk(api, "/dashboards", "dashboards", limit=1)
    assert [d["id"] for d in dashboards] == [1, 2, 3, 4, 5] and made == 5
    schedules = api.get("/data_schedules", params={"limit": 1}).json()
    assert schedules["total_count"] == 2 and len(schedules["data_schedules"]) == 1
    assert api.get("/data_schedules", params={"source_type": "QueryReport"}).json()["total_count"] == 1
    attributes, _ = walk(api, "/user_attributes", "user_attributes", limit=2)
    assert {a["name"] for a in attributes if a["is_system_attribute"]} == {"h_email", "h_name"}
    groups = api.get("/groups", params={"limit": 1, "sort": "id_desc"}).json()
    assert groups["groups"][0]["id"] == 2 and groups["cursors"]["next"]


def test_bad_cursors_and_limits_are_400(api: Api) -> None:
    for params in ({"after": "garbage!"}, {"before": "bm9wZQ"}, {"limit": 101}):
        answer = api.get("/users", params=params)
        assert answer.status_code == 400 and error_of(answer)["type"] == "InvalidParameterError", params
