"""Generate ``constraints/airflow-<version>.txt`` from a known-good install, the way Airflow does.

For each supported Airflow version and each Python listed for it in ``scripts/envs.py``:

1. resolve ``apache-airflow[celery,postgres,cncf.kubernetes,redis]==<version>`` (the extras a
   production install adds) against PyPI as it was when that version was released
   (``pip --uploaded-prior-to``): the release-day set, what Airflow's own constraints describe;
2. install Airflow with those extras and the provider with every extra into a fresh virtual
   environment, held to that set except where the provider needs newer (e.g.
   ``apache-airflow-providers-common-compat``);
3. check the install: the DAG tests run the example DAGs, deferrable, through Airflow against
   the emulator, and the Celery and Kubernetes executors, the PostgreSQL driver and Redis's
   client import (a Celery newer than its provider knows fails there, not in production);
4. ``pip freeze`` it. The freezes of one Airflow version are merged into one file; a package
   whose pin differs between Pythons gets one line per Python with a ``python_version`` marker.

Usage: ``python scripts/make_constraints.py [AIRFLOW_VERSION ...]`` (default: all).
Needs network access to PyPI (the index must give upload times).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import tomllib
from envs import (
    REPO,
    SUPPORTED,
    constraints_file,
    find_python,
    pip_install,
    python_of,
    run_step,
    say,
    test_extras,
)

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # a bare interpreter: pip vendors packaging
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[assignment]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[assignment]

PYPI = "https://pypi.org/simple"
MAX_RELEASES = 5  # install attempts, each releasing the release-day pins pip named in a conflict
CHECK = ["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests/dags", "-k", "deferred"]
BUILD = REPO / ".matrix" / "constraints-build"
PRODUCTION_EXTRAS = "celery,postgres,cncf.kubernetes,redis"  # what deployments add to apache-airflow
PRODUCTION_CHECK = [
    "-c",
    "from airflow.providers.celery.executors.celery_executor import CeleryExecutor\n"
    "from airflow.providers.celery.executors import celery_executor_utils\n"
    "from airflow.providers.cncf.kubernetes.executors.kubernetes_executor import KubernetesExecutor\n"
    "import psycopg2, redis, airflow.providers.postgres.hooks.postgres, airflow.providers.redis.hooks.redis\n",
]


def release_cutoff(package: str, version: str) -> str:
    """A day after ``package==version`` was uploaded (the index's JSON API, PEP 691/700)."""
    request = urllib.request.Request(
        f"{PYPI}/{package}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    times = [f["upload-time"] for f in files if f"-{version}-" in f["filename"] or f"-{version}.tar" in f["filename"]]
    if not times:
        raise SystemExit(f"{package} {version} is not on {PYPI}")
    uploaded = datetime.fromisoformat(max(times).replace("Z", "+00:00"))
    return f"{uploaded + timedelta(days=1):%Y-%m-%dT%H:%M:%SZ}"


def release_day_set(venv: Path, airflow: str, cutoff: str) -> dict[str, str]:
    """What ``pip install apache-airflow[<production extras>]==<airflow>`` resolved to on PyPI at ``cutoff``."""
    report = venv / "release-day.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k == "PIP_CERT"}
    env["PIP_CONFIG_FILE"] = os.devnull  # PyPI only: local indexes and wheel folders have no upload times
    run_step(
        f"resolving apache-airflow=={airflow} as on {cutoff}",
        [
            python_of(venv), "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
            "--index-url", PYPI, "--uploaded-prior-to", cutoff, "--report", report,
            f"apache-airflow[{PRODUCTION_EXTRAS}]=={airflow}",
        ],
        venv / "install.log",
        env=env,
    )
    items = json.loads(report.read_text())["install"]
    return {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"] for i in items}


def our_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    name = canonicalize_name(project["name"])
    texts = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        texts += extra
    return [r for r in map(Requirement, texts) if canonicalize_name(r.name) != name]


def seed_pins(release_day: dict[str, str]) -> dict[str, str]:
    """The release-day pins, less those the provider's own requirements exclude."""
    pins = dict(release_day)
    for requirement in our_requirements():
        name = canonicalize_name(requirement.name)
        if name in pins and not requirement.specifier.contains(pins[name], prereleases=True):
            say(f"      {name} {pins[name]} (release day) does not satisfy {requirement}: left to the resolver")
            del pins[name]
    pins.pop("apache-airflow", None)
    return pins


def release_conflicts(log: Path, pins: dict[str, str]) -> bool:
    """Release the release-day pins pip named in a conflict (a package one of the provider's extras
    needs newer, e.g. common-compat for the OpenLineage provider on Airflow 2.11); False if none."""
    text = log.read_text(encoding="utf-8", errors="replace").rsplit("\n$ ", 1)[-1]
    named = {canonicalize_name(m) for m in re.findall(r"The user requested \(constraint\) ([A-Za-z0-9_.-]+)==", text)}
    released = sorted(named & set(pins))
    for name in released:
        say(f"      {name} {pins.pop(name)} (release day) conflicts with the provider's extras: left to the resolver")
    return bool(released)


def build(airflow: str, python_version: str, cutoff: str) -> dict[str, str]:
    """A checked install of Airflow and the provider on one Python; its ``pip freeze``."""
    python = find_python(python_version)
    venv = BUILD / f"airflow-{airflow}-py{python_version}"
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    say(f"\n== Airflow {airflow} on Python {python_version} ({venv.relative_to(REPO)})")
    run_step(f"creating the virtual environment ({python})", [python, "-m", "venv", venv], Path(os.devnull))
    pip_install(venv, ["--upgrade", "pip"], "upgrading pip")
    pins = seed_pins(release_day_set(venv, airflow, cutoff))
    seeds = venv / "release-day-constraints.txt"
    extras = f"{test_extras(airflow)},bench"
    for _ in range(MAX_RELEASES):
        seeds.write_text("".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))
        try:
            pip_install(
                venv,
                ["-e", f".[{extras}]", f"apache-airflow[{PRODUCTION_EXTRAS}]=={airflow}", "-c", seeds],
                f"installing Airflow {airflow} [{PRODUCTION_EXTRAS}] and the provider [{extras}] "
                "held to the release-day set",
            )
            break
        except SystemExit:
            if not release_conflicts(venv / "install.log", pins):
                raise
    else:
        raise SystemExit(f"Airflow {airflow}: the release-day set still conflicts after {MAX_RELEASES} tries")
    run_step("checking the install: the deferrable DAG tests", [python_of(venv), *CHECK], venv / "check.log")
    run_step("checking the executors and drivers import", [python_of(venv), *PRODUCTION_CHECK], venv / "check.log")
    frozen = subprocess.run(
        [python_of(venv), "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
    ).stdout
    return dict(_parse_pin(line) for line in frozen.splitlines() if "==" in line and not line.startswith("#"))


def _parse_pin(line: str) -> tuple[str, str]:
    name, version = line.split("==", 1)
    return canonicalize_name(name), version.strip()


def merge(freezes: dict[str, dict[str, str]]) -> list[str]:
    """One line per package; per-Python lines with markers where the Pythons disagree."""
    pythons = sorted(freezes, key=lambda v: tuple(map(int, v.split("."))))
    names = sorted({name for freeze in freezes.values() for name in freeze})
    lines = []
    for name in names:
        versions = {py: freezes[py].get(name) for py in pythons}
        if len(set(versions.values())) == 1:
            lines.append(f"{name}=={versions[pythons[0]]}")
            continue
        lines += [f'{name}=={v}; python_version == "{py}"' for py, v in versions.items() if v is not None]
    return lines


def write(airflow: str, freezes: dict[str, dict[str, str]], cutoff: str, seconds: float) -> Path:
    path = constraints_file(airflow)
    pythons = ", ".join(sorted(freezes))
    header = [
        f"# Constraints for apache-airflow[{PRODUCTION_EXTRAS}]=={airflow} with airflow-provider-analytics",
        "# and all its extras.",
        "# Generated by scripts/make_constraints.py (make constraints AIRFLOW=...); do not edit by hand.",
        f"# Seeded with what PyPI resolved for apache-airflow=={airflow} a day after its release ({cutoff}),",
        f"# installed and checked with the deferrable DAG tests on Python {pythons}.",
        f"# Generated on {datetime.now(timezone.utc):%Y-%m-%d} in {seconds:.0f}s.",
        f'# Install: pip install "apache-airflow[celery,postgres]=={airflow}" <the provider> '
        f"-c constraints/airflow-{airflow}.txt",
    ]
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(header + merge(freezes)) + "\n")
    return path


def generate(airflow: str) -> Path:
    start = time.monotonic()
    cutoff = release_cutoff("apache-airflow", airflow)
    freezes = {py: build(airflow, py, cutoff) for py in SUPPORTED[airflow]}
    path = write(airflow, freezes, cutoff, time.monotonic() - start)
    say(f"wrote {path.relative_to(REPO)}")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("airflow", nargs="*", help=f"versions, of {', '.join(SUPPORTED)} (default: all)")
    args = parser.parse_args(argv)
    unknown = set(args.airflow) - set(SUPPORTED)
    if unknown:
        parser.error(f"unsupported Airflow {', '.join(sorted(unknown))}: add it to SUPPORTED in scripts/envs.py")
    versions: Iterable[str] = args.airflow or sorted(SUPPORTED)
    failed = []
    for airflow in versions:
        try:
            generate(airflow)
        except SystemExit as failure:  # one version's failure does not stop the others
            say(f"Airflow {airflow}: {failure}")
            failed.append(airflow)
    if failed:
        say(f"no constraints written for Airflow {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
