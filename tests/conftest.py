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
    parser.addoption("--suite", choices=("all", "airflow", *TIERS), default="all",
                     help="all tests (default); only those that can differ between Airflow versions (listed in "
                          "neither tier file); or only one tier's files, with what that tier may not use refused: "
                          + "; ".join(f"{name}: {tier.listed_in}" for name, tier in TIERS.items()))


# -- which tests can differ between Airflow versions ------------------------------------------------------------
#
# A test file runs in every cell of the version matrix unless a tier file lists it. Two tiers run once per Python
# instead, each in a run of its own (``--suite NAME``) in which what its files may not use is refused at import,
# so a file listed wrongly fails there, loudly, naming the module and the list:
#
# * tests/airflow_free.txt: files that use nothing of Airflow but the exception class our errors derive from
#   (the chart compiler, the emulator over plain HTTP, the I/O-free core). Every other import of Airflow is
#   refused.
# * tests/airflow_host.txt: files for which Airflow is only where the hook's connection and the secrets masker
#   come from (the hook, its drivers, downloads and uploads, access and deliveries planning, against the
#   emulator or a hostile server). Our operators, sensors and triggers are refused: anything that puts a task
#   or a trigger into Airflow's hands (parsing, running, deferring, XCom, assets, lineage, task state) is
#   what differs between versions, and runs in every cell.
#
# Every other file (the DAG tests, operators, triggers, connection form and test, lineage, assets) runs in
# every cell (``--suite airflow``). A new test file is in every cell until a tier file lists it.


class Tier:
    """A list of test files that run once per Python, and the modules its runs refuse."""

    def __init__(self, listed_in: str, refused: tuple[str, ...], allowed: tuple[str, ...], why: str) -> None:
        self.listed_in = listed_in
        self.refused, self.allowed, self.why = refused, allowed, why

    @property
    def path(self) -> Path:
        return _REPO / self.listed_in

    def entries(self) -> tuple[str, ...]:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))

    def lists(self, path: Path) -> bool:
        relative = path.resolve().relative_to(_REPO).as_posix() + ("/" if path.is_dir() else "")
        return any(relative == entry or relative.startswith(entry) for entry in self.entries())

    def holds_listed(self, folder: Path) -> bool:
        prefix = folder.resolve().relative_to(_REPO).as_posix() + "/"
        return any(entry.startswith(prefix) for entry in self.entries())

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        """A ``sys.meta_path`` finder: refuses the modules this tier may not use, not yet imported."""
        if name in sys.modules or not any(name == r or name.startswith(r + ".") for r in self.refused):
            return
        raise ImportError(
            f"{name}: this run holds the tests listed in {self.listed_in}, which {self.why}, and one of them imports "
            f"{name}: take it off that list (a file listed in no tier file runs on every Airflow)"
        )

    def start(self) -> None:
        for name in self.allowed:  # what the tier may use, imported before the refusal starts
            __import__(name)
        sys.meta_path.insert(0, self)

    def stop(self) -> None:
        if self in sys.meta_path:  # Airflow's own exit handlers import what they need
            sys.meta_path.remove(self)


TIERS: dict[str, Tier] = {
    "airflow-free": Tier(
        "tests/airflow_free.txt", refused=("airflow",), allowed=("analytics_provider.exceptions",),
        why="must not depend on Airflow's version"),
    "airflow-host": Tier(
        "tests/airflow_host.txt",
        refused=("analytics_provider.operators", "analytics_provider.sensors", "analytics_provider.triggers"),
        allowed=(), why="use Airflow only for a connection and its secrets masker (no operator, sensor or trigger)"),
}


def pytest_configure(config: pytest.Config) -> None:
    tier = TIERS.get(config.getoption("--suite"))
    if tier is not None:
        tier.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    for tier in TIERS.values():
        tier.stop()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    suite = config.getoption("--suite")
    if suite == "all" or not collection_path.is_relative_to(_REPO / "tests"):
        return None
    if suite == "airflow":
        return True if any(tier.lists(collection_path) for tier in TIERS.values()) else None
    tier = TIERS[suite]
    if tier.lists(collection_path):
        return None
    if collection_path.is_dir() and tier.holds_listed(collection_path):  # a folder holding a listed file
        return None
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
