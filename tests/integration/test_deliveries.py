"""Deliveries as code against the emulator (real sockets): check at file:line, plan, apply, update,
prune only what the files manage, and the service's placeholders sent as written."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from analytics_provider import manage
from analytics_provider.deliveries.check import check, check_references
from analytics_provider.deliveries.files import load
from analytics_provider.deliveries.plan import plan_deliveries
from analytics_provider.deliveries.saved import apply_deliveries
from analytics_provider.hooks.analytics import AnalyticsHook

WRITES = ("create_data_schedule", "update_data_schedule", "delete_data_schedule", "create_data_alert",
          "update_data_alert", "delete_data_alert")
SALES = """\
schedules:
  - key: weekly-sales
    title: Weekly sales
    dashboard: 1
    repeat: "0 8 * * 1"
    dest:
      type: EmailDest
      title: "Weekly sales {{$today}}"
      recipients: [ann@example.com]
alerts:
  - key: revenue-watch
    widget: 101
    repeat: "0 9 * * *"
    dest:
      type: EmailDest
      recipients: [ann@example.com]
"""


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> AnalyticsHook:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def writes(emulator: Any) -> list[Any]:
    return [r for r in emulator.requests if r.operation in WRITES]


def sync(hook: AnalyticsHook, folder: Path, prune: bool = False) -> Any:
    declared, found = check(load(folder))
    assert found == []
    seen: dict[tuple[str, int], Any] = {}
    plan = plan_deliveries(hook, declared, scope="sales", prune=prune, seen=seen)
    apply_deliveries(hook, plan, seen, "apply", scope="sales", prune=prune)
    return plan


def test_check_names_each_finding_at_its_file_line_and_column(tmp_path, hook, capsys) -> None:
    write(tmp_path, "a.yml", """\
        schedules:
          - key: weekly-sales
            dashboard: 1
            repeat: "0 25 * * 1"
            dest:
              type: FaxDest
              recipients: [ann@example.com]
        alerts:
          - key: revenue-watch
            widget: 999
            repeat: "0 9 * * *"
            dest: {type: EmailDest, recipients: [ann@example.com, not-an-address]}
            treshold: 3
        """)
    write(tmp_path, "b.yaml", """\
        alerts:
          - key: revenue-watch
            widget: 101
            repeat: every day
            dest: {type: SlackDest}
        """)
    assert manage.main(["check", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    a, b = tmp_path / "a.yml", tmp_path / "b.yaml"
    assert out == [
        f"{a}:4:13: DL120 repeat '0 25 * * 1' is not a crontab expression: its hour field '25' is out of range "
        "or malformed",
        f"{a}:6:13: DL130 dest type 'FaxDest' is not one a data schedule sends to; the types: EmailDest, "
        "EmailSubscriptionDest, SftpDest, SlackDest, GsheetDest, Adls2Dest",
        f"{a}:12:59: DL132 'not-an-address' is not an e-mail address",
        f"{a}:13:5: DL111 unknown field 'treshold'; the fields of a data alert: key, title, widget, repeat, paused, "
        "filters, conditions, dest",
        f"{b}:2:10: DL112 key 'revenue-watch' is declared twice: at {a}:9 and here",  # both have other findings
        f"{b}:4:13: DL120 repeat 'every day' is not a crontab expression: 2 field(s); five are needed (minute hour "
        "day month weekday)",
        f"{b}:5:11: DL131 a SlackDest needs slack_channels",
    ]
    write(tmp_path, "a.yml", SALES.replace("widget: 101", "widget: 999"))
    (tmp_path / "b.yaml").unlink()
    assert manage.main(["check", str(tmp_path)]) == 0  # the files alone are right
    assert manage.main(["check", str(tmp_path), "--conn-id", "analytics_default"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"{a}:12:1: DL150 data alert 'revenue-watch': widget 999 does not exist on the service")


def test_a_key_declared_twice_and_a_file_that_is_not_yaml_are_findings(tmp_path) -> None:
    write(tmp_path, "a.yml", SALES)
    write(tmp_path, "b.yml", SALES.split("alerts:")[0])
    write(tmp_path, "c.yml", "schedules: [\n")
    declared, found = check(load(tmp_path))
    assert [d.key for d in declared] == ["weekly-sales", "revenue-watch"]
    assert [d.format() for d in found] == [
        f"{tmp_path / 'b.yml'}:2:10: DL112 key 'weekly-sales' is declared twice: at {tmp_path / 'a.yml'}:2 and here",
        f"{tmp_path / 'c.yml'}:2:1: DL100 not YAML: expected the node content, but found '<stream end>'",
    ]


def test_apply_creates_then_updates_what_changed_and_a_second_run_writes_nothing(tmp_path, hook,
                                                                                analytics_emulator) -> None:
    write(tmp_path, "sales.yml", SALES)
    before = {s["id"] for s in hook.list_data_schedules()}
    plan = sync(hook, tmp_path)
    assert plan.counts()["create"] == 2
    created = writes(analytics_emulator)
    assert [r.operation for r in created] == ["create_data_schedule", "create_data_alert"]
    sent = created[0].json["data_schedule"]
    assert sent["dest"]["title"] == "Weekly sales {{$today}}"  # the service's placeholder, as written
    assert sent["title"] == "Weekly sales [managed: sales/weekly-sales]"
    (schedule,) = [s for s in hook.list_data_schedules() if s["id"] not in before]
    assert schedule["dest"]["title"] == "Weekly sales {{$today}}" and schedule["schedule"]["repeat"] == "0 8 * * 1"

    analytics_emulator.clear_requests()
    assert sync(hook, tmp_path).is_empty and writes(analytics_emulator) == []

    write(tmp_path, "sales.yml", SALES.replace('"0 8 * * 1"', '"0 9 * * 1"'))
    plan = sync(hook, tmp_path)
    assert [(c.action, c.subject, c.target, c.before, c.after) for c in plan.changes] == [
        ("change", f"data schedule {schedule['id']}", "weekly-sales", "schedule.repeat '0 8 * * 1'",
         "schedule.repeat '0 9 * * 1'")]
    assert [r.operation for r in writes(analytics_emulator)] == ["update_data_schedule"]


def test_pruning_deletes_only_what_the_files_managed(tmp_path, hook, analytics_emulator) -> None:
    write(tmp_path, "sales.yml", SALES)
    sync(hook, tmp_path)
    def everything() -> set[tuple[str, int]]:
        return {("schedule", s["id"]) for s in hook.list_data_schedules()} | {
            ("alert", a["id"]) for a in hook.list_data_alerts()}

    before = everything()
    managed_alert = max(a["id"] for a in hook.list_data_alerts())
    write(tmp_path, "sales.yml", SALES.split("alerts:")[0])  # the alert is gone from the files

    analytics_emulator.clear_requests()
    kept = sync(hook, tmp_path)
    assert kept.is_empty and kept.left == [f"data alert {managed_alert} (revenue-watch)"]
    assert writes(analytics_emulator) == []

    pruned = sync(hook, tmp_path, prune=True)
    assert [(c.action, c.target) for c in pruned.changes] == [("remove", "revenue-watch")]
    assert [r.operation for r in writes(analytics_emulator)] == ["delete_data_alert"]
    # the seeded (hand-made) schedules and alerts, and the managed schedule, are all there
    assert before - everything() == {("alert", managed_alert)}


def test_references_are_checked_once_per_source(tmp_path, hook, analytics_emulator) -> None:
    write(tmp_path, "a.yml", SALES)
    write(tmp_path, "b.yml", SALES.replace("weekly-sales", "weekly-sales-2").replace("revenue-watch", "other"))
    declared, _ = check(load(tmp_path))
    analytics_emulator.clear_requests()
    assert check_references(declared, hook) == []
    assert sorted(r.operation for r in analytics_emulator.requests) == ["get_dashboard", "get_dashboard_widget"]


def test_manage_plans_and_applies_outside_airflow(tmp_path, hook, analytics_emulator, capsys) -> None:
    write(tmp_path, "sales.yml", SALES)
    # (Airflow 3.0 and 3.1 log "Connection Retrieved" to the standard output before)
    assert manage.main(["plan", str(tmp_path)]) == 0
    assert "\ndeliveries: 2 to create\n" in "\n" + capsys.readouterr().out
    assert writes(analytics_emulator) == []
    assert manage.main(["apply", str(tmp_path)]) == 0
    assert capsys.readouterr().out.endswith("applied 2 change(s)\n")
    assert manage.main(["apply", str(tmp_path), "--prune", "--scope", "sales"]) == 0
    out = capsys.readouterr().out  # adopted into the scope: their titles take it
    assert "title '[managed: revenue-watch]'  " in out and out.endswith("applied 2 change(s)\n")
    assert manage.main(["apply", str(tmp_path), "--prune", "--scope", "sales"]) == 0
    assert capsys.readouterr().out.endswith("deliveries: nothing to change\n")
    assert len(writes(analytics_emulator)) == 4
    assert manage.main(["apply"]) == 2  # usage
    assert manage.main(["check", str(tmp_path / "nowhere")]) == 2


def test_a_key_declared_twice_is_reported_even_when_an_object_has_other_findings(tmp_path) -> None:
    write(tmp_path, "a.yml", SALES.replace('"0 9 * * *"', '"0 25 * * *"'))  # the alert is wrong
    write(tmp_path, "b.yml", SALES.replace('"0 8 * * 1"', '"every monday"'))  # so is the schedule here
    _, found = check(load(tmp_path))
    a, b = tmp_path / "a.yml", tmp_path / "b.yml"
    assert [d.format() for d in found if d.code == "DL112"] == [
        f"{b}:2:10: DL112 key 'weekly-sales' is declared twice: at {a}:2 and here",
        f"{b}:11:10: DL112 key 'revenue-watch' is declared twice: at {a}:11 and here",
    ]
    assert sorted(d.code for d in found) == ["DL112", "DL112", "DL120", "DL120"]


def test_a_misspelt_dest_field_is_named_with_the_field_it_stands_for(tmp_path, capsys) -> None:
    write(tmp_path, "a.yml", """\
        schedules:
          - key: weekly-sales
            dashboard: 1
            repeat: "0 7 * * 1"
            dest:
              type: EmailDest
              recipient: [ann@example.com]
        """)
    assert manage.main(["check", str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path / 'a.yml'}:7:7: DL131 an EmailDest needs recipients; 'recipient' is not one of its fields "
        "(did you mean 'recipients'?)"]


def test_a_destination_value_the_service_would_refuse_is_a_finding_at_its_line(tmp_path, capsys) -> None:
    """What the service answers 422 for at apply (an attachment format it has not, an SFTP file format or
    separator) is found by ``check``, at the value, with the closest allowed one (the emulator refuses by
    the same rule: ``api.wire.destinations.dest_value_problems``)."""
    write(tmp_path, "a.yml", """\
        schedules:
          - key: weekly-sales
            dashboard: 1
            repeat: "0 7 * * 1"
            dest:
              type: EmailDest
              recipients: [ann@example.com]
              options:
                attachment_formats: [pdf, csvv]
          - key: sftp-drop
            dashboard: 1
            repeat: "0 7 * * 1"
            dest:
              type: SftpDest
              data_source_id: 1
              file_path: /drop/sales.csv
              format: xlxs
        """)
    assert manage.main(["check", str(tmp_path)]) == 1
    file = tmp_path / "a.yml"
    assert capsys.readouterr().out.splitlines() == [
        f"{file}:9:35: DL133 'csvv': dest.options.attachment_formats must be a subset of csv, xlsx, excel, pdf, "
        "png, excel_dashboard, csv_formatted_data (did you mean 'csv'?)",
        f"{file}:17:15: DL133 'xlxs': dest.format must be one of csv, xlsx (did you mean 'xlsx'?)"]


def test_a_misspelt_section_is_named_at_its_key_with_the_section_it_stands_for(tmp_path, capsys) -> None:
    write(tmp_path, "a.yml", """\
        alerts: []
        schedule:
          - key: weekly-sales
            dashboard: 1
        """)
    assert manage.main(["check", str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path / 'a.yml'}:2:1: DL101 unknown section 'schedule'; the sections: schedules, alerts "
        "(did you mean 'schedules'?)"]
