"""``make e2e``: the example DAGs on a real Airflow (api-server, scheduler, dag-processor, triggerer).

LocalExecutor on SQLite, every wait deferred to the triggerer, against the emulator. On the way
the triggerer is killed (SIGKILL) mid-wait and started again, later stopped (SIGTERM) and started
again, and one export's first download is refused so that its task is retried after its job was
submitted. It passes when every DAG run is green, no trigger is lost, and the jobs counted on the
emulator equal the tasks that submit one (no duplicate on retry or restart). Not part of
``make test``: it takes a few minutes.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import requests

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
JOB_READS = ("list_jobs", "get_job")  # a trigger reads in batches, a worker one job at a time
DAGS = ("analytics_after_warehouse_load", "analytics_post_deploy_publish", "analytics_scheduled_exports")
# scheduled on what DAGS produce (the warehouse table's asset, the exports' alias): unpaused too,
# so that their asset-triggered runs are part of the scenario (and of its count of jobs)
CONSUMERS = ("analytics_preload_on_warehouse_table", "analytics_ship_exported_files")
JOB_OPERATORS = (
    "AnalyticsExportWidgetOperator", "AnalyticsPreloadDashboardOperator", "AnalyticsBustDataSourceCacheOperator",
    "AnalyticsPublishAmlProjectOperator", "AnalyticsExecuteDataScheduleOperator",
)
JOB_SECONDS = 8.0
TIMEOUT = 900.0


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Stack:
    """The four Airflow components as child processes sharing one AIRFLOW_HOME."""

    def __init__(self, home: Path, env: dict[str, str], port: int) -> None:
        self.home, self.env, self.port = home, env, port
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.starts: dict[str, int] = {}

    def start(self, name: str) -> None:
        self.starts[name] = self.starts.get(name, 0) + 1
        log = open(self.home / f"{name}-{self.starts[name]}.log", "wb")  # noqa: SIM115 (the child keeps it)
        command = [str(BIN / "airflow"), name, *(["--port", str(self.port)] if name == "api-server" else [])]
        self.procs[name] = subprocess.Popen(command, env=self.env, cwd=self.home, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def stop(self, name: str, sig: int = signal.SIGTERM, wait: float = 60) -> None:
        proc = self.procs.pop(name)
        os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name, wait=20)

    def logs(self, name: str) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.home.glob(f"{name}-*.log")))


class Api:
    def __init__(self, base: str) -> None:
        self.base = base
        self.session = requests.Session()

    def login(self) -> None:
        token = requests.post(f"{self.base}/auth/token", json={"username": "admin", "password": "admin"}, timeout=30)
        token.raise_for_status()
        self.session.headers["Authorization"] = f"Bearer {token.json()['access_token']}"

    def get(self, path: str, **params: Any) -> Any:
        response = self.session.get(f"{self.base}/api/v2/{path}", params=params, timeout=30)
        response.raise_for_status()
        return response.json()

    def trigger(self, dag_id: str, body: dict[str, Any]) -> None:
        """Create a DAG run. SQLite makes the api-server wait while the other components write, at
        times past the read timeout: the request is then sent again, and a run that the first
        request did create (409, same logical date) counts as created."""
        for attempt in range(3):
            try:
                response = self.session.post(f"{self.base}/api/v2/dags/{dag_id}/dagRuns", json=body, timeout=30)
            except requests.Timeout:
                say(f"  triggering {dag_id}: no answer in 30 s (attempt {attempt + 1}); again")
                continue
            if response.status_code != 409:
                response.raise_for_status()
            return
        raise SystemExit(f"e2e: the api-server did not create a run of {dag_id}")

    def unpause(self, dag_id: str) -> None:
        response = self.session.patch(f"{self.base}/api/v2/dags/{dag_id}", json={"is_paused": False}, timeout=30)
        response.raise_for_status()

    def runs(self) -> list[dict[str, Any]]:
        """Every DAG run, those the scheduler made on its own (a schedule, an asset event) included."""
        return list(self.get("dags/~/dagRuns", limit=100)["dag_runs"])

    def task_log(self, ti: dict[str, Any], try_number: int) -> str:
        path = (f"dags/{ti['dag_id']}/dagRuns/{ti['dag_run_id']}/taskInstances/{ti['task_id']}/logs/{try_number}")
        return json.dumps(self.get(path, map_index=ti["map_index"], full_content="true"))

    def task_instances(self, run: dict[str, Any]) -> list[dict[str, Any]]:
        found = self.get(f"dags/{run['dag_id']}/dagRuns/{run['dag_run_id']}/taskInstances", limit=100)
        return list(found["task_instances"])


def wait_for(what: str, check: Callable[[], Any], timeout: float = 120, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except (requests.RequestException, KeyError, ValueError):
            value = None
        if value:
            return value
        time.sleep(every)
    raise SystemExit(f"e2e: timed out waiting for {what}")


def environment(home: Path, port: int, connection: str) -> dict[str, str]:
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({"admin": "admin"}))
    return {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "example_dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",  # the scenario unpauses what it runs
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}?timeout=30",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        "AIRFLOW__API__SECRET_KEY": secrets.token_hex(32),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
        "AIRFLOW__SCHEDULER__DAG_DIR_LIST_INTERVAL": "5",
        "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
        "AIRFLOW_CONN_ANALYTICS_DEFAULT": connection,
    }


def main() -> int:
    from analytics_provider.testing import AnalyticsEmulator

    home = Path(tempfile.mkdtemp(prefix="analytics-e2e-"))
    exports = home / "exports"
    port = free_port()
    say(f"AIRFLOW_HOME {home}")
    with AnalyticsEmulator(job_duration=JOB_SECONDS, rate_limit_frame=10) as emulator:
        env = environment(home, port, emulator.connection_json())
        say(f"emulator at {emulator.base_url}; jobs take {JOB_SECONDS:g} s")
        subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=env, cwd=home, check=True, capture_output=True)
        stack = Stack(home, env, port)
        try:
            return run_scenario(stack, emulator, exports)
        finally:
            stack.stop_all()
            if os.environ.get("E2E_KEEP") != "1":
                shutil.rmtree(home, ignore_errors=True)


def run_scenario(stack: Stack, emulator: Any, exports: Path) -> int:
    for name in ("api-server", "scheduler", "dag-processor", "triggerer"):
        stack.start(name)
    api = Api(f"http://127.0.0.1:{stack.port}")
    wait_for("the api-server", lambda: api.get("monitor/health")["metadatabase"]["status"] == "healthy", 180)
    api.login()
    wait_for("the example DAGs to be parsed", lambda: all(api.get(f"dags/{d}")["dag_id"] for d in DAGS), 180)
    for dag_id in (*DAGS, *CONSUMERS):
        api.unpause(dag_id)
    say(f"stack healthy, DAGs parsed; unpaused {', '.join((*DAGS, *CONSUMERS))}")

    emulator.inject("download_export", status=403)  # the first export's first download fails: its task retries
    confs = {
        DAGS[0]: {"export_dir": str(exports / "after-load")},
        DAGS[1]: {},
        DAGS[2]: {"export_root": f"file://{exports / 'scheduled'}"},
    }
    for dag_id, conf in confs.items():  # a logical date, as the UI gives: the example DAGs' paths use {{ ds }}
        api.trigger(dag_id, {"logical_date": datetime.now(timezone.utc).isoformat(), "conf": conf})
    say(f"triggered {', '.join(DAGS)}")

    def deferred_with_pending_job() -> bool:
        states = [ti["state"] for run in api.runs() for ti in api.task_instances(run)]
        pending = [j for j in emulator.jobs if j.status in ("created", "queued", "running")]
        return "deferred" in states and bool(pending)

    def polled_since(moment: float) -> bool:
        return any(r.operation in JOB_READS and r.time > moment for r in emulator.requests)

    wait_for("a deferred task with a pending job", deferred_with_pending_job, 300, 0.5)
    wait_for("the triggerer to poll", lambda: polled_since(0), 120, 0.2)
    say("a wait is deferred with its job pending and polled: SIGKILL the triggerer")
    stack.stop("triggerer", signal.SIGKILL)
    time.sleep(3)
    restarted = time.time()
    stack.start("triggerer")
    wait_for("the new triggerer to take the waits over", lambda: polled_since(restarted), 180, 0.2)
    say("triggerer started again and polls")
    wait_for("a deferred wait with its job pending", deferred_with_pending_job, 300, 0.5)
    say("SIGTERM the triggerer mid-wait")
    stack.stop("triggerer", signal.SIGTERM)
    restarted = time.time()
    stack.start("triggerer")
    wait_for("the new triggerer to take the waits over", lambda: polled_since(restarted), 180, 0.2)
    say("triggerer started again and polls")

    def all_finished() -> list[dict[str, Any]] | None:
        runs = api.runs()
        if len({r["dag_id"] for r in runs}) < len(DAGS) or any(r["state"] in ("queued", "running") for r in runs):
            return None
        return runs

    runs = wait_for("every DAG run to finish", all_finished, TIMEOUT, 2)
    return report(api, runs, emulator, stack)


def report(api: Api, runs: list[dict[str, Any]], emulator: Any, stack: Stack) -> int:
    job_tis = []
    print()
    for run in runs:
        tis = api.task_instances(run)
        print(f"{run['dag_id']:<34} {run['dag_run_id'][:40]:<40} {run['state']}")
        for ti in sorted(tis, key=lambda t: (t["task_id"], t["map_index"])):
            label = ti["task_id"] + (f"[{ti['map_index']}]" if ti["map_index"] >= 0 else "")
            print(f"    {label:<32} {ti['state']:<8} try {ti['try_number']}  {ti['operator']}")
            if ti["operator"] in JOB_OPERATORS:
                job_tis.append(ti)
    submits = [r for r in emulator.requests if r.operation and r.method == "POST" and r.status < 300
               and any(j.operation == r.operation for j in emulator.jobs)]
    retried = [ti for ti in job_tis if ti["try_number"] > 1]
    resumed = [ti for ti in retried if "Submitted job" in api.task_log(ti, 1)]  # its job existed before the retry
    triggerer = stack.logs("triggerer")
    blocked = triggerer.count("async thread was blocked")
    print()
    print(f"DAG runs: {len(runs)}, green: {sum(r['state'] == 'success' for r in runs)}")
    print(f"job tasks: {len(job_tis)}; jobs submitted (counted on the emulator): {len(submits)}; "
          f"jobs: {len(emulator.jobs)}")
    def label(ti: dict[str, Any]) -> str:
        return f"{ti['dag_id']}.{ti['task_id']}" + (f"[{ti['map_index']}]" if ti["map_index"] >= 0 else "")

    print(f"job tasks retried: {', '.join(label(t) for t in retried) or 'none'}")
    print(f"  of which retried after their job was submitted (no new job on the retry): "
          f"{', '.join(label(t) for t in resumed) or 'none'}")
    print(f"triggerer starts: {stack.starts['triggerer']}; 'async thread was blocked' warnings: {blocked}")
    batches = [r for r in emulator.requests if r.operation == "list_jobs"]
    looked = sum(len(r.query.get("ids[]", [])) for r in batches)
    alone = sum(r.operation == "get_job" for r in emulator.requests)
    print(f"job reads: {len(batches)} List Jobs requests for {looked} looks (the triggerers); "
          f"{alone} GET /jobs/{{id}} (the workers' waits)")
    ok = (
        bool(batches)
        and all(r["state"] == "success" for r in runs)
        and len(submits) == len(job_tis) == len(emulator.jobs)
        and bool(resumed)
        and blocked == 0
    )
    print("e2e: PASSED" if ok else "e2e: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
