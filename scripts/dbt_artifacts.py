"""Make the dbt artifacts the tests read, with real dbt: ``python scripts/dbt_artifacts.py`` (``make dbt-artifacts``).

dbt's pins clash with Airflow's constraints, so dbt has a venv of its own (``.venv-dbt``, made with uv
as :mod:`envs` makes ours, held to ``DBT_PINS``). The project ``tests/dbt_project`` is copied to a
temporary folder and run there:

* ``duckdb-build``: ``dbt build`` on DuckDB, for real (seeds, a view, tables, an ephemeral model, a
  microbatch model ending ``partial success``, a model that fails and its skipped child);
* ``duckdb-compile``: ``dbt compile`` (a run that builds nothing);
* ``bigquery-parse``, ``snowflake-parse``, ``databricks-parse``: ``dbt parse`` with dummy profiles:
  the relation names each adapter renders, no warehouse needed.

Each run's ``run_results.json`` (where it writes one) and ``manifest.json`` (gzip, without a
timestamp in the header) go to ``tests/dbt_artifacts/<run>/``. The artifacts are made here once and
committed, not made at test time: a dbt install with four adapters costs a minute or more and CI is
at its time budget. ``tests/unit/test_dbt_artifacts.py`` checks that they are this dbt's output for
the project as it is now (the manifest's checksum of every file, the version, one invocation a run).
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from envs import REPO, find_python, run_step, say, uv

PROJECT = REPO / "tests" / "dbt_project"
OUT = REPO / "tests" / "dbt_artifacts"
VENV = REPO / ".venv-dbt"
DBT_PYTHON = "3.11"
DBT_PINS = {
    "dbt-core": "1.10.23",
    "dbt-duckdb": "1.11.1",
    "dbt-bigquery": "1.10.3",
    "dbt-snowflake": "1.10.5",
    "dbt-databricks": "1.11.0",
}
BATCHES = ["--event-time-start", "2026-01-01", "--event-time-end", "2026-01-04"]  # three daily batches
RUNS: dict[str, tuple[str, list[str]]] = {
    "duckdb-build": ("duckdb", ["build", *BATCHES]),
    "duckdb-compile": ("duckdb", ["compile"]),
    "bigquery-parse": ("bigquery", ["parse"]),
    "snowflake-parse": ("snowflake", ["parse"]),
    "databricks-parse": ("databricks", ["parse"]),
}


def ensure_dbt() -> Path:
    """``.venv-dbt`` with ``DBT_PINS``; its ``dbt``."""
    stamp = VENV / ".installed"
    wanted = " ".join(f"{name}=={version}" for name, version in sorted(DBT_PINS.items()))
    if not (stamp.is_file() and stamp.read_text() == wanted):
        installer = uv()
        if installer is None:
            raise SystemExit("uv is needed to make .venv-dbt (ANALYTICS_INSTALLER=pip is not supported here)")
        if not (VENV / "bin" / "python").exists():
            run_step(f"creating {VENV.name}", [installer, "venv", "--python", find_python(DBT_PYTHON), VENV],
                     Path(os.devnull))
        run_step(f"installing {wanted} (uv); its output: {VENV / 'install.log'}",
                 [installer, "pip", "install", "--python", VENV / "bin" / "python", *wanted.split()],
                 VENV / "install.log")
        stamp.write_text(wanted)
    return VENV / "bin" / "dbt"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", metavar="RUN", help=f"the runs to make: {', '.join(RUNS)} (default: all)")
    args = parser.parse_args(argv)
    unknown = [r for r in args.runs if r not in RUNS]
    if unknown:
        parser.error(f"no run named {', '.join(unknown)}: choose from {', '.join(RUNS)}")
    dbt = ensure_dbt()
    with tempfile.TemporaryDirectory(prefix="dbt-artifacts-") as scratch:
        project = Path(scratch) / "analytics_fixture"
        shutil.copytree(PROJECT, project)
        env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_PARTIAL_PARSE": "false",
               "DBT_DUCKDB_PATH": str(Path(scratch) / "analytics.duckdb")}
        for name in args.runs or list(RUNS):
            target, command = RUNS[name]
            target_path = Path(scratch) / "target" / name
            say(f"{name}: dbt {' '.join(command)} --target {target}")
            done = subprocess.run([dbt, *command, "--project-dir", project, "--profiles-dir", project,
                                   "--target", target, "--target-path", target_path],
                                  env=env, cwd=project, capture_output=True, text=True, check=False)
            if not (target_path / "manifest.json").is_file():
                sys.stdout.write(done.stdout[-4000:])
                raise SystemExit(f"{name}: dbt wrote no manifest (exit status {done.returncode})")
            say(f"      exit status {done.returncode} (1 is expected of the build: a model fails on purpose)")
            out = OUT / name
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            if (target_path / "run_results.json").is_file():
                shutil.copyfile(target_path / "run_results.json", out / "run_results.json")
            with (target_path / "manifest.json").open("rb") as source, \
                    gzip.GzipFile(out / "manifest.json.gz", "wb", mtime=0) as packed:
                shutil.copyfileobj(source, packed)
            say(f"      {', '.join(sorted(p.name for p in out.iterdir()))} -> {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
