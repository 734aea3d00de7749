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
