"""Running the example DAGs through Airflow itself (``dag.test()``) against the emulator."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

EXAMPLE_DAGS = Path(__file__).resolve().parents[2] / "example_dags"
AIRFLOW_VERSION = tuple(int(part) for part in metadata.version("apache-airflow").split(".")[:2])
# Every DAG run of this folder emits OpenLineage events (when the provider is installed) to a file,
# through OpenLineage's own file transport; it is configured before any plugin is loaded.
OPENLINEAGE_EVENTS = Path(os.environ["AIRFLOW_HOME"]) / "openlineage-events.jsonl"
os.environ["AIRFLOW__OPENLINEAGE__TRANSPORT"] = json.dumps(
    {"type": "file", "log_file_path": str(OPENLINEAGE_EVENTS), "append": True}
)
os.environ["AIRFLOW__OPENLINEAGE__NAMESPACE"] = "analytics-provider-tests"
# On Airflow 3 the provider emits a task's events from a thread of the task's process, not from a child
# forked for each event (its default, which test_lineage.py keeps: those tests read the events): a fork
# of this many-threaded process, waited for, took about a third of each DAG test's time. Airflow 2.11
# keeps the forks: there the thread uses the ORM itself, and its SQLite connections end in another thread.
if AIRFLOW_VERSION >= (3, 0):
    os.environ["AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD"] = "True"


@pytest.fixture(scope="module", autouse=True)
def airflow_lets_go_of_its_task_loops() -> Iterator[None]:
    """``dag.test()`` on Airflow 3 leaves each task's supervisor selector and in-process execution
    API event loop to the garbage collector (``InProcessTestSupervisor``): collected once per
    module, or a folder of runs holds a hundred epoll descriptors (``tests/fd_guard.py``)."""
    yield
    _long_lived_objects_frozen()


def _long_lived_objects_frozen() -> None:
    """Collect the garbage, then leave what is still alive out of later collections (``gc.freeze()``).

    Called when what is alive lives as long as the session (Airflow's modules once its database is
    reset; the execution API app, the DAG bags and the emulator once a module's fixtures are gone):
    most of a million objects that each full collection walked again, a tenth of a DAG test's CPU."""
    import gc

    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def the_service_the_examples_name(analytics_emulator_server: Any) -> None:
    """``ANALYTICS_SERVICE`` (the service ``analytics_export_when_dashboard_fresh`` names its asset by)
    is the session's emulator from the first parse on, as a deployment's is fixed: Airflow 3.3's
    ``dag.test()`` parses the whole examples folder again, and a DAG stored with two different
    assets in one database left the scheduler reading the other (``dags_needing_dagruns``)."""
    os.environ["ANALYTICS_SERVICE"] = analytics_emulator_server.base_url


@pytest.fixture(scope="session", autouse=True)
def task_log_level() -> None:
    """Log at INFO, as a task process does: ``dag.test()`` runs tasks in this process, where
    Airflow 3.0 leaves structlog unconfigured, which prints the task runner's debug lines (each
    message to the supervisor in full, the values handed to ``mask_secret`` included). Airflow
    2.11 logs through the standard library (structlog is not one of its dependencies)."""
    import logging
    import sys

    class CurrentStdout:
        """``sys.stdout`` as it is at each write, so that a test's capture sees the task's log."""

        def write(self, text: str) -> int:
            return sys.stdout.write(text)

        def flush(self) -> None:
            sys.stdout.flush()

    if AIRFLOW_VERSION < (3, 0):  # dag.test() would add a handler bound to the first test's stdout
        handler = logging.StreamHandler(CurrentStdout())  # type: ignore[arg-type]
        handler.setLevel(logging.INFO)
        handler.setFormatter(logging.Formatter("[%(asctime)s] {%(filename)s:%(lineno)d} %(levelname)s - %(message)s"))
        logging.getLogger("airflow.task").addHandler(handler)
        return
    import structlog

    if not structlog.is_configured():
        renderer = structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback)
        structlog.configure(
            processors=[*structlog.get_config()["processors"][:-1], renderer],  # plain text: tests read it
            wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
            logger_factory=structlog.PrintLoggerFactory(file=CurrentStdout()),  # type: ignore[arg-type]
        )


_INLINE_DEFERRALS: list[tuple[str, str, Any]] = []  # (dag_id, run_id, Deferral), Airflow 2.11 only


@pytest.fixture(scope="session", autouse=True)
def inline_deferrals_recorded() -> Iterator[None]:
    """Airflow 2.11's ``dag.test()`` runs a deferred task's trigger inline and leaves no trigger
    row to read: its deferrals are recorded here as they happen (see :func:`deferred_tasks`)."""
    if AIRFLOW_VERSION >= (3, 0):
        yield
        return
    from airflow.exceptions import TaskDeferred
    from airflow.models.taskinstance import TaskInstance

    from analytics_provider.testing.records import Deferral

    run_raw_task = TaskInstance._run_raw_task

    def recording(ti: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return run_raw_task(ti, *args, **kwargs)
        except TaskDeferred as deferral:
            classpath = deferral.trigger.serialize()[0]
            _INLINE_DEFERRALS.append((ti.dag_id, ti.run_id, Deferral(ti.task_id, ti.map_index, classpath)))
            raise

    TaskInstance._run_raw_task = recording  # type: ignore[method-assign]
    yield
    TaskInstance._run_raw_task = run_raw_task  # type: ignore[method-assign]


def deferred_tasks(dag_run: Any) -> list[str]:
    """The labels (``task_id``, ``task_id[map_index]``) of a run's task instances that deferred."""
    if AIRFLOW_VERSION >= (3, 0):
        from analytics_provider.testing.records import deferrals

        return sorted(d.label for d in deferrals(dag_run.dag_id, dag_run.run_id))
    run = (dag_run.dag_id, dag_run.run_id)
    return sorted(d.label for dag_id, run_id, d in _INLINE_DEFERRALS if (dag_id, run_id) == run)


MIGRATED_DB = Path(os.environ["AIRFLOW_HOME"]) / "migrated.db"
"""The session's database as :func:`airflow_db` leaves it, before any test writes to it."""


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """The session's database, reset; a copy of it kept (:data:`MIGRATED_DB`) for a process that
    needs a fresh database of its own (:func:`fresh_database`), instead of migrating one again."""
    import sqlite3

    from airflow import settings
    from airflow.utils import db

    from analytics_provider.testing.airflow_db import one_execution_api_per_process

    db.resetdb()
    one_execution_api_per_process()
    if AIRFLOW_VERSION >= (3, 0):  # DAG bundles came with Airflow 3
        from airflow.dag_processing.bundles.manager import DagBundlesManager

        DagBundlesManager().sync_bundles_to_db()
    session_db, copy = sqlite3.connect(settings.engine.url.database), sqlite3.connect(MIGRATED_DB)
    session_db.backup(copy)  # whole and consistent, whatever Airflow's connections hold open
    session_db.close()
    copy.close()
    _long_lived_objects_frozen()


def fresh_database(path: Path) -> None:
    """A new SQLite database at ``path`` as ``db.resetdb()`` leaves one (needs :func:`airflow_db`)."""
    shutil.copyfile(MIGRATED_DB, path)


@pytest.fixture(scope="session")
def example_dag_bag(airflow_db: None) -> Any:
    return dag_bag_of(EXAMPLE_DAGS)


def dag_bag_of(folder: Path) -> Any:
    """The DAGs of a folder or file, parsed (none may fail) and stored as the dag processor would."""
    from analytics_provider.testing.airflow_db import parsed_dags, store_dags

    bag = parsed_dags(folder)
    assert bag.import_errors == {}
    store_dags(bag)
    return bag


def dag_test(dag: Any, conf: dict[str, Any] | None = None, logical_date: Any = None) -> Any:
    """``dag.test()`` on every Airflow: a manual run with ``conf`` (no logical date unless given;
    Airflow 2.11, where every run has one, uses now)."""
    if AIRFLOW_VERSION < (3, 0):
        return dag.test(run_conf=conf, execution_date=logical_date)
    return dag.test(run_conf=conf, logical_date=logical_date, run_after=logical_date)


@contextmanager
def consuming_events_of(dag_id: str, run_id: str) -> Iterator[None]:
    """``dag.test()``'s run consumes the asset events another run's tasks emitted, as the run the
    scheduler makes of them does (the tasks' ``triggering_asset_events``; Airflow 2.11: datasets)."""
    import importlib
    from unittest import mock

    from sqlalchemy import select

    from analytics_provider.testing.records import _asset_models

    where, name = (("airflow.models.dagrun", "get_or_create_dagrun") if AIRFLOW_VERSION >= (3, 1)
                   else ("airflow.models.dag", "_get_or_create_dagrun"))  # what dag.test() calls to make its run
    module = importlib.import_module(where)
    create = getattr(module, name)
    models = _asset_models()

    def creating(*args: Any, **kwargs: Any) -> Any:
        dag_run = create(*args, **kwargs)
        session = kwargs["session"]
        events = session.scalars(select(models.event).where(models.event.source_dag_id == dag_id,
                                                            models.event.source_run_id == run_id)).all()
        assert events, f"{dag_id} run {run_id} emitted no asset event"
        getattr(dag_run, f"consumed_{models.prefix}_events").extend(events)
        session.commit()
        return dag_run

    with mock.patch.object(module, name, creating):
        yield


def set_waits(dag: Any, deferrable: bool | None, poll_interval: float = 0.1) -> None:
    """Every analytics task of a DAG waits on the worker or in the triggerer (``None``: as the DAG
    says), looking at its job every ``poll_interval`` seconds: the emulator's jobs take 0.2 s, and
    the examples' intervals (1 to 5 s) would spend most of a run asleep."""
    from airflow.providers.common.compat.sdk import MappedOperator

    from analytics_provider.operators.base import AnalyticsJobOperator
    from analytics_provider.sensors.analytics import AnalyticsJobSensor

    settings: dict[str, Any] = {"poll_interval": poll_interval}
    if deferrable is not None:
        settings["deferrable"] = deferrable
    for task in dag.tasks:
        if isinstance(task, MappedOperator) and issubclass(task.operator_class, AnalyticsJobOperator):
            task.partial_kwargs.update(settings)
        elif isinstance(task, AnalyticsJobOperator):
            for name, value in settings.items():
                setattr(task, name, value)
        elif isinstance(task, AnalyticsJobSensor):
            task.poke_interval = poll_interval
        elif type(task).__name__ == "AnalyticsRefreshImpactedOperator":  # waits for many jobs
            for name, value in settings.items():
                setattr(task, name, value)


@pytest.fixture
def openlineage_events() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The OpenLineage events written since the test started (a callable: read them when needed).

    The adapter writes from a thread, so an event of the previous test may be half written when
    this one starts, and one may be half written when it reads: only whole lines count, from the
    first line that starts after the test began.
    """
    written = OPENLINEAGE_EVENTS.read_bytes() if OPENLINEAGE_EVENTS.exists() else b""
    start, mid_line = len(written), bool(written) and not written.endswith(b"\n")

    def read() -> list[dict[str, Any]]:
        if not OPENLINEAGE_EVENTS.exists():
            return []
        content = OPENLINEAGE_EVENTS.read_bytes()[start:]
        if mid_line:  # the rest of the previous test's line
            content = content.partition(b"\n")[2]
        whole = content.split(b"\n")[:-1]  # the last piece is a line still being written (or empty)
        return [json.loads(line) for line in whole if line.strip()]

    yield read
