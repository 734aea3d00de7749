"""Deliveries as code never writes what its files do not own (issue 32), against the emulator:
prune within a scope, one resource per key, consent to destructive plans, fields removed from a file."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from analytics_provider import manage
from analytics_provider.hooks.analytics import AnalyticsHook

WRITES = ("create_data_schedule", "update_data_schedule", "delete_data_schedule", "create_data_alert",
          "update_data_alert", "delete_data_alert")


def schedule(key: str, repeat: str = "0 8 * * 1", recipients: str = "ann@example.com") -> str:
    return textwrap.dedent(f"""\
          - key: {key}
            title: {key.replace('-', ' ').capitalize()}
            dashboard: 1
            repeat: "{repeat}"
            dest: {{type: EmailDest, recipients: [{recipients}]}}
        """)


def write(folder: Path, name: str, *schedules: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("schedules:\n" + "".join(schedules), encoding="utf-8")
    return path


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> AnalyticsHook:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def titles(hook: AnalyticsHook) -> list[str]:
    return sorted(s.get("title") or "" for s in hook.list_data_schedules())


def writes(emulator: Any) -> list[str]:
    return [r.operation for r in emulator.requests if r.operation in WRITES]


def test_two_teams_prune_within_their_own_scope(tmp_path, hook, analytics_emulator, capsys) -> None:
    write(tmp_path / "sales", "sales.yml", schedule("weekly-sales"))
    write(tmp_path / "ops", "ops.yml", schedule("daily-ops", "0 6 * * *"))
    assert manage.main(["apply", str(tmp_path / "sales"), "--scope", "sales", "--prune"]) == 0
    assert manage.main(["apply", str(tmp_path / "ops"), "--scope", "ops", "--prune"]) == 0
    analytics_emulator.clear_requests()
    assert manage.main(["apply", str(tmp_path / "sales"), "--scope", "sales", "--prune"]) == 0
    assert writes(analytics_emulator) == []  # the other team's schedule is not the sales files' to delete
    assert "Daily ops [managed: ops/daily-ops]" in titles(hook)
    assert "Weekly sales [managed: sales/weekly-sales]" in titles(hook)


def test_prune_without_a_scope_is_a_usage_error_before_any_request(tmp_path, hook, analytics_emulator,
                                                                   capsys) -> None:
    write(tmp_path / "ops", "ops.yml", schedule("daily-ops", "0 6 * * *"))
    write(tmp_path / "sales", "sales.yml", schedule("weekly-sales"))
    assert manage.main(["apply", str(tmp_path / "ops")]) == 0
    analytics_emulator.clear_requests()
    assert manage.main(["apply", str(tmp_path / "sales"), "--prune"]) == 2  # once: "deletes the other team's"
    assert "--prune needs --scope" in capsys.readouterr().err
    assert [r for r in analytics_emulator.requests if r.origin == "api"] == []
    assert "Daily ops [managed: daily-ops]" in titles(hook)


def test_resources_made_without_a_scope_are_adopted_into_one_without_a_delete(tmp_path, hook, analytics_emulator,
                                                                               capsys) -> None:
    write(tmp_path, "sales.yml", schedule("weekly-sales"), schedule("monthly-sales", "0 8 1 * *"))
    assert manage.main(["apply", str(tmp_path)]) == 0  # as the version before scopes did
    made = {s["title"]: s["id"] for s in hook.list_data_schedules() if "[managed:" in (s.get("title") or "")}
    assert sorted(made) == ["Monthly sales [managed: monthly-sales]", "Weekly sales [managed: weekly-sales]"]
    write(tmp_path, "sales.yml", schedule("weekly-sales"))  # monthly-sales is no longer declared
    capsys.readouterr()
    analytics_emulator.clear_requests()
    assert manage.main(["apply", str(tmp_path), "--scope", "sales", "--prune"]) == 0
    assert writes(analytics_emulator) == ["update_data_schedule"]  # the title takes the scope: no delete
    out = capsys.readouterr().out
    assert f"data schedule {made['Monthly sales [managed: monthly-sales]']} (monthly-sales, made without a scope)" \
        in out  # listed, never pruned by a scope
    after = {s["id"]: s.get("title") for s in hook.list_data_schedules()}
    assert after[made["Weekly sales [managed: weekly-sales]"]] == "Weekly sales [managed: sales/weekly-sales]"
    assert after[made["Monthly sales [managed: monthly-sales]"]] == "Monthly sales [managed: monthly-sales]"


def test_files_that_declare_nothing_do_not_prune_everything_without_consent(tmp_path, hook, analytics_emulator,
                                                                            capsys) -> None:
    path = write(tmp_path, "sales.yml", schedule("weekly-sales"), schedule("monthly-sales", "0 8 1 * *"))
    assert manage.main(["apply", str(tmp_path), "--scope", "sales"]) == 0
    made = sorted(s["id"] for s in hook.list_data_schedules() if "[managed: sales/" in (s.get("title") or ""))
    path.write_text("# emptied in a merge\n", encoding="utf-8")
    capsys.readouterr()
    analytics_emulator.clear_requests()
    assert manage.main(["apply", str(tmp_path), "--scope", "sales", "--prune"]) == 1
    err = capsys.readouterr().err
    assert ("manage apply: deliveries: the input declares nothing of scope 'sales' and the plan deletes 2: "
            f"data schedule {made[1]}: monthly-sales, data schedule {made[0]}: weekly-sales; nothing was written. "
            "If that is meant: --allow-delete-all") in err
    assert writes(analytics_emulator) == []
    assert manage.main(["apply", str(tmp_path), "--scope", "sales", "--prune", "--allow-delete-all"]) == 0
    assert writes(analytics_emulator) == ["delete_data_schedule"] * 2


def test_more_deletes_than_max_deletes_are_refused_naming_them(tmp_path, hook, analytics_emulator, capsys) -> None:
    keys = ("a-sales", "b-sales", "c-sales")
    path = write(tmp_path, "sales.yml", *(schedule(k) for k in keys))
    assert manage.main(["apply", str(tmp_path), "--scope", "sales"]) == 0
    write(tmp_path, "sales.yml", schedule("a-sales"))
    capsys.readouterr()
    analytics_emulator.clear_requests()
    assert manage.main(["apply", str(tmp_path), "--scope", "sales", "--prune", "--max-deletes", "1"]) == 1
    err = capsys.readouterr().err
    assert "deliveries: the plan deletes 2, more than max_deletes (1): data schedule" in err and ": c-sales;" in err
    assert writes(analytics_emulator) == []
    assert path.exists() and manage.main(["apply", str(tmp_path), "--scope", "sales", "--prune",
                                          "--max-deletes", "2"]) == 0
    assert writes(analytics_emulator) == ["delete_data_schedule"] * 2


def test_two_resources_with_one_key_are_shown_and_the_apply_refuses(tmp_path, hook, analytics_emulator,
                                                                   capsys) -> None:
    write(tmp_path, "sales.yml", schedule("weekly-sales"))
    assert manage.main(["apply", str(tmp_path), "--scope", "sales"]) == 0
    (first,) = [s for s in hook.list_data_schedules() if "[managed: sales/" in (s.get("title") or "")]
    copy = {k: v for k, v in first.items() if k not in ("id", "owner_id")}
    second = hook.create_data_schedule(copy)["id"]  # duplicated in the service's UI
    write(tmp_path, "sales.yml", schedule("weekly-sales", recipients="bob@example.com"))  # ann removed
    capsys.readouterr()
    analytics_emulator.clear_requests()
    assert manage.main(["apply", str(tmp_path), "--scope", "sales", "--prune"]) == 1
    out, err = capsys.readouterr()
    assert f"weekly-sales is carried by data schedule {first['id']} and data schedule {second}" in out
    assert (f"deliveries: 1 key(s) carried by more than one resource: data schedule weekly-sales: data schedule "
            f"{first['id']} and data schedule {second}; delete all but one") in err
    assert writes(analytics_emulator) == []


def test_a_resource_created_by_another_apply_meanwhile_is_not_created_twice(tmp_path, hook, analytics_emulator) -> None:
    """A plan just made is applied as a saved plan is: one of its creates made by another apply since
    it was planned makes it stale, and nothing of it is written (not the other create either)."""
    from analytics_provider.deliveries.check import check
    from analytics_provider.deliveries.files import load
    from analytics_provider.deliveries.plan import plan_deliveries
    from analytics_provider.deliveries.saved import apply_deliveries
    from analytics_provider.plans.saved import StalePlanError

    write(tmp_path, "sales.yml", schedule("weekly-sales"), schedule("monthly-sales", "0 8 1 * *"))
    declared, _ = check(load(tmp_path))
    seen: dict[tuple[str, int], Any] = {}
    plan = plan_deliveries(hook, declared, scope="sales", seen=seen)
    assert plan.counts()["create"] == 2
    other = plan_deliveries(hook, declared[:1], scope="sales")  # an overlapping apply, a moment earlier
    apply_deliveries(hook, other, {}, "other", scope="sales", prune=False)
    (made,) = [s["id"] for s in hook.list_data_schedules() if "[managed: sales/" in (s.get("title") or "")]
    with pytest.raises(StalePlanError) as failed:
        apply_deliveries(hook, plan, seen, "apply", scope="sales", prune=False)
    assert (f"apply: stale plan: plan again. 1 resource(s) the plan touches changed since it was made; nothing was "
            f"written:\n- data schedule weekly-sales (to create): made since the plan: data schedule {made} carries "
            "its key") in str(failed.value)
    managed = sorted(s["title"] for s in hook.list_data_schedules() if "[managed: sales/" in (s.get("title") or ""))
    assert managed == ["Weekly sales [managed: sales/weekly-sales]"]


def test_a_section_given_twice_after_a_merge_is_a_finding_and_nothing_is_pruned(tmp_path, hook, analytics_emulator,
                                                                                capsys) -> None:
    path = write(tmp_path, "sales.yml", schedule("weekly-sales"), schedule("monthly-sales", "0 8 1 * *"))
    assert manage.main(["apply", str(tmp_path), "--scope", "sales"]) == 0
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "schedules:\n" + schedule("daily-sales", "0 6 * * *"), encoding="utf-8")  # a merge
    capsys.readouterr()
    analytics_emulator.clear_requests()
    assert manage.main(["apply", str(tmp_path), "--scope", "sales", "--prune"]) == 1
    assert capsys.readouterr().out.startswith(
        f"{path}:12:1: DL103 'schedules' is given twice in one mapping: at line 1 and here")
    assert writes(analytics_emulator) == []


def test_a_field_removed_from_a_file_is_reset_and_the_plan_shows_it(tmp_path, hook, analytics_emulator,
                                                                    capsys) -> None:
    with_options = schedule("weekly-sales").replace(
        "recipients: [ann@example.com]}", "recipients: [ann@example.com], options: {include_header: true}}")
    write(tmp_path, "sales.yml", with_options)
    assert manage.main(["apply", str(tmp_path), "--scope", "sales"]) == 0
    (made,) = [s for s in hook.list_data_schedules() if "[managed: sales/" in (s.get("title") or "")]
    assert made["dest"]["options"] == {"include_header": True}
    write(tmp_path, "sales.yml", schedule("weekly-sales", "0 9 * * 1"))  # options removed, repeat changed
    capsys.readouterr()
    assert manage.main(["apply", str(tmp_path), "--scope", "sales"]) == 0
    out = capsys.readouterr().out
    assert ("schedule.repeat '0 8 * * 1'; dest.options {'include_header': True}" in out
            and "schedule.repeat '0 9 * * 1'; dest.options (not in the file: reset)" in out)
    assert "options" not in hook.get_data_schedule(made["id"])["dest"]
    analytics_emulator.clear_requests()
    assert manage.main(["apply", str(tmp_path), "--scope", "sales"]) == 0
    assert writes(analytics_emulator) == []
