"""Benchmark: linting a project of 200 custom chart files, without and with the compile step.

The files are made in a temporary folder from the chart definitions of ``tests/aml/corpus/valid``
(each copy renamed, so that chart names stay unique). Each configuration runs in a fresh process,
as pre-commit and the publish pre-flight do: the figures include the imports and, with the compile
step, vl-convert's start (its JavaScript engine), which a first one-file lint shows apart. Targets:
under 5 s in all without the compile step and under 30 s with it. Memory is the peak resident set
size of that process after the first file and after all of them (the difference, per file), and,
with the compile step, the peak of the child process vl-convert runs in (Linux). Exit 1 when a target is
missed or a file is reported with an error.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import report

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "aml" / "corpus" / "valid"
_NAME = re.compile(r"^(CustomChartDef\s+)([a-z][a-z0-9_]*)", re.MULTILINE)
TARGETS = {"no-compile": 5.0, "compile": 30.0}

_RUN = """
import json, resource, sys, time
t0 = time.perf_counter()
from analytics_provider.aml import lint_paths
from analytics_provider.aml import compiler, compiler_process
compile_on = sys.argv[2] == "compile"
if compile_on and not compiler.available():
    print(json.dumps({"skipped": "vl-convert is not installed"})); sys.exit(0)
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t1 = time.perf_counter()
found = lint_paths([sys.argv[3]], schema=True, compiler=compile_on)  # one file: the fixed cost
t2 = time.perf_counter()
first_rss = rss()
found = lint_paths([sys.argv[1]], schema=True, compiler=compile_on)
t3 = time.perf_counter()
child_mb = 0.0
pid = compiler_process.child_pid()
try:
    status = open(f"/proc/{pid}/status").read() if pid else ""
    child_mb = next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM:")), 0.0)
except OSError:
    pass
print(json.dumps({"import": t1 - t0, "first": t2 - t1, "lint": t3 - t2, "errors": sum(d.is_error for d in found),
                  "findings": len(found), "first_rss_mb": first_rss, "rss_mb": rss(), "child_mb": child_mb}))
"""


def make_project(folder: Path, count: int) -> list[Path]:
    """``count`` chart files made from the valid corpus's single-definition chart files."""
    sources = [p for p in sorted(CORPUS.rglob("*.chart.aml")) if len(_NAME.findall(p.read_text())) == 1]
    made = []
    for i in range(count):
        source = sources[i % len(sources)]
        text = _NAME.sub(lambda m, i=i: f"{m.group(1)}{m.group(2)}_{i}", source.read_text(encoding="utf-8"))
        target = folder / f"team_{i % 10}" / f"{source.name.removesuffix('.chart.aml')}_{i}.chart.aml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        made.append(target)
    return made


def measure(folder: Path, mode: str) -> dict[str, float]:
    first = next(folder.rglob("*.chart.aml"))
    out = subprocess.run([sys.executable, "-c", _RUN, str(folder), mode, str(first)], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="aml-bench-") as tmp:
        files = make_project(Path(tmp), args.files)
        print(f"{len(files)} chart files from {CORPUS.relative_to(ROOT)}")
        for mode, target in TARGETS.items():
            result = measure(Path(tmp), mode)
            if "skipped" in result:
                print(f"{mode:>10}: skipped ({result['skipped']})")
                continue
            total = result["import"] + result["first"] + result["lint"]
            ok = report("aml_lint", f"{mode}: {len(files)} chart files", f"{total:.2f} s, {result['errors']} errors",
                        f"< {target:.0f} s, 0 errors", total < target and result["errors"] == 0)
            failed |= not ok
            growth = (result["rss_mb"] - result["first_rss_mb"]) / (len(files) - 1) * 1024
            start = result["import"] + result["first"]
            print(f"{mode:>10}: {total:6.2f} s in all; start (imports and a first file) {start:.2f} s, "
                  f"then {1000 * result['lint'] / len(files):.1f} ms per file; "
                  f"peak RSS {result['first_rss_mb']:.0f} MB "
                  f"after one file, {result['rss_mb']:.0f} MB after all ({growth:.0f} KB per file)"
                  + (f", compiler child {result['child_mb']:.0f} MB" if result.get("child_mb") else "") + "; "
                  f"{result['errors']} errors / {result['findings']} findings; target < {target:.0f} s: "
                  f"{'ok' if ok else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
