"""Refresh by impact through Airflow (``dag.test()``), on the worker and deferred, against the emulator.

What Airflow does differently between versions is tested elsewhere, on every Airflow: a retry's
task state in ``test_durable.py``, the dashboards' asset events in ``test_assets.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import dag_bag_of, dag_test, deferred_tasks, set_waits
from .test_example_dags import task_states

DAG_FILE = Path(__file__).resolve().parent / "impact_dags" / "impact_refresh.py"
MODES = pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])


@pytest.fixture(scope="module")
def impact_bag(airflow_db: None) -> Any:
    return dag_bag_of(DAG_FILE)


def run(bag: Any, deferrable: bool, conf: dict[str, Any]) -> Any:
    dag = bag.get_dag("impact_refresh")
    set_waits(dag, deferrable)
    return dag_test(dag, conf)


def refresh_ti(dag_run: Any) -> Any:
    (ti,) = [ti for ti in dag_run.get_task_instances() if ti.task_id == "refresh"]
    return ti


def jobs_by_kind(emulator: Any) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for job in emulator.jobs:
        found.setdefault(job.operation, []).append(job.params.get("id"))
    return found


def result_of(dag_run: Any) -> dict[str, Any]:
    return refresh_ti(dag_run).xcom_pull(task_ids="refresh", key="return_value")


@MODES
def test_campaigns_preload_marketing_performance_only(impact_bag, analytics_emulator, analytics_connection,
                                                      deferrable) -> None:
    dag_run = run(impact_bag, deferrable, {"tables": ["marketing.campaigns"]})
    assert dag_run.state == "success", task_states(dag_run)
    assert jobs_by_kind(analytics_emulator) == {"bust_data_source_cache": [1], "preload_dashboard": [2]}
    result = result_of(dag_run)
    assert [d["title"] for d in result["dashboards"]] == ["Marketing performance"]
    assert [(j["kind"], j["id"], j["status"]) for j in result["jobs"]] == [("bust", 1, "success"),
                                                                            ("preload", 2, "success")]
    assert set(result) == {"tables", "data_sources", "data_models", "data_sets", "dashboards", "dry_run", "jobs"}
    assert result["dry_run"] is False
    assert ("refresh" in deferred_tasks(dag_run)) == deferrable


def test_revenue_targets_preload_the_executive_summary(impact_bag, analytics_emulator, analytics_connection) -> None:
    dag_run = run(impact_bag, False, {"tables": ["finance.revenue_targets"]})
    assert dag_run.state == "success", task_states(dag_run)
    assert "Executive summary" in [d["title"] for d in result_of(dag_run)["dashboards"]]
    assert jobs_by_kind(analytics_emulator)["preload_dashboard"] == [3]


def test_a_dry_run_logs_the_plan_and_submits_nothing(impact_bag, analytics_emulator, analytics_connection,
                                                     capfd) -> None:
    dag_run = run(impact_bag, False, {"tables": ["marketing.campaigns", "finance.revenue_targets", "staging.x"],
                                      "dry_run": True})
    assert dag_run.state == "success", task_states(dag_run)
    assert analytics_emulator.jobs == []
    assert result_of(dag_run)["dry_run"] is True  # the XCom says so, not only its empty "jobs"
    assert [r.method for r in analytics_emulator.requests if r.origin == "api"] == ["GET"] * len(
        [r for r in analytics_emulator.requests if r.origin == "api"])
    log = capfd.readouterr().out
    assert "Refresh plan (dry run: nothing is submitted)" in log
    assert "preload dashboard 'Marketing performance' (2): table marketing.campaigns -> model campaigns (3)" in log
    assert "table staging.x: no data model reads it" in log
    assert analytics_emulator.api_key not in log


def write_dbt_run(folder: Path, built: dict[str, str]) -> tuple[Path, Path]:
    """A run_results.json and manifest.json pair as dbt writes them: each model's status in the run."""
    nodes, results = {}, []
    for name, status in built.items():
        schema, table = {"campaigns": ("marketing", "campaigns"), "revenue_targets": ("finance", "revenue_targets"),
                         "orders": ("public", "orders")}[name]
        unique_id = f"model.shop.{name}"
        nodes[unique_id] = {"unique_id": unique_id, "resource_type": "model", "database": "analytics",
                            "schema": schema, "name": name, "alias": table, "config": {"materialized": "table"},
                            "relation_name": f'"analytics"."{schema}"."{table}"'}
        results.append({"unique_id": unique_id, "status": status, "timing": [], "thread_id": "Thread-1",
                        "execution_time": 0.4, "adapter_response": {}, "message": "SELECT 10", "failures": None})
        results.append({"unique_id": f"test.shop.not_null_{name}_id", "status": "pass"})
    nodes.update({f"test.shop.not_null_{n}_id": {"resource_type": "test", "config": {}} for n in built})
    run_results = folder / "run_results.json"
    manifest = folder / "manifest.json"
    run_results.write_text(json.dumps({"metadata": {"dbt_schema_version":
                                                    "https://schemas.getdbt.com/dbt/run-results/v6.json"},
                                       "results": results, "elapsed_time": 2.0, "args": {}}))
    manifest.write_text(json.dumps({"metadata": {}, "nodes": nodes, "sources": {}}))
    return run_results, manifest


def test_a_dbt_run_leads_to_the_plan_of_the_tables_it_built(impact_bag, analytics_emulator, analytics_connection,
                                                            tmp_path) -> None:
    run_results, manifest = write_dbt_run(tmp_path, {"campaigns": "success", "orders": "error"})
    by_dbt = run(impact_bag, False, {"run_results": str(run_results), "manifest": str(manifest)})
    assert by_dbt.state == "success", task_states(by_dbt)
    dbt_result = result_of(by_dbt)
    analytics_emulator.reset()
    by_tables = run(impact_bag, False, {"tables": ["marketing.campaigns"]})
    tables_result = result_of(by_tables)
    assert dbt_result["tables"] == ['"analytics"."marketing"."campaigns"']  # orders failed: not refreshed
    for kind in ("data_sources", "data_models", "data_sets"):
        assert [i["id"] for i in dbt_result[kind]] == [i["id"] for i in tables_result[kind]]
    assert [(d["id"], d["title"]) for d in dbt_result["dashboards"]] == [
        (d["id"], d["title"]) for d in tables_result["dashboards"]] == [(2, "Marketing performance")]


def test_a_failed_preload_does_not_stop_the_others_and_the_task_names_it(impact_bag, analytics_emulator,
                                                                         analytics_connection, capfd) -> None:
    impact_bag.get_dag("impact_refresh").get_task("refresh").retries = 0
    try:
        analytics_emulator.fail_next_job("preload_dashboard", last_error_log="warehouse timed out")
        dag_run = run(impact_bag, False, {"tables": ["public.orders", "finance.revenue_targets", "marketing.campaigns"],
                                          "dashboards_filter": {"exclude_titles": ["marketing*"]}})
    finally:
        impact_bag.get_dag("impact_refresh").get_task("refresh").retries = 1
    assert dag_run.state == "failed"
    preloads = {j.params["id"]: j.status for j in analytics_emulator.jobs if j.operation == "preload_dashboard"}
    assert preloads == {1: "failure", 3: "success"}  # Marketing performance left out by the filter
    log = capfd.readouterr().out
    assert "refresh: 1 of 3 job(s) failed (2 succeeded):" in log
    assert "preload of dashboard 1: job" in log and "warehouse timed out" in log
    assert "left out by dashboards_filter: dashboard 'Marketing performance' (2)" in log


def test_bad_input_fails_before_any_request(impact_bag, analytics_emulator, analytics_connection) -> None:
    dag_run = run(impact_bag, False, {"tables": "marketing.campaigns"})
    assert dag_run.state == "failed"
    assert [r for r in analytics_emulator.requests if r.origin == "api"] == []


def test_where_list_jobs_is_refused_each_job_is_read_alone(impact_bag, analytics_emulator,
                                                            analytics_connection) -> None:
    analytics_emulator.inject("list_jobs", status=404, times=100)
    dag_run = run(impact_bag, False, {"tables": ["public.orders", "finance.revenue_targets"]})
    assert dag_run.state == "success", task_states(dag_run)
    assert [(j["kind"], j["status"]) for j in result_of(dag_run)["jobs"]] == [
        ("bust", "success"), ("preload", "success"), ("preload", "success")]
    assert "get_job" in [r.operation for r in analytics_emulator.requests]


def test_jobs_still_pending_at_the_timeout_fail_the_task_naming_them(impact_bag, analytics_emulator,
                                                                     analytics_connection, capfd) -> None:
    task = impact_bag.get_dag("impact_refresh").get_task("refresh")
    analytics_emulator.job_duration = 3600
    task.retries, task.timeout = 0, 1.0
    try:
        dag_run = run(impact_bag, False, {"tables": ["marketing.campaigns"]})
    finally:
        task.retries, task.timeout = 1, 3600.0
    assert dag_run.state == "failed"
    assert [j.operation for j in analytics_emulator.jobs] == ["bust_data_source_cache"]  # no preload before it ends
    log = capfd.readouterr().out
    assert "AnalyticsJobTimeout: refresh: 1 job(s) still pending after 1 s: bust:1 (job" in log
