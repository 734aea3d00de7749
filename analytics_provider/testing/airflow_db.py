"""Airflow's metadata database for DAG tests, on every supported Airflow (2.11, 3.0 to 3.4).

``dag.test()`` needs the database migrated, and on Airflow 3 it runs a DAG only once the DAG is
stored as the dag processor stores it (its serialized version, in its bundle): :func:`migrate`
does what ``airflow db migrate`` does, :func:`parsed_dags` and :func:`store_dags` what the dag
processor does with a folder or file.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

AIRFLOW_3 = int(version("apache-airflow").split(".")[0]) >= 3
BUNDLE = "dags-folder"  # Airflow 3's bundle of the DAGs folder, the one dag.test() looks in


def migrate() -> None:
    """Create the database of ``AIRFLOW_HOME`` (or ``sql_alchemy_conn``), or bring it to this Airflow's schema."""
    from airflow import settings
    from airflow.utils import db

    url = str(settings.SQL_ALCHEMY_CONN or "")
    if url.startswith("sqlite:///"):  # Airflow 3.0 opens it without making its folder (a fresh AIRFLOW_HOME)
        Path(url.removeprefix("sqlite:///").split("?", 1)[0]).parent.mkdir(parents=True, exist_ok=True)
    db.upgradedb()  # a database already at the head is left as it is
    if AIRFLOW_3:
        from airflow.dag_processing.bundles.manager import DagBundlesManager

        DagBundlesManager().sync_bundles_to_db()


def one_execution_api_per_process() -> None:
    """``dag.test()`` on Airflow 3.0 to 3.2 builds a new in-process execution API for each task it runs
    (``supervisor.in_process_api_server``), and with it the API's versioned routes: seconds of CPU a task,
    most of a DAG test's time there. Airflow 3.3 builds it once per process (the function is cached); so
    does this on the older versions (elsewhere it does nothing). For test processes."""
    if not (3, 0) <= tuple(int(part) for part in version("apache-airflow").split(".")[:2]) < (3, 3):
        return
    import functools

    from airflow.sdk.execution_time import supervisor

    if not hasattr(supervisor.in_process_api_server, "cache_info"):
        supervisor.in_process_api_server = functools.lru_cache(maxsize=1)(supervisor.in_process_api_server)


def parsed_dags(folder: str | Path) -> Any:
    """The ``DagBag`` of a folder or file (Airflow's examples left out); its ``import_errors`` say what failed."""
    try:
        from airflow.dag_processing.dagbag import DagBag  # Airflow 3.2+
    except ImportError:
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef,unused-ignore]
    if AIRFLOW_3:  # the examples are a bundle of their own there
        return DagBag(dag_folder=str(folder))
    return DagBag(dag_folder=str(folder), include_examples=False)  # type: ignore[call-arg,unused-ignore]


def store_dags(bag: Any) -> None:
    """Store a bag's DAGs as the dag processor would (``dag.test()`` reads them back)."""
    try:
        from airflow.dag_processing.dagbag import sync_bag_to_db  # Airflow 3.2+
    except ImportError:
        try:
            from airflow.models.dagbag import sync_bag_to_db  # type: ignore[no-redef,unused-ignore]  # Airflow 3.1
        except ImportError:
            if not AIRFLOW_3:
                bag.sync_to_db()
            else:  # Airflow 3.0
                bag.sync_to_db(BUNDLE, None)
            return
    sync_bag_to_db(bag, BUNDLE, None)
