"""Deliveries as code through Airflow: the example applies its files (a dry run first), a second run
writes nothing, and a DAG whose files are wrong does not import, naming the file and line."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from analytics_provider.testing.airflow_db import parsed_dags

from .conftest import dag_bag_of, dag_test

WRITES = ("create_data_schedule", "update_data_schedule", "delete_data_schedule", "create_data_alert",
          "update_data_alert", "delete_data_alert")


def results(dag_run: Any) -> dict[str, Any]:
    return {ti.task_id: ti.xcom_pull(task_ids=ti.task_id) for ti in dag_run.get_task_instances()}


def test_the_example_applies_its_files_once_and_sends_the_placeholders_as_written(
    example_dag_bag, analytics_emulator, analytics_connection
) -> None:
    dag = example_dag_bag.get_dag("analytics_deliveries_on_deploy")
    first = dag_test(dag)
    assert first.state == "success"
    plan, applied = results(first)["plan_deliveries"], results(first)["apply_deliveries"]
    assert plan["dry_run"] is True and plan["applied"] == 0 and plan["counts"]["create"] == 2
    assert applied["applied"] == 2
    writes = [r for r in analytics_emulator.requests if r.operation in WRITES]
    assert [r.operation for r in writes] == ["create_data_schedule", "create_data_alert"]  # none by the dry run
    assert writes[0].json["data_schedule"]["dest"]["title"] == "Weekly sales {{$today}}"
    assert writes[1].json["data_alert"]["dest"]["title"] == "Revenue alert {{$today}}"

    analytics_emulator.clear_requests()
    second = dag_test(dag)
    assert second.state == "success"
    assert [r for r in analytics_emulator.requests if r.operation in WRITES] == []
    assert all(sum(r["counts"].values()) == 0 for r in results(second).values())


def delivery_file(folder: Path, name: str, text: str) -> Path:
    """``folder/deliveries/name`` holding ``text`` (dedented); the folder ``deliveries``."""
    (folder / "deliveries").mkdir(exist_ok=True)
    (folder / "deliveries" / name).write_text(textwrap.dedent(text))
    return folder / "deliveries"


def one_schedule(folder: Path, repeat: str) -> None:
    """``folder/deliveries/sales.yml``: the weekly-sales schedule, sent on ``repeat``."""
    delivery_file(folder, "sales.yml", f"""\
        schedules:
          - key: weekly-sales
            dashboard: 1
            repeat: "{repeat}"
            dest: {{type: EmailDest, recipients: [ann@example.com]}}
        """)


def test_a_dag_whose_delivery_files_are_wrong_does_not_import(tmp_path: Path, airflow_db: None) -> None:
    one_schedule(tmp_path, "0 8 * * 8")
    (tmp_path / "deliveries_dag.py").write_text(textwrap.dedent("""\
        from airflow.providers.common.compat.sdk import DAG
        from analytics_provider.operators import AnalyticsApplyDeliveriesOperator

        with DAG("deliveries_dag", schedule=None):
            AnalyticsApplyDeliveriesOperator(task_id="apply", path="deliveries")
        """))
    bag = parsed_dags(tmp_path)
    (error,) = bag.import_errors.values()
    where = tmp_path / "deliveries" / "sales.yml"
    assert (f"apply: 1 finding(s) in the delivery files (nothing was written):\n{where}:4:13: DL120 repeat "
            "'0 8 * * 8' is not a crontab expression: its day of week field '8' is out of range") in error


def test_the_operator_with_path_takes_the_scopes_apply_lock(tmp_path: Path, airflow_db: None, analytics_emulator,
                                                            analytics_connection) -> None:
    """Second attack on issue 44: with ``path=`` the operator took no lock, so it wrote while a reviewed
    plan of its scope was being applied. It applies as a saved plan is, under the scope's lock in
    ``plan_storage``: held by a running apply (another host, taken just now), the task fails having
    written nothing, and the lock stays its holder's."""
    import json
    import socket
    from datetime import datetime, timezone

    storage = tmp_path / "plans"
    storage.mkdir()
    lock = storage / "lock-deliveries-scope-sales.json"
    lock.write_text(json.dumps({"format": "analytics_provider apply lock 1", "what": "deliveries",
                                "scope": "scope sales", "by": "task apply of a reviewed run", "host": "worker-7",
                                "pid": 4242, "started_at": datetime.now(timezone.utc).isoformat(), "token": "t"}))
    assert socket.gethostname() != "worker-7"
    one_schedule(tmp_path, "0 8 * * 1")
    (tmp_path / "locked_dag.py").write_text(textwrap.dedent(f"""\
        from airflow.providers.common.compat.sdk import DAG
        from analytics_provider.operators import AnalyticsApplyDeliveriesOperator

        with DAG("locked_deliveries", schedule=None):
            AnalyticsApplyDeliveriesOperator(task_id="apply", path="deliveries", scope="sales",
                                             plan_storage={str(storage)!r}, retries=0)
        """))
    bag = dag_bag_of(tmp_path)
    assert not bag.import_errors, bag.import_errors
    analytics_emulator.clear_requests()
    run = dag_test(bag.get_dag("locked_deliveries"))
    assert run.state == "failed"
    assert [r for r in analytics_emulator.requests if r.operation in WRITES] == []
    assert json.loads(lock.read_text())["by"] == "task apply of a reviewed run"
