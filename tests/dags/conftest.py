"""Running the example DAGs through Airflow itself (``dag.test()``) against the emulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

EXAMPLE_DAGS = Path(__file__).resolve().parents[2] / "example_dags"


@pytest.fixture(scope="session")
def airflow_db() -> None:
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.utils import db

    db.resetdb()
    DagBundlesManager().sync_bundles_to_db()


@pytest.fixture(scope="session")
def example_dag_bag(airflow_db: None) -> Any:
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    bag = DagBag(dag_folder=str(EXAMPLE_DAGS))
    assert bag.import_errors == {}
    sync_bag_to_db(bag, "dags-folder", None)
    return bag


def set_deferrable(dag: Any, deferrable: bool) -> None:
    """Switch every analytics task of a DAG between waiting on the worker and in the triggerer."""
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    from analytics_provider.operators.base import AnalyticsJobOperator

    for task in dag.tasks:
        if isinstance(task, MappedOperator) and issubclass(task.operator_class, AnalyticsJobOperator):
            task.partial_kwargs["deferrable"] = deferrable
        elif isinstance(task, AnalyticsJobOperator):
            task.deferrable = deferrable
