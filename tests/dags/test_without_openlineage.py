"""Without the ``openlineage`` extra: the DAGs run, and nothing of OpenLineage is imported.

A fresh virtual environment sees this environment's packages through a mirror of its
site-packages that leaves out the OpenLineage provider and client (as if they were never
installed), and runs an example DAG through ``dag.test()`` there (on a copy of the session's
freshly migrated database), with the OpenLineage transport configured as in the other DAG tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from .conftest import EXAMPLE_DAGS, fresh_database

pytestmark = pytest.mark.timeout(960)  # its DAG run in a venv without the extra has 900 s (about 35 CPU-s:
# beside two burners and other work, load 15 on two cores, 300 s were not enough)

HIDDEN_DISTRIBUTIONS = ("openlineage", "apache_airflow_providers_openlineage")  # packages and their dist-info
HIDDEN_PROVIDER = ("airflow", "providers", "openlineage")

RUN_A_DAG = """
import importlib.util, json, sys, traceback


class OpenLineageImportSpy:
    # records which of our files try to import OpenLineage (Airflow's own compat shims may try)
    attempts = []

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "openlineage" or name.startswith("airflow.providers.openlineage"):
            ours = [f.filename for f in traceback.extract_stack()
                    if "analytics_provider" in f.filename or "example_dags" in f.filename]
            if ours:
                self.attempts.append([name, ours[-1]])
        return None


sys.meta_path.insert(0, OpenLineageImportSpy())
missing = [m for m in ("openlineage", "airflow.providers.openlineage") if importlib.util.find_spec(m) is None]
try:
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db  # Airflow 3.2+
except ImportError:
    from airflow.models.dagbag import DagBag
    try:
        from airflow.models.dagbag import sync_bag_to_db  # Airflow 3.1
    except ImportError:  # Airflow 3.0, 2.11
        def sync_bag_to_db(bag, bundle_name, bundle_version):
            bag.sync_to_db(bundle_name, bundle_version) if airflow.__version__[0] == "3" else bag.sync_to_db()
import airflow
from analytics_provider.testing.airflow_db import one_execution_api_per_process
one_execution_api_per_process()  # as in the session's DAG tests (Airflow 3.0 to 3.2: an API per task, else)
bag = DagBag(dag_folder=sys.argv[1])
sync_bag_to_db(bag, "dags-folder", None)
dag = bag.get_dag("analytics_after_warehouse_load")
for task in dag.tasks:  # the emulator's jobs take 0.2 s: a look every 0.1 s, not every second
    if hasattr(task, "poll_interval"):
        task.poll_interval = 0.1
dag_run = dag.test(run_conf={"export_dir": sys.argv[2]})
print("REPORT " + json.dumps({
    "missing": missing,
    "import_errors": {k: str(v) for k, v in bag.import_errors.items()},
    "state": str(dag_run.state),
    "openlineage_modules": sorted(m for m in sys.modules
                                  if m.split(".")[0] == "openlineage" or m.startswith("airflow.providers.openlineage")),
    "our_attempts": OpenLineageImportSpy.attempts,
}))
"""


def mirror_without_openlineage(site: Path, mirror: Path) -> None:
    """Symlink the entries of ``site`` into ``mirror``, leaving out the OpenLineage packages."""
    mirror.mkdir(parents=True)
    for entry in site.iterdir():
        if not entry.name.startswith(HIDDEN_DISTRIBUTIONS):
            (mirror / entry.name).symlink_to(entry)
    # airflow/ and airflow/providers/ become folders of symlinks, without providers/openlineage
    for depth in range(1, len(HIDDEN_PROVIDER)):
        folder = mirror.joinpath(*HIDDEN_PROVIDER[:depth])
        folder.unlink()
        folder.mkdir()
        for entry in site.joinpath(*HIDDEN_PROVIDER[:depth]).iterdir():
            if entry.name != HIDDEN_PROVIDER[depth] or depth + 1 < len(HIDDEN_PROVIDER):
                (folder / entry.name).symlink_to(entry)  # a folder on the way is replaced next round


def test_dags_run_and_import_nothing_of_openlineage_without_the_extra(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path
):
    mirror = tmp_path / "site-packages"
    mirror_without_openlineage(Path(sysconfig.get_paths()["purelib"]), mirror)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    venv_site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    Path(venv_site, "mirror.pth").write_text(f"import site; site.addsitedir({str(mirror)!r})\n")

    home = tmp_path / "airflow-home"
    home.mkdir()
    fresh_database(home / "airflow.db")  # migrated, as db.resetdb() leaves it
    events = tmp_path / "events.jsonl"
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(events)}),
    }
    result = subprocess.run(
        [python, "-c", RUN_A_DAG, str(EXAMPLE_DAGS), str(tmp_path / "exports")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # the report's line (Airflow 3.4 may log its database's closing after it)
    report = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("REPORT "))[7:])
    assert report["missing"] == ["openlineage", "airflow.providers.openlineage"]  # truly absent there
    assert report["import_errors"] == {}
    assert report["state"] == "success"
    assert report["openlineage_modules"] == []
    assert report["our_attempts"] == []
    assert len(list((tmp_path / "exports").rglob("*.csv"))) == 1
    assert not events.exists()
