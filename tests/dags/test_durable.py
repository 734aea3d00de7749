"""Durable execution through Airflow itself (``dag.test()``), counting the jobs on the emulator.

On Airflow 3.3 and later a retried export picks up the job its first try submitted; before 3.3
(the ``common.compat`` stand-in) every try submits, and these tests assert that instead. Waits
run on a fake clock, so minute-long outages take no real time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from analytics_provider.operators.base import AnalyticsJobOperator
from analytics_provider.operators.resumable import ResumableJobMixin
from analytics_provider.testing.fake_clock import FakeClock

from .conftest import set_waits
from .test_example_dags import task_states
from .test_refresh_impacted import DAG_FILE as REFRESH_DAG
from .test_refresh_impacted import refresh_ti
from .test_refresh_impacted import run as run_refresh

DAG_FILE = Path(__file__).resolve().parent / "durable_dags" / "durable_export.py"
RESUMES = ResumableJobMixin.__module__.startswith("airflow.sdk")
WIDGET = 101
SIZE = 300_000

JOB_READS = ("get_job", "list_jobs")  # a worker reads its job alone, a trigger in batches
MODES = pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])


@pytest.fixture(scope="module")
def durable_bag(airflow_db: None) -> Any:
    from .conftest import dag_bag_of

    return dag_bag_of(DAG_FILE)


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    return FakeClock().install(monkeypatch)


@pytest.fixture
def emulator(analytics_emulator, analytics_connection) -> Any:
    analytics_emulator.set_export_size(WIDGET, SIZE)
    # The waits sleep on the fake clock, the emulator's rate-limit frames pass in real time: no
    # frame here can end between two looks, so the quota of job reads is out of the way.
    analytics_emulator.set_rate_limit(quota=1_000_000, operation="get_job")
    analytics_emulator.set_rate_limit(quota=1_000_000, operation="list_jobs")
    return analytics_emulator


def run(bag: Any, tmp_path: Path, deferrable: bool, **task_settings: Any) -> tuple[Any, Path]:
    dag = bag.get_dag("durable_export")
    set_waits(dag, deferrable)
    for name, value in task_settings.items():
        setattr(dag.task_dict["export"], name, value)
    destination = tmp_path / "export.csv"
    return dag.test(run_conf={"destination": str(destination)}), destination


def submits(emulator: Any) -> int:
    return [r.operation for r in emulator.requests].count("submit_widget_export")


def export_ti(dag_run: Any) -> Any:
    (ti,) = [ti for ti in dag_run.get_task_instances() if ti.task_id == "export"]
    return ti


def finish_first_job(emulator: Any) -> None:
    """The first job ends now: the one every try waits on (a later submit is answered
    ``already_existed`` and points to it). The emulator reads job statuses from its own clock."""
    with emulator.world.lock:
        job = min(emulator.world.jobs.jobs.values(), key=lambda j: j.id)
        job.duration = time.time() - job.created


def stored_job_id(dag_run: Any) -> Any:
    """The job id in the task state store (Airflow 3.3+), read from the metadata database."""
    from airflow.models.task_state_store import TaskStateStoreModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(TaskStateStoreModel).filter_by(dag_run_id=dag_run.id, task_id="export").all()
        values = {row.key: row.value for row in rows}
    raw = values[AnalyticsJobOperator.external_id_key]
    return json.loads(raw) if isinstance(raw, str) else raw


@MODES
def test_a_retry_after_the_job_succeeded_downloads_again_without_a_new_job(durable_bag, emulator, tmp_path,
                                                                          deferrable) -> None:
    emulator.inject("download_export", status=403)  # the first try's download is refused, the second's is not
    dag_run, destination = run(durable_bag, tmp_path, deferrable)
    assert dag_run.state == "success"
    assert export_ti(dag_run).try_number == 2
    assert destination.stat().st_size == SIZE
    assert not list(tmp_path.glob(".*"))  # no partial file left beside it
    if RESUMES:
        assert submits(emulator) == 1
        (job,) = emulator.jobs
        assert stored_job_id(dag_run) == job.id
    else:
        assert submits(emulator) == 2  # before 3.3 every try submits, and nothing else breaks


@MODES
def test_a_job_still_running_when_the_first_try_fails_is_reconnected(durable_bag, emulator, tmp_path, clock,
                                                                    deferrable) -> None:
    emulator.job_duration = 3600
    emulator.inject("get_job", status=503, times=100_000)  # an outage longer than max_outage ends try 1
    clock.at(45, emulator.faults.clear)
    clock.at(60, lambda: finish_first_job(emulator))
    dag_run, destination = run(durable_bag, tmp_path, deferrable, max_outage=30, poll_interval=2.0)
    assert dag_run.state == "success"
    assert export_ti(dag_run).try_number == 2
    assert destination.stat().st_size == SIZE
    get_job = [r.status for r in emulator.requests if r.operation in JOB_READS]
    assert 503 in get_job and get_job[-1] == 200
    if RESUMES:
        assert submits(emulator) == 1
        assert stored_job_id(dag_run) == emulator.jobs[0].id
    else:  # try 2 submits again; the service answers already_existed, which is followed
        assert submits(emulator) == 2
        assert emulator.jobs[1].existing_job_id == emulator.jobs[0].id


@MODES
def test_a_failed_job_is_submitted_anew(durable_bag, emulator, tmp_path, deferrable) -> None:
    emulator.fail_next_job("submit_widget_export", last_error_log="warehouse unreachable")
    dag_run, destination = run(durable_bag, tmp_path, deferrable)
    assert dag_run.state == "success"
    assert submits(emulator) == 2
    first, second = emulator.jobs
    assert first.status == "failure" and second.status == "success"
    assert destination.stat().st_size == SIZE
    if RESUMES:
        assert stored_job_id(dag_run) == second.id


@MODES
def test_a_sixty_second_outage_mid_wait_is_outlasted(durable_bag, emulator, tmp_path, clock, deferrable) -> None:
    emulator.job_duration = 3600
    clock.at(10, lambda: emulator.inject("get_job", status=503, times=100_000))
    clock.at(70, emulator.faults.clear)
    clock.at(80, lambda: finish_first_job(emulator))
    dag_run, destination = run(durable_bag, tmp_path, deferrable, max_outage=600, poll_interval=2.0)
    assert dag_run.state == "success"
    assert export_ti(dag_run).try_number == 1
    assert submits(emulator) == 1
    assert destination.stat().st_size == SIZE
    assert clock.elapsed >= 80
    outage = [r for r in emulator.requests if r.operation in JOB_READS and r.status == 503]
    # real time: the minute was the fake clock's (waits slept for real would span it; a busy machine
    # stretches the requests of a fake minute to seconds, not to sixty)
    assert outage and outage[-1].time - outage[0].time < 60


@pytest.fixture(scope="module")
def refresh_bag(airflow_db: None) -> Any:
    from .conftest import dag_bag_of

    return dag_bag_of(REFRESH_DAG)


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_a_retried_refresh_submits_nothing_twice(refresh_bag, analytics_emulator, analytics_connection,
                                                 deferrable) -> None:
    """The refresh operator keeps its jobs in the task state store after each submit (3.3+)."""
    analytics_emulator.fail_next_job("preload_dashboard", last_error_log="warehouse timed out")
    dag_run = run_refresh(refresh_bag, deferrable, {"tables": ["public.orders", "finance.revenue_targets"]})
    assert dag_run.state == "success", task_states(dag_run)
    assert refresh_ti(dag_run).try_number == 2
    operations = [j.operation for j in analytics_emulator.jobs]
    if ResumableJobMixin.__module__.startswith("airflow.sdk"):  # Airflow 3.3+: a task state store
        assert operations.count("bust_data_source_cache") == 1
        assert operations.count("preload_dashboard") == 4  # three, and the failed one anew
    else:
        assert operations.count("bust_data_source_cache") == 2
