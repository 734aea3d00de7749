"""The demo: run example DAGs 1 and 2 through Airflow against the local emulator, deferrable.

Starts the emulator, points the ``analytics_default`` connection at it, runs
``airflow dags test`` for the after-load DAG and the scheduled-export DAG (their waits go
through the trigger's code path), then reads from Airflow's metadata database which task
instances deferred to a trigger, shows where the files are and the head of the csv. On Airflow
2.11 a triggerer process runs alongside (``dags test`` hands it the waits), and its log says
which waits it ran.

``airflow dags test`` runs the tasks in its own process and writes their logs to its output, not to
files under ``$AIRFLOW_HOME/logs`` as a worker does: the demo keeps each run's output (at INFO)
in ``.demo/<airflow home>/logs/dags-test-<dag id>.log`` and says so.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AIRFLOW_2 = version("apache-airflow").startswith("2.")
DEMO = REPO / ".demo"
DAGS = ("analytics_after_warehouse_load", "analytics_scheduled_exports")
COMMAND_TIMEOUT = 600  # seconds for one Airflow command (a DAG run takes well under a minute)
AIRFLOW_ENV = {
    "AIRFLOW_HOME": str(DEMO / ("airflow-2" if AIRFLOW_2 else "airflow")),  # a database per major version
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "example_dags"),
    "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
    "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
}
LOGS = Path(AIRFLOW_ENV["AIRFLOW_HOME"]) / "logs"


def main() -> int:
    os.environ.update(AIRFLOW_ENV)  # before anything imports airflow: the records below are read here
    from analytics_provider.testing import AnalyticsEmulator
    from analytics_provider.testing.records import deferrals

    exports = DEMO / "exports"
    env = dict(os.environ)
    with AnalyticsEmulator(job_duration=1.5) as emulator:
        env["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json()
        print(f"Emulator of the analytics service at {emulator.base_url}")
        run(["airflow", "db", "migrate"], env, f"airflow db migrate ({Path(env['AIRFLOW_HOME']).relative_to(REPO)})")
        triggerer = None
        if AIRFLOW_2:  # the DAGs in the database first: 2.11 cannot record a first event through an alias else
            run(["airflow", "dags", "reserialize"], env, "airflow dags reserialize")
            triggerer = start_triggerer(env)
        try:
            confs = {
                DAGS[0]: {"export_dir": str(exports / "after-load")},
                DAGS[1]: {"export_root": f"file://{exports / 'scheduled'}"},
            }
            for dag_id in DAGS:
                print(f"\n== airflow dags test {dag_id} (deferrable tasks)")
                task_log = LOGS / f"dags-test-{dag_id}.log"
                output = run(["airflow", "dags", "test", dag_id, "--conf", json.dumps(confs[dag_id])],
                             {**env, "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO"}, "   ran", log=task_log)
                print(f"   its task logs: {task_log.relative_to(REPO)}")
                for line in (ln for ln in output.splitlines() if " rows, " in ln):
                    print("   " + line.strip()[:160])
                deferred = deferrals(dag_id) if triggerer is None else triggerer.ran(dag_id)
                print(f"   {len(deferred)} task(s) deferred their wait to the trigger (Airflow's task instances):")
                for deferral in deferred:
                    print(f"     {deferral}")
        finally:  # the triggerer ends with the demo, also when a DAG fails
            if triggerer is not None:
                triggerer.stop()
        jobs = len(emulator.jobs)
    files = sorted(p for p in exports.rglob("*") if p.is_file())
    print(f"\nThe emulator ran {jobs} jobs. Exported files:")
    for path in files:
        print(f"  {path.relative_to(REPO)}  ({path.stat().st_size} bytes)")
    csv = next((p for p in reversed(files) if p.suffix == ".csv"), None)
    if csv is not None:
        print(f"\nFirst lines of {csv.relative_to(REPO)}:")
        for line in csv.read_text(encoding="utf-8").splitlines()[:6]:
            print("  " + line)
    return 0


class Triggerer:
    """Airflow 2.11's ``airflow triggerer``, its log in ``.demo/triggerer.log``."""

    def __init__(self, env: dict[str, str]) -> None:
        self.log = DEMO / "triggerer.log"
        with self.log.open("wb") as out:
            command = [str(Path(sys.executable).parent / "airflow"), "triggerer"]
            env = {**env, "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO"}  # its "trigger ... completed" lines
            self.proc = subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)

    def ran(self, dag_id: str) -> list[str]:
        """The waits of ``dag_id`` the triggerer completed, from its log lines
        ``trigger <dag>/<run>/<task>/<map index>/<try> (ID n) completed``."""
        text = self.log.read_text(errors="replace")
        found = re.findall(rf"trigger {re.escape(dag_id)}/[^/]+/(\w+)/(-?\d+)/\d+ \(ID \d+\) completed", text)
        return [f"{task}[{index}] in the triggerer process" if index != "-1" else f"{task} in the triggerer process"
                for task, index in found]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def start_triggerer(env: dict[str, str]) -> Triggerer:
    triggerer = Triggerer(env)
    deadline = time.monotonic() + 120
    check = ["airflow", "jobs", "check", "--job-type", "TriggererJob"]
    while subprocess.run([str(Path(sys.executable).parent / check[0]), *check[1:]], env=env, cwd=REPO,
                         capture_output=True, check=False).returncode != 0:
        if time.monotonic() > deadline or triggerer.proc.poll() is not None:
            raise SystemExit(f"the triggerer did not start; its log: {triggerer.log}")
    print("airflow triggerer running (Airflow 2.11: dags test hands it the waits)")
    return triggerer


def run(command: list[str], env: dict[str, str], done: str, log: Path | None = None) -> str:
    """Run an Airflow command of this venv; its output is shown only if it fails, and kept whole in
    ``log`` when given (also when it fails or hangs)."""
    executable = Path(sys.executable).parent / command[0]
    start = time.monotonic()
    try:
        result = subprocess.run(
            [str(executable), *command[1:]], env=env, cwd=REPO, capture_output=True, text=True, check=False,
            timeout=COMMAND_TIMEOUT,
        )
    except subprocess.TimeoutExpired as stuck:
        keep(log, stuck.stdout, stuck.stderr)
        sys.stdout.write(str(stuck.stdout or "")[-4000:])
        raise SystemExit(f"{' '.join(command)} did not end within {COMMAND_TIMEOUT} s") from None
    keep(log, result.stdout, result.stderr)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-4000:])
        sys.stderr.write(result.stderr[-4000:])
        raise SystemExit(f"{' '.join(command)} failed with exit status {result.returncode}")
    print(f"{done} in {time.monotonic() - start:.0f}s")
    return result.stdout


def keep(log: Path | None, stdout: str | bytes | None, stderr: str | bytes | None) -> None:
    """Write a command's output and error output to ``log``."""
    if log is None:
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    text = [s.decode(errors="replace") if isinstance(s, bytes) else s for s in (stdout, stderr) if s]
    log.write_text("".join(s if s.endswith("\n") else s + "\n" for s in text), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
