"""Each example DAG runs green through Airflow against the emulator, deferrable and not.

Runs are made as a user's manual trigger makes them in Airflow 3: with no logical date (so no
``ds``, ``ts``, ``data_interval_*`` in the template context); the scheduled DAG also runs as
the scheduler runs it, with one. Deferrals are read from Airflow's records of the run.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from .conftest import AIRFLOW_VERSION, EXAMPLE_DAGS, dag_test, deferred_tasks, set_waits

DIAGNOSTIC = {
    "category": "error",
    "code": 1001,
    "message": "Unexpected token '}'",
    "file_path": "models/orders.model.aml",
    "start": 0,
    "end": 1,
}


def run_dag(bag: Any, dag_id: str, deferrable: bool, conf: dict[str, Any], logical_date: Any = None) -> Any:
    """One run through ``dag.test()``; with no logical date by default, as a manual trigger
    (Airflow 2.11 gives every run one)."""
    dag = bag.get_dag(dag_id)
    set_waits(dag, deferrable)
    dag_run = dag_test(dag, conf, logical_date)
    if AIRFLOW_VERSION >= (3, 0) or logical_date is not None:
        assert dag_run.logical_date == logical_date
    return dag_run


def assert_waits_ran_where_asked(dag_run: Any, deferrable: bool, deferring_tasks: list[str]) -> None:
    deferred = sorted(set(deferred_tasks(dag_run)))  # a task that deferred twice (a refresh: its busts, then
    assert deferred == (sorted(deferring_tasks) if deferrable else [])  # its preloads) is named once


def run_day(dag_run: Any) -> str:
    """The day the examples file their exports under: ``{{ dag_run.run_after | default(logical_date) | ds }}``
    (Airflow 2.11's runs have no ``run_after``, and every one a logical date)."""
    return (getattr(dag_run, "run_after", None) or dag_run.logical_date).strftime("%Y-%m-%d")


def task_states(dag_run: Any) -> dict[str, str]:
    return {
        ti.task_id + (f"[{ti.map_index}]" if ti.map_index >= 0 else ""): ti.state for ti in dag_run.get_task_instances()
    }


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_after_warehouse_load(example_dag_bag, analytics_emulator, analytics_connection, tmp_path, capfd, deferrable):
    dag_run = run_dag(example_dag_bag, "analytics_after_warehouse_load", deferrable, {"export_dir": str(tmp_path)})
    assert dag_run.state == "success", task_states(dag_run)
    (csv,) = tmp_path.rglob("*.csv")
    assert csv == tmp_path / run_day(dag_run) / "revenue-by-region-and-month.csv"
    lines = csv.read_text().splitlines()
    assert len(lines) > 1 and "," in lines[0]
    kinds = [j.operation for j in analytics_emulator.jobs]
    assert kinds == ["bust_data_source_cache", "preload_dashboard", "preload_dashboard", "submit_widget_export"]
    output = capfd.readouterr()
    assert_waits_ran_where_asked(dag_run, deferrable, ["refresh_impacted", "export_widget"])
    # the table's data source, Sales overview and Regional sales (on a query model built on orders)
    assert [j.params["id"] for j in analytics_emulator.jobs[:3]] == [1, 1, 4]
    assert analytics_emulator.api_key not in output.out + output.err


SCHEDULED = {"manual": None, "scheduled": datetime(2026, 3, 2, 6, 0, tzinfo=timezone.utc)}


@pytest.mark.parametrize(
    ("deferrable", "logical_date"),
    [(False, SCHEDULED["manual"]), (True, SCHEDULED["manual"]), (True, SCHEDULED["scheduled"])],
    ids=["worker-manual", "deferred-manual", "deferred-scheduled"],
)
def test_scheduled_exports(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path, capfd, deferrable, logical_date
):
    conf = {"export_root": f"file://{tmp_path}"}
    dag_run = run_dag(example_dag_bag, "analytics_scheduled_exports", deferrable, conf, logical_date)
    assert dag_run.state == "success", task_states(dag_run)
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    day = run_day(dag_run)
    assert day == (logical_date.strftime("%Y-%m-%d") if logical_date else run_day(dag_run))
    names = ("revenue-by-region", "orders-by-channel", "campaign-performance")
    assert files == sorted(f"{day}/{name}.{f}" for name in names for f in ("xlsx", "pdf"))
    assert all(p.read_bytes()[:4] in (b"PK\x03\x04", b"%PDF") for p in tmp_path.rglob("*.*"))
    output = capfd.readouterr()
    assert_waits_ran_where_asked(dag_run, deferrable, [f"export_widget[{i}]" for i in range(6)])
    assert analytics_emulator.api_key not in output.out + output.err


class MappedResults:
    """The mapped results as Airflow hands them to a task: reads past the end fail, and Airflow's
    api-server logs each such read as an error (``XCom not found ... offset=6``)."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items, self.reads_past_the_end = items, 0

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            return self.items[key]
        if key >= len(self.items):
            self.reads_past_the_end += 1
            raise IndexError(key)
        return self.items[key]

    def __len__(self) -> int:
        return len(self.items)


def test_the_scheduled_exports_report_reads_the_mapped_results_without_a_failing_read(example_dag_bag) -> None:
    report = example_dag_bag.get_dag("analytics_scheduled_exports").get_task("report")
    results = MappedResults([{"path": f"/x/{n}", "content_type": "text/csv", "bytes": n} for n in range(6)])
    assert report.python_callable(results) == [f"/x/{n}" for n in range(6)]
    assert results.reads_past_the_end == 0


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_post_deploy_publish(example_dag_bag, analytics_emulator, analytics_connection, capfd, deferrable):
    dag_run = run_dag(example_dag_bag, "analytics_post_deploy_publish", deferrable, {})
    assert dag_run.state == "success", task_states(dag_run)
    kinds = sorted(j.operation for j in analytics_emulator.jobs)
    assert kinds == ["execute_data_schedule", "preload_dashboard", "preload_dashboard", "publish_aml_project"]
    output = capfd.readouterr()
    deferring = ["publish_aml_project", "preload_key_dashboard[0]", "preload_key_dashboard[1]", "send_release_schedule"]
    assert_waits_ran_where_asked(dag_run, deferrable, deferring)
    assert analytics_emulator.api_key not in output.out + output.err


def test_failing_publish_fails_its_task_with_the_diagnostics_in_the_log(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path, capfd
):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "orders.model.aml").write_text("}\n")
    analytics_emulator.set_publish_diagnostics([DIAGNOSTIC])
    dag_run = run_dag(example_dag_bag, "analytics_post_deploy_publish", True, {"project_dir": str(tmp_path)})
    states = task_states(dag_run)
    assert dag_run.state == "failed"
    assert states["publish_aml_project"] == "failed"
    assert "success" not in {states[k] for k in states if k != "publish_aml_project"}
    log = capfd.readouterr()
    assert "models/orders.model.aml:1:1: error 1001: Unexpected token '}'" in log.out + log.err
    assert analytics_emulator.api_key not in log.out + log.err


TASK_TIME_MODULES = (
    "aiohttp", "requests", "tenacity", "openpyxl", "openlineage", "analytics_provider.testing",
    "analytics_provider.hooks", "analytics_provider.triggers", "analytics_provider.lineage",
    "analytics_provider.api.wire.operations", "analytics_provider.api.call.request",
    "analytics_provider.api.wire.lookup",
    "analytics_provider.api.jobs.wait", "analytics_provider.api.jobs.status", "analytics_provider.api.call.retry",
    "analytics_provider.api.call.exchange", "analytics_provider.plans", "analytics_provider.deliveries.plan",
    "analytics_provider.aml.lint", "analytics_provider.aml.compiler",
)
"""What only a running task (or the triggerer) needs: the HTTP clients, the hook, the operations
table, the wait and retry machinery, lineage, the access and deliveries appliers, the AML checker,
the emulator. A module here is not loaded by parsing a DAG file (nor any of its submodules)."""


def test_dag_files_parse_offline_without_heavy_imports() -> None:
    """Parsing makes no network call and loads nothing only a running task needs: importing every
    operator and sensor, then running the example DAG files (their parse-time checks included).

    Measured beyond what the DAG files' own Airflow imports load (on Airflow 3.0,
    ``from airflow.providers.common.compat.sdk import task`` alone brings aiohttp in).
    ``benchmarks/operator_import.py`` measures what the imports cost."""
    import subprocess
    import sys

    files = sorted(str(p) for p in EXAMPLE_DAGS.glob("*.py"))
    code = (
        "import runpy, socket, sys\n"
        "def no_network(*a, **k): raise RuntimeError('network call at parse time')\n"
        "socket.socket.connect = no_network\n"
        "from airflow.providers.common.compat.sdk import DAG, Param, task\n"
        "airflow_loaded = set(sys.modules)\n"
        "import analytics_provider.operators as operators, analytics_provider.sensors as sensors\n"
        "for package in (operators, sensors): [getattr(package, name) for name in package.__all__]\n"
        f"for f in {files!r}: runpy.run_path(f)\n"
        f"heavy = {TASK_TIME_MODULES!r}\n"
        "print(sorted(m for m in set(sys.modules) - airflow_loaded\n"
        "             if any(m == h or m.startswith(h + '.') for h in heavy)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"


EXAMPLE_DAG_IDS = sorted(path.stem for path in EXAMPLE_DAGS.glob("analytics_*.py"))
ASSET_EVENTS_ONLY = {"analytics_refresh_what_loads_wrote"}
"""Refreshes the tables of its run's asset events (tests/dags/test_assets.py runs it after the load)."""


def set_retries(dag: Any, retries: int) -> None:
    for task in dag.tasks:
        task.retries = retries


@pytest.fixture(scope="module")
def fresh_example_bag(example_dag_bag: Any) -> Any:
    """The example DAGs parsed anew: on Airflow 3.4.0b2 a ``dag.test()`` without conf was seen to
    run with the params of an earlier ``dag.test(run_conf=...)`` of the same DAG object."""
    from .conftest import dag_bag_of

    return dag_bag_of(EXAMPLE_DAGS)


@pytest.mark.parametrize("dag_id", EXAMPLE_DAG_IDS)
def test_each_example_runs_green_when_triggered_by_hand(fresh_example_bag, analytics_emulator, analytics_connection,
                                                        capfd, dag_id) -> None:
    # as a user triggers it against the emulator: no conf, no logical date, the waits deferred
    assert set(fresh_example_bag.dag_ids) == set(EXAMPLE_DAG_IDS)
    if dag_id in ASSET_EVENTS_ONLY:
        set_retries(fresh_example_bag.get_dag(dag_id), 0)
    dag_run = run_dag(fresh_example_bag, dag_id, True, {})
    states = task_states(dag_run)
    if dag_id in ASSET_EVENTS_ONLY:  # by hand it has no table to refresh, and fails saying so (not green)
        assert dag_run.state == "failed" and set(states.values()) == {"failed"}, states
        assert analytics_emulator.jobs == []
        assert "the run has no asset events: triggered by hand or on a schedule?" in capfd.readouterr().out
        return
    assert dag_run.state == "success" and set(states.values()) == {"success"}, states
