"""The demo: run example DAGs 1 and 2 through Airflow against the local emulator, deferrable.

Starts the emulator, points the ``analytics_default`` connection at it, runs
``airflow dags test`` for the after-load DAG and the scheduled-export DAG (their waits go
through the triggerer's code path), then shows where the files are and the head of the csv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / ".demo"
DAGS = ("analytics_after_warehouse_load", "analytics_scheduled_exports")


def main() -> int:
    from analytics_provider.testing import AnalyticsEmulator

    exports = DEMO / "exports"
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(DEMO / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "example_dags"),
        "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    }
    with AnalyticsEmulator(job_duration=1.5) as emulator:
        env["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json()
        print(f"Emulator of the analytics service at {emulator.base_url}")
        run(["airflow", "db", "migrate"], env, quiet=True)
        confs = {
            DAGS[0]: {"export_dir": str(exports / "after-load")},
            DAGS[1]: {"export_root": f"file://{exports / 'scheduled'}"},
        }
        for dag_id in DAGS:
            print(f"\n== airflow dags test {dag_id} (deferrable tasks)")
            run(["airflow", "dags", "test", dag_id, "--conf", json.dumps(confs[dag_id])], env)
            print(f"   {dag_id}: success")
        jobs = len(emulator.jobs)
    files = sorted(p for p in exports.rglob("*") if p.is_file())
    print(f"\nThe emulator ran {jobs} jobs. Exported files:")
    for path in files:
        print(f"  {path.relative_to(REPO)}  ({path.stat().st_size} bytes)")
    csv = next((p for p in files if p.suffix == ".csv"), None)
    if csv is not None:
        print(f"\nFirst lines of {csv.relative_to(REPO)}:")
        for line in csv.read_text(encoding="utf-8").splitlines()[:6]:
            print("  " + line)
    return 0


def run(command: list[str], env: dict[str, str], quiet: bool = False) -> None:
    executable = Path(sys.executable).parent / command[0]
    result = subprocess.run(
        [str(executable), *command[1:]], env=env, cwd=REPO, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-4000:])
        sys.stderr.write(result.stderr[-4000:])
        raise SystemExit(f"{' '.join(command)} failed with exit status {result.returncode}")
    if not quiet:
        lines = [ln for ln in result.stdout.splitlines() if " rows, " in ln]
        for line in lines:
            print("   " + line.strip()[:160])
        deferred = (result.stdout + result.stderr).count("Pausing task as DEFERRED")
        print(f"   {deferred} task(s) deferred their wait to the trigger")


if __name__ == "__main__":
    sys.exit(main())
