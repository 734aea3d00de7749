"""The shared plans (``analytics_provider.plans``) against the emulator: a change's typed write
reaches the hook method of its kind and action, and an apply says what went through."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.plans.apply import Step, SyncApplyError, apply_steps
from analytics_provider.plans.plan import Action, Change, Plan
from analytics_provider.plans.writes import GROUPS, KINDS, Write, send_write


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> AnalyticsHook:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def names(hook: AnalyticsHook) -> dict[int, str]:
    return {int(g["id"]): g["name"] for g in GROUPS.list(hook)}


def test_a_typed_write_creates_updates_and_deletes_through_its_kind(hook: AnalyticsHook) -> None:
    made = send_write(hook, Change(Action.CREATE, "group", "Finance", write=Write(GROUPS, fields={"name": "Finance"})))
    ident = int(made["id"])
    assert names(hook)[ident] == "Finance"
    send_write(hook, Change(Action.CHANGE, f"group {ident}", "Finance", write=Write(GROUPS, ident, {"name": "Audit"})))
    assert names(hook)[ident] == "Audit"
    send_write(hook, Change(Action.REMOVE, f"group {ident}", "Audit", write=Write(GROUPS, ident)))
    assert ident not in names(hook)
    assert KINDS["groups"] is GROUPS  # a saved plan names the kind; the name finds it again


def test_a_change_planned_without_its_write_is_refused_before_any_request(hook: AnalyticsHook,
                                                                           analytics_emulator) -> None:
    before = len(analytics_emulator.requests)
    with pytest.raises(ValueError, match="remove group 7 for group: planned without a write"):
        send_write(hook, Change(Action.REMOVE, "group", "group 7"))
    with pytest.raises(ValueError, match="create Finance: not a write of groups"):
        send_write(hook, Change(Action.CREATE, "group", "Finance", write=Write(GROUPS)))
    assert len(analytics_emulator.requests) == before


def test_an_apply_that_fails_part_way_says_what_went_through(hook: AnalyticsHook) -> None:
    missing = max(names(hook)) + 100
    plan = Plan("groups", "group", "name")
    plan.changes = [Change(Action.CREATE, "group", "Finance", write=Write(GROUPS, fields={"name": "Finance"})),
                    Change(Action.REMOVE, f"group {missing}", "Gone", write=Write(GROUPS, missing)),
                    Change(Action.REMOVE, "group", "Never sent", write=Write(GROUPS, missing + 1))]

    def send(chunk: Sequence[Change[Write]]) -> None:
        for change in chunk:
            send_write(hook, change)

    with pytest.raises(SyncApplyError) as failed:
        apply_steps("sync_groups", plan, [Step(plan.changes, 1, send)])
    assert (failed.value.applied, failed.value.failed, failed.value.not_sent) == (1, 1, 1)
    assert str(failed.value).startswith("sync_groups: groups: 1 of 3 change(s) applied, then a write of 1 failed")
    assert f"remove Gone for group {missing}" in str(failed.value) and "A rerun will not help" in str(failed.value)
    assert "Finance" in names(hook).values()
