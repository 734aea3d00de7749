"""The access syncs' plans against the emulator (real sockets): rows refused before any write,
rows of every shape, and the plan as a table and as XCom."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.access.attributes import AttributeColumns, UserAttributeSync
from analytics_provider.access.groups import GroupMemberSync
from analytics_provider.access.plan import AccessPlan
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.plans.plan import Action, Change, Plan

READS = {"list_users", "list_user_attributes", "list_user_attribute_entries", "compute_user_attribute_values",
         "list_groups"}


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> AnalyticsHook:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def operations(emulator: Any) -> set[str]:
    return {r.operation for r in emulator.requests if r.origin == "api"}


def test_every_wrong_row_is_named_at_once_before_any_write(hook, analytics_emulator) -> None:
    rows = [
        {"user": "maya.chen@example.com", "attribute": "region", "value": "EU"},
        {"user": "maya", "attribute": "region", "value": "EU"},
        {"user": 2, "attribute": "regoin", "value": "US"},
        {"user": 3, "attribute": "h_email", "value": "x"},
        {"user": 3, "attribute": "department", "value": "Sales"},
        {"user": 4, "value": "EU"},
        "maya.chen@example.com",
    ]
    sync = UserAttributeSync(hook, "sync_regions", attributes=["region"])
    with pytest.raises(AnalyticsParameterError) as refused:
        sync.plan(rows, "the query on warehouse")
    assert str(refused.value) == (
        "sync_regions: 6 row(s) of the query on warehouse cannot be synced (nothing was written):\n"
        "row 2: user 'maya' is neither an e-mail address nor a user id\n"
        "row 3: attribute 'regoin' is not an attribute of the service (its attributes: department, region)\n"
        "row 4: attribute 'h_email' is a system attribute: the service sets its values\n"
        "row 5: attribute 'department' is not one of the attributes this task manages (region)\n"
        "row 6: no column 'attribute' (it has 'user', 'value')\n"
        "row 7: a row is a mapping or a sequence, not str"
    )
    assert operations(analytics_emulator) == {"list_user_attributes"}  # refused before users were read


def test_a_managed_attribute_that_does_not_exist_is_refused(hook) -> None:
    with pytest.raises(AnalyticsParameterError, match=r"^sync: attributes: attribute 'regions' is not an attribute"):
        UserAttributeSync(hook, "sync", attributes=["regions"]).plan([])


def test_rows_as_sequences_name_users_and_attributes_by_id_and_repeat_for_several_values(hook) -> None:
    rows = [(" 2 ", 3, "US"), ("LUCAS.MEYER@example.com", "region", "APAC"), (2, "region", None),
            (5, "4", ["Sales", "Marketing"])]
    plan = UserAttributeSync(hook, "sync", columns=AttributeColumns("u", "a", "v")).plan(rows)
    assert [(c.action, c.subject, c.target, c.before, c.after) for c in plan.changes] == [
        ("add", "lucas.meyer@example.com (2)", "region", "", "APAC, US"),
        ("change", "sofia.rossi@example.com (5)", "department", "Marketing", "Marketing, Sales"),
    ]
    assert plan.changes[0].write == {"subject_type": "User", "subject_id": 2, "user_attribute_id": 3,
                                     "input_type": "manual", "values": ["APAC", "US"]}


def test_a_user_who_has_the_values_through_a_group_gets_no_write_and_a_deleted_user_is_unknown(
    hook, analytics_emulator
) -> None:
    # sofia (5) is in Operations, whose region is US and LATAM: hers through the group, not her own entry
    assert hook.compute_user_attribute_values("User", 5)["region"] == ["LATAM", "US"]
    rows = [(5, "region", "US"), (5, "region", "LATAM"), (6, "region", "US"),
            ("emma.laurent@example.com", "region", "EU")]
    analytics_emulator.clear_requests()
    plan = UserAttributeSync(hook, "sync").plan(rows)
    # jonas (6, Operations too) has US and LATAM through the group: his own entry is added
    assert [(c.action, c.subject, c.before, c.after) for c in plan.changes] == [
        ("add", "jonas.berg@example.com (6)", "", "US")]
    assert plan.unknown == ["emma.laurent@example.com"]  # deleted: restore her first
    reads = [(r.operation, r.query.get("subject_id")) for r in analytics_emulator.requests
             if r.operation in ("compute_user_attribute_values", "list_user_attribute_entries")]
    # sofia: one read (her values are the rows'); jonas: his values, then his own entries
    assert reads == [("compute_user_attribute_values", ["5"]), ("compute_user_attribute_values", ["6"]),
                     ("list_user_attribute_entries", ["6"])]


def test_groups_unknown_by_name_are_refused_unless_created(hook, analytics_emulator) -> None:
    rows = [("maya.chen@example.com", "Finance"), ("maya.chen@example.com", 99), (1, "Operations")]
    with pytest.raises(AnalyticsParameterError) as refused:
        GroupMemberSync(hook, "sync_teams").plan(rows)
    assert "row 1: group 'Finance' is not a group of the service (create_missing_groups=True creates it; " \
           "its groups: Operations, Sales)" in str(refused.value)
    assert "row 2: group '99' is not a group of the service" in str(refused.value)  # a name: ids have a column
    plan = GroupMemberSync(hook, "sync_teams", create_missing_groups=True).plan(rows[::2])
    assert [(c.action, c.subject, c.target) for c in plan.changes] == [
        ("create", "", "Finance"), ("add", "maya.chen@example.com (1)", "Finance"),
        ("add", "maya.chen@example.com (1)", "Operations")]
    assert not operations(analytics_emulator) - READS


def test_the_plan_as_a_table_and_as_xcom_is_bounded_and_counts_everything() -> None:
    plan = AccessPlan("user attributes", "user", "attribute", unknown=["x@example.org"])
    plan.changes = [Change(Action.ADD, f"u{i}@example.com ({i})", "region", "", "EU") for i in range(1500)]
    table = plan.table(limit=2).splitlines()
    assert table == [
        "user attributes: 1500 to add; 1 user(s) the service does not know",
        "action  user                attribute  before  after",
        "add     u0@example.com (0)  region             EU",
        "add     u1@example.com (1)  region             EU",
        "... and 1498 more change(s)",
        "Not known to the service: x@example.org",
    ]
    xcom = plan.to_xcom()
    assert xcom["counts"]["add"] == 1500 and len(xcom["changes"]) == 1000 and xcom["changes_left_out"] == 500
    assert Plan("group members", "user", "group").summary() == "group members: nothing to change"


def test_a_managed_attribute_the_rows_give_no_value_for_is_removed_only_with_delete_missing(hook) -> None:
    rows = [(5, "region", "US")]  # sofia's own department (Marketing) is in no row
    kept = UserAttributeSync(hook, "sync", attributes=["region", "department"]).plan(rows)
    assert [(c.action, c.target) for c in kept.changes] == [("add", "region")]
    pruned = UserAttributeSync(hook, "sync", attributes=["region", "department"], delete_missing=True).plan(rows)
    assert [(c.action, c.target, c.before, c.after) for c in pruned.changes if c.subject.startswith("sofia")] == [
        ("add", "region", "", "US"), ("remove", "department", "Marketing", "(inherit)")]
    assert pruned.users_read > kept.users_read == 1  # every user is read to find what to remove


def test_an_entry_of_all_values_is_changed_or_removed_as_an_own_entry(hook) -> None:
    hook.upsert_user_attribute_entries([{"subject_type": "User", "subject_id": 7, "user_attribute_name": "region",
                                         "input_type": "all", "values": []}])
    changed = UserAttributeSync(hook, "sync").plan([(7, "region", "EU")])
    assert [(c.action, c.before, c.after) for c in changed.changes] == [("change", "(all values)", "EU")]
    removed = UserAttributeSync(hook, "sync", attributes=["region"], delete_missing=True).plan([])
    assert ("remove", "aiko.tanaka@example.com (7)", "(all values)") in [
        (c.action, c.subject, c.before) for c in removed.changes]
