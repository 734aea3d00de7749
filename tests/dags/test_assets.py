"""Asset events of the example DAGs, read back from Airflow's own records, and the DAGs they queue."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from analytics_provider.testing.records import _asset_models, asset_table, queued_asset_uris

from .conftest import AIRFLOW_VERSION, consuming_events_of, dag_bag_of, dag_test, deferred_tasks, set_waits
from .test_example_dags import run_dag, run_day, task_states

MODES = pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])

EXPORTS_ALIAS = "analytics-scheduled-exports"
ORDERS_URI = "postgres://warehouse:5432/analytics/public/orders"
EXPORT_URIS = {
    f"analytics://exports/{name}.{output}"
    for name in ("revenue-by-region", "orders-by-channel", "campaign-performance")
    for output in ("xlsx", "pdf")
}


def set_paused(dag_id: str, paused: bool) -> None:
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    with create_session() as session:
        session.get(DagModel, dag_id).is_paused = paused


def run_events(dag_run: Any) -> list[dict[str, Any]]:
    """The asset events a DAG run's tasks emitted: uri, extra, task and the aliases they came through."""
    from analytics_provider.testing.records import asset_events

    return [vars(event) for event in asset_events(dag_run.dag_id, dag_run.run_id)]


def dags_ready_to_run() -> set[str]:
    """The DAGs the scheduler would create an asset-triggered run for now."""
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    with create_session() as session:
        _, triggered = DagModel.dags_needing_dagruns(session)
        return set(triggered)


@pytest.fixture
def consumers_unpaused() -> Any:
    consumers = ("analytics_ship_exported_files", "analytics_preload_on_warehouse_table")
    for dag_id in consumers:
        set_paused(dag_id, False)
    yield consumers
    for dag_id in consumers:
        set_paused(dag_id, True)


def test_each_exported_file_is_an_event_on_its_exports_stable_asset(
    example_dag_bag, analytics_emulator, analytics_connection, consumers_unpaused, tmp_path
):
    assert {uri: True for uri in EXPORT_URIS}.items() <= asset_table().items()  # declared before any event
    dag_run = run_dag(example_dag_bag, "analytics_scheduled_exports", True, {"export_root": f"file://{tmp_path}"})
    assert dag_run.state == "success", task_states(dag_run)
    files = {p.as_uri(): p for p in tmp_path.rglob("*.*")}
    events = run_events(dag_run)
    assert len(files) == 6
    assert sorted(e["uri"] for e in events) == sorted(EXPORT_URIS)  # one event per export, on its asset
    assert sorted(e["extra"]["uri"] for e in events) == sorted(files)  # the file it wrote, in the extra
    for event in events:
        name = event["uri"].rsplit("/", 1)[1]
        assert event["extra"]["uri"].endswith(f"/{run_day(dag_run)}/{name}")
        assert event["aliases"] == [EXPORTS_ALIAS] and event["task_id"] == "export_widget"
        assert event["extra"]["bytes"] == files[event["extra"]["uri"]].stat().st_size
        assert event["extra"]["date"] == run_day(dag_run)
        assert event["extra"]["job_id"] in {j.id for j in analytics_emulator.jobs}
    assert queued_asset_uris("analytics_ship_exported_files") == EXPORT_URIS
    assert "analytics_ship_exported_files" in dags_ready_to_run()


def test_a_second_days_files_add_no_asset_row(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path
):
    """Two scheduled days (two logical dates): the asset table holds as many rows after as after one."""
    import pendulum

    days = [pendulum.datetime(2026, 3, 1, 6, tz="UTC"), pendulum.datetime(2026, 3, 2, 6, tz="UTC")]
    rows = []
    for day in days:
        dag_run = run_dag(example_dag_bag, "analytics_scheduled_exports", False,
                          {"export_root": f"file://{tmp_path}"}, logical_date=day)
        assert dag_run.state == "success", task_states(dag_run)
        assert {e["extra"]["date"] for e in run_events(dag_run)} == {day.strftime("%Y-%m-%d")}
        rows.append(asset_table())
    assert len(list(tmp_path.rglob("*.*"))) == 12
    assert rows[0] == rows[1] and set(rows[1]) >= EXPORT_URIS
    assert not [uri for uri in rows[1] if uri.startswith("file://")]  # no asset per file


def test_the_schedulers_run_of_the_consumer_receives_every_exported_file(
    example_dag_bag, analytics_emulator, analytics_connection, consumers_unpaused, tmp_path
):
    """The scheduler's own step that turns queued asset events into a DAG run, run once here."""
    from airflow.jobs.job import Job
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    from airflow.models.dag import DagModel
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import delete, select

    kind = "asset" if AIRFLOW_VERSION >= (3, 0) else "dataset"  # Airflow 2.11's names
    create_runs = getattr(SchedulerJobRunner, f"_create_dag_runs_{kind}_triggered")
    queue = _asset_models().queue
    consumer = "analytics_ship_exported_files"
    with create_session() as session:  # only this test's events: Airflow 3.4 makes a run of each (up to 16)
        session.execute(delete(queue).where(queue.target_dag_id == consumer))
    dag_run = run_dag(example_dag_bag, "analytics_scheduled_exports", False, {"export_root": f"file://{tmp_path}"})
    assert dag_run.state == "success", task_states(dag_run)
    with create_session() as session:
        arguments: dict[str, Any] = {"dag_models": [session.get(DagModel, consumer)], "session": session}
        parameters = inspect.signature(create_runs).parameters
        for name in ("triggered_date_by_dag", "dataset_triggered_dag_info"):  # Airflow 3.0, 2.11
            if name in parameters:
                arguments[name] = DagModel.dags_needing_dagruns(session)[1]
        create_runs(SchedulerJobRunner(job=Job()), **arguments)
    with create_session() as session:
        runs = session.scalars(select(DagRun).where(DagRun.dag_id == consumer, DagRun.run_type == f"{kind}_triggered"))
        # one run (Airflow 2.11 to 3.3) or several (3.4), between them every event
        consumed = {
            (event.extra["uri"], getattr(event, kind).uri, event.source_dag_id)
            for run in runs for event in getattr(run, f"consumed_{kind}_events")
        }
    files = {p.as_uri() for p in tmp_path.rglob("*.*")}
    assert len(files) == 6 and files <= {uri for uri, _, _ in consumed}  # (3.0 to 3.3: earlier tests' too)
    assert {asset for _, asset, _ in consumed} == EXPORT_URIS
    assert {source for _, _, source in consumed} == {"analytics_scheduled_exports"}


def clear_queue(dag_id: str) -> None:
    """Forget the events queued for ``dag_id`` by earlier tests of this session (when it was unpaused)."""
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    models = _asset_models()
    with create_session() as session:
        session.execute(delete(models.queue).where(models.queue.target_dag_id == dag_id))


def test_a_paused_consumer_is_not_queued(example_dag_bag, analytics_emulator, analytics_connection, tmp_path):
    set_paused("analytics_ship_exported_files", True)
    clear_queue("analytics_ship_exported_files")
    dag_run = run_dag(example_dag_bag, "analytics_scheduled_exports", False, {"export_root": f"file://{tmp_path}"})
    assert dag_run.state == "success", task_states(dag_run)
    assert len(run_events(dag_run)) == 6
    assert not queued_asset_uris("analytics_ship_exported_files")


def test_the_load_updates_the_table_asset_that_schedules_the_preload(
    example_dag_bag, analytics_emulator, analytics_connection, consumers_unpaused, tmp_path
):
    dag_run = run_dag(example_dag_bag, "analytics_after_warehouse_load", False, {"export_dir": str(tmp_path)})
    assert dag_run.state == "success", task_states(dag_run)
    events = run_events(dag_run)
    assert [(e["uri"], e["task_id"]) for e in events if e["task_id"] == "load_warehouse"] == [
        (ORDERS_URI, "load_warehouse")]
    assert queued_asset_uris("analytics_preload_on_warehouse_table") == {ORDERS_URI}
    assert "analytics_preload_on_warehouse_table" in dags_ready_to_run()


def test_a_dag_scheduled_on_the_loads_table_refreshes_exactly_its_dashboards(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path
):
    """analytics_refresh_what_loads_wrote, queued by the load's table asset, run with the load's events."""
    consumer = "analytics_refresh_what_loads_wrote"
    set_paused(consumer, False)
    try:
        load = run_dag(example_dag_bag, "analytics_after_warehouse_load", False, {"export_dir": str(tmp_path)})
        assert load.state == "success", task_states(load)
        assert queued_asset_uris(consumer) == {ORDERS_URI}
    finally:
        set_paused(consumer, True)
    before = len(analytics_emulator.jobs)
    with consuming_events_of(load.dag_id, load.run_id):
        dag_run = run_dag(example_dag_bag, consumer, False, {})
    assert dag_run.state == "success", task_states(dag_run)
    (ti,) = dag_run.get_task_instances()
    result = ti.xcom_pull(task_ids="refresh_what_loads_wrote", key="return_value")
    assert result["tables"] == ["analytics.public.orders"] and result["unmatched_tables"] == []
    # the dashboards on orders: Sales overview, and Regional sales on the query model built on orders
    assert [(d["id"], d["title"]) for d in result["dashboards"]] == [(1, "Sales overview"), (4, "Regional sales")]
    assert [(j.operation, j.params.get("id")) for j in analytics_emulator.jobs[before:]] == [
        ("bust_data_source_cache", 1), ("preload_dashboard", 1), ("preload_dashboard", 4)]
    assert run_events(dag_run) == []  # outlets=[]: the load DAG's own refresh emits the dashboards' events


def test_an_export_without_an_alias_emits_no_asset_event(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path
):
    dag_run = run_dag(example_dag_bag, "analytics_after_warehouse_load", True, {"export_dir": str(tmp_path)})
    assert dag_run.state == "success", task_states(dag_run)
    # the load's table, and the two dashboards its refresh preloaded (Sales overview, and Regional sales on the
    # query model built on orders: through the refresh's alias); none of the export
    assert sorted(e["task_id"] for e in run_events(dag_run)) == ["load_warehouse", "refresh_impacted",
                                                                 "refresh_impacted"]


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_preload_on_warehouse_table_runs_green(example_dag_bag, analytics_emulator, analytics_connection, deferrable):
    dag_run = run_dag(example_dag_bag, "analytics_preload_on_warehouse_table", deferrable, {})
    assert dag_run.state == "success", task_states(dag_run)
    kinds = sorted(j.operation for j in analytics_emulator.jobs)
    assert kinds == ["bust_data_source_cache", "preload_dashboard", "preload_dashboard"]
    preloaded = sorted(j.params["id"] for j in analytics_emulator.jobs if j.operation == "preload_dashboard")
    assert preloaded == [1, 2]
    assert len(deferred_tasks(dag_run)) == (3 if deferrable else 0)


def test_ship_exported_files_started_by_hand_ships_nothing(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path
):
    dag_run = run_dag(example_dag_bag, "analytics_ship_exported_files", False, {"outbox": str(tmp_path / "outbox")})
    assert dag_run.state == "success", task_states(dag_run)
    assert list((tmp_path / "outbox").iterdir()) == []


FRESH_EXPORT = "analytics_export_when_dashboard_fresh"
LOAD = "analytics_after_warehouse_load"


@pytest.fixture
def fresh_bag(airflow_db: None, analytics_emulator, analytics_connection, monkeypatch) -> Any:
    """The load and its downstream DAG parsed with ``ANALYTICS_SERVICE`` naming the emulator, as a
    deployment names its service; the downstream DAG unpaused."""
    from .conftest import EXAMPLE_DAGS

    monkeypatch.setenv("ANALYTICS_SERVICE", analytics_emulator.base_url)
    bag = dag_bag_of(EXAMPLE_DAGS / f"{FRESH_EXPORT}.py")
    bag_load = dag_bag_of(EXAMPLE_DAGS / f"{LOAD}.py")
    set_paused(FRESH_EXPORT, False)
    yield bag, bag_load
    set_paused(FRESH_EXPORT, True)


@MODES
def test_a_dag_scheduled_on_a_dashboards_asset_runs_after_the_refresh(fresh_bag, analytics_emulator, tmp_path,
                                                                      deferrable) -> None:
    from analytics_provider.testing.records import asset_events, asset_table, queued_asset_uris

    consumer_bag, load_bag = fresh_bag
    uri = f"analytics://{analytics_emulator.base_url.split('://', 1)[1].removesuffix('/api/v2')}/dashboards/1"
    assert asset_table().get(uri) is True  # declared by the downstream DAG before any event
    load = load_bag.get_dag(LOAD)
    set_waits(load, deferrable)
    load_run = dag_test(load, {"export_dir": str(tmp_path / "load")})
    assert load_run.state == "success", task_states(load_run)
    events = [e for e in asset_events(LOAD, load_run.run_id) if e.task_id == "refresh_impacted"]
    assert [(e.uri, e.aliases, e.extra["title"]) for e in events] == [
        (uri, ["analytics-refreshed-dashboards"], "Sales overview"),  # and the board on a query model built on orders
        (uri.replace("/dashboards/1", "/dashboards/4"), ["analytics-refreshed-dashboards"], "Regional sales")]
    assert queued_asset_uris(FRESH_EXPORT) == {uri}
    assert FRESH_EXPORT in dags_ready_to_run()
    consumer = consumer_bag.get_dag(FRESH_EXPORT)
    set_waits(consumer, deferrable)
    export_run = dag_test(consumer, {"export_dir": str(tmp_path / "fresh")})
    assert export_run.state == "success", task_states(export_run)
    (csv,) = (tmp_path / "fresh").rglob("*.csv")
    assert csv.name == "orders-by-channel.csv" and csv.stat().st_size > 0
    preload = max(j.id for j in analytics_emulator.jobs if j.operation == "preload_dashboard")
    export = max(j.id for j in analytics_emulator.jobs if j.operation == "submit_widget_export")
    assert preload < export  # the export ran after the refresh
