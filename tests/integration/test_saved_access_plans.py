"""The group member sync's saved plan: a plan task's result applied by another task exactly, or not at
all when a user's managed groups, or a group to create, changed in the service since."""

from __future__ import annotations

import json
import re
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
    with pytest.raises(SavedPlanError, match=f"apply: 1 change\\(s\\) of the plan write outside the groups the "
                                             f"plan manages: add {other['name']} for 1; nothing was written"):
        apply(plan)
    assert writes(analytics_emulator) == []


def sales_members(hook: Any) -> list[dict[str, Any]]:
    """The rows that keep Sales (group 1) as it is, but for Priya (user 3)."""
    return [{"user": u["email"], "group": "Sales"} for u in hook.list_users()
            if 1 in (u.get("group_ids") or []) and u["id"] != 3]


def test_an_approved_plan_is_applied_once_even_after_what_it_did_was_undone(
        hook, analytics_emulator, tmp_path) -> None:
    """Issue 44: a grant approved and applied, then revoked by another approved plan: the first
    plan's apply, run again (a cleared task of an old run), passes the stale check (Priya is as it
    found her) but is refused by the record of its apply, naming when and by whom."""
    from analytics_provider.plans.saved import SavedPlanError, digest

    keep = sales_members(hook)
    storage = tmp_path / "plans"

    def run(task_id: str, **arguments: Any) -> dict[str, Any]:
        task = AnalyticsSyncGroupMembersOperator(task_id=task_id, groups=["Sales"], plan_storage=str(storage),
                                                 **arguments)
        return task.execute({"ti": FakeTaskInstance()})

    grant = run("plan_grant", rows=[*keep, {"user": "priya.raman@example.com", "group": "Sales"}], dry_run=True)
    assert run("apply", plan=grant, approved=digest(grant["saved"]))["applied"] == 1
    assert 1 in groups_of(hook, 3)
    revoke = run("plan_revoke", rows=keep, delete_missing=True, dry_run=True)
    assert run("apply", plan=revoke, approved=digest(revoke["saved"]))["applied"] == 1
    assert 1 not in groups_of(hook, 3)
    analytics_emulator.clear_requests()
    with pytest.raises(SavedPlanError) as refused:
        run("apply", plan=grant, approved=digest(grant["saved"]))
    assert re.fullmatch(r"apply: this plan was applied at \S+ by task apply, try 1: applied 1 change\(s\) \(its "
                        rf"record {storage}/applied-{digest(grant['saved'])}.json\); a plan is applied once, even "
                        r"when what it did was undone since: plan again \(nothing was written\)",
                        str(refused.value)), str(refused.value)
    assert writes(analytics_emulator) == [] and 1 not in groups_of(hook, 3)
    record = json.loads((storage / f"applied-{digest(grant['saved'])}.json").read_text())
    assert record["by"] == "task apply, try 1" and record["outcome"] == "applied 1 change(s)"
    # a new plan of the same grant is a new plan (its own id): approved, it applies
    again = run("plan_grant", rows=[*keep, {"user": "priya.raman@example.com", "group": "Sales"}], dry_run=True)
    assert again["saved"]["changes"] == grant["saved"]["changes"] and digest(again["saved"]) != digest(grant["saved"])
    assert run("apply", plan=again, approved=digest(again["saved"]))["applied"] == 1


def test_the_apply_task_bounds_every_write_by_its_own_groups_and_logs_what_vouches_for_the_plan(
        hook, analytics_emulator, capsys) -> None:
    """Issue 44: a plan edited in transit (its hash and its managed groups recomputed, no review)
    that adds Lucas to Operations is refused by an apply task managing Sales only."""
    from analytics_provider.plans.saved import SavedPlanError, _digest

    plan = AnalyticsSyncGroupMembersOperator(task_id="plan", rows=[{"user": "lucas.meyer@example.com",
                                                                    "group": "Sales"}],
                                             groups=["Sales"], dry_run=True).execute({"ti": FakeTaskInstance()})
    saved = json.loads(json.dumps(plan["saved"]))
    saved["changes"].append({**saved["changes"][0], "target": "Operations",
                             "write": {"membership": {"group": 2, "user_id": 2}}})
    saved["params"]["managed_group_ids"] = [1, 2]
    saved["counts"]["add"] = 2
    saved["sha256"] = _digest({k: v for k, v in saved.items() if k != "sha256"})
    analytics_emulator.clear_requests()
    with pytest.raises(SavedPlanError, match=r"^apply: 1 change\(s\) of the plan write outside the groups this "
                                             r"task manages \(groups=, group_ids=\): add Operations for "):
        AnalyticsSyncGroupMembersOperator(task_id="apply", plan={**plan, "saved": saved},
                                          groups=["Sales"]).execute({"ti": FakeTaskInstance()})
    assert writes(analytics_emulator) == [] and 2 not in groups_of(hook, 2)
    capsys.readouterr()
    AnalyticsSyncGroupMembersOperator(task_id="apply", plan=plan, groups=["Sales"]).execute({"ti": FakeTaskInstance()})
    logged = capsys.readouterr().out
    assert ("Applying the saved plan exactly: no review vouches for it (no approved=): it is applied as the plan= "
            "value holds it; every write is within what this task manages (groups= or group_ids=)") in logged
    assert "the one approved" not in logged and 1 in groups_of(hook, 2)


def test_a_review_answered_reject_approves_nothing_whatever_digest_it_carries(hook, analytics_emulator) -> None:
    """Issue 44: the apply reads the answer, not only its digest."""
    from analytics_provider.exceptions import AnalyticsParameterError
    from analytics_provider.plans.saved import digest

    plan = planned()
    answer = {"chosen_options": ["Reject"], "params_input": {}, "responded_by_user": {"id": "ann", "name": "Ann"},
              "reviewed": True, "digest": digest(plan["saved"])}
    analytics_emulator.clear_requests()
    with pytest.raises(AnalyticsParameterError, match=r"^apply: approved must be the result of a review answered "
                                                      r"'Approve' \(chosen_options\); this answer approves nothing"):
        AnalyticsSyncGroupMembersOperator(task_id="apply", plan=plan, approved=answer).execute(
            {"ti": FakeTaskInstance()})
    with pytest.raises(AnalyticsParameterError, match="this answer approves nothing"):  # at parse, when it can
        AnalyticsSyncGroupMembersOperator(task_id="apply", plan=plan, approved={**answer, "chosen_options": []})
    assert writes(analytics_emulator) == []
    approved = {**answer, "chosen_options": ["Approve"]}
    assert AnalyticsSyncGroupMembersOperator(task_id="apply", plan=plan, approved=approved).execute(
        {"ti": FakeTaskInstance()})["applied"] == 3


def test_an_access_apply_is_refused_while_another_apply_holds_what_it_manages(
        hook, analytics_emulator, tmp_path) -> None:
    """Issue 44, item 5: an apply of a group member (or attribute) plan takes the apply lock of each
    group (attribute) its plan manages, in the plan storage, before its stale check; one held by
    another apply running refuses it, naming that apply, before any write; once released, it applies."""
    from analytics_provider.plans.once import AppliedPlans
    from analytics_provider.plans.saved import SavedPlanError, digest

    storage = tmp_path / "plans"
    other = AppliedPlans(str(storage), "task apply_other, try 1")
    keep = sales_members(hook)
    grant = AnalyticsSyncGroupMembersOperator(
        task_id="plan", groups=["Sales"], plan_storage=str(storage), dry_run=True,
        rows=[*keep, {"user": "priya.raman@example.com", "group": "Sales"}]).execute({"ti": FakeTaskInstance()})
    attributes = planned_attributes()
    (region,) = attributes["saved"]["params"]["managed_attribute_ids"]
    tasks = [AnalyticsSyncGroupMembersOperator(task_id="apply", groups=["Sales"], plan_storage=str(storage),
                                               plan=grant, approved=digest(grant["saved"])),
             AnalyticsSyncUserAttributesOperator(task_id="apply_attributes", plan_storage=str(storage),
                                                 plan=attributes, approved=digest(attributes["saved"]))]
    for task, what, scope in ((tasks[0], "group members", "group 1"), (tasks[1], "user attributes",
                                                                        f"attribute {region}")):
        analytics_emulator.clear_requests()
        with other.holding("apply_other", what, [scope]):
            with pytest.raises(SavedPlanError) as refused:
                task.execute({"ti": FakeTaskInstance()})
            assert re.fullmatch(
                rf"{task.task_id}: another apply of {what} \({scope}\) is running since \S+ by task apply_other, "
                rf"try 1 \(host \S+, pid \d+; its lock {storage}/lock-{what.replace(' ', '-')}-"
                rf"{scope.replace(' ', '-')}.json\); nothing was written: retry when it ends .*",
                str(refused.value)), str(refused.value)
            assert [r for r in analytics_emulator.requests if r.method != "GET"] == []
        assert task.execute({"ti": FakeTaskInstance()})["applied"] == 1
    assert 1 in groups_of(hook, 3) and sorted(hook.compute_user_attribute_values("User", 1)["region"]) == ["APAC",
                                                                                                        "EMEA"]
    assert sorted(p.name for p in storage.iterdir()) == sorted(
        f"applied-{digest(p['saved'])}.json" for p in (grant, attributes))  # the locks removed at the ends


def test_a_direct_access_sync_takes_the_apply_locks_a_reviewed_apply_holds(hook, analytics_emulator, tmp_path) -> None:
    """Issue 44 (third attack): a plain sync (no plan=, no dry run) writes under the same apply locks
    as an apply of its saved plan: while another apply holds a group (attribute) it manages, it is
    refused before any write; once released it applies, and leaves no lock behind."""
    from analytics_provider.plans.once import AppliedPlans
    from analytics_provider.plans.saved import SavedPlanError

    storage = tmp_path / "plans"
    other = AppliedPlans(str(storage), "task reviewed_apply, try 1")
    rows = [*sales_members(hook), {"user": "priya.raman@example.com", "group": "Sales"}]
    tasks = [AnalyticsSyncGroupMembersOperator(task_id="direct", groups=["Sales"], rows=rows,
                                               plan_storage=str(storage)),
             AnalyticsSyncUserAttributesOperator(task_id="direct_attributes", rows=ATTRIBUTE_ROWS,
                                                 plan_storage=str(storage))]
    region = next(a["id"] for a in hook.list_user_attributes() if a["name"] == "region")
    for task, what, scope in ((tasks[0], "group members", "group 1"),
                              (tasks[1], "user attributes", f"attribute {region}")):
        analytics_emulator.clear_requests()
        with other.holding("reviewed_apply", what, [scope]):
            with pytest.raises(SavedPlanError, match=rf"^{task.task_id}: another apply of {what} \({scope}\) is "
                                                     r"running since \S+ by task reviewed_apply"):
                task.execute({"ti": FakeTaskInstance()})
            assert [r for r in analytics_emulator.requests if r.method != "GET"] == []
        assert task.execute({"ti": FakeTaskInstance()})["applied"] == 1
    assert 1 in groups_of(hook, 3)
    assert list(storage.iterdir()) == []  # its locks removed at its end; a direct sync records no plan


@pytest.mark.parametrize("edit", ["managed_group_ids", "touched_id", "membership_user"])
def test_an_edited_access_plan_is_refused_by_its_shape_before_it_is_used(hook, analytics_emulator, tmp_path,
                                                                        edit) -> None:
    """Third attack on issue 44: an access plan edited with its digest recomputed (``managed_group_ids:
    [[2]]``, a touched ``id: [2]``) ended in TypeError; it is refused as malformed, nothing written,
    no record made (the plan is not used up)."""
    from analytics_provider.plans.saved import digest

    storage = tmp_path / "plans"
    plan = planned()
    saved = plan["saved"]
    if edit == "managed_group_ids":
        saved["params"]["managed_group_ids"] = [[2]]
    elif edit == "touched_id":
        next(t for t in saved["touched"] if t["id"] is not None)["id"] = [2]
    else:
        next(c for c in saved["changes"] if "membership" in c["write"])["write"]["membership"]["user_id"] = [3]
    saved["sha256"] = digest(saved)
    analytics_emulator.clear_requests()
    with pytest.raises(Exception, match=r"a malformed saved plan \((params\.managed_group_ids \[\[2\]\]|touched\[\d+\]"
                                        r"\.id \[2\], not a whole number or null|changes\[\d+\]\.write\.membership)"):
        AnalyticsSyncGroupMembersOperator(task_id="apply", plan=plan, plan_storage=str(storage)).execute(
            {"ti": FakeTaskInstance()})
    assert writes(analytics_emulator) == [] and not storage.exists()


def invitation_plan(hook: Any, role: str, group_ids: tuple[int, ...]) -> dict[str, Any]:
    """A saved group-member plan that invites one outsider, made as whoever edits plan files can make one."""
    from analytics_provider.access.plan import AccessPlan
    from analytics_provider.access.saved import _encode
    from analytics_provider.access.users import Invitation
    from analytics_provider.plans.plan import Action, Change
    from analytics_provider.plans.saved import Touched, origin, saved_plan

    change = Change(Action.INVITE, "mallory@attacker.example", role, "", f"invited as {role}",
                    write=Invitation("mallory@attacker.example", role, group_ids))
    plan = AccessPlan("group members", "user", "group", changes=[change])
    touched = [Touched("users", None, "mallory@attacker.example", "user mallory (to invite)", None)]
    return saved_plan(plan, [change], touched, {"managed_group_ids": [1]}, origin(hook), encode=_encode)


def test_an_invitation_into_no_group_is_refused_before_any_write(hook, analytics_emulator) -> None:
    """Sixth attack on issue 44: an access plan inviting an admin into no group was applied by a task
    bound to group 1: an empty list passed "within the groups it manages"."""
    from analytics_provider.plans.saved import digest

    saved = invitation_plan(hook, "admin", ())
    task = AnalyticsSyncGroupMembersOperator(task_id="apply", plan=saved, group_ids=[1], approved=digest(saved))
    with pytest.raises(Exception, match=r"apply: .*mallory@attacker\.example"):
        task.execute({"ti": FakeTaskInstance()})
    assert writes(analytics_emulator) == []
    into_the_group = invitation_plan(hook, "user", (1,))  # the same into a group the task manages: applied
    AnalyticsSyncGroupMembersOperator(task_id="apply", plan=into_the_group, group_ids=[1],
                                      approved=digest(into_the_group)).execute({"ti": FakeTaskInstance()})
    assert writes(analytics_emulator) == ["invite_users"]
