"""``make wheel-smoke``: install the built wheel into a fresh venv outside the checkout and try it.

Everything happens in a temporary folder holding only the wheel and the constraints file; the
commands run there, with a fresh ``AIRFLOW_HOME``, so nothing can come from the checkout:

1. ``pip install apache-airflow==<version> <wheel> -c constraints`` (``airflow version`` says that version);
2. the package is imported from the venv (not the checkout), its operators, sensor and trigger import,
   and the example DAGs (copied there) parse with no import error;
3. ``airflow providers list`` shows the provider with its version;
4. ``python -m analytics_provider.aml lint`` passes a clean chart and fails a broken one;
5. the emulator starts (``python -m analytics_provider.testing.emulator``) and
   ``airflow connections test analytics_default`` reaches it through the connection it prints.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from envs import NEWEST, REPO, SUPPORTED, constraints_file, pip_install, python_of, run_step, say

CLEAN_CHART = """CustomChartDef smoke_bar {
  label: 'Smoke bar'
  fields { field x { type: 'dimension' label: 'Category' } }
  template: @vgl {
    "data": {"values": @{values}},
    "mark": "bar",
    "encoding": {"x": {"field": @{fields.x.name}, "type": "nominal"}, "y": {"aggregate": "count"}}
  };;
}
"""
BROKEN_CHART = "CustomChartDef broken {\n  label: 'never closed'\n"
IMPORTS = """
import analytics_provider, analytics_provider.get_provider_info as info
from analytics_provider.operators import *  # noqa
from analytics_provider.sensors.analytics import AnalyticsJobSensor
from analytics_provider.triggers.analytics import AnalyticsJobTrigger
from analytics_provider.hooks.analytics import AnalyticsHook
print(analytics_provider.__file__, analytics_provider.__version__)
"""

PARSE = """
import json, sys
try:
    from airflow.dag_processing.dagbag import DagBag  # Airflow 3.2+
except ImportError:
    from airflow.models.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])  # [core] load_examples is off here
print(json.dumps({"dag_ids": sorted(bag.dag_ids), "import_errors": {k: str(v) for k, v in bag.import_errors.items()}}))
"""


class Smoke:
    def __init__(self, root: Path, venv: Path) -> None:
        self.root = root
        self.venv = venv
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHON", "VIRTUAL_ENV"))}
        self.env |= {
            "AIRFLOW_HOME": str(root / "airflow-home"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def run(self, *command: str, env: dict[str, str] | None = None, expect: int = 0) -> str:
        result = subprocess.run(
            command, cwd=self.root, env=env or self.env, capture_output=True, text=True, check=False, timeout=300
        )
        if result.returncode != expect:
            sys.stdout.write(result.stdout[-3000:] + result.stderr[-3000:])
            raise SystemExit(f"{' '.join(command)}: exit status {result.returncode}, expected {expect}")
        return result.stdout

    def check(self, label: str, action: Callable[[], str | None]) -> None:
        start = time.monotonic()
        detail = action()
        say(f"  ok  {label} ({time.monotonic() - start:.1f}s){': ' + detail if detail else ''}")


def smoke(wheel: Path, airflow: str, keep: bool) -> None:
    root = Path(tempfile.mkdtemp(prefix="analytics-wheel-smoke-"))
    try:
        shutil.copy(wheel, root)
        shutil.copy(constraints_file(airflow), root / "constraints.txt")
        venv = root / "venv"
        say(f"A fresh venv in {root} (outside the checkout), Airflow {airflow}, {wheel.name}")
        run_step(f"creating the virtual environment ({sys.executable})", [sys.executable, "-m", "venv", venv],
                 Path(os.devnull))
        pip_install(venv, ["--upgrade", "pip"], "upgrading pip")
        pip_install(  # --no-compile: pip's bytecode for all 7,000 files took 25 CPU-seconds a venv; the checks
            venv,        # below write the caches of what they import, as a process does
            ["--no-compile", f"apache-airflow=={airflow}", str(root / wheel.name), "-c", str(root / "constraints.txt")],
            f"installing Airflow {airflow} and the wheel with the constraints; pip's output: {venv / 'install.log'}",
        )
        s = Smoke(root, venv)
        say("Checks, run from that folder:")

        def imports() -> str:
            location, version = s.run(str(python_of(venv)), "-c", IMPORTS).split()
            if not Path(location).is_relative_to(venv):
                raise SystemExit(f"analytics_provider was imported from {location}, not from the venv")
            return f"analytics_provider {version} from {Path(location).relative_to(root)}"

        def providers_list() -> str:
            output = s.run("airflow", "providers", "list")
            listed = [line for line in output.splitlines() if "airflow-provider-analytics" in line]
            if not listed:
                raise SystemExit("airflow providers list does not show airflow-provider-analytics")
            return " ".join(listed[0].split())

        def lint() -> str:
            (root / "clean.chart.aml").write_text(CLEAN_CHART)
            (root / "broken.chart.aml").write_text(BROKEN_CHART)
            clean = s.run(str(python_of(venv)), "-m", "analytics_provider.aml", "lint", "clean.chart.aml")
            broken = s.run(str(python_of(venv)), "-m", "analytics_provider.aml", "lint", "broken.chart.aml", expect=1)
            if "broken.chart.aml:1:" not in broken:
                raise SystemExit(f"the broken chart's diagnostic is missing: {broken}")
            return f"{clean.strip().splitlines()[-1]} / {broken.strip().splitlines()[0]}"

        def emulator_and_connection_test() -> str:
            emulator = subprocess.Popen(
                [str(python_of(venv)), "-m", "analytics_provider.testing.emulator"],
                cwd=root, env=s.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )
            try:
                assert emulator.stdout is not None
                conn = ""
                for line in emulator.stdout:
                    if line.startswith("AIRFLOW_CONN_ANALYTICS_DEFAULT="):
                        conn = line.split("=", 1)[1].strip().strip("'")
                    if line.startswith("Serving"):
                        break
                if not conn:
                    raise SystemExit("the emulator did not print its connection")
                env = s.env | {"AIRFLOW_CONN_ANALYTICS_DEFAULT": conn, "AIRFLOW__CORE__TEST_CONNECTION": "Enabled"}
                s.run("airflow", "db", "migrate", env=env)
                out = s.run("airflow", "connections", "test", "analytics_default", env=env)
                if "Connection success!" not in out:
                    raise SystemExit(f"airflow connections test did not succeed: {out}")
                return " ".join(ln.strip() for ln in out.splitlines() if ln.strip())[-160:]
            finally:
                emulator.terminate()
                emulator.wait(timeout=30)

        def airflow_version() -> str:
            said = s.run("airflow", "version").strip().splitlines()[-1]
            if said != airflow:
                raise SystemExit(f"airflow version says {said}, not {airflow}: the constraints did not hold it")
            return said

        def example_dags_parse() -> str:
            shutil.copytree(REPO / "example_dags", root / "dags")
            bag = s.run(str(python_of(venv)), "-c", PARSE, str(root / "dags"))
            found = json.loads(bag.strip().splitlines()[-1])
            if found["import_errors"] or len(found["dag_ids"]) < len(list((root / "dags").glob("analytics_*.py"))):
                raise SystemExit(f"the example DAGs do not all parse: {found}")
            return f"{len(found['dag_ids'])} DAGs, no import error"

        s.check("airflow version", airflow_version)
        s.check("the package, its operators, sensor and trigger import from the venv", imports)
        s.check("every example DAG parses (DagBag) with the installed wheel", example_dags_parse)
        s.check("airflow providers list", providers_list)
        s.check("python -m analytics_provider.aml lint", lint)
        s.check("the emulator starts; airflow connections test reaches it", emulator_and_connection_test)
        say("wheel smoke test passed")
    finally:
        if keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Install the wheel into a fresh venv outside the checkout; try it.")
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--airflow", nargs="+", default=[NEWEST], choices=sorted(SUPPORTED),
                        help=f"one or more versions, each in a venv of its own (default {NEWEST})")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    for airflow in args.airflow:
        smoke(args.wheel.resolve(), airflow, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
