"""The suite is the same in any clone: the vendor's facts are committed, a skip is never silent, and
a module that leaves file descriptors open fails the run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fd_guard import open_descriptors
from vendor_facts import FACTS, source_checksum, vendor_document

from analytics_provider.api.wire.operations import OPERATIONS

# each planted suite runs in a pytest of its own with 300 s; the suite's own machinery is proven by make
# test, and the matrix's runs leave it out (its pytest runs of planted suites cost about 30 CPU-s in each
# run of the free tier, and what they prove does not depend on the Python or the Airflow)
pytestmark = [pytest.mark.timeout(360), pytest.mark.suite_itself]

TESTS = Path(__file__).resolve().parents[1]
OUR_PLUGINS_ONLY = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
"""A run of the suite's own plugins (``conftest.py``, ``fd_guard``, ``in_flight``, ``api_app``) without the installed
ones (hypothesis, anyio, xdist, ...): loading those took about 2 s of CPU a run, and the skips and
descriptors counted here are the suite's own. The runs of ``--suite`` keep them: a plugin that imported
Airflow first would let a test listed as free of it pass."""


def test_the_vendor_facts_are_an_openapi_document_without_prose() -> None:
    document = vendor_document()
    assert re.fullmatch(r"[0-9a-f]{64}", source_checksum())
    operations = [op for item in document["paths"].values() for method, op in item.items()
                  if method in ("get", "post", "put", "delete")]
    assert len(operations) == len(OPERATIONS) == 82
    assert all("operationId" in op and "responses" in op for op in operations)
    text = FACTS.read_text(encoding="utf-8")
    assert not re.search(r'"(summary|description)": "[^"]|"example', text)  # an empty description is required


def _run(tmp_path: Path, allowed: str, temp: Path | None = None) -> subprocess.CompletedProcess[str]:
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    for plugin in ("fd_guard.py", "in_flight.py", "api_app.py"):
        shutil.copy(TESTS / plugin, tmp_path / plugin)
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n\n"
        "def test_runs():\n    pass\n\n"
        "@pytest.mark.skip(reason='needs a thing that is missing')\n"
        "def test_skips():\n    pass\n",
        encoding="utf-8",
    )
    (tmp_path / "allowed.txt").write_text(f"# why each may skip\n{allowed}\n", encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(tmp_path),
         "--allowed-skips", str(tmp_path / "allowed.txt")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**OUR_PLUGINS_ONLY, **({"TMPDIR": str(temp)} if temp else {})},
    )


def test_a_session_removes_its_airflow_home_when_it_ends(tmp_path: Path) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    run = _run(tmp_path, "a thing that is missing", temp)
    assert run.returncode == 0, run.stdout + run.stderr
    assert list(temp.iterdir()) == []


def test_a_skip_not_on_the_list_fails_the_run_and_says_why(tmp_path: Path) -> None:
    run = _run(tmp_path, "a reason nobody gives")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1  needs a thing that is missing  NOT ALLOWED" in run.stdout


def test_a_listed_skip_is_reported_and_passes(tmp_path: Path) -> None:
    run = _run(tmp_path, "a thing that is missing")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 skipped, by reason" in run.stdout and "NOT ALLOWED" not in run.stdout


def _split_run(tmp_path: Path, suite: str) -> subprocess.CompletedProcess[str]:
    """A copy of the suite's set-up with three test files: one listed as free of Airflow that needs
    Airflow's hook, one listed as using Airflow only as a host that builds an operator, one not
    listed."""
    tests = tmp_path / "repo" / "tests"
    tests.mkdir(parents=True)
    shutil.copy(TESTS / "conftest.py", tests / "conftest.py")
    for plugin in ("fd_guard.py", "in_flight.py", "api_app.py"):
        shutil.copy(TESTS / plugin, tests / plugin)
    (tests / "airflow_free.txt").write_text("# listed\ntests/test_listed.py\n", encoding="utf-8")
    (tests / "airflow_host.txt").write_text("# listed\ntests/test_hosted.py\n", encoding="utf-8")
    (tests / "airflow_behaviour.txt").write_text("# listed\ntests/test_dag_run.py\n", encoding="utf-8")
    (tests / "test_dag_run.py").write_text(
        "import pytest\n\n"
        "@pytest.fixture\ndef openlineage_events():\n    return list\n\n"
        "def test_reads_lineage(openlineage_events):\n    assert openlineage_events() == []\n\n"
        "def test_reads_asset_events():\n"
        "    from analytics_provider.testing import records\n"
        "    records.asset_events('a_dag', 'a_run')\n\n"
        "def test_runs_a_dag():\n    pass\n",
        encoding="utf-8",
    )
    (tests / "test_listed.py").write_text(
        "def test_listed_but_needs_airflow():\n"
        "    from analytics_provider.hooks.analytics import AnalyticsHook\n"
        "    assert AnalyticsHook\n",
        encoding="utf-8",
    )
    (tests / "test_hosted.py").write_text(
        "from analytics_provider.hooks.analytics import AnalyticsHook\n\n"
        "def test_hosted_but_builds_an_operator():\n"
        "    from analytics_provider.operators.analytics import AnalyticsExportWidgetOperator\n"
        "    assert AnalyticsHook and AnalyticsExportWidgetOperator\n",
        encoding="utf-8",
    )
    (tests / "test_airflows.py").write_text("def test_airflows():\n    pass\n", encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--suite", suite, str(tests)],
        capture_output=True, text=True, cwd=tests, timeout=300,
    )


def test_a_test_listed_as_free_of_airflow_that_imports_it_fails_loudly(tmp_path: Path) -> None:
    run = _split_run(tmp_path, "airflow-free")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed" in run.stdout and "test_airflows" not in run.stdout and "test_hosted" not in run.stdout
    assert "must not depend on Airflow's version" in run.stdout and "take it off that list" in run.stdout
    assert "test_dag_run" not in run.stdout


def test_a_test_listed_as_hosted_by_airflow_that_builds_an_operator_fails_loudly(tmp_path: Path) -> None:
    run = _split_run(tmp_path, "airflow-host")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed" in run.stdout and "test_airflows" not in run.stdout and "test_listed" not in run.stdout
    assert "tests/airflow_host.txt lists this test" in run.stdout
    assert "this one uses analytics_provider.operators: take it off that list" in run.stdout


def test_a_dag_test_of_the_once_per_python_tier_that_reads_lineage_or_asset_events_fails_loudly(
    tmp_path: Path,
) -> None:
    run = _split_run(tmp_path, "airflow-behaviour")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 1 passed, 1 error" in run.stdout, run.stdout  # the fixture is refused at its set-up
    assert "this one uses the fixture openlineage_events: take it off that list" in run.stdout
    assert "this one uses analytics_provider.testing.records.asset_events: take it off that list" in run.stdout


def test_the_airflow_suite_leaves_out_exactly_the_listed_files(tmp_path: Path) -> None:
    run = _split_run(tmp_path, "airflow")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout, run.stdout


def test_each_listed_test_file_exists_and_is_in_one_tier_only() -> None:
    listed: dict[str, str] = {}
    for name in ("airflow_free.txt", "airflow_host.txt", "airflow_behaviour.txt"):
        lines = (TESTS / name).read_text(encoding="utf-8").splitlines()
        for entry in (line.strip() for line in lines if line.strip() and not line.startswith("#")):
            assert (TESTS.parent / entry).exists(), f"{name} lists {entry}, which is not there"
            assert entry not in listed, f"{entry} is listed in {listed.get(entry)} and {name}"
            listed[entry] = name


@pytest.mark.skipif(open_descriptors() is None, reason="the system cannot list a process's file descriptors")
def test_a_module_that_leaves_sockets_open_fails_the_run_and_names_them(tmp_path: Path) -> None:
    shutil.copy(TESTS / "fd_guard.py", tmp_path / "fd_guard.py")
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["fd_guard"]\n', encoding="utf-8")
    (tmp_path / "test_leaky.py").write_text(
        "import socket\n\nKEPT = []\n\n"
        "def test_leaves_a_hundred_open():\n    KEPT.extend(socket.socket() for _ in range(100))\n",
        encoding="utf-8",
    )
    (tmp_path / "test_tidy.py").write_text(
        "import socket\n\nKEPT = []\n\n"
        "def test_closes_what_it_opens():\n"
        "    for _ in range(100):\n        socket.socket().close()\n\n"
        "def test_keeps_a_few():\n    KEPT.extend(socket.socket() for _ in range(3))\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300, env=OUR_PLUGINS_ONLY,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "3 passed, 1 error" in run.stdout, run.stdout
    assert "test_leaky.py left 100 more file descriptors open than before it" in run.stdout
    assert "new: socket 100" in run.stdout and "test_tidy.py left" not in run.stdout


def test_a_run_names_its_test_in_flight_and_dumps_its_stacks_for_ci(tmp_path: Path) -> None:
    """What .ci/run prints of a step stopped past its budget (tests/in_flight.py)."""
    folder = tmp_path / "in-flight"
    shutil.copy(TESTS / "in_flight.py", tmp_path / "in_flight.py")
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["in_flight"]\n', encoding="utf-8")
    (tmp_path / "test_seen.py").write_text(
        "import os, signal, time\nfrom pathlib import Path\n\n"
        "def test_seen():\n"
        "    mine = Path(os.environ['ANALYTICS_TESTS_IN_FLIGHT']) / str(os.getpid())\n"
        "    text = mine.with_suffix('.test').read_text()\n"
        "    assert text.startswith('test_seen.py::test_seen  (since '), text\n"
        "    os.kill(os.getpid(), signal.SIGUSR1)\n"
        "    for _ in range(100):\n"
        "        if 'in test_seen' in mine.with_suffix('.stacks').read_text():\n"
        "            return\n"
        "        time.sleep(0.05)\n"
        "    raise AssertionError(mine.with_suffix('.stacks').read_text())\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_seen.py"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**OUR_PLUGINS_ONLY, "ANALYTICS_TESTS_IN_FLIGHT": str(folder)},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert [path.suffix for path in folder.iterdir()] == [".stacks"]  # the test's name went when it ended
