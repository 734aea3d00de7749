"""Two applies that may write one thing take one lock (issue 44, a fourth attack): a group is locked by
its name whether a plan creates it or finds it; a key made without a scope by an unscoped plan is
locked as a scoped plan's creates are."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.access.groups import GroupMemberSync
from analytics_provider.access.saved import apply_held, apply_saved_group_members, save_group_members
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.plans.once import AppliedPlans
from analytics_provider.plans.saved import Consent, SavedPlanError, digest

MEMBERS = ("maya.chen@example.com", "tom.okafor@example.com")


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> Any:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def test_a_sync_of_a_group_a_reviewed_apply_is_creating_is_refused_at_once(tmp_path, hook) -> None:
    """Before: the reviewed plan creating Finance held ``group named finance``; a direct sync of
    ``groups=["Finance"]`` once the group existed took ``group <id>``, another lock, and wrote into
    the group while the reviewed apply ran."""
    once = AppliedPlans(str(tmp_path / "plans"), "task reviewed")
    reviewed = GroupMemberSync(hook, "reviewed", create_missing_groups=True)
    saved = save_group_members(reviewed, reviewed.plan([{"user": u, "group": "Finance"} for u in MEMBERS]))
    assert saved["changes"][0]["action"] == "create"
    found: dict[str, Any] = {}

    def while_the_reviewed_apply_holds_its_locks() -> None:
        made = hook.create_group({"name": "Finance"})  # as the reviewed apply's first write does
        direct = GroupMemberSync(hook, "sync", groups=["Finance"], delete_missing=True)
        plan = direct.plan([{"user": "lucas.meyer@example.com", "group": "Finance"}])
        assert plan.changes, "the direct sync has something to write"
        with pytest.raises(SavedPlanError) as refusal:
            apply_held(direct, plan, "sync", AppliedPlans(str(tmp_path / "plans"), "task sync"))
        found.update(group=made["id"], refusal=str(refusal.value))
        raise KeyboardInterrupt  # the reviewed apply goes no further: the test has what it needs

    with pytest.raises(KeyboardInterrupt):
        apply_saved_group_members(hook, saved, "reviewed", Consent(digest(saved), once=once),
                                  ready=while_the_reviewed_apply_holds_its_locks)
    assert "another apply of group members (group named finance) is running" in found["refusal"], found
    members = [u["email"] for u in hook.list_users(limit=100) if found["group"] in (u.get("group_ids") or [])]
    assert members == []  # the direct sync wrote nothing into the group
