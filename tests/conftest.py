"""Test session set-up: an isolated Airflow home, set before anything imports airflow."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

# descriptors left open fail a module (fd_guard); in_flight: .ci/run; api_app: one api-server process a session
pytest_plugins = ["fd_guard", "in_flight", "api_app"]

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
    parser.addoption("--suite", choices=("all", "airflow", *TIERS), action="append", default=[],
                     help="all tests (the default); or those that can differ between Airflow versions (airflow: "
                          "the files no tier file lists) and/or one tier's files (repeat the option for several): "
                          + "; ".join(f"{name}: {tier.listed_in}" for name, tier in TIERS.items()))


# -- which tests can differ between Airflow versions ------------------------------------------------------------
#
# A test file runs in every cell of the version matrix unless a tier file lists it. Three tiers run once per
# Python instead (``--suite NAME``), and what each tier's files may not use is refused, so a file listed wrongly
# fails loudly, naming what it used and the list:
#
# * tests/airflow_free.txt: files that use nothing of Airflow but the exception class our errors derive from
#   (the chart compiler, the emulator over plain HTTP, the I/O-free core). In a run of this tier alone, every
#   other import of Airflow is refused.
# * tests/airflow_host.txt: files for which Airflow is only where the hook's connection and the secrets masker
#   come from (the hook, its drivers, downloads, plans, against the emulator or a hostile server). In a run of
#   this tier alone, importing our operators, sensors or triggers is refused.
# * tests/airflow_behaviour.txt: tests of what our operators, sensors and triggers do, where Airflow's part is
#   the one every cell proves: DAG runs through ``dag.test()`` (on the worker or deferred, as the example DAGs'
#   tests run them on every Airflow), operators executed with a fake task instance, triggers run in the
#   test's own event loop (their rows and upgrades are tested in every cell). In every run (``make test``
#   too), such a test may not read OpenLineage events or asset events (the ``openlineage_events`` fixture,
#   ``analytics_provider.testing.records``' asset readers): what Airflow reports about a run differs between
#   versions, and those tests run in every cell.
#
# Every other file (the example DAGs, lineage, assets, task state, retries, durable tasks, the review step, the
# connection form and test, trigger rows and the triggerer's loop, the operators' arguments, fresh homes, the
# installs without OpenLineage) runs in every cell (``--suite airflow``). A new
# test file is in every cell until a tier file lists it.


class Tier:
    """A list of test files that run once per Python, and what its tests may not use."""

    def __init__(self, listed_in: str, why: str, *, refused_modules: tuple[str, ...] = (),
                 allowed: tuple[str, ...] = (), refused_fixtures: tuple[str, ...] = (),
                 refused_calls: tuple[str, ...] = ()) -> None:
        self.listed_in, self.why = listed_in, why
        self.refused_modules, self.allowed = refused_modules, allowed  # refused at import, in a run of the tier alone
        self.refused_fixtures, self.refused_calls = refused_fixtures, refused_calls  # refused in each of its tests

    def entries(self) -> tuple[str, ...]:
        path = _REPO / self.listed_in
        if not path.is_file():  # a copy of this set-up elsewhere (tests/unit/test_suite_is_whole.py)
            return ()
        lines = path.read_text(encoding="utf-8").splitlines()
        return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))

    def lists(self, path: Path) -> bool:
        relative = path.resolve().relative_to(_REPO).as_posix() + ("/" if path.is_dir() else "")
        return any(relative == entry or relative.startswith(entry) for entry in self.entries())

    def holds_listed(self, folder: Path) -> bool:
        prefix = folder.resolve().relative_to(_REPO).as_posix() + "/"
        return any(entry.startswith(prefix) for entry in self.entries())

    def refusal(self, used: str) -> str:
        return (f"{self.listed_in} lists this test, and its tests {self.why}; this one uses {used}: take it off "
                f"that list (a file listed in no tier file runs on every Airflow)")

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        """A ``sys.meta_path`` finder: refuses the modules this tier may not use, not yet imported."""
        if name in sys.modules or not any(name == r or name.startswith(r + ".") for r in self.refused_modules):
            return
        raise ImportError(self.refusal(name))

    def start(self) -> None:
        for name in self.allowed:  # what the tier may use, imported before the refusal starts
            __import__(name)
        sys.meta_path.insert(0, self)

    def stop(self) -> None:
        if self in sys.meta_path:  # Airflow's own exit handlers import what they need
            sys.meta_path.remove(self)

    def guard(self, item: pytest.Item, monkeypatch: pytest.MonkeyPatch) -> None:
        """Refuse, for one test of this tier, the fixtures and calls the tier may not use."""
        for name in set(self.refused_fixtures) & set(getattr(item, "fixturenames", ())):
            pytest.fail(self.refusal(f"the fixture {name}"), pytrace=False)
        for dotted in self.refused_calls:
            module, attribute = dotted.rsplit(".", 1)

            def refused(*args: Any, _what: str = dotted, **kwargs: Any) -> Any:
                pytest.fail(self.refusal(_what), pytrace=False)

            monkeypatch.setattr(f"{module}.{attribute}", refused)


_RECORDS = "analytics_provider.testing.records"
TIERS: dict[str, Tier] = {
    "airflow-free": Tier(
        "tests/airflow_free.txt", "must not depend on Airflow's version",
        refused_modules=("airflow",), allowed=("analytics_provider.exceptions",)),
    "airflow-host": Tier(
        "tests/airflow_host.txt", "use Airflow only for a connection and its secrets masker (no operator, sensor "
        "or trigger)", refused_modules=("analytics_provider.operators", "analytics_provider.sensors",
                                        "analytics_provider.triggers")),
    "airflow-behaviour": Tier(
        "tests/airflow_behaviour.txt", "run our operators, sensors and triggers and read no lineage or asset event "
        "(what Airflow reports about a run differs between versions)",
        refused_fixtures=("openlineage_events",),
        refused_calls=(f"{_RECORDS}.asset_events", f"{_RECORDS}.queued_asset_uris", f"{_RECORDS}.asset_table")),
}


def _suites(config: pytest.Config) -> list[str]:
    chosen = config.getoption("--suite") or ["all"]
    return ["all"] if "all" in chosen else chosen


def pytest_configure(config: pytest.Config) -> None:
    suites = _suites(config)
    tier = TIERS.get(suites[0]) if len(suites) == 1 else None
    if tier is not None and tier.refused_modules:  # import refusals hold only in a run of the tier alone
        tier.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    for tier in TIERS.values():
        tier.stop()
    if not os.environ.get("ANALYTICS_TESTS_KEEP_HOME"):  # each session's home is 5 to 30 MB; set it to look inside
        shutil.rmtree(_HOME, ignore_errors=True)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    suites = _suites(config)
    if suites == ["all"] or not collection_path.is_relative_to(_REPO / "tests"):
        return None
    listed = [name for name, tier in TIERS.items() if tier.lists(collection_path)]
    if ("airflow" in suites and not listed) or any(name in suites for name in listed):
        return None
    if collection_path.is_dir() and any(TIERS[name].holds_listed(collection_path)
                                        for name in suites if name in TIERS):
        return None  # a folder holding a listed file
    return True


@pytest.fixture(autouse=True)
def _tier_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusals of the tier that lists this test's file (``Tier.guard``), in every run."""
    path = Path(str(request.node.path))
    for tier in TIERS.values():
        if (tier.refused_fixtures or tier.refused_calls) and path.is_relative_to(_REPO) and tier.lists(path):
            tier.guard(request.node, monkeypatch)


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
