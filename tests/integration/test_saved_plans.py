"""Saved plans: `manage plan --out` then `manage apply --plan` applies exactly what was planned; a plan
whose resources changed since, edited by hand, or saved by another version writes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from analytics_provider import manage
from analytics_provider.hooks.analytics import AnalyticsHook

from .test_deliveries import SALES, write, writes

UPDATED = SALES.replace('repeat: "0 8 * * 1"', 'repeat: "0 7 * * 1"')


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> Any:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def plan_to(files: Path, out: Path, capsys: Any, *flags: str) -> str:
    assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(out), *flags]) == 0
    return capsys.readouterr().out


def printed_digest(out: str) -> str:
    """The digest `manage plan --out` printed (what a review approves)."""
    (found,) = re.findall(r", digest ([0-9a-f]{64}):", out)
    return found


def managed_schedule(hook: Any) -> dict[str, Any]:
    (found,) = [s for s in hook.list_data_schedules() if "[managed: sales/weekly-sales]" in (s.get("title") or "")]
    return found


def test_a_saved_plan_is_applied_exactly_and_its_files_are_not_read_again(tmp_path, hook, analytics_emulator,
                                                                          capsys) -> None:
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "sales.yml", SALES)
    out = plan_to(files, saved, capsys)
    assert f"plan saved to {saved}" in out and writes(analytics_emulator) == []
    approved = printed_digest(out)
    plan = json.loads(saved.read_text())
    assert [(c["action"], c["subject"], c["target"]) for c in plan["changes"]] == [
        ("create", "data schedule", "weekly-sales"), ("create", "data alert", "revenue-watch")]
    write(files, "sales.yml", UPDATED)  # the files move on: the saved plan is what was reviewed
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved]) == 0
    assert capsys.readouterr().out.endswith("create  data schedule  weekly-sales\ncreate  data alert  revenue-watch\n"
                                            f"applied 2 change(s) of the saved plan {saved}\n")
    sent = writes(analytics_emulator)
    assert [r.operation for r in sent] == ["create_data_schedule", "create_data_alert"]
    assert [r.json[k] for r, k in zip(sent, ("data_schedule", "data_alert"), strict=True)] == [
        c["write"]["fields"] for c in plan["changes"]]
    assert managed_schedule(hook)["schedule"]["repeat"] == "0 8 * * 1"


def test_a_plan_whose_resource_changed_since_writes_nothing_and_says_what_changed(tmp_path, hook,
                                                                                   analytics_emulator,
                                                                                   capsys) -> None:
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "sales.yml", SALES)
    assert manage.main(["apply", str(files), "--scope", "sales"]) == 0
    write(files, "sales.yml", UPDATED)
    approved = printed_digest(plan_to(files, saved, capsys))  # one update: the schedule's repeat
    schedule = managed_schedule(hook)
    by_hand = {**schedule, "schedule": {**schedule["schedule"], "repeat": "0 9 * * 1"}}
    hook.update_data_schedule(schedule["id"], by_hand)  # after the review
    analytics_emulator.clear_requests()
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"manage apply --plan {saved}: stale plan: plan again. 1 resource(s) the plan touches "
                          "changed since it was made; nothing was written:\n")
    assert f"- data schedule {schedule['id']} (weekly-sales): schedule.repeat '0 8 * * 1' then, '0 9 * * 1' now" in err
    assert writes(analytics_emulator) == []


def test_a_resource_made_or_deleted_since_the_plan_makes_it_stale(tmp_path, hook, analytics_emulator,
                                                                  capsys) -> None:
    files, first, second = tmp_path / "deliveries", tmp_path / "first.json", tmp_path / "second.json"
    write(files, "sales.yml", SALES)
    approved_first = printed_digest(plan_to(files, first, capsys))  # creates both
    assert manage.main(["apply", str(files), "--scope", "sales"]) == 0  # another apply made them meanwhile
    write(files, "sales.yml", UPDATED)
    approved_second = printed_digest(plan_to(files, second, capsys))  # updates the schedule
    hook.delete_data_schedule(managed_schedule(hook)["id"])
    capsys.readouterr()
    analytics_emulator.clear_requests()
    assert manage.main(["apply", "--plan", str(first), "--digest", approved_first]) == 1
    alert = max(a["id"] for a in hook.list_data_alerts())
    assert f"- data alert revenue-watch (to create): made since the plan: data alert {alert} carries its key" in (
        capsys.readouterr().err)
    assert manage.main(["apply", "--plan", str(second), "--digest", approved_second]) == 1
    assert "(weekly-sales): deleted since the plan" in capsys.readouterr().err
    assert writes(analytics_emulator) == []


def test_a_plan_edited_by_hand_or_saved_by_another_version_is_refused(tmp_path, hook, analytics_emulator,
                                                                      capsys) -> None:
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "sales.yml", SALES)
    approved = printed_digest(plan_to(files, saved, capsys))
    plan = json.loads(saved.read_text())
    edited = tmp_path / "edited.json"
    plan["changes"][0]["write"]["fields"]["repeat"] = "* * * * *"
    edited.write_text(json.dumps(plan))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(saved.read_text()), "provider_version": "0.0.1"}))
    assert manage.main(["apply", "--plan", str(edited), "--digest", approved]) == 1
    assert "the plan's content is not the one approved" in capsys.readouterr().err
    assert manage.main(["apply", "--plan", str(other), "--digest", approved]) == 1
    assert "saved by analytics_provider '0.0.1', this is" in capsys.readouterr().err
    assert writes(analytics_emulator) == []
    assert manage.main(["apply", str(files), "--plan", str(saved), "--digest", approved]) == 2  # the plan holds it
    assert manage.main(["apply", "--plan", str(tmp_path / "nowhere.json"), "--digest", approved]) == 2
