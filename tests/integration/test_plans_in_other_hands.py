"""A saved plan in other hands (issue 44): applied only against the service and account it was made
against, only as approved (its digest given apart from the file), only writing its own scope, only
with the consent to its deletes, and once when two applies race; `--out`, names and nesting
bounded; the CLI says which plan it applies before writing."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from analytics_provider import manage
from analytics_provider.deliveries.check import check
from analytics_provider.deliveries.files import MAX_DEPTH, load
from analytics_provider.deliveries.saved import apply_saved_deliveries
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.plans.saved import SavedPlanError, _digest

from .test_deliveries import SALES, write, writes

ONE = SALES.split("alerts:")[0]  # the weekly-sales schedule only


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> Any:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


@pytest.fixture
def staging(analytics_emulator, monkeypatch) -> str:
    """A connection to another address of the emulator, with another user's key: another service."""
    conn = json.loads(analytics_emulator.connection_json(analytics_emulator.key_for("analyst")))
    conn["extra"]["base_url"] = analytics_emulator.base_url.replace("127.0.0.1", "localhost")
    monkeypatch.setenv("AIRFLOW_CONN_STAGING", json.dumps(conn))
    return "staging"


def plan_to(files: Path, out: Path, capsys: Any, *flags: str) -> str:
    """Plan the files of scope sales into ``out``; the digest printed."""
    assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(out), *flags]) == 0
    (found,) = re.findall(r", digest ([0-9a-f]{64}):", capsys.readouterr().out)
    return found


def managed(hook: Any, key: str = "weekly-sales") -> list[int]:
    return sorted(s["id"] for s in hook.list_data_schedules() if f"[managed: sales/{key}]" in (s.get("title") or ""))


def test_a_plan_made_against_another_service_or_account_is_refused_naming_both(
        tmp_path, hook, staging, analytics_emulator, capsys) -> None:
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "sales.yml", ONE)
    approved = plan_to(files, saved, capsys, "--conn-id", staging)
    made = json.loads(saved.read_text())["origin"]
    assert made["service"].startswith("http://localhost:") and made["user"] != "admin"
    analytics_emulator.clear_requests()
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved]) == 1
    err = capsys.readouterr().err
    assert (f"the plan was made against {made['service']} as {made['user']} and this connection reaches "
            f"{analytics_emulator.base_url} as ") in err and "another service" in err
    assert writes(analytics_emulator) == []
    # the same address, another key: another account
    conn = json.loads(analytics_emulator.connection_json(analytics_emulator.key_for("analyst")))
    assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(saved)]) == 0  # as the admin
    approved = re.findall(r", digest ([0-9a-f]{64}):", capsys.readouterr().out)[0]
    import os

    os.environ["AIRFLOW_CONN_ANALYST"] = json.dumps(conn)
    try:
        assert manage.main(["apply", "--plan", str(saved), "--digest", approved, "--conn-id", "analyst"]) == 1
    finally:
        del os.environ["AIRFLOW_CONN_ANALYST"]
    assert "another account" in capsys.readouterr().err and writes(analytics_emulator) == []


def test_an_edited_plan_is_refused_whatever_hash_it_carries_and_a_digest_is_needed(
        tmp_path, hook, analytics_emulator, capsys) -> None:
    files, saved, edited = tmp_path / "deliveries", tmp_path / "plan.json", tmp_path / "edited.json"
    write(files, "sales.yml", ONE)
    approved = plan_to(files, saved, capsys)
    plan = json.loads(saved.read_text())
    plan["changes"][0]["write"]["fields"]["dest"]["recipients"] = ["mallory@outside.example"]
    content = {k: v for k, v in plan.items() if k != "sha256"}
    edited.write_text(json.dumps({**content, "sha256": _digest(content)}))  # its own hash recomputed
    assert manage.main(["apply", "--plan", str(edited), "--digest", approved]) == 1
    assert f"the plan's content is not the one approved (digest {_digest(content)}, approved {approved})" in (
        capsys.readouterr().err)
    assert manage.main(["apply", "--plan", str(saved)]) == 2
    assert "--digest is needed: the digest `manage plan --out` printed" in capsys.readouterr().err
    assert manage.main(["apply", "--plan", str(saved), "--digest", "abc"]) == 2
    assert writes(analytics_emulator) == [] and managed(hook) == []


def test_every_write_is_checked_against_the_plans_scope_before_any(tmp_path, hook, analytics_emulator,
                                                                    capsys) -> None:
    """Beyond the digest (a plan approved as it was edited): a deliveries plan writes its own scope only."""
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "sales.yml", ONE)
    plan_to(files, saved, capsys, "--prune")
    plan = json.loads(saved.read_text())
    by_hand = hook.create_data_schedule({**json.loads(json.dumps(plan["changes"][0]["write"]["fields"])),
                                         "title": "Made by hand"})
    group = hook.create_group({"name": "finance"})
    removals = [{"action": "remove", "subject": "data schedule", "target": "weekly-sales", "before": "", "after": "",
                 "write": {"kind": "data_schedules", "id": int(by_hand["id"]), "fields": None}},
                {"action": "remove", "subject": "group", "target": "finance", "before": "", "after": "",
                 "write": {"kind": "groups", "id": int(group["id"]), "fields": None}}]
    content = {k: v for k, v in plan.items() if k != "sha256"}
    content["changes"] = plan["changes"] + removals
    content["counts"]["remove"] = 2
    content["consent"]["kept"] = 1
    analytics_emulator.clear_requests()
    with pytest.raises(SavedPlanError, match="a deliveries plan writes data schedules and alerts only; this one "
                                             "writes groups: nothing was written"):
        apply_saved_deliveries(hook, {**content, "sha256": _digest(content)}, "apply")
    content["changes"] = plan["changes"] + removals[:1]
    content["counts"]["remove"] = 1
    with pytest.raises(SavedPlanError) as refused:
        apply_saved_deliveries(hook, {**content, "sha256": _digest(content)}, "apply")
    assert str(refused.value) == (
        "apply: 1 change(s) of the plan write outside scope 'sales'; nothing was written:\n"
        f"- remove data schedule {by_hand['id']} (weekly-sales): not a resource of the scope carrying "
        "[managed: sales/weekly-sales]")
    assert writes(analytics_emulator) == []


def test_max_deletes_and_allow_delete_all_hold_for_a_saved_plan(tmp_path, hook, analytics_emulator, capsys) -> None:
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "sales.yml", SALES)
    assert manage.main(["apply", str(files), "--scope", "sales"]) == 0
    write(files, "sales.yml", ONE)  # the alert is no longer declared: a prune deletes it
    approved = plan_to(files, saved, capsys, "--prune")
    analytics_emulator.clear_requests()
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved, "--max-deletes", "0"]) == 1
    assert "the plan deletes 1, more than max_deletes (0): data alert 1000: revenue-watch; nothing was written. " \
           "If that is meant: --allow-delete-all (or a higher --max-deletes)" in capsys.readouterr().err
    assert writes(analytics_emulator) == []
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved, "--max-deletes", "1"]) == 0
    assert [r.operation for r in writes(analytics_emulator)] == ["delete_data_alert"]


def test_two_applies_racing_leave_one_resource_per_key_and_the_loser_says_so(
        tmp_path, hook, analytics_emulator, capsys) -> None:
    """Two plans of one scope (each approved) creating the same keys, applied with plan storages they
    do not share (no lock holds them apart): both applies pass the stale check and send their create
    (a barrier holds each create until both have read the service); then they converge: the later
    copy is deleted by its own apply."""
    files, saved, other = tmp_path / "deliveries", tmp_path / "plan.json", tmp_path / "other.json"
    write(files, "sales.yml", SALES)
    approved = {saved: plan_to(files, saved, capsys), other: plan_to(files, other, capsys, "--prune")}
    both_read = threading.Barrier(2, timeout=30)
    create_schedule, create_alert = AnalyticsHook.create_data_schedule, AnalyticsHook.create_data_alert

    def held(create: Any) -> Any:
        def send(self: Any, fields: Any) -> Any:
            both_read.wait()
            return create(self, fields)
        return send

    exits: list[int] = []
    racers = [threading.Thread(target=lambda plan=plan: exits.append(manage.main(
        ["apply", "--plan", str(plan), "--digest", approved[plan], "--plan-storage", str(tmp_path / plan.stem)])))
        for plan in (saved, other)]
    AnalyticsHook.create_data_schedule, AnalyticsHook.create_data_alert = (  # type: ignore[method-assign]
        held(create_schedule), held(create_alert))
    try:
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(60)
    finally:
        AnalyticsHook.create_data_schedule, AnalyticsHook.create_data_alert = (  # type: ignore[method-assign]
            create_schedule, create_alert)
    out = capsys.readouterr()
    assert sorted(exits) == [0, 1] or exits == [1, 1], (exits, out.err)
    assert len(managed(hook)) == 1
    assert len([a for a in hook.list_data_alerts() if "[managed: sales/revenue-watch]" in (a.get("title") or "")]) == 1
    assert re.search(r"create weekly-sales for data schedule: another apply created data schedule (\d+) with this "
                     r"key at the same time: this apply's copy \(data schedule \d+\) was deleted, data schedule \1 "
                     r"is kept \(one per key\)", out.err), out.err
    assert manage.main(["plan", str(files), "--scope", "sales"]) == 0  # the next plan is not blocked
    assert "deliveries: nothing to change" in capsys.readouterr().out


def test_a_plan_is_applied_once_even_after_what_it_did_was_undone(tmp_path, hook, analytics_emulator,
                                                                  capsys) -> None:
    """A re-run CI job: the approved plan applied, its schedule deleted since (by a pruning plan, by
    hand): the service is as the plan found it, the stale check passes, the record refuses."""
    files, saved, storage = tmp_path / "deliveries", tmp_path / "plan.json", tmp_path / "applied"
    write(files, "sales.yml", ONE)
    approved = plan_to(files, saved, capsys)
    once = ["apply", "--plan", str(saved), "--digest", approved, "--plan-storage", str(storage)]
    assert manage.main(once) == 0
    (made,) = managed(hook)
    capsys.readouterr()
    hook.delete_data_schedule(made)  # undone
    analytics_emulator.clear_requests()
    assert manage.main(once) == 1
    err = capsys.readouterr().err
    assert re.fullmatch(rf"manage apply --plan {saved}: this plan was applied at \S+ by manage apply --plan {saved} "
                        rf"\(\S+@\S+\): applied 1 change\(s\) \(its record {storage}/applied-{approved}.json\); a "
                        r"plan is applied once, even when what it did was undone since: plan again \(nothing was "
                        r"written\)\n", err), err
    assert writes(analytics_emulator) == [] and managed(hook) == []
    again = plan_to(files, saved, capsys)  # the same files planned again: a new plan, applied once too
    assert again != approved
    assert manage.main(["apply", "--plan", str(saved), "--digest", again, "--plan-storage", str(storage)]) == 0
    assert len(managed(hook)) == 1


def test_one_plan_applied_twice_at_once_is_applied_by_one_apply_and_the_other_says_so(
        tmp_path, hook, analytics_emulator, capsys, monkeypatch) -> None:
    """Both applies find no record (a barrier holds each after its look-up); one takes the scope's
    lock and applies; the other is refused by the lock or, when the first has ended already, as stale."""
    from analytics_provider.plans.once import AppliedPlans

    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "sales.yml", SALES)
    approved = plan_to(files, saved, capsys)
    both_looked = threading.Barrier(2, timeout=30)
    look_up = AppliedPlans.refuse_if_applied

    def held(self: Any, where: str, data: Any) -> None:
        look_up(self, where, data)
        both_looked.wait()

    monkeypatch.setattr(AppliedPlans, "refuse_if_applied", held)
    exits: list[int] = []
    racers = [threading.Thread(target=lambda: exits.append(manage.main(
        ["apply", "--plan", str(saved), "--digest", approved]))) for _ in range(2)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)
    out = capsys.readouterr()
    assert sorted(exits) == [0, 1], (exits, out.err)
    assert re.search(rf"manage apply --plan {saved}: (another apply of deliveries \((scope sales|no scope)\) is "
                     r"running since \S+ by manage apply|stale plan: plan again)", out.err), out.err
    assert len(managed(hook)) == 1 and out.out.count("applied 2 change(s) of the saved plan") == 1
    assert [r.operation for r in writes(analytics_emulator)] == ["create_data_schedule", "create_data_alert"]


def test_two_plans_updating_one_schedule_at_once_the_later_write_is_refused_as_stale(
        tmp_path, hook, analytics_emulator, capsys, monkeypatch) -> None:
    """Two approved plans of one scope, each an update of the weekly-sales schedule made from the same
    state, applied with plan storages they do not share (no lock holds them apart): both pass the stale
    check (a barrier holds each after it); plan B's read right before its write is held until plan A
    has written: it finds A's schedule, writes nothing and says so."""
    import analytics_provider.deliveries.saved as saved_module

    schedule, digests = two_updates_of_weekly_sales(tmp_path, hook, capsys)
    a, b = digests
    both_checked = threading.Barrier(2, timeout=30)
    a_done = threading.Event()
    check, get = saved_module.refuse_if_stale, AnalyticsHook.get_data_schedule

    def checked_then_wait(*args: Any) -> None:
        check(*args)
        both_checked.wait()

    def read_after_a(self: Any, ident: Any) -> Any:
        if threading.current_thread().name == "b":
            assert a_done.wait(30)
        return get(self, ident)

    monkeypatch.setattr(saved_module, "refuse_if_stale", checked_then_wait)
    monkeypatch.setattr(AnalyticsHook, "get_data_schedule", read_after_a)
    exits: dict[str, int] = {}

    def run(name: str, plan: Path) -> None:
        try:
            exits[name] = manage.main(["apply", "--plan", str(plan), "--digest", digests[plan], "--plan-storage",
                                       str(tmp_path / name)])
        finally:
            if name == "a":
                a_done.set()

    racers = [threading.Thread(target=run, args=(name, plan), name=name) for name, plan in (("a", a), ("b", b))]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)
    err = capsys.readouterr().err
    assert exits == {"a": 0, "b": 1}, err
    assert (f"manage apply --plan {b}: deliveries: 0 of 1 change(s) applied; 1 not applied:\nchange weekly-sales "
            f"for data schedule {schedule}: changed since the plan, after this apply's stale check (another apply at "
            f"the same time?): data schedule {schedule} (weekly-sales): schedule.repeat '0 8 * * 1' then, "
            "'0 6 * * 1' now; not written: plan again (a rerun will not help as it is)") in err, err
    now = hook.get_data_schedule(schedule)
    assert now["schedule"]["repeat"] == "0 6 * * 1" and now["dest"]["recipients"] == ["ann@example.com"]


def test_an_update_overwritten_at_once_by_another_apply_is_reported_as_lost(
        tmp_path, hook, analytics_emulator, capsys, monkeypatch) -> None:
    """Applied with plan storages they do not share (no lock holds them apart), both plans' reads right
    before their writes see the schedule as planned (A's write is held until B has read); B writes just
    after A, and A's read after its write (held until B has written) finds B's schedule: A says its
    update was lost."""
    schedule, digests = two_updates_of_weekly_sales(tmp_path, hook, capsys)
    a, b = digests
    b_read, a_written, b_written = threading.Event(), threading.Event(), threading.Event()
    get, update = AnalyticsHook.get_data_schedule, AnalyticsHook.update_data_schedule
    reads: dict[str, int] = {"a": 0, "b": 0}

    def held_get(self: Any, ident: Any) -> Any:
        name = threading.current_thread().name
        if name not in reads:
            return get(self, ident)
        reads[name] += 1
        if name == "a":
            assert (b_read if reads["a"] == 1 else b_written).wait(30)
        found = get(self, ident)
        if name == "b":
            b_read.set()
        return found

    def held_update(self: Any, ident: Any, fields: Any) -> Any:
        name = threading.current_thread().name
        if name == "b":
            assert a_written.wait(30)
        try:
            return update(self, ident, fields)
        finally:
            (a_written if name == "a" else b_written).set()

    monkeypatch.setattr(AnalyticsHook, "get_data_schedule", held_get)
    monkeypatch.setattr(AnalyticsHook, "update_data_schedule", held_update)
    exits: dict[str, int] = {}
    racers = [threading.Thread(target=lambda plan=plan, name=name: exits.__setitem__(name, manage.main(
        ["apply", "--plan", str(plan), "--digest", digests[plan], "--plan-storage", str(tmp_path / name)])),
        name=name) for name, plan in (("a", a), ("b", b))]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)
    err = capsys.readouterr().err
    assert exits == {"a": 1, "b": 0}, err
    assert (f"change weekly-sales for data schedule {schedule}: written, then overwritten at once by another write "
            f"(another apply at the same time?): data schedule {schedule}: dest.recipients ['ann@example.com'] "
            "then, ['ann@example.com', 'cfo@example.com'] now; schedule.repeat '0 6 * * 1' then, '0 8 * * 1' now; "
            "its effect is lost: plan again") in err, err
    now = hook.get_data_schedule(schedule)
    assert now["schedule"]["repeat"] == "0 8 * * 1" and now["dest"]["recipients"] == ["ann@example.com",
                                                                                      "cfo@example.com"]


def two_updates_of_weekly_sales(tmp_path: Path, hook: Any, capsys: Any) -> tuple[int, dict[Path, str]]:
    """The weekly-sales schedule applied, then two plans of scope sales updating it from that state:
    A its repeat, B its recipients; the schedule's id and each plan's digest."""
    files, a, b = tmp_path / "deliveries", tmp_path / "a.json", tmp_path / "b.json"
    write(files, "sales.yml", ONE)
    assert manage.main(["apply", str(files), "--scope", "sales"]) == 0
    (schedule,) = managed(hook)
    write(files, "sales.yml", ONE.replace('"0 8 * * 1"', '"0 6 * * 1"'))
    digests = {a: plan_to(files, a, capsys)}
    write(files, "sales.yml", ONE.replace("[ann@example.com]", "[ann@example.com, cfo@example.com]"))
    digests[b] = plan_to(files, b, capsys)
    return schedule, digests


def test_two_plans_of_one_scope_at_once_the_later_is_refused_by_the_scopes_lock_and_then_as_stale(
        tmp_path, hook, analytics_emulator, capsys, monkeypatch) -> None:
    """Issue 44, item 5, with the plan storage shared: apply A is held inside its write (its update
    waits) while apply B runs: B is refused at once by the scope's lock, naming A, having written
    nothing (without the lock B would pass its stale check and write, and A's update, sent next,
    would overwrite B's without a word). Once A has ended, B again is refused as stale: its stale
    check, run under the lock, sees A's write. One schedule, A's state, no update lost."""
    schedule, digests = two_updates_of_weekly_sales(tmp_path, hook, capsys)
    a, b = digests
    storage = tmp_path / "plans"
    lock = storage / "lock-deliveries-scope-sales.json"
    a_writing, b_done = threading.Event(), threading.Event()
    update = AnalyticsHook.update_data_schedule

    def held_update(self: Any, ident: Any, fields: Any) -> Any:
        if threading.current_thread().name == "a":
            a_writing.set()
            assert b_done.wait(30)
        return update(self, ident, fields)

    def apply(plan: Path) -> int:
        return manage.main(["apply", "--plan", str(plan), "--digest", digests[plan], "--plan-storage", str(storage)])

    monkeypatch.setattr(AnalyticsHook, "update_data_schedule", held_update)
    exits: dict[str, int] = {}
    analytics_emulator.clear_requests()
    racer = threading.Thread(target=lambda: exits.__setitem__("a", apply(a)), name="a")
    racer.start()
    try:
        assert a_writing.wait(30)
        exits["b"] = apply(b)
        b_err = capsys.readouterr().err
        assert writes(analytics_emulator) == []  # A's update is held; B sent nothing
    finally:
        b_done.set()
        racer.join(60)
    assert exits == {"a": 0, "b": 1}, b_err
    assert re.fullmatch(rf"manage apply --plan {b}: another apply of deliveries \(scope sales\) is running since \S+ "
                        rf"by manage apply --plan {a} \(\S+@\S+\) \(host \S+, pid \d+; its lock {lock}\); nothing "
                        r"was written: retry when it ends \(an apply that stopped without ending leaves its lock: "
                        rf"once it is known to have stopped, delete {lock}\)\n", b_err), b_err
    assert not lock.exists()  # A's, removed at its end
    analytics_emulator.clear_requests()
    assert apply(b) == 1  # B retried once A has ended: its stale check sees A's write
    assert (f"stale plan: plan again. 1 resource(s) the plan touches changed since it was made; nothing was "
            f"written:\n- data schedule {schedule} (weekly-sales): schedule.repeat '0 8 * * 1' then, '0 6 * * 1' "
            "now") in capsys.readouterr().err
    assert writes(analytics_emulator) == [] and not lock.exists()
    assert managed(hook) == [schedule]
    now = hook.get_data_schedule(schedule)
    assert now["schedule"]["repeat"] == "0 6 * * 1" and now["dest"]["recipients"] == ["ann@example.com"]


def test_a_lock_left_behind_is_broken_by_its_rule_and_any_other_refuses_naming_the_file(
        tmp_path, hook, analytics_emulator, capsys, caplog) -> None:
    """A scope's lock found at apply: one whose holder may still run (another host, taken within the
    hour; or being written) refuses the apply, naming the file to delete, and is kept; one whose
    holder ran on this host and is gone, or taken more than an hour ago, is broken with a note. The
    lock is removed at the apply's end, a refused (stale) apply's too."""
    import socket
    import subprocess
    import sys
    from datetime import datetime, timedelta, timezone

    from analytics_provider.plans.once import LOCK_FORMAT, process_space

    files, saved, storage = tmp_path / "deliveries", tmp_path / "plan.json", tmp_path / "plans"
    lock = storage / "lock-deliveries-scope-sales.json"
    storage.mkdir()
    write(files, "sales.yml", ONE)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()

    def left(host: str, pid: int, ago: timedelta, space: str | None = None) -> None:
        lock.write_text(json.dumps({"format": LOCK_FORMAT, "what": "deliveries", "scope": "scope sales",
                                    "by": "task apply of a run that crashed", "host": host, "pid": pid, "token": "t",
                                    "space": process_space() if space is None else space,
                                    "started_at": (datetime.now(timezone.utc) - ago).isoformat(timespec="seconds")}))

    def apply() -> int:
        approved = plan_to(files, saved, capsys)
        analytics_emulator.clear_requests()
        return manage.main(["apply", "--plan", str(saved), "--digest", approved, "--plan-storage", str(storage)])

    left("worker-7", 4242, timedelta(minutes=59))
    assert apply() == 1
    err = capsys.readouterr().err
    assert (f"another apply of deliveries (scope sales) is running since {json.loads(lock.read_text())['started_at']} "
            f"by task apply of a run that crashed (host worker-7, pid 4242; its lock {lock}); nothing was written: "
            f"retry when it ends (an apply that stopped without ending leaves its lock: once it is known to have "
            f"stopped, delete {lock})") in err, err
    assert writes(analytics_emulator) == [] and lock.exists()
    lock.write_text('{"format": "analytics_provider apply l')  # being written by another apply
    assert apply() == 1
    assert f"is running (its lock {lock} is being written, or unreadable); nothing was written" in \
        capsys.readouterr().err
    assert writes(analytics_emulator) == [] and lock.exists()

    caplog.set_level("WARNING", logger="analytics_provider.plans.once")
    left("worker-7", 4242, timedelta(minutes=61))
    assert apply() == 0
    assert [r.operation for r in writes(analytics_emulator)] == ["create_data_schedule"] and not lock.exists()
    assert re.search(rf"the apply lock {lock} was broken: taken or last refreshed at \S+, more than 1:00:00 ago "
                     r"\(since \S+ by task "
                     r"apply of a run that crashed \(host worker-7, pid 4242;", caplog.text), caplog.text
    caplog.clear()
    # sixth attack: a holder on this hostname in another PID namespace (a container sharing the volume and
    # the host's name) is not known to be gone: its lock holds, as another host's would
    left(socket.gethostname(), gone.pid, timedelta(minutes=59), space="pid:[4026532999] another-boot")
    assert apply() == 1 and "another apply of deliveries (scope sales) is running" in capsys.readouterr().err
    assert writes(analytics_emulator) == [] and lock.exists()
    write(files, "sales.yml", ONE.replace('"0 8 * * 1"', '"0 6 * * 1"'))
    left(socket.gethostname(), gone.pid, timedelta(0))
    assert apply() == 0
    assert [r.operation for r in writes(analytics_emulator)] == ["update_data_schedule"] and not lock.exists()
    assert f"the apply lock {lock} was broken: its holder, process {gone.pid} on this host " in caplog.text

    write(files, "sales.yml", ONE)
    approved = plan_to(files, saved, capsys)
    hook.delete_data_schedule(managed(hook)[0])  # by hand, since the plan
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved, "--plan-storage", str(storage)]) == 1
    assert "stale plan: plan again" in capsys.readouterr().err and not lock.exists()


def test_out_may_not_name_an_input_a_folder_or_a_missing_folder(tmp_path, analytics_emulator, analytics_connection,
                                                                capsys) -> None:
    files = tmp_path / "deliveries"
    sales = write(files, "sales.yml", ONE)
    for out, why in ((sales, "one of the input files"), (files, "a folder"),
                     (tmp_path / "nowhere" / "plan.json", f"the folder {tmp_path / 'nowhere'} does not exist")):
        assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(out)]) == 2
        assert f"--out {out}: {why}" in capsys.readouterr().err
    assert sales.read_text() == ONE
    assert analytics_emulator.requests == []  # a usage error: before any request


def test_names_match_whole_and_deep_files_are_refused_naming_them(tmp_path, analytics_emulator,
                                                                  analytics_connection, capsys) -> None:
    files = tmp_path / "deliveries"
    write(files, "sales.yml", ONE)
    assert manage.main(["plan", str(files), "--scope", "sales\n"]) == 2
    assert "--scope must be letters, digits" in capsys.readouterr().err
    block = write(tmp_path / "block", "sales.yml", ONE.replace("key: weekly-sales", "key: |\n      weekly-sales"))
    assert [d.code for d in check(load(block))[1]] == ["DL112"]
    deep = tmp_path / "deep.yml"
    deep.write_text("schedules:\n  - " + "[" * 100 + "]" * 100 + "\n")
    (problem,) = load(deep)[0].problems
    assert problem[2:] == ("DL108", f"nested deeper than {MAX_DEPTH} levels: not read")
    deep_plan = tmp_path / "deep.json"
    deep_plan.write_text("[" * 100_000 + "]" * 100_000)
    assert manage.main(["apply", "--plan", str(deep_plan), "--digest", "0" * 64]) == 1
    assert f"{deep_plan}: nested deeper than 32 levels: not a saved plan (not read)" in capsys.readouterr().err


def test_apply_says_which_plan_it_applies_before_writing_and_scope_must_be_the_plans(
        tmp_path, hook, analytics_emulator, capsys) -> None:
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "sales.yml", ONE)
    approved = plan_to(files, saved, capsys)
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved, "--scope", "marketing"]) == 2
    assert "--scope 'marketing' is not the plan's scope ('sales')" in capsys.readouterr().err
    hook.create_data_schedule({**json.loads(saved.read_text())["changes"][0]["write"]["fields"]})  # made meanwhile
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved, "--scope", "sales"]) == 1
    out = capsys.readouterr()
    said = [line for line in out.out.splitlines() if " INFO - " not in line]  # Airflow 2.11 logs to stdout
    assert said == [f"saved plan {saved}: deliveries of scope 'sales', made against {analytics_emulator.base_url} "
                    f"as {hook.get_current_user()['email']}: 1 to create"]  # no "applying": refused as stale
    assert "stale plan: plan again" in out.err


def test_a_left_lock_whose_time_carries_no_zone_is_judged_as_utc_not_a_traceback(tmp_path) -> None:
    """A lock edited by hand with a time without its zone ended in TypeError (aware minus naive)."""
    from datetime import datetime, timedelta, timezone

    from analytics_provider.plans.once import LOCK_FORMAT, _left_behind

    lock = tmp_path / "lock-deliveries-scope-sales.json"
    old = (datetime.now(timezone.utc) - timedelta(hours=2)).replace(tzinfo=None).isoformat(timespec="seconds")
    text = json.dumps({"format": LOCK_FORMAT, "host": "elsewhere", "pid": 1, "started_at": old})
    lock.write_text(text)
    assert "more than 1:00:00 ago" in (_left_behind(text, lock) or "")


def held_while_writing(monkeypatch: Any, name: str) -> tuple[threading.Event, threading.Event]:
    """Hold the update sent by the thread ``name`` until the second event is set; the first is set
    when it is held (its locks taken, its stale check passed)."""
    writing, done = threading.Event(), threading.Event()
    update = AnalyticsHook.update_data_schedule

    def held_update(self: Any, ident: Any, fields: Any) -> Any:
        if threading.current_thread().name == name:
            writing.set()
            assert done.wait(30)
        return update(self, ident, fields)

    monkeypatch.setattr(AnalyticsHook, "update_data_schedule", held_update)
    return writing, done


def racing(first: Any, second: Any, writing: threading.Event, done: threading.Event, name: str) -> dict[str, int]:
    """``first()`` in the thread ``name``, held inside its write while ``second()`` runs; both exits."""
    exits: dict[str, int] = {}
    racer = threading.Thread(target=lambda: exits.__setitem__("first", first()), name=name)
    racer.start()
    try:
        assert writing.wait(30)
        exits["second"] = second()
    finally:
        done.set()
        racer.join(60)
    return exits


def test_an_unscoped_plan_and_a_scoped_plan_adopting_its_schedule_exclude_each_other(
        tmp_path, hook, analytics_emulator, capsys, monkeypatch) -> None:
    """Second attack on issue 44: a plan made without a scope (lock "no scope") and a plan of scope
    sales adopting the same schedule (lock "scope sales") ran at once: both passed their stale checks
    and the later update overwrote the earlier, silently. A plan that adopts takes the lock of the
    resources made without a scope too: the later is refused at once, naming the holder; retried, it
    is stale. One schedule, the first apply's state, nothing lost."""
    files, unscoped, adopting = tmp_path / "deliveries", tmp_path / "u.json", tmp_path / "s.json"
    storage = tmp_path / "plans"
    write(files, "sales.yml", ONE)
    assert manage.main(["apply", str(files)]) == 0  # made before scopes: [managed: weekly-sales]
    (schedule,) = [s["id"] for s in hook.list_data_schedules() if "[managed: weekly-sales]" in (s.get("title") or "")]
    write(files, "sales.yml", ONE.replace('"0 8 * * 1"', '"0 6 * * 1"'))
    assert manage.main(["plan", str(files), "--out", str(unscoped)]) == 0
    (u_digest,) = re.findall(r", digest ([0-9a-f]{64}):", capsys.readouterr().out)
    write(files, "sales.yml", ONE.replace("[ann@example.com]", "[ann@example.com, cfo@example.com]"))
    s_digest = plan_to(files, adopting, capsys)
    writing, done = held_while_writing(monkeypatch, "u")
    analytics_emulator.clear_requests()

    def apply(plan: Path, approved: str) -> int:
        return manage.main(["apply", "--plan", str(plan), "--digest", approved, "--plan-storage", str(storage)])

    exits = racing(lambda: apply(unscoped, u_digest), lambda: apply(adopting, s_digest), writing, done, "u")
    err = capsys.readouterr().err
    assert exits == {"first": 0, "second": 1}, err
    lock = storage / "lock-deliveries-no-scope.json"
    assert (f"manage apply --plan {adopting}: another apply of deliveries (no scope) is running since ") in err, err
    assert f"by manage apply --plan {unscoped} (" in err and "nothing was written" in err
    assert [r.operation for r in writes(analytics_emulator)] == ["update_data_schedule"]  # the first's only
    assert apply(adopting, s_digest) == 1  # retried: stale, the first's write seen
    assert "stale plan: plan again" in capsys.readouterr().err
    now = hook.get_data_schedule(schedule)
    assert (now["schedule"]["repeat"], now["dest"]["recipients"]) == ("0 6 * * 1", ["ann@example.com"])
    assert not lock.exists() and not (storage / "lock-deliveries-scope-sales.json").exists()


def test_a_direct_apply_takes_the_same_lock_as_a_saved_plans_apply(tmp_path, hook, analytics_emulator, capsys,
                                                                     monkeypatch) -> None:
    """Second attack on issue 44: `manage apply PATH` took no lock and read nothing again: run while a
    reviewed plan of its scope was being applied, it overwrote the reviewed change. It is applied by
    the saved plan's code: refused by the scope's lock (nothing written), then, once the reviewed
    apply has ended, as stale (its plan was made before that apply wrote)."""
    schedule, digests = two_updates_of_weekly_sales(tmp_path, hook, capsys)
    reviewed = next(iter(digests))
    storage = tmp_path / "plans"
    other = write(tmp_path / "other", "sales.yml", ONE.replace("[ann@example.com]", "[bob@example.com]")).parent
    writing, done = held_while_writing(monkeypatch, "reviewed")
    analytics_emulator.clear_requests()
    exits = racing(lambda: manage.main(["apply", "--plan", str(reviewed), "--digest", digests[reviewed],
                                        "--plan-storage", str(storage)]),
                   lambda: manage.main(["apply", str(other), "--scope", "sales", "--plan-storage", str(storage)]),
                   writing, done, "reviewed")
    err = capsys.readouterr().err
    assert exits == {"first": 0, "second": 1}, err
    assert re.search(r"^manage apply: another apply of deliveries \(scope sales\) is running since \S+ by manage "
                     rf"apply --plan {reviewed} \(", err, re.M), err
    assert [r.operation for r in writes(analytics_emulator)] == ["update_data_schedule"]
    now = hook.get_data_schedule(schedule)
    assert (now["schedule"]["repeat"], now["dest"]["recipients"]) == ("0 6 * * 1", ["ann@example.com"])
    assert not (storage / "lock-deliveries-scope-sales.json").exists()
    assert sorted(p.name for p in storage.iterdir()) == [f"applied-{digests[reviewed]}.json"]  # no record of it


def test_a_service_that_cannot_be_reached_is_said_not_a_traceback(tmp_path, hook, capsys, monkeypatch) -> None:
    """Found checking the second attack's cases: ``apply --plan`` through a connection whose service
    does not answer ended in AnalyticsTransportError's traceback. Said on one line, exit 1."""
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "sales.yml", ONE)
    approved = plan_to(files, saved, capsys)
    monkeypatch.setenv("AIRFLOW_CONN_NOWHERE", json.dumps({"conn_type": "analytics", "password": "k", "extra": {
        "base_url": "http://127.0.0.1:9/api/v2", "max_retries": 0}}))
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved, "--conn-id", "nowhere",
                        "--plan-storage", str(tmp_path / "plans")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("manage apply: TransportError on GET /users/me: ") and "Traceback" not in err, err


def test_a_live_holder_keeps_its_lock_past_the_hour_and_a_heartbeat_keeps_a_remote_one(tmp_path, monkeypatch) -> None:
    """Third attack on issue 44: a lock whose holder runs on this host was broken once an hour old (a
    long access sync under a per-minute quota). A holder running here is never broken by age; one on
    another host is judged by its last heartbeat, which a holding apply writes into its locks."""
    import socket
    from datetime import datetime, timedelta, timezone

    from analytics_provider.plans import once as once_module
    from analytics_provider.plans.once import LOCK_FORMAT, AppliedPlans, _left_behind
    from analytics_provider.plans.saved import SavedPlanError

    storage = tmp_path / "plans"
    storage.mkdir()
    lock = storage / "lock-group-members-group-1.json"
    two_hours_ago = (datetime.now(timezone.utc) - timedelta(hours=2)).isoformat(timespec="seconds")
    lock.write_text(json.dumps({"format": LOCK_FORMAT, "what": "group members", "scope": "group 1", "token": "t",
                                "by": "task apply of a long sync", "host": socket.gethostname(), "pid": os.getppid(),
                                "space": once_module.process_space(), "started_at": two_hours_ago}))
    other = AppliedPlans(str(storage), "task apply2")
    with pytest.raises(SavedPlanError, match=r"another apply of group members \(group 1\) is running since"), \
            other.holding("apply2", "group members", ["group 1"]):
        pass
    assert json.loads(lock.read_text())["pid"] == os.getppid()  # kept
    remote = {"format": LOCK_FORMAT, "host": "worker-7", "pid": 4242, "started_at": two_hours_ago}
    fresh = json.dumps({**remote, "heartbeat_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    assert _left_behind(fresh, lock) is None
    assert "more than 1:00:00 ago" in (_left_behind(json.dumps(remote), lock) or "")
    # a holding apply beats: its lock's heartbeat_at is written while it holds it
    lock.unlink()
    beaten = threading.Event()
    real_beat = once_module.beat

    def beat(at: Any, token: str) -> bool:
        done = real_beat(at, token)
        beaten.set()
        return done

    monkeypatch.setattr(once_module, "HEARTBEAT", timedelta(0))
    monkeypatch.setattr(once_module, "beat", beat)
    with AppliedPlans(str(storage), "task apply3").holding("apply3", "group members", ["group 1"]):
        assert beaten.wait(30)
        assert json.loads(lock.read_text())["heartbeat_at"]
    assert not lock.exists()


def test_bad_files_in_the_plan_storage_are_named_with_what_to_do_before_any_write(
        tmp_path, hook, analytics_emulator, capsys) -> None:
    """Third attack on issue 44: a lock that is not UTF-8, a damaged applied record, a folder in a
    lock's place ended in tracebacks (the folder was moved aside). Each is now a refusal naming the
    file and what to do, before any write, and the folder is left where it was."""
    files, saved, storage = tmp_path / "deliveries", tmp_path / "plan.json", tmp_path / "plans"
    lock = storage / "lock-deliveries-scope-sales.json"
    storage.mkdir()
    write(files, "sales.yml", ONE)
    assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(saved)]) == 0
    approved = re.findall(r", digest ([0-9a-f]{64}):", capsys.readouterr().out)[0]
    record = storage / f"applied-{approved}.json"

    def apply() -> str:
        analytics_emulator.clear_requests()
        assert manage.main(["apply", "--plan", str(saved), "--digest", approved, "--plan-storage", str(storage)]) == 1
        assert writes(analytics_emulator) == []
        return capsys.readouterr().err

    lock.write_bytes(b"\xff\xfe not a lock")
    assert f"{lock} is no apply lock (not UTF-8 text of at most 64 KiB): once no apply of deliveries (scope sales) " \
           "is known to run, delete it and retry; nothing was written" in apply()
    lock.unlink()
    lock.mkdir()
    assert f"{lock}, the place of an apply lock, is a folder: remove it (no apply ever makes one) and retry; " \
           "nothing was written" in apply()
    assert lock.is_dir() and [p.name for p in storage.iterdir()] == [lock.name]  # not moved aside
    lock.rmdir()
    record.write_bytes(b"\xff\xfe")
    assert f"the record of applied plans {record} is damaged (not UTF-8 text of at most 64 KiB): this plan " \
           "is refused as recorded; if it is known never to have been applied, delete the record and apply " \
           "again" in apply()
    record.write_text('{"format": "analytics_provider applied pl')
    assert f"its record {record} is damaged (no whole record: if no apply of it runs and it is known never to " \
           "have been applied, delete the record)" in apply()
    assert "Traceback" not in capsys.readouterr().err


EDITS: dict[str, Any] = {
    "touched kind unknown": lambda d: d["touched"][0].update(kind="nosuch"),
    "touched kind a list": lambda d: d["touched"][0].update(kind=["x"]),
    "touched id a list": lambda d: d["touched"][0].update(id=[2]),
    "touched fields a string": lambda d: d["touched"][0].update(fields="x"),
    "write fields a string": lambda d: d["changes"][0]["write"].update(fields="x"),
    "write kind a list": lambda d: d["changes"][0]["write"].update(kind=["x"]),
    "action add in deliveries": lambda d: d["changes"][0].update(action="add"),
    "prune a string": lambda d: d["params"].update(prune="yes"),
    "scope a list": lambda d: d["params"].update(scope=["sales"]),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_plan_whose_digest_was_recomputed_is_refused_by_its_shape_and_stays_unused(
        tmp_path, analytics_emulator, analytics_connection, capsys, edit) -> None:
    """Third attack on issue 44: a plan edited with its digest recomputed reached tracebacks (an
    unknown or unhashable touched kind, write fields a string), an ``add`` in a deliveries plan was
    sent as far as a repr with a lambda and used the plan up, ``prune: "yes"`` passed as true. Each
    part's shape is checked before anything is said or recorded: exit 2, no write, no record."""
    from analytics_provider.plans.saved import digest

    files, saved, storage = tmp_path / "deliveries", tmp_path / "plan.json", tmp_path / "plans"
    write(files, "sales.yml", ONE)
    plan_to(files, saved, capsys)
    data = json.loads(saved.read_text())
    EDITS[edit](data)
    data["sha256"] = digest(data)
    saved.write_text(json.dumps(data))
    analytics_emulator.clear_requests()
    code = manage.main(["apply", "--plan", str(saved), "--digest", data["sha256"], "--plan-storage", str(storage)])
    out = capsys.readouterr()
    assert code == 2 and out.out == "", out
    assert out.err.startswith(f"manage apply --plan {saved}: a malformed saved plan ("), out.err
    assert "plan again (nothing was written)" in out.err and "lambda" not in out.err
    assert writes(analytics_emulator) == [] and not storage.exists()  # no record: the plan is not used up
