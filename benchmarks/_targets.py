"""One line per target a benchmark checks, read back by ``benchmarks/run_all.py`` into one table."""

from __future__ import annotations

import json

MARK = "TARGET "


def report(benchmark: str, target: str, figure: str, limit: str, met: bool) -> bool:
    """Print the target's line (``TARGET {json}``) and return ``met``."""
    print(MARK + json.dumps({"benchmark": benchmark, "target": target, "figure": figure, "limit": limit,
                             "met": bool(met)}), flush=True)
    return bool(met)
