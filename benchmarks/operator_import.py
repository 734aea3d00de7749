"""Benchmark: what importing our operators costs a DAG file, after Airflow's own imports.

DAG files import us, and the dag processor parses them again and again. Each run is a fresh
process that imports ``airflow.sdk`` (on Airflow 2.11, ``airflow`` and its ``BaseOperator``) and, where
it exists, Airflow's human-in-the-loop module (the review operator's base class), then
every name a DAG file takes from us: each operator of ``analytics_provider.operators``, each sensor
of ``analytics_provider.sensors``, and whatever else the example DAGs import from
``analytics_provider`` at module level (read from ``example_dags/*.py``). The figure is the CPU
time of the process around our imports (``time.process_time()``: on a busy machine wall time
counts the other processes too), the median of ``--runs`` runs, after one run that is not
counted, which writes the bytecode caches (``PYTHONDONTWRITEBYTECODE`` is dropped for the
children: an installed package has them). Wall time, the modules loaded and the slowest of ours
by ``python -X importtime`` are printed for information. Target: under 20 ms. What only a running
task needs (the operations table, the wait and retry machinery, lineage, the hook) is imported
in the methods that run in the task, and ``tests/dags/test_example_dags.py`` holds that without a
clock.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import report

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 20.0
ALL = "*"  # every name of the module's __all__
IMPORT_TIME_MARK = "-- our imports --"

_RUN = """
import importlib, json, os, sys, time
try:
    import airflow.sdk
except ImportError:  # Airflow 2.11
    import airflow.models.baseoperator
try:  # Airflow's human-in-the-loop operators (3.1+), which the review operator derives from: Airflow's cost
    import airflow.providers.standard.operators.hitl
except Exception:
    pass
os.write(2, sys.argv[2].encode() + b"\\n")  # where -X importtime reaches our part
before = set(sys.modules)
cpu, wall = time.process_time(), time.perf_counter()
for module_name, names in json.loads(sys.argv[1]):
    module = importlib.import_module(module_name)
    for name in (module.__all__ if names == sys.argv[3] else names):
        getattr(module, name)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({"cpu": cpu, "wall": wall, "modules": sorted(set(sys.modules) - before)}))
"""


def dag_facing_imports() -> list[tuple[str, object]]:
    """What a DAG file imports from us: every operator and sensor, and the example DAGs' imports."""
    wanted: dict[str, object] = {"analytics_provider.operators": ALL, "analytics_provider.sensors": ALL}
    for path in sorted((ROOT / "example_dags").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only: not in tasks
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("analytics_provider"):
                names = wanted.setdefault(node.module or "", [])
                if names != ALL:
                    assert isinstance(names, list)
                    names.extend(a.name for a in node.names if a.name not in names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("analytics_provider"):
                        wanted.setdefault(alias.name, [])
    return list(wanted.items())


def run_once(imports: list[tuple[str, object]], *flags: str) -> tuple[float, float, list[str], str]:
    """One fresh process: CPU and wall milliseconds of our imports, the modules they loaded, its stderr."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, *flags, "-c", _RUN, json.dumps(imports), IMPORT_TIME_MARK, ALL]
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["cpu"] * 1000, result["wall"] * 1000, result["modules"], out.stderr


def slowest_of_ours(stderr: str, count: int = 8) -> list[tuple[int, int, str]]:
    """``(self µs, cumulative µs, module)`` of the slowest modules ``-X importtime`` shows after
    the mark (our imports), by their own time."""
    rows = []
    for line in stderr.split(IMPORT_TIME_MARK, 1)[-1].splitlines():
        if line.startswith("import time:") and "|" in line:
            own, cumulative, name = line.removeprefix("import time:").split("|")
            if own.strip().isdigit():
                rows.append((int(own), int(cumulative), name.rstrip()))
    return sorted(rows, reverse=True)[:count]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    imports = dag_facing_imports()
    print("imported after airflow.sdk, in a fresh process each run:")
    for module, names in imports:
        shown = "every name of __all__" if names == ALL else ", ".join(names)  # type: ignore[arg-type]
        print(f"  from {module} import {shown}")
    run_once(imports)  # writes the bytecode caches; not counted
    runs = [run_once(imports) for _ in range(args.runs)]
    cpu = statistics.median(r[0] for r in runs)
    wall = statistics.median(r[1] for r in runs)
    each = ", ".join(f"{r[0]:.1f}" for r in runs)
    print(f"CPU time of our imports: median {cpu:.1f} ms of {args.runs} runs ({each}); wall time: median {wall:.1f} ms")
    modules = runs[-1][2]
    ours = [m for m in modules if m.split(".")[0] == "analytics_provider"]
    others = [m for m in modules if m not in ours]
    print(f"modules loaded: {len(modules)}; {len(ours)} of ours: {', '.join(ours)}")
    print(f"  {len(others)} others: {', '.join(others) or 'none'}")
    print("slowest of our part by -X importtime (one more run; wall time in µs: its own | with what it imports):")
    for own, cumulative, name in slowest_of_ours(run_once(imports, "-X", "importtime")[3]):
        print(f"  {own:>7} | {cumulative:>7} | {name}")
    met = report("operator_import", f"CPU time of importing the DAG-facing names after airflow.sdk "
                 f"(median of {args.runs} fresh processes)", f"{cpu:.1f} ms", f"< {TARGET_MS:.0f} ms",
                 cpu < TARGET_MS)
    print(f"target: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
