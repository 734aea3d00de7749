"""Test session set-up: an isolated Airflow home, set before anything imports airflow."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_HOME = Path(tempfile.mkdtemp(prefix="analytics-provider-tests-"))
_REPO = Path(__file__).resolve().parent.parent

os.environ["AIRFLOW_HOME"] = str(_HOME)
# The example DAGs' default folders live in the temporary directory: one of its own per session
# (per xdist worker), so that sessions running side by side never share a file.
(_HOME / "tmp").mkdir()
os.environ["TMPDIR"] = str(_HOME / "tmp")
tempfile.tempdir = None  # gettempdir() reads TMPDIR again
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(_REPO / "example_dags")
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_HOME / 'airflow.db'}"
os.environ.pop("AIRFLOW_CONN_ANALYTICS_DEFAULT", None)
