"""Access as code through Airflow: rows from a real SQLite database (a ``common.sql`` connection),
the service's emulator over real sockets; plans applied exactly, second runs write nothing."""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from .conftest import dag_bag_of, dag_test

DAG_FILE = Path(__file__).resolve().parent / "access_dags" / "access_sync.py"
WRITES = ("upsert_user_attribute_entries", "add_user_to_group", "remove_user_from_group", "create_group",
          "invite_users")
# the seeded users: maya (1, group Sales), lucas (2), priya (3), tom (4, Sales; own region EU), sofia (5,
# Operations; own department), jonas (6, Operations), aiko (7, Operations); emma (9) is deleted
REGION_ROWS = [
    ("maya.chen@example.com", "EU", "Sales"),
    ("lucas.meyer@example.com", "US", "Finance"),
    ("lucas.meyer@example.com", "APAC", None),
    ("priya.raman@example.com", "LATAM", "Sales"),
    ("TOM.OKAFOR@example.com", "EU", "Sales"),  # already holds EU: nothing to write
    ("nobody@example.org", "EU", None),  # not a user of the service
]


@pytest.fixture(scope="module")
def access_bag(airflow_db: None) -> Any:
    return dag_bag_of(DAG_FILE)


@pytest.fixture
def warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "warehouse.db"
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE_TEST", json.dumps({"conn_type": "sqlite", "host": str(path)}))
    fill(path, REGION_ROWS)
    return path


def fill(path: Path, rows: list[tuple[Any, ...]]) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE IF EXISTS user_access")
        db.execute("CREATE TABLE user_access (email TEXT, region TEXT, team TEXT)")
        db.executemany("INSERT INTO user_access VALUES (?, ?, ?)", rows)
    db.close()


def run(bag: Any, **settings: Any) -> Any:
    dag = bag.get_dag("access_sync")
    for task in dag.tasks:
        for name, value in {"is_dry_run": False, "delete_missing": False, "invite_role": None, **settings}.items():
            setattr(task, name, value)
    return dag_test(dag)


def results(dag_run: Any) -> dict[str, Any]:
    return {ti.task_id: ti.xcom_pull(task_ids=ti.task_id) for ti in dag_run.get_task_instances()}


def writes(emulator: Any) -> list[Any]:
    return [r for r in emulator.requests if r.operation in WRITES]


def written_entries(emulator: Any) -> list[dict[str, Any]]:
    return [e for r in emulator.requests if r.operation == "upsert_user_attribute_entries"
            for e in r.json["user_attribute_entries"]]


def region_of(hook: Any, user_id: int) -> list[str] | None:
    return hook.compute_user_attribute_values("User", user_id).get("region")


@pytest.fixture
def hook(analytics_connection: str) -> Any:
    from analytics_provider.hooks.analytics import AnalyticsHook

    return AnalyticsHook(analytics_connection)


def test_the_first_run_writes_exactly_its_plan_and_the_second_writes_nothing(
    access_bag, analytics_emulator, analytics_connection, warehouse, hook
) -> None:
    dag_run = run(access_bag)
    assert dag_run.state == "success"
    regions, teams = results(dag_run)["sync_regions"], results(dag_run)["sync_teams"]
    assert regions["counts"] == {"create": 0, "invite": 0, "add": 3, "change": 0, "remove": 0}
    assert [(c["action"], c["subject"], c["after"]) for c in regions["changes"]] == [
        ("add", "maya.chen@example.com (1)", "EU"), ("add", "lucas.meyer@example.com (2)", "APAC, US"),
        ("add", "priya.raman@example.com (3)", "LATAM")]
    assert regions["unknown_users"] == ["nobody@example.org"] and regions["applied"] == 3
    assert teams["counts"] == {"create": 1, "invite": 0, "add": 2, "change": 0, "remove": 0}
    assert teams["applied"] == 3
    # counted writes = planned changes: 3 entries in one upsert; 1 group created, 2 members added
    assert [e["subject_id"] for e in written_entries(analytics_emulator)] == [1, 2, 3]
    reads = [(r.operation, r.query["subject_id"]) for r in analytics_emulator.requests
             if r.operation in ("compute_user_attribute_values", "list_user_attribute_entries")]
    # one read a user to plan, and once more under its locks of each user it writes (the stale check)
    assert sorted(reads) == [("compute_user_attribute_values", [str(u)]) for u in (1, 1, 2, 2, 3, 3, 4)]
    assert [r.operation for r in writes(analytics_emulator)] == [
        "upsert_user_attribute_entries", "create_group", "add_user_to_group", "add_user_to_group"]
    assert region_of(hook, 1) == ["EU"] and region_of(hook, 2) == ["APAC", "US"]
    finance = next(g for g in hook.list_groups() if g["name"] == "Finance")
    assert finance["id"] in next(u for u in hook.list_users() if u["id"] == 2)["group_ids"]

    analytics_emulator.clear_requests()
    again = run(access_bag)
    assert again.state == "success"
    assert writes(analytics_emulator) == []
    assert all(sum(r["counts"].values()) == 0 and r["applied"] == 0 for r in results(again).values())


def test_a_dry_run_logs_and_returns_the_plan_and_writes_nothing(
    access_bag, analytics_emulator, analytics_connection, warehouse, capfd
) -> None:
    dag_run = run(access_bag, is_dry_run=True, delete_missing=True)
    assert dag_run.state == "success"
    assert writes(analytics_emulator) == []
    regions = results(dag_run)["sync_regions"]
    assert regions["dry_run"] is True and regions["applied"] == 0
    assert regions["counts"]["add"] == 3 and regions["counts"]["remove"] == 0  # tom's EU is in the rows
    log = capfd.readouterr()
    text = log.out + log.err
    assert "Plan (dry run: nothing is written)" in text
    assert re.search(r"\nadd +lucas\.meyer@example\.com \(2\) +region +APAC, US\n", text)
    assert "Not known to the service: nobody@example.org" in text


def test_delete_missing_off_keeps_entries_the_rows_lost_and_on_resets_them(
    access_bag, analytics_emulator, analytics_connection, warehouse, hook
) -> None:
    assert run(access_bag).state == "success"
    fill(warehouse, [("maya.chen@example.com", "EU", "Sales")])  # lucas, priya and tom left the table

    analytics_emulator.clear_requests()
    assert run(access_bag).state == "success"
    assert writes(analytics_emulator) == []
    assert region_of(hook, 2) == ["APAC", "US"] and region_of(hook, 3) == ["LATAM"] and region_of(hook, 4) == ["EU"]

    dag_run = run(access_bag, delete_missing=True)
    assert dag_run.state == "success"
    regions, teams = results(dag_run)["sync_regions"], results(dag_run)["sync_teams"]
    assert sorted((c["action"], c["subject"], c["after"]) for c in regions["changes"]) == [
        ("remove", "lucas.meyer@example.com (2)", "(inherit)"), ("remove", "priya.raman@example.com (3)", "(inherit)"),
        ("remove", "tom.okafor@example.com (4)", "(inherit)")]
    assert sorted(e["subject_id"] for e in written_entries(analytics_emulator)
                  if e["input_type"] == "inherit") == [2, 3, 4]
    assert region_of(hook, 2) is None
    assert region_of(hook, 4) is None  # tom's group Sales has no region
    # priya and tom out of Sales; maya stays; lucas out of Finance, its last member: the task manages
    # the groups it names (groups=), not only those the rows still name
    assert sorted((c["subject"], c["target"]) for c in teams["changes"]) == [
        ("lucas.meyer@example.com (2)", "Finance"), ("priya.raman@example.com (3)", "Sales"),
        ("tom.okafor@example.com (4)", "Sales")]
    members = {u["id"]: u["group_ids"] for u in hook.list_users()}
    assert 1 in members[1] and 1 not in members[3] and 1 not in members[4]
    assert not any(g["name"] == "Finance" and g["id"] in members[2] for g in hook.list_groups())
    # sofia's department and the Operations group were never managed here: untouched
    assert hook.compute_user_attribute_values("User", 5)["department"] == ["Marketing"]
    assert all(2 in members[u] for u in (5, 6, 7))


def test_unknown_users_are_reported_or_invited(access_bag, analytics_emulator, analytics_connection, warehouse,
                                               hook) -> None:
    dag_run = run(access_bag, invite_role="user")
    assert dag_run.state == "success"
    regions = results(dag_run)["sync_regions"]
    assert regions["counts"]["invite"] == 1 and regions["unknown_users"] == ["nobody@example.org"]
    invites = [r.json for r in analytics_emulator.requests if r.operation == "invite_users"]
    assert invites == [{"emails": ["nobody@example.org"], "role": "user"}]
    assert hook.is_email_used("nobody@example.org")
    # the next run sets the invited user's attribute, and invites nobody again
    analytics_emulator.clear_requests()
    dag_run = run(access_bag, invite_role="user")
    regions = results(dag_run)["sync_regions"]
    assert regions["unknown_users"] == [] and [c["action"] for c in regions["changes"]] == ["add"]
    assert [r.operation for r in writes(analytics_emulator)].count("invite_users") == 0


def test_a_failed_third_upsert_fails_the_task_with_what_was_applied_and_a_rerun_converges(
    access_bag, analytics_emulator, analytics_connection, warehouse, hook, capfd, monkeypatch
) -> None:
    from analytics_provider.api.call.retry import RetryPolicy
    from analytics_provider.hooks import client

    # the default policy (5 tries) with short waits: what follows the retries is under test, not their backoff
    monkeypatch.setattr(client, "RetryPolicy", functools.partial(RetryPolicy, initial_wait=0.01, max_wait=0.02))
    users = analytics_emulator.add_users(250)
    fill(warehouse, [(u["email"], f"R{u['id'] % 7}", None) for u in hook.list_users(ids=users) if u["id"] in users])
    analytics_emulator.inject("upsert_user_attribute_entries", status=500, retry_after=0, times=5, after=2)
    dag_run = run(access_bag)
    assert dag_run.state == "failed"
    text = "".join(capfd.readouterr())
    assert ("user attributes: 200 of 250 change(s) applied, then a write of 50 failed "
            "(500 InternalHolisticsError on PUT /user_attribute_entries/upsert") in text
    assert "0 not sent" in text and "Run the task again" in text
    upserts = [r for r in analytics_emulator.requests if r.operation == "upsert_user_attribute_entries"]
    assert [len(r.json["user_attribute_entries"]) for r in upserts] == [100, 100] + [50] * 5

    analytics_emulator.clear_requests()
    dag_run = run(access_bag)
    assert dag_run.state == "success"
    regions = results(dag_run)["sync_regions"]
    assert regions["counts"]["add"] == 50 and regions["applied"] == 50  # only what the failure left
    assert len(written_entries(analytics_emulator)) == 50
    assert all(region_of(hook, u) == [f"R{u % 7}"] for u in users[::25])


def test_the_example_syncs_the_warehouse_table_once(example_dag_bag, analytics_emulator, analytics_connection,
                                                    hook) -> None:
    dag = example_dag_bag.get_dag("analytics_access_sync")
    first = dag_test(dag)
    assert first.state == "success"
    regions, teams = results(first)["sync_regions"], results(first)["sync_teams"]
    assert (regions["counts"]["add"], regions["applied"]) == (3, 3)
    assert region_of(hook, 2) == ["LATAM", "US"] and region_of(hook, 3) == ["APAC"]
    assert teams["counts"]["create"] == 1 and teams["applied"] == 3  # Finance; lucas and priya join
    analytics_emulator.clear_requests()
    second = dag_test(dag)
    assert second.state == "success" and writes(analytics_emulator) == []


def test_an_empty_query_result_with_delete_missing_resets_nobody_without_consent(
    access_bag, analytics_emulator, analytics_connection, warehouse, hook, capfd
) -> None:
    assert run(access_bag).state == "success"
    fill(warehouse, [])  # the load failed and left the table empty
    analytics_emulator.clear_requests()
    dag_run = run(access_bag, delete_missing=True)
    assert dag_run.state == "failed"
    assert writes(analytics_emulator) == []
    assert region_of(hook, 1) == ["EU"] and region_of(hook, 2) == ["APAC", "US"]
    text = "".join(capfd.readouterr())
    assert ("sync_regions: user attributes: the input declares nothing of attributes region and the plan deletes 4: "
            "maya.chen@example.com (1): region, lucas.meyer@example.com (2): region") in text
    assert "If that is meant: allow_delete_all=True" in text
    dag_run = run(access_bag, delete_missing=True, allow_delete_all=True)
    assert results(dag_run)["sync_regions"]["applied"] == 4 and region_of(hook, 2) is None


def test_an_address_that_cannot_be_invited_does_not_block_the_other_writes(
    access_bag, analytics_emulator, analytics_connection, warehouse, hook, capfd
) -> None:
    fill(warehouse, [*REGION_ROWS, ("emma.laurent@example.com", "EU", None)])  # emma is a deleted user
    analytics_emulator.fail_next_job("invite_users", "mail server unavailable")
    dag_run = run(access_bag, invite_role="user")
    assert dag_run.state == "failed"
    # the entries of the users the service knows went ahead
    assert region_of(hook, 1) == ["EU"] and region_of(hook, 2) == ["APAC", "US"] and region_of(hook, 3) == ["LATAM"]
    invites = [r.json["emails"] for r in analytics_emulator.requests if r.operation == "invite_users"]
    assert invites == [["nobody@example.org"]]  # emma is never invited: her address is a deleted user's
    text = "".join(capfd.readouterr())
    assert ("sync_regions: user attributes: 3 of 4 change(s) applied; 1 not applied:\ninvite user for "
            "nobody@example.org: invitation job") in text
    assert "mail server unavailable (a rerun may apply it)" in text
    assert "emma.laurent@example.com (a deleted user: restore them first)" in text
