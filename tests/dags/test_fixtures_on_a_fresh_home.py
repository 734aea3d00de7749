"""The README's test of one's own DAG against the emulator works, as written, in a user's project
with a fresh ``AIRFLOW_HOME``: pytest in a new process, outside this repository, nothing migrated first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(660)  # a user's project's pytest on a fresh home has 600 s

USER_DAG = '''
from pathlib import Path

import pendulum
from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators import AnalyticsExportWidgetOperator

with DAG("my_dag", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
    AnalyticsExportWidgetOperator(
        task_id="export_revenue", dashboard="Sales overview", widget="Revenue by region and month",
        output="csv", destination=str(Path(__file__).parents[1] / "exports" / "revenue.csv"), poll_interval=0.1,
    )
'''

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_dag_test() -> str:
    """The README's test of one's own DAG, as written."""
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
    (code,) = [block for block in blocks if "def test_my_dag(" in block]
    return code


def test_a_users_dag_test_runs_on_a_fresh_airflow_home(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "airflow-home"
    (project / "dags").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "dags" / "my_dag.py").write_text(USER_DAG, encoding="utf-8")
    (project / "tests" / "test_my_dag.py").write_text(readme_dag_test(), encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if not name.startswith("AIRFLOW")}  # this suite's
    env |= {"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(project / "dags")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "tests"],
        capture_output=True, text=True, cwd=project, env=env, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout, run.stdout[-3000:]
    assert (home / "airflow.db").is_file()  # the fresh home's own database, nothing of this suite's
    assert (project / "exports" / "revenue.csv").read_text(encoding="utf-8").startswith("month,region,")
