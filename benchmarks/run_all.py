"""``make bench``: every benchmark, one after the other, then one table of their targets.

Each benchmark runs in its own process with its output shown as it comes; a benchmark that misses a
target does not stop the others. The table lists every target (met or missed, the figure, the
limit); a benchmark that ends without reporting its targets, or that fails, is a row of its own.
Exit status 1 when anything was missed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from _targets import MARK

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "download_memory", "upload_memory", "trigger_polling", "shared_quota", "name_lookup", "aml_lint", "access_sync",
    "operator_import", "impact", "poll_count",
)


def run(name: str) -> tuple[list[dict[str, object]], int, float]:
    print(f"\n== {name}", flush=True)
    start = time.monotonic()
    process = subprocess.Popen([sys.executable, str(HERE / f"{name}.py")], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, cwd=HERE.parent)
    rows = []
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(MARK):
            rows.append(json.loads(line[len(MARK):]))
        else:
            print(line, end="", flush=True)
    return rows, process.wait(), time.monotonic() - start


def main(names: list[str]) -> int:
    table: list[dict[str, object]] = []
    for name in names or BENCHMARKS:
        rows, status, seconds = run(name)
        table += rows
        if status != 0 and all(row["met"] for row in rows):  # a failure no target explains
            table.append({"benchmark": name, "target": "runs to the end", "figure": f"exit status {status}",
                          "limit": "0", "met": False})
        if not rows and status == 0:
            table.append({"benchmark": name, "target": "reports its targets", "figure": "none reported",
                          "limit": "", "met": False})
        print(f"== {name}: {seconds:.0f} s", flush=True)
    shown = [HEADS] + [(*tuple(str(row[k]) for k in KEYS[:-1]), "met" if row["met"] else "MISSED") for row in table]
    widths = [max(len(cells[i]) for cells in shown) for i in range(len(HEADS))]
    print()
    for cells in shown:
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    missed = [row for row in table if not row["met"]]
    print(f"\n{len(table) - len(missed)} of {len(table)} targets met" + (f"; missed: {len(missed)}" if missed else ""))
    return 1 if missed else 0


KEYS = ("benchmark", "target", "figure", "limit", "met")
HEADS = ("benchmark", "target", "figure", "limit", "result")

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
