"""pytest fixtures for the emulator (entry point ``pytest11``); importing this module loads nothing heavy.

- ``analytics_emulator_server`` (session): one running emulator for the whole session;
- ``analytics_emulator`` (function): that emulator, reset to its seed before the test;
- ``analytics_connection`` (function): ``AIRFLOW_CONN_ANALYTICS_DEFAULT`` points at it; yields
  the connection id ``analytics_default``;
- ``analytics_airflow_db`` (session): Airflow's metadata database migrated, as ``airflow db
  migrate`` does (created on a fresh ``AIRFLOW_HOME``);
- ``analytics_dag_bag`` (session): the DAGs of Airflow's DAGs folder, parsed and stored in that
  database as the dag processor would, so that ``analytics_dag_bag.get_dag(dag_id).test()`` runs
  on every supported Airflow.

The session emulator's jobs take ``ANALYTICS_EMULATOR_JOB_DURATION`` seconds (default 0.2) and
its rate-limit frame is ``ANALYTICS_EMULATOR_RATE_LIMIT_FRAME`` seconds (default 1, so that
crowds of waits are not spaced out over a one-minute frame; a test wanting the real frame
calls ``set_rate_limit(frame=60)``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from analytics_provider.testing.emulator.app import AnalyticsEmulator

CONN_ID = "analytics_default"


@pytest.fixture(scope="session")
def analytics_emulator_server() -> Iterator[AnalyticsEmulator]:
    from analytics_provider.testing.emulator.app import AnalyticsEmulator

    emulator = AnalyticsEmulator(
        job_duration=float(os.environ.get("ANALYTICS_EMULATOR_JOB_DURATION", "0.2")),
        rate_limit_frame=float(os.environ.get("ANALYTICS_EMULATOR_RATE_LIMIT_FRAME", "1")),
    )
    with emulator:
        yield emulator


@pytest.fixture
def analytics_emulator(analytics_emulator_server: AnalyticsEmulator) -> Iterator[AnalyticsEmulator]:
    analytics_emulator_server.reset()
    yield analytics_emulator_server


@pytest.fixture
def analytics_connection(analytics_emulator: AnalyticsEmulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", analytics_emulator.connection_json())
    yield CONN_ID


@pytest.fixture(scope="session")
def analytics_airflow_db() -> None:
    from analytics_provider.testing.airflow_db import migrate

    migrate()


@pytest.fixture(scope="session")
def analytics_dag_bag(analytics_airflow_db: None) -> Any:
    from airflow.configuration import conf

    from analytics_provider.testing.airflow_db import parsed_dags, store_dags

    bag = parsed_dags(conf.get("core", "dags_folder"))
    if bag.import_errors:
        pytest.fail("DAG files that do not import:\n" + "\n".join(f"{f}: {e}" for f, e in bag.import_errors.items()))
    store_dags(bag)
    return bag
