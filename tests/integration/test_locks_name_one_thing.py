"""Two applies that may write one thing take one lock (issue 44, a fourth attack): a group is locked by
its name whether a plan creates it or finds it; a key made without a scope by an unscoped plan is
locked as a scoped plan's creates are."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

from analytics_provider import manage
from analytics_provider.access.groups import GroupMemberSync
from analytics_provider.access.saved import apply_held, apply_saved_group_members, save_group_members
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.plans.once import AppliedPlans
from analytics_provider.plans.saved import Consent, SavedPlanError, digest

from .test_deliveries import write
from .test_plan_files_and_secrets import ONE
from .test_plans_in_other_hands import racing

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


def carrying(hook: Any, key: str = "weekly-sales") -> list[str]:
    return sorted(s["title"] for s in hook.list_data_schedules() if key in (s.get("title") or ""))


@pytest.mark.parametrize("first", ["sales", "no scope"])
def test_a_scoped_and_an_unscoped_plan_creating_one_key_leave_one_schedule(
        first, tmp_path, hook, analytics_emulator, capsys, monkeypatch) -> None:
    """Before: the plan of scope sales (lock ``scope sales``) and the plan without a scope (lock ``no
    scope``) of the same files, applied at once, each created weekly-sales: two schedules for good
    (the next plan of sales listed the other as "made without a scope"). A scoped plan that creates
    takes ``no scope`` too: the second apply is refused at once; planned again, it adopts the first's
    schedule (sales after no scope) or leaves it (no scope after sales): one schedule either way."""
    files, storage = tmp_path / "deliveries", tmp_path / "plans"
    write(files, "sales.yml", ONE)
    flags = {"sales": ["--scope", "sales"], "no scope": []}
    digests = {}
    for name, extra in flags.items():
        assert manage.main(["plan", str(files), *extra, "--out", str(tmp_path / f"{name}.json")]) == 0
        (digests[name],) = re.findall(r", digest ([0-9a-f]{64}):", capsys.readouterr().out)
    writing, done = threading.Event(), threading.Event()
    create = type(hook).create_data_schedule

    def held_create(self: Any, fields: Any) -> Any:
        if threading.current_thread().name == "first":
            writing.set()
            assert done.wait(30)
        return create(self, fields)

    monkeypatch.setattr(type(hook), "create_data_schedule", held_create)

    def apply(name: str) -> Any:
        return lambda: manage.main(["apply", "--plan", str(tmp_path / f"{name}.json"), "--digest", digests[name],
                                    "--plan-storage", str(storage)])

    second = "no scope" if first == "sales" else "sales"
    exits = racing(apply(first), apply(second), writing, done, "first")
    err = capsys.readouterr().err
    assert exits == {"first": 0, "second": 1}, err
    assert "another apply of deliveries (no scope) is running" in err, err
    assert len(carrying(hook)) == 1
    # the second, planned again and applied, makes no second schedule
    assert manage.main(["apply", str(files), *flags[second], "--plan-storage", str(storage)]) == 0, \
        capsys.readouterr().err
    assert carrying(hook) == ["Weekly sales [managed: sales/weekly-sales]"]
    assert manage.main(["plan", str(files), "--scope", "sales"]) == 0
    out = capsys.readouterr().out
    assert "made without a scope" not in out, out


def test_a_direct_sync_planned_before_a_reviewed_apply_reads_again_under_its_locks(tmp_path, hook) -> None:
    """Before: a direct sync planned, a reviewed apply of the same group ran, then the sync applied the
    plan it had made before, without reading the service again (a deliveries apply is refused as
    stale there): it removed the member the reviewed apply had just added. Now refused as stale,
    nothing written; run again, it plans from what the service holds."""
    storage = str(tmp_path / "plans")
    reviewed = GroupMemberSync(hook, "review", groups=["Sales"], delete_missing=True)
    reviewed_rows = [{"user": u, "group": "Sales"} for u in ("maya.chen@example.com", "lucas.meyer@example.com")]
    saved = save_group_members(reviewed, reviewed.plan(reviewed_rows))
    direct = GroupMemberSync(hook, "sync", groups=["Sales"], delete_missing=True)
    plan = direct.plan([{"user": "maya.chen@example.com", "group": "Sales"}])  # tom out, as the reviewed plan
    assert apply_saved_group_members(hook, saved, "apply", Consent(digest(saved), once=AppliedPlans(storage, "a"))) > 0
    sales = next(g["id"] for g in hook.list_groups() if g["name"] == "Sales")

    def members() -> list[str]:
        return sorted(u["email"] for u in hook.list_users(limit=100) if sales in (u.get("group_ids") or []))

    before = members()
    assert "lucas.meyer@example.com" in before and "tom.okafor@example.com" not in before
    with pytest.raises(SavedPlanError, match=r"(?s)sync: stale plan: plan again.*tom\.okafor@example\.com"):
        apply_held(direct, plan, "sync", AppliedPlans(storage, "s"))
    assert members() == before  # nothing written


def test_a_failed_saved_plan_apply_advises_what_works_then(tmp_path, hook, analytics_emulator, capsys) -> None:
    """Before: a saved plan's failed apply said "Run the task again: it reads the service anew"; run
    again, the same apply was refused (the plan is recorded as applied). It now says to plan again,
    which works."""
    files, saved, storage = tmp_path / "deliveries", tmp_path / "plan.json", str(tmp_path / "plans")
    write(files, "sales.yml", ONE)
    assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(saved)]) == 0
    (approved,) = re.findall(r", digest ([0-9a-f]{64}):", capsys.readouterr().out)
    analytics_emulator.inject("create_data_schedule", status=500, times=1)
    apply = ["apply", "--plan", str(saved), "--digest", approved, "--plan-storage", storage]
    assert manage.main(apply) == 1
    err = capsys.readouterr().err
    assert "Run the task again" not in err and "This saved plan is used up" in err and "plan again" in err, err
    assert manage.main(apply) == 1  # the same apply again: refused, as the advice now says
    assert "this plan was applied at " in capsys.readouterr().err
    assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(saved)]) == 0  # what it advises
    (approved,) = re.findall(r", digest ([0-9a-f]{64}):", capsys.readouterr().out)
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved, "--plan-storage", storage]) == 0
    assert carrying(hook) == ["Weekly sales [managed: sales/weekly-sales]"]


def test_a_huge_lock_is_refused_as_damaged_without_being_read_whole(tmp_path) -> None:
    """Before: a 50 MB file in a lock's place was read whole (50 MB in memory, then judged). At most
    64 KiB of it is read now, and it is refused as no lock, naming it."""
    import tracemalloc

    storage = tmp_path / "plans"
    storage.mkdir()
    lock = storage / "lock-deliveries-scope-sales.json"
    lock.write_bytes(b"x" * (50 * 1024 * 1024))
    tracemalloc.start()
    try:
        with pytest.raises(SavedPlanError) as refusal, \
                AppliedPlans(str(storage), "me").holding("apply", "deliveries", ["scope sales"]):
            pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert f"{lock} is no apply lock (not UTF-8 text of at most 64 KiB)" in str(refusal.value)
    assert peak < 5 * 1024 * 1024, peak
    assert lock.stat().st_size == 50 * 1024 * 1024  # left as it was
