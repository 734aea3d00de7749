"""The dbt hand-off and the revenue check example DAGs, through Airflow against the emulator."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from .test_example_dags import assert_waits_ran_where_asked, run_dag, task_states

MONTH = "2025-03"  # the emulator's orders are by month: the revenue check runs on one


def revenue_conf(tmp_path: Path, warehouse: Path) -> dict[str, Any]:
    return {"date_field": "orders.month", "day": MONTH, "warehouse_db": str(warehouse), "export_dir": str(tmp_path)}


def warehouse_from(emulator: Any, path: Path, *, off_by: float = 0.0) -> Path:
    """A warehouse holding the orders the emulator's data set models (its seeded orders table)."""
    table = emulator.world.state.tables["101"]
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE orders ({', '.join(table.columns)})")
        db.executemany(f"INSERT INTO orders VALUES ({', '.join('?' * len(table.columns))})", table.rows)
        if off_by:
            db.execute("UPDATE orders SET revenue = revenue + ? WHERE rowid = (SELECT MIN(rowid) FROM orders "
                       "WHERE month = ?)", (off_by, MONTH))
    return path


def month_revenue(emulator: Any) -> dict[str, float]:
    table = emulator.world.state.tables["101"]
    month, region, revenue = (table.columns.index(c) for c in ("month", "region", "revenue"))
    by_region: dict[str, float] = {}
    for row in table.rows:
        if row[month] == MONTH:
            by_region[row[region]] = by_region.get(row[region], 0.0) + row[revenue]
    return by_region


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_revenue_check_passes_when_the_figures_agree(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path, capfd, deferrable
):
    warehouse = warehouse_from(analytics_emulator, tmp_path / "warehouse.sqlite")
    dag_run = run_dag(example_dag_bag, "analytics_revenue_check", deferrable, revenue_conf(tmp_path, warehouse))
    assert dag_run.state == "success", task_states(dag_run)
    expected = month_revenue(analytics_emulator)
    (by_region,) = tmp_path.rglob("revenue-by-region.csv")
    assert by_region.parent.name == MONTH
    header, *rows = list(csv.reader(by_region.read_text().splitlines()))
    assert header == ["region", "revenue"]
    assert {r[0]: float(r[1]) for r in rows} == pytest.approx(expected)
    assert [float(r[1]) for r in rows] == sorted((float(r[1]) for r in rows), reverse=True)  # ordered as asked
    jobs = [j for j in analytics_emulator.jobs if j.operation == "submit_data_set_query"]
    assert len(jobs) == 2 and all(j.params["query"]["filters"][0]["values"] == [MONTH] for j in jobs)
    output = capfd.readouterr()
    assert f"revenue matches: {sum(expected.values()):.2f}" in output.out + output.err
    assert_waits_ran_where_asked(dag_run, deferrable, ["service_revenue", "revenue_by_region"])


def test_revenue_check_fails_naming_both_figures_when_they_differ(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path, capfd
):
    warehouse = warehouse_from(analytics_emulator, tmp_path / "warehouse.sqlite", off_by=12.5)
    dag_run = run_dag(example_dag_bag, "analytics_revenue_check", True, revenue_conf(tmp_path, warehouse))
    assert dag_run.state == "failed"
    assert task_states(dag_run)["check"] == "failed"
    service = sum(month_revenue(analytics_emulator).values())
    log = capfd.readouterr()
    assert f"revenue differs: the service says {service:.2f}, the warehouse {service + 12.5:.2f}" in log.out + log.err


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_dbt_post_deploy_uploads_a_real_manifest_then_publishes_and_refreshes(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path, capfd, deferrable
):
    from dbt_artifacts_parser.parser import parse_manifest

    dag_run = run_dag(example_dag_bag, "analytics_dbt_post_deploy", deferrable, {"dbt_project_dir": str(tmp_path)})
    assert dag_run.state == "success", task_states(dag_run)
    manifest = tmp_path / "target" / "manifest.json"
    parsed = parse_manifest(json.loads(manifest.read_text()))  # what dbt itself writes: schema v12
    assert type(parsed).__name__ == "ManifestV12" and list(parsed.nodes) == ["model.jaffle_shop.orders"]
    kinds = [j.operation for j in sorted(analytics_emulator.jobs, key=lambda j: j.id)]
    assert kinds == [
        "upload_dbt_manifests",
        "publish_aml_project",
        "bust_data_source_cache",
        # Sales overview, on the orders model dbt built, and Regional sales, on a query model built on it
        "preload_dashboard", "preload_dashboard",
    ]
    refreshed = [(j.operation, j.params.get("id")) for j in analytics_emulator.jobs if j.operation in kinds[2:]]
    assert refreshed == [("bust_data_source_cache", 1), ("preload_dashboard", 1), ("preload_dashboard", 4)]
    upload = analytics_emulator.jobs[0]
    assert upload.params == {"data_source_id": 1, "files": [["manifest.json", manifest.stat().st_size]]}
    output = capfd.readouterr()
    deferring = ["upload_dbt_manifest", "publish_aml_project", "refresh_what_dbt_built"]
    assert_waits_ran_where_asked(dag_run, deferrable, deferring)
    assert analytics_emulator.api_key not in output.out + output.err


def test_dbt_post_deploy_stops_at_a_failed_sync_with_the_services_message(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path, capfd
):
    analytics_emulator.fail_next_job("upload_dbt_manifests", "Dbt::ManifestParseError: unexpected end of input")
    dag_run = run_dag(example_dag_bag, "analytics_dbt_post_deploy", True, {"dbt_project_dir": str(tmp_path)})
    states = task_states(dag_run)
    assert dag_run.state == "failed" and states["upload_dbt_manifest"] == "failed"
    assert [j.operation for j in analytics_emulator.jobs] == ["upload_dbt_manifests"]  # nothing published
    log = capfd.readouterr()
    assert "last error: Dbt::ManifestParseError: unexpected end of input" in log.out + log.err
