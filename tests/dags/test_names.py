"""A DAG that names its dashboard, widget and filters runs through Airflow; wrong names fail before any job."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from .conftest import set_waits

DAG_FILE = Path(__file__).resolve().parent / "named_dags" / "named_export.py"
NAMES = {"dashboard": "Sales overview", "widget": "Revenue by region and month", "region": "EU"}
MODES = pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])


@pytest.fixture(scope="module")
def named_bag(airflow_db: None) -> Any:
    from .conftest import dag_bag_of

    return dag_bag_of(DAG_FILE)


def run(bag: Any, tmp_path: Path, deferrable: bool, **conf: Any) -> tuple[Any, Path]:
    dag = bag.get_dag("named_export")
    set_waits(dag, deferrable)
    destination = tmp_path / "export.csv"
    conf = {**NAMES, "destination": str(destination), **conf}  # every param: a run's conf stays in the DAG's
    return dag.test(run_conf=conf), destination


def task_result(dag_run: Any, task_id: str) -> Any:
    (ti,) = [ti for ti in dag_run.get_task_instances() if ti.task_id == task_id]
    return ti.xcom_pull(task_ids=task_id)


@MODES
def test_names_are_resolved_to_ids_before_the_jobs(named_bag, analytics_emulator, analytics_connection, tmp_path,
                                                   deferrable) -> None:
    dag_run, destination = run(named_bag, tmp_path, deferrable)
    assert dag_run.state == "success"
    rows = list(csv.DictReader(destination.open(encoding="utf-8")))
    assert rows and {row["region"] for row in rows} == {"EU"}  # the filter by label reached the export
    submitted = {r.operation: r.json for r in analytics_emulator.requests if r.operation and r.operation.startswith(
        ("submit_widget_export", "preload_dashboard"))}
    assert [r.path for r in analytics_emulator.requests if r.operation == "submit_widget_export"] == [
        "/api/v2/dashboard_widgets/101/submit_export"]
    assert submitted["submit_widget_export"]["dashboard_filter_conditions"] == [
        {"dynamic_filter_id": 1, "condition": {"operator": "is", "values": ["EU"]}},
        {"dynamic_filter_id": 2, "condition": {"operator": "is_not", "values": ["Phone"]}},
    ]
    assert [r.path for r in analytics_emulator.requests if r.operation == "preload_dashboard"] == [
        "/api/v2/dashboards/1/submit_preload"]
    export = task_result(dag_run, "export")
    assert export["dashboard_id"] == 1 and export["widget_id"] == "101" and export["path"] == str(destination)
    assert task_result(dag_run, "preload")["dashboard_id"] == 1
    lookups = [r.operation for r in analytics_emulator.requests].count("list_dashboards_metadata")
    assert lookups == 2  # once per task try: the preload's and the export's


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"dashboard": "Sales overveiw"}, "no dashboard is named 'Sales overveiw'; closest: 'Sales overview' (id 1)"),
        ({"dashboard": "Sales overview", "twin": True}, "2 dashboards are named 'Sales overview': 'Sales overview' "
                                                         "(id 1, http"),
        ({"region": "EMEA"}, "Region has no option 'EMEA'; options: EU, US, APAC, LATAM"),
        ({"widget": "Revenue"}, "no widget is named 'Revenue' on dashboard 'Sales overview' (id 1); there are: "
                                   "'Revenue by region and month' (id 101); 'Orders by channel' (id 102)"),
        ({"dashboard": "1", "titles": ["1"]}, "dashboard '1' may mean the one titled so, '1' (id 1000), or the one "
                                              "whose id it is, 'Sales overview' (id 1)"),
    ],
    ids=["misspelt", "ambiguous", "outside-the-options", "no-such-widget", "digits-title-and-id"],
)
def test_a_wrong_name_fails_before_any_job(named_bag, analytics_emulator, analytics_connection, tmp_path, capfd,
                                           conf, message) -> None:
    if conf.pop("twin", False):
        analytics_emulator.add_dashboards(["Sales overview"])
    analytics_emulator.add_dashboards(conf.pop("titles", []))
    dag_run, destination = run(named_bag, tmp_path, deferrable=False, **conf)
    assert dag_run.state == "failed"
    log = capfd.readouterr()
    assert message in log.out + log.err
    submitted = [r.operation for r in analytics_emulator.requests if r.method == "POST"]
    if "widget" in conf:  # the preload names only the dashboard, and runs
        assert submitted == ["preload_dashboard"]
    else:
        assert submitted == [] and analytics_emulator.jobs == []  # nothing was submitted
    assert not destination.exists()


def test_a_title_of_digits_is_a_title_through_a_template(named_bag, analytics_emulator, analytics_connection,
                                                         tmp_path) -> None:
    (board,) = analytics_emulator.add_dashboards(["2025"])  # a copy of "Sales overview": its widget and filters
    dag_run, destination = run(named_bag, tmp_path, deferrable=False, dashboard="2025")
    assert dag_run.state == "success" and destination.exists()
    assert task_result(dag_run, "export")["dashboard_id"] == board
    assert task_result(dag_run, "preload")["dashboard_id"] == board
