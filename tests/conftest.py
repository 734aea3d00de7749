"""Test session set-up: an isolated Airflow home, set before anything imports airflow."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["fd_guard"]  # a test module that leaves file descriptors open fails (tests/fd_guard.py)

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
# the warehouse of the access example (analytics_access_sync): a real SQLite database
_WAREHOUSE = {"conn_type": "sqlite", "host": str(_HOME / "warehouse.db")}
os.environ["AIRFLOW_CONN_ANALYTICS_WAREHOUSE"] = json.dumps(_WAREHOUSE)
if int(metadata.version("apache-airflow").split(".")[0]) < 3:
    # Airflow 2.11's unit-test mode picks the LocalExecutor, which it refuses on SQLite
    os.environ["AIRFLOW__CORE__EXECUTOR"] = "SequentialExecutor"


# -- skips: said in the summary line, and refused where a run must be whole (`make test`) ----------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--allowed-skips", metavar="FILE", default=None,
                     help="fail the run if a test skips for a reason not listed in FILE (one reason a line)")
    parser.addoption("--suite", choices=("all", "airflow", "airflow-free"), default="all",
                     help="all tests (default); only those that can differ between Airflow versions; or only "
                          f"those listed in {AIRFLOW_FREE.relative_to(_REPO)}, with every other Airflow import refused")


# -- which tests can differ between Airflow versions ------------------------------------------------------------
#
# The test files and folders listed in tests/airflow_free.txt use nothing of Airflow but the exception class
# our errors derive from, so they cannot differ between Airflow versions: a matrix cell runs them once per
# Python (``--suite airflow-free``), the other cells only the rest (``--suite airflow``). A run of
# ``--suite airflow-free`` refuses every other import of Airflow, so a test listed wrongly fails loudly there
# (an ImportError that names the module) instead of being skipped where it matters.

AIRFLOW_FREE = _REPO / "tests" / "airflow_free.txt"


def _airflow_free_paths() -> tuple[str, ...]:
    lines = AIRFLOW_FREE.read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))


def _is_airflow_free(path: Path) -> bool:
    relative = path.resolve().relative_to(_REPO).as_posix() + ("/" if path.is_dir() else "")
    return any(relative == entry or relative.startswith(entry) for entry in _airflow_free_paths())


class _RefuseAirflow:
    """A finder that refuses Airflow's modules not yet imported (``--suite airflow-free``)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if (name == "airflow" or name.startswith("airflow.")) and name not in sys.modules:
            raise ImportError(
                f"{name}: this run holds the tests listed in {AIRFLOW_FREE.relative_to(_REPO)}, which must not "
                f"depend on Airflow's version, and this one imports Airflow's {name}: take it off that list"
            )


_REFUSER = _RefuseAirflow()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--suite") == "airflow-free":
        import analytics_provider.exceptions  # noqa: F401  (Airflow's exception class, the one part allowed)

        sys.meta_path.insert(0, _REFUSER)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _REFUSER in sys.meta_path:  # Airflow's own exit handlers import what they need
        sys.meta_path.remove(_REFUSER)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    suite = config.getoption("--suite")
    if suite == "all" or not collection_path.is_relative_to(_REPO / "tests"):
        return None
    free = _is_airflow_free(collection_path)
    if suite == "airflow":
        return True if free else None
    if free:
        return None
    if collection_path.is_dir():  # a folder holding a listed file
        folder = collection_path.resolve().relative_to(_REPO).as_posix() + "/"
        return None if any(entry.startswith(folder) for entry in _airflow_free_paths()) else True
    return True


def _allowed(config: pytest.Config) -> list[str] | None:
    path = config.getoption("--allowed-skips")
    if path is None:
        return None
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    reasons = Counter(_skip_reason(report) for report in terminalreporter.stats.get("skipped", []))
    if not reasons:
        return
    allowed = _allowed(config)
    unlisted = {r: n for r, n in reasons.items() if allowed is not None and not any(a in r for a in allowed)}
    terminalreporter.write_sep("-", f"{sum(reasons.values())} skipped, by reason")
    for reason, count in reasons.most_common():
        mark = "  NOT ALLOWED" if reason in unlisted else ""
        terminalreporter.write_line(f"{count:5d}  {reason}{mark}")
    if unlisted:
        terminalreporter.write_line(f"{len(unlisted)} skip reason(s) not in {config.getoption('--allowed-skips')}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    allowed = _allowed(session.config)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if allowed is None or reporter is None:
        return
    skipped = [_skip_reason(report) for report in reporter.stats.get("skipped", [])]
    if any(not any(a in reason for a in allowed) for reason in skipped) and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")
