"""The demo: run example DAGs 1 and 2 through Airflow against the local emulator, deferrable.

Starts the emulator, points the ``analytics_default`` connection at it, runs
``airflow dags test`` for the after-load DAG and the scheduled-export DAG (their waits go
through the trigger's code path), then reads from Airflow's metadata database which task
instances deferred to a trigger, shows where the files are and the head of the csv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / ".demo"
DAGS = ("analytics_after_warehouse_load", "analytics_scheduled_exports")
AIRFLOW_ENV = {
    "AIRFLOW_HOME": str(DEMO / "airflow"),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "example_dags"),
    "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
    "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
}


def main() -> int:
    os.environ.update(AIRFLOW_ENV)  # before anything imports airflow: the records below are read here
    from analytics_provider.testing import AnalyticsEmulator
    from analytics_provider.testing.records import deferrals

    exports = DEMO / "exports"
    env = dict(os.environ)
    with AnalyticsEmulator(job_duration=1.5) as emulator:
        env["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json()
        print(f"Emulator of the analytics service at {emulator.base_url}")
        run(["airflow", "db", "migrate"], env, "airflow db migrate (.demo/airflow)")
        confs = {
            DAGS[0]: {"export_dir": str(exports / "after-load")},
            DAGS[1]: {"export_root": f"file://{exports / 'scheduled'}"},
        }
        for dag_id in DAGS:
            print(f"\n== airflow dags test {dag_id} (deferrable tasks)")
            output = run(["airflow", "dags", "test", dag_id, "--conf", json.dumps(confs[dag_id])], env, "   ran")
            for line in (ln for ln in output.splitlines() if " rows, " in ln):
                print("   " + line.strip()[:160])
            deferred = deferrals(dag_id)
            print(f"   {len(deferred)} task(s) deferred their wait to the trigger (Airflow's task instances):")
            for deferral in deferred:
                print(f"     {deferral}")
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


def run(command: list[str], env: dict[str, str], done: str) -> str:
    """Run an Airflow command of this venv; its output is shown only if it fails."""
    executable = Path(sys.executable).parent / command[0]
    start = time.monotonic()
    result = subprocess.run(
        [str(executable), *command[1:]], env=env, cwd=REPO, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-4000:])
        sys.stderr.write(result.stderr[-4000:])
        raise SystemExit(f"{' '.join(command)} failed with exit status {result.returncode}")
    print(f"{done} in {time.monotonic() - start:.0f}s")
    return result.stdout


if __name__ == "__main__":
    sys.exit(main())
