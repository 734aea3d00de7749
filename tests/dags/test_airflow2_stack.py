"""Airflow 2.11 as it runs: a scheduler and a triggerer process, the example DAGs, the emulator.

The after-load DAG is triggered with its export deferrable: the wait goes to the triggerer
process (aiohttp, over a socket to the emulator), the task resumes on the worker and downloads
the file. Its load task's outlet (a ``Dataset`` on 2.11) queues the preload DAG, which the
scheduler runs with its three jobs deferred too. Airflow 3's processes (api-server, dag-processor,
several triggerers, Celery) run the same DAGs in ``make e2e``.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import AIRFLOW_VERSION, EXAMPLE_DAGS

pytestmark = [
    pytest.mark.skipif(AIRFLOW_VERSION >= (3, 0),
                       reason="Airflow 2.11's scheduler and triggerer (Airflow 3's: make e2e)"),
    pytest.mark.timeout(1900),  # Stack.wait: 240 s without progress, 1,800 s in all
]
AIRFLOW = Path(sys.executable).parent / "airflow"
LOAD, PRELOAD = "analytics_after_warehouse_load", "analytics_preload_on_warehouse_table"


class Stack:
    """A fresh Airflow home with its SQLite database, and the processes started on it."""

    def __init__(self, home: Path, connection: str) -> None:
        self.home = home
        self.database = home / "airflow.db"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        self.env |= {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.database}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLE_DAGS),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "SequentialExecutor",
            "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            # each DAG file parsed once, by one process (by default every 30 s, by two: 69 CPU-s for this
            # test, 61 so, on a busy machine; its tasks' `airflow tasks run` processes are most of the rest)
            "AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL": "3600",
            "AIRFLOW__SCHEDULER__PARSING_PROCESSES": "1",
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
            "AIRFLOW_CONN_ANALYTICS_DEFAULT": connection,
            "TMPDIR": str(home),
            "PATH": f"{AIRFLOW.parent}{os.pathsep}{os.environ.get('PATH', '')}",  # for `airflow tasks run`
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def airflow(self, *args: str) -> str:
        done = subprocess.run([str(AIRFLOW), *args], env=self.env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"airflow {' '.join(args)}: {done.stderr[-3000:]}"
        return done.stdout

    def start(self, name: str) -> None:
        with (self.home / f"{name}.log").open("wb") as log:
            self.procs[name] = subprocess.Popen(
                [str(AIRFLOW), name], env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def log(self, name: str) -> str:
        return (self.home / f"{name}.log").read_text(errors="replace")

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.database, timeout=30) as db:
            return db.execute(sql, args).fetchall()

    def progress(self) -> list[tuple[Any, ...]]:
        """What the scheduler, the triggerer and the task processes have done so far, as the database holds it."""
        return [*self.rows("SELECT dag_id, NULL, NULL, NULL, NULL FROM dag ORDER BY 1"),
                *self.rows("SELECT dag_id, run_id, state, NULL, NULL FROM dag_run ORDER BY 1, 2"),
                *self.rows("SELECT dag_id, task_id, map_index, state, try_number FROM task_instance ORDER BY 1, 2, 3")]

    def wait(self, what: str, check: Callable[[], Any], stalled: float = 240, limit: float = 1800) -> Any:
        """``check()``'s first true value; fails once the processes have made no progress for ``stalled``
        seconds (a busy machine only slows them), or after ``limit`` seconds in all."""
        start = last_change = time.monotonic()
        seen = None
        while (now := time.monotonic()) < min(last_change + stalled, start + limit):
            for name, proc in self.procs.items():
                assert proc.poll() is None, f"{name} exited: {self.log(name)[-3000:]}"
            value = check()
            if value:
                return value
            if (state := self.progress()) != seen:
                seen, last_change = state, now
            time.sleep(0.5)  # another process's progress, seen in its database
        raise AssertionError(f"timed out waiting for {what} (no progress for {stalled:g} s, or {limit:g} s in all): "
                             f"{self.rows('SELECT dag_id, state FROM dag_run')}; {seen}")

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture
def stack(analytics_emulator, tmp_path) -> Iterator[Stack]:
    stack = Stack(tmp_path, analytics_emulator.connection_json())
    # migrated by the CLI, not copied from the session's database: that start also writes the home's airflow.cfg
    # (its Fernet key), which the scheduler and the triggerer, started at once, would otherwise each write
    stack.airflow("db", "migrate")
    stack.start("scheduler")
    stack.start("triggerer")
    yield stack
    stack.stop()


def test_the_waits_run_in_the_triggerer_and_the_dataset_queues_the_preload(stack, analytics_emulator, tmp_path):
    def parsed() -> bool:
        return len(stack.rows("SELECT dag_id FROM dag WHERE dag_id IN (?, ?)", LOAD, PRELOAD)) == 2

    stack.wait("the DAGs to be parsed", parsed)
    stack.airflow("dags", "unpause", "--treat-dag-id-as-regex", "-y", f"^({PRELOAD}|{LOAD})$")  # one start of the CLI
    assert stack.rows("SELECT dag_id FROM dag WHERE NOT is_paused ORDER BY 1") == [(LOAD,), (PRELOAD,)]
    stack.airflow("dags", "trigger", LOAD, "--conf", json.dumps({"export_dir": str(tmp_path / "exports")}))

    def finished(dag_id: str) -> Callable[[], list[str]]:
        def states() -> list[str]:
            runs = [state for (state,) in stack.rows("SELECT state FROM dag_run WHERE dag_id = ?", dag_id)]
            return runs if runs and all(s in ("success", "failed") for s in runs) else []

        return states

    assert stack.wait(f"{LOAD} to finish", finished(LOAD)) == ["success"], stack.log("scheduler")[-3000:]
    assert stack.wait(f"{PRELOAD} to be run by its dataset", finished(PRELOAD)) == ["success"]
    (run_type,) = stack.rows("SELECT run_type FROM dag_run WHERE dag_id = ?", PRELOAD)[0]
    assert run_type == "dataset_triggered"
    (csv,) = (tmp_path / "exports").rglob("*.csv")
    assert csv.read_text(encoding="utf-8").startswith("month,region,orders,revenue\n")

    # each job's wait ran in the triggerer process ("trigger <dag>/<run>/<task>/<map index>/<try> (ID n) completed")
    completed = set(re.findall(r"trigger (\w+)/[^/]+/(\w+)/(-?\d+)/\d+ \(ID \d+\) completed", stack.log("triggerer")))
    job_tasks = {(LOAD, task, "-1") for task in ("refresh_impacted", "export_widget")}
    job_tasks |= {(PRELOAD, "bust_data_source_cache", "-1"), (PRELOAD, "preload_dashboard", "0")}
    job_tasks |= {(PRELOAD, "preload_dashboard", "1")}
    assert completed == job_tasks, stack.log("triggerer")[-3000:]
    # one job each, three for the refresh (its bust, and its preloads of Sales overview and of Regional sales,
    # on the query model built on orders): nothing submitted twice
    assert len(analytics_emulator.jobs) == len(job_tasks) + 2
