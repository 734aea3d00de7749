"""``make test-matrix``: the test suite on every supported Airflow, each in its own venv.

Each cell of ``CELLS`` (``scripts/envs.py``) gets ``.matrix/airflow-<version>-py<python>``,
installed with ``constraints/airflow-<version>.txt`` (reused while the constraints and
``pyproject.toml`` are unchanged), then runs what the table gives it: the tests that can differ
between Airflow versions (``pytest --suite airflow``), and/or, in one cell per Python, the rest:
``--suite airflow-behaviour`` (what our operators, sensors and triggers do, which read no
lineage or asset event), ``--suite airflow-host`` (Airflow only as the connection's home; importing
an operator, a sensor or a trigger fails the test) and ``--suite airflow-free`` (any Airflow import
but its exception class fails the test). With ``make test`` every test runs on every Python and
every test that can differ between Airflow versions on every Airflow (``tests/conftest.py`` says how
a test is classified). Prints one row per cell with its result and wall times; exits non-zero if any
cell failed, pytest's exit code 5 (no test ran) included. ``--cell 3.0.6/3.11`` runs only the cells
named, ``--jobs 3`` three pytest runs at a time, of any cells (each cell's tiers are runs of their own,
those that mostly wait first, then the longest, so that the short ones fill the end; their waits
overlap);
pytest's output is in ``.matrix/logs/``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from envs import CELLS, MATRIX, ONCE, REPO, VERSION, ensure_venv, find_python, python_of, say, test_extras

# the tests of the suite's own machinery (marked suite_itself) run in make test only: they prove nothing
# that differs between Pythons or Airflows, and each spawns pytest runs of its own
PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no", "-m", "not suite_itself"]
LOGS = REPO / ".matrix" / "logs"
SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed|error|errors|skipped|deselected).*?)\s*=*$")


@dataclass
class Result:
    airflow: str
    python: str
    install_s: float = 0.0
    tests_s: float = 0.0
    exit_code: int | None = None
    summary: str = "not run"

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def suites_of(parts: Sequence[str]) -> list[tuple[str, ...]]:
    """The ``--suite`` names of each pytest run of a cell that runs ``parts`` (``VERSION``, ``ONCE``); each
    run is a process of its own (the host and free tiers refuse imports only in a run of the tier alone)."""
    version: list[tuple[str, ...]] = [("airflow",)] if VERSION in parts else []
    return version + ([("airflow-behaviour",), ("airflow-host",), ("airflow-free",)] if ONCE in parts else [])


@dataclass(frozen=True)
class Run:
    """One pytest run of a cell: the unit the matrix schedules, so that a cell's runs fill other cells' gaps."""

    airflow: str
    python: str
    suites: tuple[str, ...]

    @property
    def weight(self) -> int:
        """A rough rank of when the run should start (CI's figures): the host tier's first, as they mostly
        wait (on the hostile servers' stalls and time-outs: 30 CPU-s in 130 s) and, started last, left one
        core idle at the matrix's end (CI, stop 51: 66 s); then the longest, so that the short ones fill
        the end."""
        rank = {"airflow-host": 4, "airflow": 3, "airflow-behaviour": 2, "airflow-free": 1}[self.suites[0]]
        return rank * 2 + ("openlineage" in test_extras(self.airflow))  # its lineage tests run there too


def runs_of(cells: Sequence[tuple[str, str]]) -> list[Run]:
    """The runs of ``cells`` in the order they should start (:attr:`Run.weight`)."""
    runs = [Run(airflow, python, names) for airflow, python in cells for names in suites_of(CELLS[(airflow, python)])]
    return sorted(runs, key=lambda run: -run.weight)


def pytest_args(run: Run) -> list[str]:
    """The run's pytest arguments. The once-per-Python tiers run nowhere else on their Python, so a test of
    theirs that skips is lost there: their runs fail on a skip whose reason ``tests/allowed_skips.txt`` does
    not list (the version tier's skips differ between Airflow versions by design)."""
    args = [*PYTEST, *(arg for name in run.suites for arg in ("--suite", name))]
    return args if run.suites == ("airflow",) else [*args, "--allowed-skips", "tests/allowed_skips.txt"]


def run_suites(run: Run, matrix_start: float) -> tuple[Run, int, str, float]:
    """One run: its exit code, its summary line and its wall time; pytest's output in ``.matrix/logs``.
    Its line says when it started and ended (seconds since the matrix began) and the CPU-seconds it
    used, its subprocesses included: where the matrix's time went."""
    venv = _venv((run.airflow, run.python))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    suite = "+".join(run.suites)
    log = LOGS / f"airflow-{run.airflow}-py{run.python}-{suite}.log"
    say(f"Airflow {run.airflow}, Python {run.python}: {suite} (log: {log.relative_to(REPO)})")
    start = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen([python_of(venv), *pytest_args(run)], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)  # the run's own rusage (and its waited-for children's)
        proc.returncode = code = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - start
    output = log.read_text(encoding="utf-8", errors="replace")
    summary = f"{suite}: {_summary(output, code)}"
    if code != 0:
        say(f"  what failed on Airflow {run.airflow}, Python {run.python} (--suite {suite}):\n{_failures(output)}")
    span = f"+{start - matrix_start:.0f}s to +{time.monotonic() - matrix_start:.0f}s"
    cpu = usage.ru_utime + usage.ru_stime
    say(f"  {'ok' if code == 0 else 'FAILED'}: Airflow {run.airflow}, Python {run.python}: {summary} "
        f"({seconds:.0f}s, {span}, {cpu:.0f} CPU-s)")
    return run, code, summary, seconds


def run_matrix(cells: Sequence[tuple[str, str]], jobs: int) -> list[Result]:
    """Each cell's venv installed (or found up to date), then every run of every cell, ``jobs`` at a time."""
    results = {cell: Result(*cell) for cell in cells}
    for cell, result in results.items():
        seconds, failure = _ensure_venv(cell)
        result.install_s = seconds
        if failure:
            result.summary, result.exit_code = f"install failed: {failure}", 1
    LOGS.mkdir(parents=True, exist_ok=True)
    runs = [run for run in runs_of(cells) if results[(run.airflow, run.python)].exit_code is None]
    summaries: dict[tuple[str, str], list[str]] = {cell: [] for cell in cells}
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:  # each run is its own processes
        for run, code, summary, seconds in pool.map(lambda run: run_suites(run, start), runs):
            result = results[(run.airflow, run.python)]
            result.tests_s += seconds
            summaries[(run.airflow, run.python)].append(summary)
            result.exit_code = code if result.exit_code in (None, 0) else result.exit_code
    for cell, result in results.items():
        if summaries[cell]:
            order = [("+".join(names)) for names in suites_of(CELLS[cell])]
            result.summary = "; ".join(sorted(summaries[cell], key=lambda text: order.index(text.split(":")[0])))
    return list(results.values())


def _venv(cell: tuple[str, str]) -> Path:
    return REPO / ".matrix" / f"airflow-{cell[0]}-py{cell[1]}"


def _ensure_venv(cell: tuple[str, str]) -> tuple[float, str]:
    """The cell's venv created or updated: the seconds it took (0 if up to date), or why it failed."""
    airflow, python_version = cell
    try:
        return ensure_venv(_venv(cell), find_python(python_version), airflow, test_extras(airflow)), ""
    except SystemExit as failure:
        return 0.0, str(failure) or "failed"


def install(cells: Sequence[tuple[str, str]]) -> int:
    """Every cell's venv, one after another (uv installs each with all cores; its cache serves the next)."""
    start, failed = time.monotonic(), []
    for airflow, python_version in cells:
        seconds, failure = _ensure_venv((airflow, python_version))
        if failure:
            say(f"  install failed: Airflow {airflow}, Python {python_version}: {failure}")
            failed.append(f"{airflow}/{python_version}")
            continue
        done = f"installed in {seconds:.0f}s" if seconds else "up to date"
        say(f"  Airflow {airflow}, Python {python_version}: {done}")
    failures = f"; FAILED: {', '.join(failed)}" if failed else ""
    say(f"test-matrix: the venvs in {time.monotonic() - start:.0f}s{failures}")
    return 1 if failed else 0


def _failures(output: str, limit: int = 40) -> str:
    """What failed, for a log read only through CI's output: pytest's short summary lines, then the
    first error lines (``E   ...``) of the tracebacks."""
    named = [line for line in output.splitlines() if line.startswith(("FAILED tests/", "ERROR tests/"))]
    errors = [line for line in output.splitlines() if line.startswith("E   ")]
    lines = named[:limit] + errors[: max(0, limit - len(named))]
    return "\n".join(f"    {line}" for line in lines) or "    (no failure named in the log)"


def _summary(output: str, exit_code: int) -> str:
    lines = [m.group(1) for m in map(SUMMARY.match, output.splitlines()) if m]
    text = lines[-1] if lines else "no summary line"
    if exit_code == 5:
        return f"no test ran (pytest exit code 5): {text}"
    return text if exit_code in (0, 1) else f"pytest exit code {exit_code}: {text}"


def table(results: Sequence[Result]) -> str:
    rows = [("Airflow", "Python", "result", "install", "tests", "summary")]
    rows += [
        (r.airflow, r.python, "ok" if r.ok else "FAILED", f"{r.install_s:.0f}s", f"{r.tests_s:.0f}s", r.summary)
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the whole test suite on every supported Airflow.")
    parser.add_argument("--cell", action="append", default=[], help="AIRFLOW/PYTHON, e.g. 3.0.6/3.11 (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, help="pytest runs at a time, of any cells (default 1)")
    parser.add_argument("--install-only", action="store_true", help="create or update the cells' venvs, run nothing")
    args = parser.parse_args(argv)
    cells = [cell for cell in MATRIX if not args.cell or "/".join(cell) in args.cell]
    if not cells:
        parser.error(f"no such cell; the matrix: {', '.join('/'.join(c) for c in MATRIX)}")
    start = time.monotonic()
    if args.install_only:
        return install(cells)
    results = run_matrix(cells, args.jobs)
    results.sort(key=lambda r: MATRIX.index((r.airflow, r.python)))
    say(f"\n{table(results)}\n\ntest-matrix: {time.monotonic() - start:.0f}s in all")
    failed = [f"{r.airflow}/{r.python}" for r in results if not r.ok]
    if failed:
        say(f"FAILED cells: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
