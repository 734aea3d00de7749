"""The version matrix (``scripts/envs.py``), with ``make test``, runs every test on every Python of the
table and every test that can differ between Airflow versions on every supported Airflow; the README's
table says where each Airflow is tested."""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import envs  # noqa: E402  (scripts/ is not a package)
import test_matrix  # noqa: E402

MAKE_TEST = (envs.NEWEST, envs.MAKE_TEST_PYTHON)
RUNS = {**{cell: set(parts) for cell, parts in envs.CELLS.items()}, MAKE_TEST: {envs.VERSION, envs.ONCE}}


def test_every_python_runs_every_tier_and_every_airflow_its_version_tier() -> None:
    pythons = {python for _, python in RUNS}
    assert all(any(envs.ONCE in parts for (_, py), parts in RUNS.items() if py == python) for python in pythons)
    assert all(any(envs.VERSION in parts for (_, py), parts in RUNS.items() if py == python) for python in pythons)
    assert all(any(envs.VERSION in parts for (af, _), parts in RUNS.items() if af == airflow)
               for airflow in envs.SUPPORTED)
    assert all(python in envs.SUPPORTED[airflow] for airflow, python in RUNS)
    assert MAKE_TEST not in envs.CELLS  # make test's cell is not run twice
    assert all(sum(af == airflow and envs.VERSION in parts for (af, _), parts in RUNS.items()) == 1
               for airflow in envs.SUPPORTED)  # each Airflow's version tier runs once: the Pythons are spread


def test_each_once_per_python_tier_runs_in_exactly_one_place_per_python() -> None:
    once = [python for (_, python), parts in RUNS.items() if envs.ONCE in parts]
    assert sorted(once) == sorted(set(once))


def test_a_cell_runs_the_suites_of_its_parts_each_in_a_process_of_its_own_those_that_wait_first() -> None:
    once = [("airflow-behaviour",), ("airflow-host",), ("airflow-free",)]
    assert test_matrix.suites_of((envs.VERSION,)) == [("airflow",)]
    assert test_matrix.suites_of((envs.ONCE,)) == once
    assert test_matrix.suites_of((envs.VERSION, envs.ONCE)) == [("airflow",), *once]
    runs = test_matrix.runs_of(envs.MATRIX)
    assert sorted((run.airflow, run.python, run.suites) for run in runs) == sorted(
        (*cell, names) for cell, parts in envs.CELLS.items() for names in test_matrix.suites_of(parts))
    versions = sum(envs.VERSION in parts for parts in envs.CELLS.values())
    hosts = [run for run in runs if run.suites == ("airflow-host",)]
    assert runs[:len(hosts)] == hosts  # the runs that mostly wait first (they left a core idle at the end)
    assert [run.suites[0] for run in runs[len(hosts):len(hosts) + versions]] == ["airflow"] * versions  # longest
    assert {run.suites for run in runs[-3:]} == {("airflow-free",)}  # the shortest of those that work last


def test_the_once_per_python_tiers_fail_on_a_skip_the_version_tier_may_skip() -> None:
    version = test_matrix.Run("3.0.6", "3.10", ("airflow",))
    once = test_matrix.Run("3.0.6", "3.10", ("airflow-free",))
    assert "--allowed-skips" not in test_matrix.pytest_args(version)
    assert test_matrix.pytest_args(once)[-2:] == ["--allowed-skips", "tests/allowed_skips.txt"]
    assert "--suite" in test_matrix.pytest_args(once)


def test_the_readmes_table_names_the_pythons_each_airflow_is_tested_on() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| [^|]+ \| [^|]+ \| `constraints/airflow-([^`]+)\.txt` \| ([^|]+) \|$", readme, re.M)
    assert sorted(airflow for airflow, _ in rows) == sorted(envs.SUPPORTED)
    for airflow, tested_on in rows:
        named = set(re.findall(r"\b3\.\d+\b", tested_on.split(";")[0]))
        assert named == {python for af, python in RUNS if af == airflow}, (airflow, tested_on)


def test_the_matrix_leaves_out_the_suites_own_machinery_and_nothing_else() -> None:
    """Each matrix run deselects the tests marked ``suite_itself``; only the file of the suite's own
    machinery carries the mark (a test of the package marked so would run on one Python only)."""
    for run in test_matrix.runs_of(envs.MATRIX):
        args = test_matrix.pytest_args(run)
        assert args[args.index("-m", 2) + 1] == "not suite_itself", args
    marked = sorted(path.relative_to(REPO).as_posix() for path in (REPO / "tests").rglob("test_*.py")
                    if re.search(r"pytest\.mark\.suite_itself\b", path.read_text(encoding="utf-8")))
    assert marked == ["tests/unit/test_suite_is_whole.py"]
