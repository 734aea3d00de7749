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


def run_without_retry(bag: Any, conf: dict[str, Any]) -> Any:
    """One try (the DAG's task retries once): the failed state of the first try."""
    task = bag.get_dag("impact_refresh").get_task("refresh")
    task.retries = 0
    try:
        return run(bag, False, conf)
    finally:
        task.retries = 1


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
def test_campaigns_preload_the_dashboards_that_read_it_only(impact_bag, analytics_emulator, analytics_connection,
                                                            deferrable) -> None:
    dag_run = run(impact_bag, deferrable, {"tables": ["marketing.campaigns"]})
    assert dag_run.state == "success", task_states(dag_run)
    assert jobs_by_kind(analytics_emulator) == {"bust_data_source_cache": [1], "preload_dashboard": [2, 5]}
    result = result_of(dag_run)
    assert [d["title"] for d in result["dashboards"]] == ["Marketing performance", "Campaign ROI"]
    assert [(j["kind"], j["id"], j["status"]) for j in result["jobs"]] == [
        ("bust", 1, "success"), ("preload", 2, "success"), ("preload", 5, "success")]
    assert set(result) == {"tables", "unmatched_tables", "unchecked_tables", "data_sources", "data_models",
                           "data_sets", "dashboards", "notes", "dry_run", "jobs", "job_counts"}
    assert result["notes"] == [] and result["unchecked_tables"] == []
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
                                      "dry_run": True, "unmatched_tables": "warn"})
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
                                       "results": results, "elapsed_time": 2.0, "args": {"which": "build"}}))
    manifest.write_text(json.dumps({"metadata": {"adapter_type": "postgres"}, "nodes": nodes, "sources": {}}))
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
    assert dbt_result["notes"] == [  # the XCom says what could not be checked
        'data source 1: none of its models names a database, so the database of "analytics"."marketing"."campaigns" '
        "could not be checked: matched on schema and table"]
    for kind in ("data_sources", "data_models", "data_sets"):
        assert [i["id"] for i in dbt_result[kind]] == [i["id"] for i in tables_result[kind]]
    assert [(d["id"], d["title"]) for d in dbt_result["dashboards"]] == [
        (d["id"], d["title"]) for d in tables_result["dashboards"]] == [(2, "Marketing performance"),
                                                                          (5, "Campaign ROI")]


def write_dev_run(folder: Path) -> Path:
    """The run_results.json of ``dbt build --target dev``: relations in a developer's schemas, which no model reads."""
    results = [{"unique_id": f"model.shop.{table}", "status": "success", "relation_name": relation}
               for table, relation in (("orders", '"analytics"."dbt_alice"."orders"'),
                                       ("campaigns", '"analytics"."dbt_alice_marketing"."campaigns"'))]
    run_results = folder / "run_results.json"
    run_results.write_text(json.dumps({"metadata": {"dbt_schema_version":
                                                    "https://schemas.getdbt.com/dbt/run-results/v6.json"},
                                       "results": results, "args": {"which": "build"}}))
    return run_results


def test_a_dbt_run_whose_relations_no_model_reads_fails_naming_the_closest(impact_bag, analytics_emulator,
                                                                           analytics_connection, tmp_path,
                                                                           capfd) -> None:
    dag_run = run_without_retry(impact_bag, {"run_results": str(write_dev_run(tmp_path))})
    assert dag_run.state == "failed"
    assert analytics_emulator.jobs == []
    assert ('refresh: nothing to refresh: no data model reads any of the 2 table(s): "analytics"."dbt_alice".'
            '"orders" (closest: public.orders); "analytics"."dbt_alice_marketing"."campaigns" (closest: '
            "marketing.campaigns) (from dbt_run_results; a dbt target or warehouse other than the one the data "
            "models read?") in capfd.readouterr().out


def test_with_unmatched_tables_warn_a_run_that_matches_nothing_says_so(impact_bag, analytics_emulator,
                                                                       analytics_connection, tmp_path, capfd) -> None:
    dag_run = run(impact_bag, False, {"run_results": str(write_dev_run(tmp_path)), "unmatched_tables": "warn"})
    assert dag_run.state == "success", task_states(dag_run)
    result = result_of(dag_run)
    assert (result["jobs"], result["job_counts"]) == ([], {"succeeded": 0, "failed": 0, "blocked": 0})
    why = "no data model reads any of the tables (unmatched_tables='warn')"
    assert result["nothing_refreshed"] == why
    log = capfd.readouterr().out
    assert f"Nothing to refresh: {why}" in log
    assert f"Refreshed 0 data source(s) and 0 dashboard(s) (nothing to refresh: {why})" in log


def test_an_empty_list_of_tables_is_refused(impact_bag, analytics_emulator, analytics_connection, capfd) -> None:
    dag_run = run_without_retry(impact_bag, {"tables": []})
    assert dag_run.state == "failed"
    assert [r for r in analytics_emulator.requests if r.origin == "api"] == []
    assert ("refresh: tables must be a non-empty list of tables, dbt_run_results (with dbt_manifest for dbt before "
            "1.7), or tables_from_assets=True (nothing would be refreshed); got []") in capfd.readouterr().out


def test_a_failed_preload_does_not_stop_the_others_and_the_task_names_it(impact_bag, analytics_emulator,
                                                                         analytics_connection, capfd) -> None:
    analytics_emulator.fail_next_job("preload_dashboard", last_error_log="warehouse timed out")
    dag_run = run_without_retry(impact_bag, {"tables": ["public.orders", "finance.revenue_targets",
                                                        "marketing.campaigns"],
                                             "dashboards_filter": {"exclude_titles": ["marketing*"]}})
    assert dag_run.state == "failed"
    preloads = {j.params["id"]: j.status for j in analytics_emulator.jobs if j.operation == "preload_dashboard"}
    # Marketing performance left out by the filter
    assert preloads == {1: "failure", 3: "success", 4: "success", 5: "success"}
    log = capfd.readouterr().out
    assert "refresh: 1 of 5 job(s) failed, 0 blocked (not submitted), 4 succeeded:" in log
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
        ("bust", "success"), ("preload", "success"), ("preload", "success"), ("preload", "success")]
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


@pytest.mark.parametrize(("table", "board", "why"), [
    ("public.orders", (4, "Regional sales"),
     "table public.orders -> model orders (1) -> query model orders_by_region (5) (built on it) -> data set "
     "regional_sales (4) -> report 'Revenue by region' (41) -> widget 'Revenue by region' (401) -> dashboard "
     "'Regional sales' (4)"),
    ("marketing.campaigns", (5, "Campaign ROI"),
     "table marketing.campaigns -> query model campaign_roi (6) (its SQL reads marketing.campaigns) -> data set "
     "campaign_roi (5) -> report 'Cost per conversion by channel' (51) -> widget 'Cost per conversion by "
     "channel' (501) -> dashboard 'Campaign ROI' (5)"),
], ids=["built-on-the-changed-model", "sql-reads-the-table"])
def test_a_dashboard_on_a_query_model_is_refreshed_with_its_why(impact_bag, analytics_emulator, analytics_connection,
                                                                capfd, table, board, why) -> None:
    dag_run = run(impact_bag, False, {"tables": [table], "dashboards_filter": {"include_titles": [board[1]]}})
    assert dag_run.state == "success", task_states(dag_run)
    assert jobs_by_kind(analytics_emulator) == {"bust_data_source_cache": [1], "preload_dashboard": [board[0]]}
    (found,) = result_of(dag_run)["dashboards"]
    assert (found["id"], found["title"], found["why"]) == (*board, why)
    assert f"preload dashboard '{board[1]}' ({board[0]}): {why}" in capfd.readouterr().out


def test_a_misspelt_table_fails_the_task_naming_the_closest_model_table(impact_bag, analytics_emulator,
                                                                        analytics_connection, capfd) -> None:
    dag_run = run_without_retry(impact_bag, {"tables": ["marketing.campaign", "finance.revenue_targets"]})
    assert dag_run.state == "failed"
    assert analytics_emulator.jobs == []  # nothing refreshed: not even the table that was right
    log = capfd.readouterr().out
    assert "Table marketing.campaign: no data model reads it; closest model tables: marketing.campaigns" in log
    assert "table marketing.campaign: no data model reads it; closest model tables: marketing.campaigns" in log
    assert ("refresh: no data model reads marketing.campaign (closest: marketing.campaigns) (parameter tables; "
            "unmatched_tables='warn' refreshes the others and only logs these)") in log


def test_with_unmatched_tables_warn_a_misspelt_table_is_logged_and_in_the_result(
        impact_bag, analytics_emulator, analytics_connection) -> None:
    dag_run = run(impact_bag, False, {"tables": ["marketing.campaign", "finance.revenue_targets"],
                                      "unmatched_tables": "warn"})
    assert dag_run.state == "success", task_states(dag_run)
    assert result_of(dag_run)["unmatched_tables"] == [{"table": "marketing.campaign",
                                                       "closest": ["marketing.campaigns"]}]
    assert jobs_by_kind(analytics_emulator)["preload_dashboard"] == [3]


def test_a_failed_bust_leaves_its_dashboards_unpreloaded(impact_bag, analytics_emulator, analytics_connection,
                                                         capfd) -> None:
    analytics_emulator.fail_next_job("bust_data_source_cache", last_error_log="warehouse unreachable")
    dag_run = run_without_retry(impact_bag, {"tables": ["marketing.campaigns"]})
    assert dag_run.state == "failed"
    assert [(j.operation, j.params.get("id"), j.status) for j in analytics_emulator.jobs] == [
        ("bust_data_source_cache", 1, "failure")]  # no preload of a dashboard on a stale cache
    log = capfd.readouterr().out
    assert "refresh: 1 of 3 job(s) failed, 2 blocked (not submitted), 0 succeeded:" in log  # blocked: not failed
    assert "bust of data source 1: job" in log and "warehouse unreachable" in log
    assert ("preload of dashboard 2: not submitted: the cache bust of data source 1 failed, so preloading would "
            "cache stale rows (no asset event; a retry busts again, then preloads)") in log
    xcom = refresh_ti(dag_run).xcom_pull(task_ids="refresh", key="refresh_plan")
    assert [(j["kind"], j["id"], j["status"]) for j in ({"kind": k.split(":")[0], "id": k.split(":")[1], **v}
                                                        for k, v in xcom["book"].items())] == [("bust", "1", "failure")]
    assert xcom["plan"]["outcome"]["job_counts"] == {"succeeded": 0, "failed": 1, "blocked": 2}
    assert [(j["kind"], j["id"], j["status"]) for j in xcom["plan"]["outcome"]["jobs"]] == [
        ("bust", 1, "failure"), ("preload", 2, "blocked"), ("preload", 5, "blocked")]


@MODES
def test_a_retry_after_a_failed_bust_busts_again_then_preloads(impact_bag, analytics_emulator, analytics_connection,
                                                               deferrable) -> None:
    analytics_emulator.fail_next_job("bust_data_source_cache", last_error_log="warehouse unreachable")
    dag_run = run(impact_bag, deferrable, {"tables": ["marketing.campaigns"]})
    assert dag_run.state == "success", task_states(dag_run)
    assert refresh_ti(dag_run).try_number == 2
    order = [(j.operation, j.params.get("id"), j.status) for j in analytics_emulator.jobs]
    assert order[:2] == [("bust_data_source_cache", 1, "failure"), ("bust_data_source_cache", 1, "success")]
    assert sorted(order[2:]) == [("preload_dashboard", 2, "success"), ("preload_dashboard", 5, "success")]
