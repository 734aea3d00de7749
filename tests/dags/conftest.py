"""Running the example DAGs through Airflow itself (``dag.test()``) against the emulator."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
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


@pytest.fixture(scope="session", autouse=True)
def task_log_level() -> None:
    """Log at INFO, as a task process does: ``dag.test()`` runs tasks in this process, where
    Airflow 3.0 leaves structlog unconfigured, which prints the task runner's debug lines (each
    message to the supervisor in full, the values handed to ``mask_secret`` included)."""
    import logging
    import sys

    import structlog

    class CurrentStdout:
        """``sys.stdout`` as it is at each write, so that a test's capture sees the task's log."""

        def write(self, text: str) -> int:
            return sys.stdout.write(text)

        def flush(self) -> None:
            sys.stdout.flush()

    if not structlog.is_configured():
        renderer = structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback)
        structlog.configure(
            processors=[*structlog.get_config()["processors"][:-1], renderer],  # plain text: tests read it
            wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
            logger_factory=structlog.PrintLoggerFactory(file=CurrentStdout()),  # type: ignore[arg-type]
        )


@pytest.fixture(scope="session")
def airflow_db() -> None:
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.utils import db

    db.resetdb()
    DagBundlesManager().sync_bundles_to_db()


@pytest.fixture(scope="session")
def example_dag_bag(airflow_db: None) -> Any:
    return dag_bag_of(EXAMPLE_DAGS)


def dag_bag_of(folder: Path) -> Any:
    """The DAGs of a folder or file, parsed (none may fail) and stored as the dag processor would."""
    bag = _dag_bag_class()(dag_folder=str(folder))
    assert bag.import_errors == {}
    _sync_bag_to_db(bag)
    return bag


def _dag_bag_class() -> Any:
    try:
        from airflow.dag_processing.dagbag import DagBag  # Airflow 3.2+
    except ImportError:
        from airflow.models.dagbag import DagBag
    return DagBag


def _sync_bag_to_db(bag: Any) -> None:
    """Store the DAGs as the dag processor would (``dag.test()`` reads them back from the DB)."""
    try:
        from airflow.dag_processing.dagbag import sync_bag_to_db  # Airflow 3.2+
    except ImportError:
        try:
            from airflow.models.dagbag import sync_bag_to_db  # Airflow 3.1
        except ImportError:  # Airflow 3.0
            bag.sync_to_db("dags-folder", None)
            return
    sync_bag_to_db(bag, "dags-folder", None)


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
