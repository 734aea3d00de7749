"""``make e2e``: the example DAGs, and failures, on the stack production runs.

PostgreSQL as Airflow's database and CeleryExecutor on Redis (both from Debian's packages,
installed when missing, started on loopback), two Celery workers, two triggerers, scheduler,
dag-processor and api-server; the emulator as its own process; a forward proxy through which
every call to the service goes (``HTTP_PROXY`` for every process, the api-server in
``NO_PROXY``). Scenarios, each asserted and counted on the emulator and in Airflow's database:

1. every example DAG green, every wait deferred, the waits spread over both triggerers, one
   export's first download refused so that its task is retried after its job was submitted;
2. ``kill -9`` of the triggerer holding the most waits: the other adopts them, the runs finish;
3. ``kill -9`` of a Celery worker (its whole process tree) during a ``deferrable=False`` wait:
   after the heartbeat timeout the retry reconnects to the job, one submit;
4. a fan-out of 200 mapped deferred exports on one key, the scheduler restarted mid-run: all
   green, 429s under 1%;
5. the scheduled exports' second day: the asset table holds as many rows as after the first;
6. access synced from a PostgreSQL table, twice (the second run writes nothing);
7. reviewed deliveries (``scripts/e2e_review.py``): rejected, changed between review and apply,
   approved; the review page in headless Chromium (Debian's), logged in as the REST API is, shows
   the plan's rows (its screenshot: ``review-page.png`` in the run's folder);
8. the "Try it locally" commands of docs/reviewed_changes.rst run as written (``scripts/try_locally.py``:
   an Airflow home, database, api-server and DAG run of their own, on SQLite; ``make try-locally``
   runs them alone), after the other scenarios: the run's only test of them, off CI's longest path
   (the version matrix), where a test of the suite would run in every Airflow cell.

Then: jobs on the emulator equal the tasks that submit one, the proxy saw every call the
emulator answered (workers' and triggerers' User-Agents both), and no log holds an ERROR line or
a traceback but those the injected failures explain. Stops everything it started, by process id.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import requests

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SUPPORT = Path(__file__).resolve().parent / "e2e_support"
sys.path.insert(0, str(REPO))  # the test suite's forward proxy
from tests.hostile.proxy import ForwardProxy  # noqa: E402

DAGS = ("analytics_after_warehouse_load", "analytics_post_deploy_publish", "analytics_scheduled_exports")
# queued by the examples' assets (the last by the dashboard that analytics_after_warehouse_load refreshes)
CONSUMERS = ("analytics_preload_on_warehouse_table", "analytics_ship_exported_files",
             "analytics_export_when_dashboard_fresh", "analytics_refresh_what_loads_wrote")
# queued by the load's orders table asset: its refresh takes its tables from the run's asset events
FROM_ASSETS = ("analytics_refresh_what_loads_wrote", "refresh_what_loads_wrote")
ORDERS_DASHBOARDS = ["Sales overview", "Regional sales"]  # on orders, and on the query model built on it
REFRESH_OPERATOR = "AnalyticsRefreshImpactedOperator"  # submits a job per impacted data source and dashboard
JOB_OPERATORS = (
    "AnalyticsExportWidgetOperator", "AnalyticsPreloadDashboardOperator", "AnalyticsBustDataSourceCacheOperator",
    "AnalyticsPublishAmlProjectOperator", "AnalyticsExecuteDataScheduleOperator",
)
ACCESS_DAG = "analytics_access_sync"
ACCESS_WRITES = ("upsert_user_attribute_entries", "create_group", "add_user_to_group", "remove_user_from_group",
                 "invite_users")
JOB_SECONDS = 8.0
FAN_OUT_JOB_SECONDS = 40.0
HEARTBEAT_TIMEOUT = 20  # seconds; Airflow's default is 300: a crashed worker's task waits that long
TRIGGERERS = ("triggerer-1", "triggerer-2")
WORKERS = ("worker-1", "worker-2")
RECORD_START = re.compile(r"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[\d{4}-\d\d-\d\d|\{)")
ERROR_RECORD = re.compile(r"\bERROR\b|\[error\s|\"level\": ?\"error\"|Traceback \(most recent call last\)")
# ERROR records the scenario causes on purpose, each with why; any other fails the run.
EXPECTED_ERRORS = {
    "the injected 403 on the first download (its task retries)":
        re.compile(r"Task failed with exception[\s\S]*\b403\b"),
    "the worker killed mid-task: the scheduler's heartbeat timeout":
        re.compile(r"Detected a task instance without a heartbeat[\s\S]*e2e_worker_wait"),
    "the reviewed run whose service state changed between review and apply (its apply refuses)":
        re.compile(r"stale plan: plan again"),
    "the worker killed mid-task: its executor's report":
        re.compile(r"reported that the task instance <TaskInstance: e2e_worker_wait\.export [^>]*> finished with state "
                   r"failed"),
}


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, check: Callable[[], Any], timeout: float = 120, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except (requests.RequestException, KeyError, ValueError, OSError):
            value = None
        if value:
            return value
        time.sleep(every)
    raise SystemExit(f"e2e: timed out waiting for {what}")


class Processes:
    """Child processes, each in its own process group with its log in ``home``; stopped by pid."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.starts: Counter[str] = Counter()
        # CPU-seconds each component's processes used, by name without its number
        self.cpu: defaultdict[str, float] = defaultdict(float)

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None,
              user: str | None = None) -> subprocess.Popen[bytes]:
        self.starts[name] += 1
        log = open(self.home / f"{name}-{self.starts[name]}.log", "wb")  # noqa: SIM115 (the child keeps it)
        if user is not None:
            command = ["runuser", "-u", user, "--", *command]
        proc = subprocess.Popen(command, env=env, cwd=self.home, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs[name] = proc
        return proc

    def stop(self, name: str, sig: int = signal.SIGTERM, wait: float = 60) -> None:
        proc = self.procs.pop(name)
        self.cpu[name.rstrip("-0123456789")] += cpu_seconds(proc.pid)
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):
            self.stop(name, wait=20)
        mine = os.times()
        self.cpu["e2e.py (proxy, checks)"] = mine.user + mine.system
        say("CPU-seconds by component (what the run cost; a killed process's tree counts up to its kill): "
            + ", ".join(f"{name} {seconds:.0f}" for name, seconds in sorted(self.cpu.items(), key=lambda kv: -kv[1])))

    def report(self, lines: int = 15) -> None:
        """Each process's state and the end of its log: what a failed run leaves to read."""
        for name, proc in self.procs.items():
            code = proc.poll()
            log = self.home / f"{name}-{self.starts[name]}.log"
            tail = log.read_text(errors="replace").splitlines()[-lines:] if log.is_file() else []
            say(f"-- {name}: {'running' if code is None else f'exited with {code}'}; the end of {log.name}:")
            print("\n".join("   | " + line for line in tail), flush=True)

    def logs(self, prefix: str = "") -> dict[str, str]:
        return {p.name: p.read_text(errors="replace") for p in sorted(self.home.glob(f"{prefix}*.log"))}


def cpu_seconds(pid: int) -> float:
    """The CPU time a process and its descendants have used so far: its own and its ended children's,
    and each live descendant's (Airflow's task processes start sessions of their own, not trees of
    their own: they are still descendants)."""
    import psutil

    try:
        top = psutil.Process(pid)
        tree = [top, *top.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for proc in tree:
        with suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def debian_package(binary: str, package: str) -> None:
    """Install ``package`` from Debian's archive when ``binary`` is missing (as root, as CI runs)."""
    if Path(binary).exists() or shutil.which(binary):
        return
    if os.geteuid() != 0:
        raise SystemExit(f"e2e: {binary} is missing; install Debian's {package} (apt-get install {package})")
    say(f"installing {package} from Debian's packages")
    subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", package], check=True,
                   capture_output=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def postgres_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    if not found:
        debian_package("/usr/lib/postgresql/15/bin/postgres", "postgresql")
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    return found[-1].parent


def start_postgres(procs: Processes, home: Path) -> str:
    """A PostgreSQL cluster of its own on 127.0.0.1 (as the ``postgres`` user when run as root)."""
    bindir = postgres_bin()
    data = home / "pgdata"
    data.mkdir()
    user = "postgres" if os.geteuid() == 0 else None
    if user:
        shutil.chown(data, user)
        os.chmod(home, 0o755)
    port = free_port()
    initdb = [str(bindir / "initdb"), "-D", str(data), "--auth=trust", "--username=airflow", "--encoding=UTF8"]
    subprocess.run((["runuser", "-u", user, "--"] if user else []) + initdb, check=True, capture_output=True)
    procs.start("postgres", [str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(data),
                             "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=400", "-c", "fsync=off",
                             "-c", "synchronous_commit=off"], user=user)
    import psycopg2

    def ready() -> bool:
        try:
            psycopg2.connect(host="127.0.0.1", port=port, user="airflow", dbname="postgres").close()
        except psycopg2.OperationalError:
            return False
        return True

    wait_for("PostgreSQL", ready, 60, 0.3)
    admin = psycopg2.connect(host="127.0.0.1", port=port, user="airflow", dbname="postgres")
    admin.autocommit = True
    admin.cursor().execute("CREATE DATABASE airflow")
    admin.cursor().execute("CREATE DATABASE warehouse")  # the access example's source (WAREHOUSE)
    admin.close()
    say(f"PostgreSQL {bindir.parent.name} on 127.0.0.1:{port}")
    return f"postgresql+psycopg2://airflow@127.0.0.1:{port}/airflow"


def start_redis(procs: Processes) -> str:
    debian_package("redis-server", "redis-server")
    port = free_port()
    procs.start("redis", [shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no"])

    def ready() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")

    wait_for("Redis", ready, 30, 0.2)
    say(f"Redis on 127.0.0.1:{port}")
    return f"redis://127.0.0.1:{port}/0"


class Emulator:
    """The emulator as its own process, read through its control endpoints."""

    def __init__(self, procs: Processes) -> None:
        proc = procs.start("emulator", [sys.executable, "-m", "analytics_provider.testing.emulator",
                                        "--job-duration", str(JOB_SECONDS), "--rate-limit-frame", "10"])
        log = procs.home / "emulator-1.log"
        text = wait_for("the emulator", lambda: "Serving" in log.read_text() and log.read_text(), 60, 0.2)
        assert proc.poll() is None
        fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line and not line.startswith("AIR"))
        self.base_url = fields["base_url"].strip()
        self.files_url = fields["files_url"].strip()
        self.connection = text.split("AIRFLOW_CONN_ANALYTICS_DEFAULT='", 1)[1].split("'\n", 1)[0]
        self.session = requests.Session()
        self.session.trust_env = False  # the e2e itself talks to it directly

    def control(self, method: str, name: str, **body: Any) -> Any:
        root = self.base_url.removesuffix("/api/v2")
        response = self.session.request(method, f"{root}/_emulator/{name}", json=body or None, timeout=60)
        response.raise_for_status()
        return response.json()["result"]

    def jobs(self) -> list[dict[str, Any]]:
        return list(self.control("GET", "jobs"))

    def requests(self) -> list[dict[str, Any]]:
        return list(self.control("GET", "requests"))


class Database:
    """Airflow's metadata database, read directly (what the scenario counts)."""

    def __init__(self, url: str) -> None:
        import psycopg2

        self.connection = psycopg2.connect(url.replace("postgresql+psycopg2", "postgresql"))
        self.connection.autocommit = True

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with self.connection.cursor() as cursor:
            cursor.execute(sql, args)
            return list(cursor.fetchall())

    def triggers_by_triggerer(self) -> dict[str, int]:
        rows = self.rows("SELECT j.hostname, count(*) FROM trigger t JOIN job j ON j.id = t.triggerer_id GROUP BY 1")
        return {host: n for host, n in rows}

    def running_triggerers(self) -> set[str]:
        rows = self.rows("SELECT hostname FROM job WHERE job_type = 'TriggererJob' AND state = 'running'")
        return {host for (host,) in rows}

    def unassigned_triggers(self) -> int:
        return int(self.rows("SELECT count(*) FROM trigger WHERE triggerer_id IS NULL")[0][0])

    def task_instances(self, dag_id: str | None = None) -> list[dict[str, Any]]:
        columns = ("dag_id", "run_id", "task_id", "map_index", "state", "try_number", "operator", "hostname",
                   "start_date", "end_date")
        sql = f"SELECT {', '.join(columns)} FROM task_instance" + (" WHERE dag_id = %s" if dag_id else "")
        return [dict(zip(columns, row, strict=True)) for row in self.rows(sql, *([dag_id] if dag_id else []))]

    def runs(self) -> list[tuple[str, str, str]]:
        return [(d, r, s) for d, r, s in self.rows("SELECT dag_id, run_id, state FROM dag_run")]

    def refresh_jobs(self, operator: str) -> int:
        """The jobs the refresh tasks submitted, as their results (XCom) list them: each action's own, and each
        ``already_existed`` answer it met (a job of its own on the service, listed by the earlier job it named)."""
        results = self.rows(
            "SELECT x.value FROM xcom x JOIN task_instance t ON t.dag_id = x.dag_id AND t.run_id = x.run_id "
            "AND t.task_id = x.task_id AND t.map_index = x.map_index WHERE x.key = 'return_value' AND t.operator = %s",
            operator)
        values = [xcom_value(v) for (v,) in results]
        return sum((job.get("job_id") is not None) + len(job.get("earlier") or ())
                   for value in values for job in value.get("jobs", []))

    def results(self, dag_id: str, task_id: str) -> list[dict[str, Any]]:
        """The return values (XCom) of a task in each of its DAG's runs."""
        rows = self.rows("SELECT value FROM xcom WHERE dag_id = %s AND task_id = %s AND key = 'return_value'",
                         dag_id, task_id)
        return [xcom_value(v) for (v,) in rows]

    def asset_rows(self) -> list[str]:
        return sorted(uri for (uri,) in self.rows("SELECT uri FROM asset"))


def xcom_value(value: Any) -> Any:
    """An XCom row's value: JSON text, or already decoded (a JSON column)."""
    return json.loads(value) if isinstance(value, str | bytes) else value


USER, PASSWORD = "admin", "admin"  # the simple auth manager's one user (simple_auth)


def simple_auth(home: Path) -> dict[str, str]:
    """Airflow's settings for the simple auth manager with one user and its password, as production
    logs in (the REST API and the browser: :meth:`Api.login`)."""
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    return {"AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",  # user:role
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords)}


class Api:
    def __init__(self, base: str) -> None:
        self.base = base
        self.session = requests.Session()
        self.session.trust_env = False
        self.token: str | None = None
        """The user's JWT once logged in: the REST API's bearer and the UI's ``_token`` cookie. Never shown."""

    def login(self) -> None:
        token = self.session.post(f"{self.base}/auth/token", json={"username": USER, "password": PASSWORD},
                                  timeout=30)
        token.raise_for_status()
        self.token = str(token.json()["access_token"])
        self.session.headers["Authorization"] = f"Bearer {self.token}"

    def get(self, path: str, **params: Any) -> Any:
        response = self.session.get(f"{self.base}/api/v2/{path}", params=params, timeout=30)
        response.raise_for_status()
        return response.json()

    def trigger(self, dag_id: str, conf: dict[str, Any], logical_date: datetime | None = None) -> str:
        body = {"logical_date": (logical_date or datetime.now(timezone.utc)).isoformat(), "conf": conf}
        response = self.session.post(f"{self.base}/api/v2/dags/{dag_id}/dagRuns", json=body, timeout=60)
        response.raise_for_status()
        return str(response.json()["dag_run_id"])

    def unpause(self, dag_id: str) -> None:
        response = self.session.patch(f"{self.base}/api/v2/dags/{dag_id}", json={"is_paused": False}, timeout=30)
        response.raise_for_status()

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int, map_index: int = -1) -> str:
        path = f"dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}"
        return json.dumps(self.get(path, map_index=map_index, full_content="true"))


class Stack:
    """The Airflow components, named as Airflow's database sees them (``[core] hostname_callable``)."""

    def __init__(self, procs: Processes, env: dict[str, str], port: int) -> None:
        self.procs, self.env, self.port = procs, env, port
        # each worker and triggerer serves its logs on a port of its own (on one host here)
        self.log_ports = {name: str(free_port()) for name in (*TRIGGERERS, *WORKERS)}

    def start(self, name: str) -> None:
        airflow = str(BIN / "airflow")
        command = {
            "api-server": [airflow, "api-server", "--port", str(self.port)],
            "scheduler": [airflow, "scheduler"],
            "dag-processor": [airflow, "dag-processor"],
        }.get(name)
        if name.startswith("triggerer"):
            command = [airflow, "triggerer"]
        elif name.startswith("worker"):
            command = [airflow, "celery", "worker", "--celery-hostname", f"{name}@e2e", "--concurrency", "8",
                       "--without-mingle", "--without-gossip"]
        assert command is not None, name
        own = {"E2E_PROCESS_NAME": name}
        if name in self.log_ports:
            setting = "TRIGGER" if name.startswith("triggerer") else "WORKER"
            own[f"AIRFLOW__LOGGING__{setting}_LOG_SERVER_PORT"] = self.log_ports[name]
        self.procs.start(name, command, env={**self.env, **own})

    def kill(self, name: str) -> None:
        """SIGKILL to the process and its whole tree: Airflow's task processes start sessions of
        their own, so the process group is not enough."""
        import psutil

        tree = psutil.Process(self.procs.procs[name].pid).children(recursive=True)
        self.procs.stop(name, signal.SIGKILL)
        for child in tree:
            with suppress(psutil.NoSuchProcess):
                child.kill()


def environment(home: Path, dags: Path, port: int, database: str, broker: str, connection: str,
                proxy: str, service: str) -> dict[str, str]:
    tmp = home / "tmp"
    tmp.mkdir()
    keep = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
    return {
        **keep,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(SUPPORT), os.environ.get("PYTHONPATH")])),
        "AIRFLOW_HOME": str(home),
        "TMPDIR": str(tmp),  # the examples' default folders are under it
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__CORE__HOSTNAME_CALLABLE": "e2e_hostname.hostname",
        "AIRFLOW__CORE__PARALLELISM": "64",
        "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "64",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database,
        "AIRFLOW__CELERY__BROKER_URL": broker,
        "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + database.replace("+psycopg2", ""),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": f"http://localhost:{port}",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://localhost:{port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        "AIRFLOW__API__SECRET_KEY": secrets.token_hex(32),
        **simple_auth(home),
        # a heartbeat every 3 s against a timeout of 20 s: each is a request to the api-server and a write to
        # the database, for every running task (at one a second the api-server was the second-costliest part)
        "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "3",
        "AIRFLOW__SCHEDULER__DAG_DIR_LIST_INTERVAL": "5",
        # the DAG files never change during the run: parsed once, not again every 30 s (each round of
        # re-parsing every file cost CPU that the run's tasks and CI's other steps need)
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT),
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
        "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
        "AIRFLOW_CONN_ANALYTICS_DEFAULT": connection,
        "ANALYTICS_SERVICE": service,  # the service the dashboard assets are on (analytics_export_when_dashboard_fresh)
        # analytics_access_sync reads its rows from PostgreSQL (a database of the same cluster)
        "AIRFLOW_CONN_ANALYTICS_WAREHOUSE": database.replace("postgresql+psycopg2", "postgres").rsplit("/", 1)[0]
        + "/warehouse",
        # every call to the service through the proxy; Airflow's own calls to its api-server not
        "HTTP_PROXY": proxy,
        "HTTPS_PROXY": proxy,
        "NO_PROXY": "localhost",
    }


def dags_folder(home: Path) -> Path:
    folder = home / "dags"
    shutil.copytree(REPO / "example_dags", folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(SUPPORT / "e2e_dags.py", folder / "e2e_dags.py")
    shutil.copy(SUPPORT / "e2e_reviewed.py", folder / "e2e_reviewed.py")  # reviewed deliveries (scripts/e2e_review.py)
    return folder


@contextmanager
def measured(what: str, figures: dict[str, Any]) -> Iterator[None]:
    start = time.monotonic()
    yield
    figures[f"{what} (s)"] = round(time.monotonic() - start, 1)


def install_only() -> int:
    """What the run needs from Debian's packages (PostgreSQL, Redis, Chromium), installed and nothing
    run: CI fetches it while other steps run."""
    postgres_bin()
    debian_package("redis-server", "redis-server")
    debian_package("chromium", "chromium")
    debian_package("curl", "curl")  # the docs' "Try it locally" commands use it
    say("e2e: PostgreSQL, Redis, Chromium and curl are installed")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--install-only"]:
        return install_only()
    started = time.monotonic()
    # stopped (CI stops the other steps when one fails): stop the stack it started, as on any exit
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    home = Path(tempfile.mkdtemp(prefix="analytics-e2e-"))
    say(f"AIRFLOW_HOME {home}")
    procs = Processes(home)
    with ExitStack() as cleanup:
        cleanup.callback(lambda: None if os.environ.get("E2E_KEEP") == "1" else shutil.rmtree(home, True))
        cleanup.callback(procs.stop_all)
        database = start_postgres(procs, home)
        broker = start_redis(procs)
        emulator = Emulator(procs)
        proxy = cleanup.enter_context(ForwardProxy())
        say(f"emulator at {emulator.base_url} (jobs take {JOB_SECONDS:g} s); proxy at {proxy.url()}")
        port = free_port()
        env = environment(home, dags_folder(home), port, database, broker, emulator.connection, proxy.url(),
                          emulator.base_url)
        subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=env, cwd=home, check=True, capture_output=True)
        stack = Stack(procs, env, port)
        for name in ("api-server", "scheduler", "dag-processor", *TRIGGERERS, *WORKERS):
            stack.start(name)
        try:
            code = Scenario(stack, emulator, proxy, Database(database), home).run()
        except SystemExit:  # a wait timed out
            procs.report()
            raise
        say(f"e2e took {time.monotonic() - started:.0f} s")
        return code


class Scenario:
    def __init__(self, stack: Stack, emulator: Emulator, proxy: ForwardProxy, db: Database, home: Path) -> None:
        self.stack, self.emulator, self.proxy, self.db, self.home = stack, emulator, proxy, db, home
        self.api = Api(f"http://127.0.0.1:{stack.port}")
        self.figures: dict[str, Any] = {}
        self.failures: list[str] = []
        self.spread: Counter[str] = Counter()  # the most triggers each triggerer held at once

    def check(self, ok: bool, what: str) -> None:
        say(("ok    " if ok else "FAILED ") + what)
        if not ok:
            self.failures.append(what)

    def watch_triggers(self) -> None:
        for host, n in self.db.triggers_by_triggerer().items():
            self.spread[host] = max(self.spread[host], n)

    def wait_runs(self, dag_ids: set[str], timeout: float = 900) -> None:
        def finished() -> bool:
            self.watch_triggers()
            runs = [r for r in self.db.runs() if r[0] in dag_ids]
            return bool(runs) and {r[0] for r in runs} >= dag_ids and all(
                s not in ("queued", "running") for _, _, s in runs)

        wait_for(f"the runs of {', '.join(sorted(dag_ids))} to finish", finished, timeout, 1)

    def run(self) -> int:
        api = self.api
        wait_for("the api-server", lambda: api.get("monitor/health")["metadatabase"]["status"] == "healthy", 240)
        api.login()
        wanted = (*DAGS, *CONSUMERS, "e2e_worker_wait", "e2e_fan_out", ACCESS_DAG)
        wait_for("the DAGs to be parsed", lambda: all(api.get(f"dags/{d}")["dag_id"] for d in wanted), 240)
        for dag_id in wanted:
            api.unpause(dag_id)
        say("stack healthy, DAGs parsed and unpaused")
        self.examples_and_triggerer_kill()
        self.worker_kill()
        self.fan_out_and_scheduler_restart()
        self.second_day()
        self.access_from_postgres()
        self.reviewed_deliveries()
        self.totals()
        self.docs_try_locally()
        for name, value in self.figures.items():
            print(f"  {name}: {value}")
        print("e2e: PASSED" if not self.failures else f"e2e: FAILED ({len(self.failures)}): {self.failures}")
        return 0 if not self.failures else 1

    def examples_and_triggerer_kill(self) -> None:
        say("== 1, 2: the example DAGs; kill -9 of the triggerer holding the most waits")
        self.emulator.control("POST", "inject", operation="download_export", status=403)
        exports = self.home / "exports"
        self.day_one = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=1)
        confs = {
            DAGS[0]: {"export_dir": str(exports / "after-load")},
            DAGS[1]: {},
            DAGS[2]: {"export_root": f"file://{exports / 'scheduled'}"},
        }
        for dag_id, conf in confs.items():
            self.api.trigger(dag_id, conf, self.day_one if dag_id == DAGS[2] else None)

        # Which triggerer takes a new wait is a race (the first to look takes every unassigned one),
        # so both holding waits at once cannot be awaited; the failover needs one that holds waits
        # while the other runs, and then both have held waits (checked below).
        def held_while_the_other_runs() -> bool:
            self.watch_triggers()
            holding = {host for host, n in self.db.triggers_by_triggerer().items() if n > 0}
            return bool(holding) and self.db.running_triggerers() >= set(TRIGGERERS)

        def pending_job() -> bool:
            return any(j["status"] in ("created", "queued", "running") for j in self.emulator.jobs())

        wait_for("waits held by a triggerer while the other runs, with a job pending",
                 lambda: held_while_the_other_runs() and pending_job(), 300, 0.5)
        held = self.db.triggers_by_triggerer()
        victim = max(held, key=lambda host: held[host])
        killed = time.monotonic()
        self.stack.kill(victim)
        say(f"waits per triggerer {held}; SIGKILL {victim}")
        survivor = next(t for t in TRIGGERERS if t != victim)

        def adopted() -> bool:
            now = self.db.triggers_by_triggerer()
            return victim not in now and now.get(survivor, 0) > 0 and self.db.unassigned_triggers() == 0

        wait_for(f"{survivor} to adopt {victim}'s waits", adopted, 180, 0.5)
        self.figures["triggerer failover: waits adopted after (s)"] = round(time.monotonic() - killed, 1)
        self.stack.start(victim)
        self.wait_runs(set(DAGS))
        self.wait_runs(set(CONSUMERS))  # queued by the examples' assets
        runs = [r for r in self.db.runs() if r[0] in (*DAGS, *CONSUMERS)]
        self.check(all(s == "success" for _, _, s in runs), f"every example run green: {runs}")
        refreshed = self.db.results(*FROM_ASSETS)
        self.check(bool(refreshed) and all(
            r["tables"] == ["analytics.public.orders"] and [d["title"] for d in r["dashboards"]] == ORDERS_DASHBOARDS
            for r in refreshed), f"{FROM_ASSETS[0]} refreshed exactly the loaded table's dashboards: "
            f"{[(r['tables'], [d['title'] for d in r['dashboards']]) for r in refreshed]}")
        self.check(all(self.spread[t] > 0 for t in TRIGGERERS), f"waits held by both triggerers: {dict(self.spread)}")
        retried = [ti for ti in self.db.task_instances() if ti["operator"] in JOB_OPERATORS and ti["try_number"] > 1]
        resumed = [ti for ti in retried if "Submitted job" in self.api.task_log(
            ti["dag_id"], ti["run_id"], ti["task_id"], 1, ti["map_index"])]
        self.check(bool(resumed), f"a job task retried after its job was submitted: {[t['task_id'] for t in resumed]}")
        self.day_one_assets = self.db.asset_rows()

    def worker_kill(self) -> None:
        say("== 3: kill -9 of the Celery worker running a deferrable=False wait")
        before = len(self.emulator.jobs())
        # a job that outlasts the heartbeat timeout, so that the retry finds it still running
        self.emulator.control("POST", "set_job_duration", seconds=HEARTBEAT_TIMEOUT * 4)
        run_id = self.api.trigger("e2e_worker_wait", {"folder": str(self.home / "worker-wait")})

        def running_with_job() -> dict[str, Any] | None:
            mine: list[dict[str, Any] | None] = [
                t for t in self.db.task_instances("e2e_worker_wait") if t["run_id"] == run_id]
            (ti,) = mine or [None]
            fresh = [j for j in self.emulator.jobs()[before:] if j["status"] in ("queued", "running")]
            return ti if ti and ti["state"] == "running" and ti["hostname"] and fresh else None

        ti = wait_for("the worker-side wait with its job running", running_with_job, 180, 0.3)
        self.emulator.control("POST", "set_job_duration", seconds=JOB_SECONDS)
        worker = ti["hostname"]
        killed = time.monotonic()
        self.stack.kill(worker)
        say(f"SIGKILL {worker} and its task processes")
        self.stack.start(worker)

        def second_try() -> bool:
            (now,) = [t for t in self.db.task_instances("e2e_worker_wait") if t["run_id"] == run_id]
            return now["try_number"] >= 2 and now["state"] in ("running", "success", "deferred")

        wait_for("the retry to start", second_try, HEARTBEAT_TIMEOUT * 6, 0.5)
        self.figures["worker crash: retry started after (s)"] = round(time.monotonic() - killed, 1)
        self.wait_runs({"e2e_worker_wait"})
        (final,) = [t for t in self.db.task_instances("e2e_worker_wait") if t["run_id"] == run_id]
        submits = [j for j in self.emulator.jobs()[before:] if j["operation"] == "submit_widget_export"]
        log = self.api.task_log("e2e_worker_wait", run_id, "export", final["try_number"])
        self.check(final["state"] == "success", f"the killed worker's task green on try {final['try_number']}")
        self.check(len(submits) == 1, f"one submit for the killed worker's task: {len(submits)}")
        self.check("Reconnecting to existing job" in log, "the retry reconnected to the existing job")

    def fan_out_and_scheduler_restart(self) -> None:
        say("== 4: 200 mapped deferred exports on one key; the scheduler restarted mid-run")
        before_requests = len(self.emulator.requests())
        start = time.monotonic()
        # jobs long enough that the waits pile up in the triggerers however slowly two busy workers
        # start 200 tasks (each task's start costs seconds of CPU; with 8 s jobs, fewer than 20 were
        # ever deferred at once on a loaded machine)
        self.emulator.control("POST", "set_job_duration", seconds=FAN_OUT_JOB_SECONDS)
        run_id = self.api.trigger("e2e_fan_out", {"folder": str(self.home / "fan-out")})

        def some_deferred() -> bool:
            states = Counter(t["state"] for t in self.db.task_instances("e2e_fan_out") if t["run_id"] == run_id)
            return states["deferred"] >= 20

        wait_for("the fan-out's waits to defer", some_deferred, 300, 0.5)
        self.emulator.control("POST", "set_job_duration", seconds=JOB_SECONDS)  # the jobs submitted from now on
        say("SIGTERM the scheduler mid-run, then start it again")
        self.stack.procs.stop("scheduler", signal.SIGTERM)
        self.stack.start("scheduler")
        self.wait_runs({"e2e_fan_out"}, 1500)
        self.figures["fan-out of 200: run took (s)"] = round(time.monotonic() - start, 1)
        tis = [t for t in self.db.task_instances("e2e_fan_out") if t["run_id"] == run_id]
        answered = self.emulator.requests()[before_requests:]
        limited = sum(r["status"] == 429 for r in answered)
        share = limited / max(1, len(answered))
        self.figures["fan-out: requests, 429s"] = f"{len(answered)}, {limited} ({share:.2%})"
        self.check(len(tis) == 200 and all(t["state"] == "success" for t in tis),
                   f"200 mapped exports green: {Counter(t['state'] for t in tis)}")
        self.check(share < 0.01, f"429s under 1% of the fan-out's requests: {share:.2%}")
        self.check(len(list((self.home / "fan-out" / "fan-out").glob("*.csv"))) == 200, "200 files written")

    def second_day(self) -> None:
        say("== 5: the scheduled exports' second day")
        self.api.trigger(DAGS[2], {"export_root": f"file://{self.home / 'exports' / 'scheduled'}"},
                         self.day_one + timedelta(days=1))
        self.wait_runs({DAGS[2]})
        self.wait_runs(set(CONSUMERS))
        days = sorted(d for (d,) in self.db.rows(
            "SELECT DISTINCT (e.extra::jsonb)->>'date' FROM asset_event e JOIN asset a ON a.id = e.asset_id "
            "WHERE a.uri LIKE 'analytics://exports/%%' AND e.source_run_id LIKE 'manual%%'"))
        after = self.db.asset_rows()
        self.figures["asset rows after day 1, day 2"] = f"{len(self.day_one_assets)}, {len(after)}"
        self.check(len(days) == 2, f"two days of scheduled exports (the events' dates): {days}")
        self.check(after == self.day_one_assets, f"no asset row added by the second day: {after}")
        self.check(not [uri for uri in after if uri.startswith("file:")], "no asset per file")

    def access_from_postgres(self) -> None:
        say("== 6: access follows a PostgreSQL table, twice (the second run writes nothing)")
        writes = []
        for _ in range(2):
            seen = len(self.emulator.requests())
            self.api.trigger(ACCESS_DAG, {})
            self.wait_runs({ACCESS_DAG})
            writes.append(Counter(r["operation"] for r in self.emulator.requests()[seen:]
                                  if r["operation"] in ACCESS_WRITES))
        self.figures["access sync writes: first run, second run"] = f"{dict(writes[0])}, {dict(writes[1])}"
        self.check(writes[0] == {"upsert_user_attribute_entries": 1, "create_group": 1, "add_user_to_group": 2},
                   f"the first access sync wrote its plan: {dict(writes[0])}")
        self.check(not writes[1], f"the second access sync wrote nothing: {dict(writes[1])}")

    def reviewed_deliveries(self) -> None:
        say("== 7: reviewed deliveries: rejected, changed between review and apply, approved")
        from e2e_review import DAG_ID, SCREENSHOT, reviewed_runs  # scripts/, beside this file

        self.review_dag = DAG_ID

        def scheduler_log() -> str:
            return "".join(self.stack.procs.logs("scheduler").values())

        # The browser logs in as the REST API did (the user's token as the UI's cookie); the picture
        # stays in the run's folder (python scripts/e2e_review.py --docs refreshes the docs' one).
        # The change another hand makes to the service between review and apply goes through the
        # proxy too, which counts every call.
        session, direct = self.emulator.session, dict(self.emulator.session.proxies)
        session.proxies = {"http": self.proxy.url(), "https": self.proxy.url()}
        try:
            self.failures += reviewed_runs(self.api, self.emulator, scheduler_log, self.home / SCREENSHOT)
        finally:
            session.proxies = direct

    def docs_try_locally(self) -> None:
        say("== 8: the docs' \"Try it locally\" commands, as written (scripts/try_locally.py)")
        from try_locally import try_locally  # scripts/, beside this file

        debian_package("curl", "curl")
        tried = try_locally(timeout=600)
        self.figures["the docs' Try it locally commands (s)"] = round(tried.seconds, 1)
        self.check(tried.ok, tried.summary)
        if not tried.ok:
            print(tried.errors, flush=True)

    def totals(self) -> None:
        say("== totals")
        review = getattr(self, "review_dag", None)
        runs = [r for r in self.db.runs() if r[0] != review]  # one reviewed run fails by design
        self.check(all(s == "success" for _, _, s in runs), f"all {len(runs)} other DAG runs green")
        tis = [t for t in self.db.task_instances() if t["operator"] in JOB_OPERATORS]
        refreshed = self.db.refresh_jobs(REFRESH_OPERATOR)
        jobs = self.emulator.jobs()
        self.check(len(jobs) == len(tis) + refreshed,
                   f"jobs on the emulator ({len(jobs)}) = job tasks ({len(tis)}) + the refreshes' jobs ({refreshed})")
        answered = self.emulator.requests()
        seen = [s for s in self.proxy.seen if s.target.startswith((self.emulator.base_url, self.emulator.files_url))]
        agents = Counter(s.headers.get("User-Agent", "").split("(", 1)[-1].split(";")[0] for s in seen)
        self.figures["service calls: answered by the emulator, seen by the proxy"] = f"{len(answered)}, {len(seen)}"
        self.figures["proxy: calls by side"] = dict(agents)
        api_seen = [s for s in seen if s.target.startswith(self.emulator.base_url)]
        self.check(len(seen) >= len(answered) and bool(api_seen), "the proxy saw every call the emulator answered")
        self.check(agents["worker"] > 0 and agents["triggerer"] > 0, "workers and triggerers both went through it")
        self.check(not self.unexplained_errors(), "no ERROR line or traceback but those the failures explain")

    def unexplained_errors(self) -> list[str]:
        """Log records (a line and its continuation lines) at ERROR or with a traceback, less those
        the scenario's own failures explain."""
        explained: Counter[str] = Counter()
        unexplained = []
        logs = self.stack.procs.logs()
        logs.update({str(p.relative_to(self.home)): p.read_text(errors="replace")
                     for p in (self.home / "logs").rglob("*") if p.is_file()})
        for name, text in logs.items():
            if name.startswith(("postgres", "redis", "emulator")):
                continue
            for record in log_records(text):
                if not ERROR_RECORD.search(record):
                    continue
                reason = next((r for r, pattern in EXPECTED_ERRORS.items() if pattern.search(record)), None)
                if reason:
                    explained[reason] += 1
                    say(f"  explained ({reason}): {name}: {' | '.join(record.splitlines()[:3])[:400]}")
                else:
                    unexplained.append(f"{name}: {record[:600]}")
        self.figures["ERROR records explained by the injected failures"] = dict(explained)
        for record in unexplained[:20]:
            print("   ", record)
        return unexplained


def log_records(text: str) -> Iterator[str]:
    """A log's records: a line that starts with a timestamp (or is a JSON record) and the lines after
    it that do not (a traceback's)."""
    record: list[str] = []
    for line in text.splitlines():
        if RECORD_START.match(line) and record:
            yield "\n".join(record)
            record = []
        record.append(line)
    if record:
        yield "\n".join(record)


if __name__ == "__main__":
    sys.exit(main())
