"""Virtual environments with a pinned Airflow: the supported versions, and installs that show progress.

The one table of what the provider supports (``SUPPORTED``, ``MATRIX``), read by ``make``,
``scripts/test_matrix.py``, ``scripts/make_constraints.py`` and ``scripts/wheel_smoke.py``.
Standard library only: it runs before any virtual environment exists.

``python scripts/envs.py VENV --airflow 3.3.2 --extras dev`` creates (or updates) VENV with
Airflow and the provider (editable) installed with ``constraints/airflow-<version>.txt``,
printing one line per step with its time; pip's own output goes to ``VENV/install.log``.
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "constraints"

# Airflow version -> the Pythons its constraints file is generated and checked on.
SUPPORTED: dict[str, tuple[str, ...]] = {
    "2.11.2": ("3.10", "3.11", "3.12"),  # for the teams not yet on Airflow 3
    "3.0.6": ("3.10", "3.11"),
    "3.1.8": ("3.11", "3.13"),
    "3.2.2": ("3.11",),
    "3.3.2": ("3.10", "3.11", "3.12", "3.13"),
    "3.4.0b2": ("3.11",),  # the pre-release: held to its own constraints; moves to 3.4.0 when it is out
}
NEWEST = "3.3.2"
MAKE_TEST_PYTHON = "3.11"  # the README's ``make test``: the whole suite on NEWEST with the default python3
# (Airflow, Python) cells of ``make test-matrix``, and what each runs: VERSION, the tests that can differ
# between Airflow versions (``pytest --suite airflow``), and ONCE, the tiers that run once per Python
# (behaviour, host, free). Together with ``make test`` every test runs on every Python of the table (but
# those of the suite's own machinery, marked ``suite_itself``, which only ``make test`` runs),
# and every test of the version tier on every supported Airflow and on every Python: each Airflow once,
# the Pythons spread over the versions (a covering of the pairs, not every pair: each version tier run
# costs 160 to 300 CPU-seconds, and CI has two cores). The once-per-Python tiers skip nothing: their
# runs fail on a skip whose reason ``tests/allowed_skips.txt`` does not list. The pairs with no cell are
# installed and checked with the deferrable DAG tests when their constraints are made (``SUPPORTED``),
# and ``make wheel-smoke`` tries the wheel on 3.3.2 and 2.11.2 with Python 3.11.
VERSION, ONCE = "version", "once"
CELLS: dict[tuple[str, str], tuple[str, ...]] = {
    ("2.11.2", "3.12"): (VERSION, ONCE),
    ("3.0.6", "3.10"): (VERSION,),
    ("3.1.8", "3.13"): (VERSION, ONCE),
    ("3.2.2", "3.11"): (VERSION,),
    ("3.3.2", "3.10"): (ONCE,),  # not 3.0.6: its pins skip the emulator's check against the vendor's document
    ("3.4.0b2", "3.11"): (VERSION,),
}
MATRIX: tuple[tuple[str, str], ...] = tuple(CELLS)


# The openlineage extra (provider 2.16+, the first to emit task events on Airflow 3.3) needs
# apache-airflow-providers-common-sql 1.32+, newer than the constraints of Airflow 3.0 to 3.2 pin:
# on those the whole suite runs without it (so it also shows that nothing needs it); on 2.11 and
# from 3.3 on it is installed and its tests run.
OPENLINEAGE_MISSING = ((3, 0), (3, 1), (3, 2))


def test_extras(airflow: str) -> str:
    """The extras a test install of ``airflow`` takes: dev, and openlineage where it installs."""
    version = tuple(int(part) for part in airflow.split(".")[:2])
    return "dev" if version in OPENLINEAGE_MISSING else "dev,openlineage"


def constraints_file(airflow: str) -> Path:
    return CONSTRAINTS / f"airflow-{airflow}.txt"


def say(text: str) -> None:
    print(text, flush=True)


def find_python(version: str) -> Path:
    """An interpreter for ``3.X``: ``$PYTHON3_X``, a pyenv install, or ``python3.X`` on PATH."""
    override = os.environ.get("PYTHON" + version.replace(".", "_"))
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates = [override] if override else []
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python"), reverse=True)
    candidates += [shutil.which(f"python{version}") or ""]
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return Path(candidate)
    variable = "PYTHON" + version.replace(".", "_")
    raise SystemExit(f"no Python {version} found: install it (pyenv install {version}) or set {variable}")


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def run_step(
    label: str, command: Sequence[str | os.PathLike[str]], log: Path, env: dict[str, str] | None = None
) -> float:
    """Run one install step with its output in ``log``; a line now and then while pip works."""
    say(f"  {label}")
    start = last = time.monotonic()
    collected = 0
    installing = False
    with log.open("a", encoding="utf-8") as out:
        first_line = out.tell()
        out.write(f"\n$ {' '.join(map(str, command))}\n")
        out.flush()
        proc = subprocess.Popen(
            [str(c) for c in command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            now = time.monotonic()
            if line.startswith("Collecting "):
                collected += 1
            if line.startswith("Installing collected packages"):
                installing = True
                count = len(line.split(":", 1)[-1].split(","))
                say(f"      {collected} requirements resolved; installing {count} packages ({now - start:.0f}s)")
                last = now
            elif now - last >= 15:
                if installing:
                    progress = "still installing"
                else:
                    progress = f"{collected} requirements resolved so far" if collected else "still running"
                say(f"      ... {progress} ({now - start:.0f}s)")
                last = now
        code = proc.wait()
    elapsed = time.monotonic() - start
    if code != 0:
        with log.open(encoding="utf-8", errors="replace") as written:
            written.seek(first_line)
            tail = written.read().splitlines()[-30:]
        say("\n".join("      | " + line for line in tail))
        raise SystemExit(f"{label}: failed with exit status {code} after {elapsed:.0f}s (whole output: {log})")
    say(f"      done in {elapsed:.1f}s")
    return elapsed


def pip_install(venv: Path, args: Sequence[str | os.PathLike[str]], label: str) -> float:
    return run_step(
        label, [python_of(venv), "-m", "pip", "install", "--progress-bar", "off", *args], venv / "install.log"
    )


TOOLS = REPO / ".tools"
UV_VERSION = "0.13.9"
_UV_LOCK = threading.Lock()  # the matrix makes its cells' venvs from two threads


def uv() -> Path | None:
    """uv, which installs Airflow into a venv in seconds where pip takes a minute (CI makes a dozen
    venvs): installed once with pip into ``.tools/``. None where it cannot be had, or where
    ``ANALYTICS_INSTALLER=pip`` asks for pip: pip installs then."""
    if os.environ.get("ANALYTICS_INSTALLER", "uv") == "pip":
        return None
    TOOLS.mkdir(parents=True, exist_ok=True)
    # one install at a time, across threads and processes (CI installs several venvs side by side)
    with _UV_LOCK, (TOOLS / ".uv.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _installed_uv()


def _installed_uv() -> Path | None:
    tool = TOOLS / "uv" / "bin" / "uv"
    if tool.exists():
        return tool
    try:
        run_step(f"installing uv {UV_VERSION} into {tool.parent.parent.relative_to(REPO)} (once)",
                 [sys.executable, "-m", "venv", tool.parent.parent], Path(os.devnull))
        pip_install(tool.parent.parent, [f"uv=={UV_VERSION}"], f"  uv {UV_VERSION}")
    except SystemExit as failure:
        say(f"      uv could not be installed ({failure}): pip installs instead")
        return None
    return tool


def ensure_venv(venv: Path, python: Path, airflow: str, extras: str, airflow_extras: str = "") -> float:
    """Create or update ``venv`` unless it already holds this exact install; returns the seconds spent.

    ``airflow_extras`` are Airflow's own (``celery,postgres``), held to the same constraints file."""
    constraints = constraints_file(airflow)
    if not constraints.is_file():
        raise SystemExit(f"{constraints.relative_to(REPO)} is missing: make constraints AIRFLOW={airflow}")
    stamp = venv / ".installed"
    key = _install_key(python, airflow, f"{extras};{airflow_extras}" if airflow_extras else extras, constraints)
    if stamp.is_file() and stamp.read_text() == key:
        stamp.touch()  # newer than its inputs again, for make
        return 0.0
    start = time.monotonic()
    say(f"{venv.relative_to(REPO) if venv.is_relative_to(REPO) else venv}: Airflow {airflow}, {python}")
    requirements: list[str | os.PathLike[str]] = ["-e", f".[{extras}]",
                    f"apache-airflow{f'[{airflow_extras}]' if airflow_extras else ''}=={airflow}", "-c", constraints]
    what = (f"Airflow {airflow}{f' [{airflow_extras}]' if airflow_extras else ''} and the provider "
            f"(editable, [{extras}]) with {constraints.relative_to(REPO)}")
    installer = uv()
    if installer is not None:  # a venv with pip in it (seeded), as the scripts and a user expect
        if not python_of(venv).exists():
            run_step(f"creating the virtual environment ({python})",
                     [installer, "venv", "--seed", "--python", python, venv], Path(os.devnull))
        run_step(f"installing {what} (uv); its output: {venv / 'install.log'}",
                 [installer, "pip", "install", "--python", python_of(venv), *requirements], venv / "install.log")
        stamp.write_text(key)
        return time.monotonic() - start
    if not python_of(venv).exists():
        run_step(f"creating the virtual environment ({python})", [python, "-m", "venv", venv], Path(os.devnull))
    pip_install(venv, ["--upgrade", "pip"], "upgrading pip")
    pip_install(venv, requirements, f"installing {what}; pip's output: {venv / 'install.log'}")
    stamp.write_text(key)
    return time.monotonic() - start


def _install_key(python: Path, airflow: str, extras: str, constraints: Path) -> str:
    digest = hashlib.sha256()
    for part in (str(python), airflow, extras):
        digest.update(part.encode() + b"\0")
    for path in (constraints, REPO / "pyproject.toml"):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Create or update a virtual environment: Airflow and the provider.")
    parser.add_argument("venv", type=Path, help="where (created if missing)")
    parser.add_argument("--airflow", default=NEWEST, choices=sorted(SUPPORTED), help=f"default {NEWEST}")
    parser.add_argument("--python", type=Path, default=Path(sys.executable), help="interpreter (default: this one)")
    parser.add_argument("--extras", default="dev", help="the provider's extras (default dev)")
    parser.add_argument("--airflow-extras", default="", help="Airflow's own extras, e.g. celery,postgres")
    args = parser.parse_args(argv)
    venv = args.venv if args.venv.is_absolute() else REPO / args.venv
    spent = ensure_venv(venv, args.python, args.airflow, args.extras, args.airflow_extras)
    say(f"{args.venv} is ready ({spent:.0f}s)" if spent else f"{args.venv} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
