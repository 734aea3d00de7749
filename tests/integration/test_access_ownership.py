"""Access as code never writes what it was not asked to (issue 32), against the emulator: names are
names, revocations are not lost, one bad address does not block the other writes, names compared as
the service compares them, a bounded result."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.access.attributes import UserAttributeSync
from analytics_provider.access.groups import GroupMemberSync, MemberColumns
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.analytics import AnalyticsHook


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> AnalyticsHook:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def members(hook: AnalyticsHook, group_id: int) -> list[int]:
    return sorted(u["id"] for u in hook.list_users(exclude_deleted=True) if group_id in (u.get("group_ids") or []))


def sync(hook: AnalyticsHook, rows: list[Any], **kwargs: Any) -> Any:
    groups = GroupMemberSync(hook, "sync_teams", **kwargs)
    plan = groups.plan(rows)
    groups.apply(plan)
    return plan


def test_a_group_whose_name_is_digits_is_that_group_not_a_group_id(hook) -> None:
    floor = int(hook.create_group({"name": "2"})["id"])
    operations = members(hook, 2)
    assert operations == [5, 6, 7]
    plan = sync(hook, [("lucas.meyer@example.com", "2")], groups=["2"], delete_missing=True)
    assert [(c.action, c.target) for c in plan.changes] == [("add", "2")]
    assert members(hook, floor) == [2]
    assert members(hook, 2) == operations  # Operations (id 2) untouched


def test_a_group_id_is_said_by_a_column_of_its_own(hook) -> None:
    plan = sync(hook, [{"user": "lucas.meyer@example.com", "group_id": 2}],
                columns=MemberColumns(group_id="group_id"), group_ids=[2])
    assert [(c.action, c.target) for c in plan.changes] == [("add", "Operations")]
    assert members(hook, 2) == [2, 5, 6, 7]
    with pytest.raises(AnalyticsParameterError, match=r"row 1: group id 99 is not a group of the service"):
        GroupMemberSync(hook, "sync", columns=MemberColumns(group_id="group_id")).plan([{"user": 2, "group_id": 99}])


def test_delete_missing_needs_the_groups_named_so_that_a_last_member_is_revoked(hook) -> None:
    pii = int(hook.create_group({"name": "PII access"})["id"])
    sync(hook, [("maya.chen@example.com", "PII access"), ("tom.okafor@example.com", "Sales")])
    assert members(hook, pii) == [1]
    rows = [("tom.okafor@example.com", "Sales")]  # maya's access was revoked: the table no longer names the group
    with pytest.raises(AnalyticsParameterError, match=r"^sync_teams: delete_missing needs groups= or group_ids="):
        GroupMemberSync(hook, "sync_teams", delete_missing=True).plan(rows)
    plan = sync(hook, rows, groups=["Sales", "PII access"], delete_missing=True)
    assert ("remove", "maya.chen@example.com (1)", "PII access") in [(c.action, c.subject, c.target)
                                                                     for c in plan.changes]
    assert members(hook, pii) == []


def test_delete_missing_needs_the_attributes_named_so_that_values_all_null_are_reset(hook) -> None:
    attributes = UserAttributeSync(hook, "sync_regions")
    attributes.apply(attributes.plan([(1, "region", "EU"), (2, "region", "US")]))
    rows = [(1, "region", None), (2, "region", None)]  # every value became NULL
    with pytest.raises(AnalyticsParameterError, match=r"^sync_regions: delete_missing needs attributes="):
        UserAttributeSync(hook, "sync_regions", delete_missing=True).plan(rows)
    reset = UserAttributeSync(hook, "sync_regions", attributes=["region"], delete_missing=True)
    plan = reset.plan(rows)
    assert sorted((c.action, c.subject) for c in plan.changes if c.subject.startswith(("maya", "lucas"))) == [
        ("remove", "lucas.meyer@example.com (2)"), ("remove", "maya.chen@example.com (1)")]
    reset.apply(plan)
    assert hook.compute_user_attribute_values("User", 2).get("region") is None


def test_an_address_that_is_not_one_is_refused_before_any_write(hook, analytics_emulator) -> None:
    rows = [("new hire@example.com", "region", "EU"), ("maya.chen@example.com", "region", "EU")]
    with pytest.raises(AnalyticsParameterError) as refused:
        UserAttributeSync(hook, "sync_regions", invite_role="user").plan(rows)
    assert "row 1: user 'new hire@example.com' is neither an e-mail address nor a user id" in str(refused.value)
    written = ("invite_users", "upsert_user_attribute_entries")
    assert not [r for r in analytics_emulator.requests if r.operation in written]


def test_group_names_are_compared_as_the_service_compares_them(hook) -> None:
    from analytics_provider.exceptions import RecordError

    with pytest.raises(RecordError, match="has already been taken"):  # the service: "sales" is Sales
        hook.create_group({"name": " sales "})
    plan = sync(hook, [("lucas.meyer@example.com", "sales"), ("priya.raman@example.com", "SALES ")],
                groups=["Sales"], create_missing_groups=True)
    assert [(c.action, c.subject, c.target) for c in plan.changes] == [
        ("add", "lucas.meyer@example.com (2)", "Sales"), ("add", "priya.raman@example.com (3)", "Sales")]
    assert members(hook, 1) == [1, 2, 3, 4]


def test_the_result_lists_a_bounded_number_of_unknown_users(hook) -> None:
    from analytics_provider.access.plan import XCOM_UNKNOWN_USERS

    rows = [(f"newcomer.{i}@example.org", "region", "EU") for i in range(3000)]
    xcom = UserAttributeSync(hook, "sync_regions").plan(rows).to_xcom()
    assert len(xcom["unknown_users"]) == XCOM_UNKNOWN_USERS and xcom["unknown_users_left_out"] == 3000 - 100
    assert len(str(xcom)) < 10_000
