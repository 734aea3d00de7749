"""The group member sync's saved plan: a plan task's result applied by another task exactly, or not at
all when a user's managed groups, or a group to create, changed in the service since."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.operators import AnalyticsSyncGroupMembersOperator, AnalyticsSyncUserAttributesOperator
from analytics_provider.plans.saved import StalePlanError
from analytics_provider.testing.task_instance import FakeTaskInstance

ROWS = [("maya.chen@example.com", "Finance"), (1, "Operations")]
WRITES = ("create_group", "add_user_to_group", "remove_user_from_group", "invite_users")


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> Any:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def planned() -> dict[str, Any]:
    task = AnalyticsSyncGroupMembersOperator(task_id="plan", rows=ROWS, create_missing_groups=True, dry_run=True)
    return task.execute({"ti": FakeTaskInstance()})


def apply(plan: dict[str, Any]) -> dict[str, Any]:
    return AnalyticsSyncGroupMembersOperator(task_id="apply", plan=plan).execute({"ti": FakeTaskInstance()})


def groups_of(hook: Any, user_id: int) -> list[int]:
    return sorted(next(u for u in hook.list_users() if u["id"] == user_id)["group_ids"])


def writes(emulator: Any) -> list[str]:
    return [r.operation for r in emulator.requests if r.operation in WRITES]


def test_the_saved_plan_is_applied_exactly(hook, analytics_emulator) -> None:
    plan = planned()
    assert [(c["action"], c["target"]) for c in plan["saved"]["changes"]] == [
        ("create", "Finance"), ("add", "Finance"), ("add", "Operations")]
    assert writes(analytics_emulator) == []
    result = apply(plan)
    assert result["applied"] == 3
    assert writes(analytics_emulator) == ["create_group", "add_user_to_group", "add_user_to_group"]
    finance = next(g["id"] for g in hook.list_groups() if g["name"] == "Finance")
    operations = next(g["id"] for g in hook.list_groups() if g["name"] == "Operations")
    assert {finance, operations} <= set(groups_of(hook, 1))


def test_a_user_whose_groups_changed_since_the_plan_makes_it_stale(hook, analytics_emulator) -> None:
    plan = planned()
    assert 2 not in groups_of(hook, 1)
    hook.add_user_to_group(2, 1)  # by hand, after the review: Maya joins Operations
    analytics_emulator.clear_requests()
    with pytest.raises(StalePlanError) as stale:
        apply(plan)
    assert str(stale.value).startswith("apply: stale plan: plan again. 1 resource(s) the plan touches changed")
    assert str(stale.value).endswith("\n- user maya.chen@example.com (1): managed_group_ids [] then, [2] now")
    assert writes(analytics_emulator) == []


def test_a_group_made_since_the_plan_makes_it_stale(hook, analytics_emulator) -> None:
    plan = planned()
    made = hook.create_group({"name": "Finance"})
    analytics_emulator.clear_requests()
    with pytest.raises(StalePlanError, match=rf"- group Finance \(to create\): made since the plan: group "
                                             rf"{made['id']} has its name"):
        apply(plan)
    assert writes(analytics_emulator) == []


def test_a_plan_of_another_sync_is_refused(hook, analytics_emulator) -> None:
    from analytics_provider.plans.saved import SavedPlanError

    with pytest.raises(SavedPlanError, match=r"^apply: a saved plan of 'group members', not of user attributes: "
                                             r"nothing was written$"):
        apply_attributes(planned())
    assert writes(analytics_emulator) == []


def test_plan_is_refused_with_what_it_replaces() -> None:
    with pytest.raises(ValueError, match=r"^apply: rows must be left out with plan="):
        AnalyticsSyncGroupMembersOperator(task_id="apply", plan={}, rows=ROWS)
    with pytest.raises(ValueError, match=r"^apply: sql, dry_run must be left out with plan="):
        AnalyticsSyncUserAttributesOperator(task_id="apply", plan={}, sql="select 1", dry_run=True)


ATTRIBUTE_ROWS = [("maya.chen@example.com", "region", "EMEA"), ("maya.chen@example.com", "region", "APAC")]


def planned_attributes() -> dict[str, Any]:
    task = AnalyticsSyncUserAttributesOperator(task_id="plan", rows=ATTRIBUTE_ROWS, dry_run=True)
    return task.execute({"ti": FakeTaskInstance()})


def apply_attributes(plan: dict[str, Any]) -> dict[str, Any]:
    return AnalyticsSyncUserAttributesOperator(task_id="apply", plan=plan).execute({"ti": FakeTaskInstance()})


def test_a_saved_attribute_plan_is_applied_exactly_or_refused_when_the_values_changed(hook,
                                                                                     analytics_emulator) -> None:
    plan = planned_attributes()
    (change,) = plan["saved"]["changes"]
    assert change["write"]["entry"]["values"] == ["APAC", "EMEA"]
    before = hook.compute_user_attribute_values("User", 1).get("region") or []
    hook.upsert_user_attribute_entries([{"subject_type": "User", "subject_id": 1, "user_attribute_name": "region",
                                         "input_type": "manual", "values": ["LATAM"]}])  # by hand, after review
    analytics_emulator.clear_requests()
    with pytest.raises(StalePlanError) as stale:
        apply_attributes(plan)
    assert str(stale.value).endswith(f"- user maya.chen@example.com (1), attribute region: values {sorted(before)!r} "
                                     "then, ['LATAM'] now")
    assert [r.operation for r in analytics_emulator.requests if r.operation == "upsert_user_attribute_entries"] == []
    again = planned_attributes()
    assert apply_attributes(again)["applied"] == 1
    (sent,) = [r for r in analytics_emulator.requests if r.operation == "upsert_user_attribute_entries"]
    assert sent.json == {"user_attribute_entries": [again["saved"]["changes"][0]["write"]["entry"]]}
    assert sorted(hook.compute_user_attribute_values("User", 1)["region"]) == ["APAC", "EMEA"]


def test_a_plan_that_writes_a_group_its_task_does_not_manage_is_refused_before_any_write(
        hook, analytics_emulator) -> None:
    """Issue 44: beyond the digest (the plan edited, its hash recomputed), an access plan writes only
    the groups its task manages."""
    from analytics_provider.plans.saved import SavedPlanError, _digest

    plan = planned()
    saved = plan["saved"]
    managed = set(saved["params"]["managed_group_ids"])
    other = next(g for g in hook.list_groups() if g["id"] not in managed)
    saved["changes"].append({"action": "add", "subject": "1", "target": other["name"], "before": "", "after": "",
                             "write": {"membership": {"group": other["id"], "user_id": 1}}})
    saved["counts"]["add"] += 1
    saved["sha256"] = _digest({k: v for k, v in saved.items() if k != "sha256"})
    analytics_emulator.clear_requests()
    with pytest.raises(SavedPlanError, match=f"apply: 1 change\\(s\\) of the plan write outside the groups it "
                                             f"manages: add {other['name']} for 1; nothing was written"):
        apply(plan)
    assert writes(analytics_emulator) == []
