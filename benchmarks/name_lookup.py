"""Benchmark: what finding a dashboard, a widget and filters by name costs in a workspace of 5,000 dashboards.

An operator that names its dashboard (``dashboard="Sales overview"``) resolves it once per try:
the titles of every dashboard (one ``GET /dashboards/list_metadata``; page by page with ``GET
/dashboards`` where the service refuses that), then the dashboard itself (``GET /dashboards/{id}``),
whose widgets and filters name the rest. Printed: requests and seconds of each way, against the
emulator in a child process (the workspace: the seed's 3 dashboards and ``--dashboards`` more,
each with two widgets and two filters). Targets: the titles in one request, a whole lookup
(dashboard, widget, filters) in at most 2 requests and 1 s; read page by page, at most
``ceil(dashboards / 100) + 2`` requests (the refused list, the pages, the dashboard).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from _emulator_process import EmulatorProcess
from _targets import report


def lookup(emulator: EmulatorProcess, title: str) -> tuple[int, float, int]:
    """One named lookup as an operator makes it: requests, seconds, the widget id found."""
    from analytics_provider.hooks.analytics import AnalyticsHook

    emulator.call("clear_requests")
    started = time.perf_counter()
    hook = AnalyticsHook()  # a new hook: an operator's try starts with nothing read
    board = hook.find_dashboard(title)
    widget = hook.find_widget(board, "Orders by channel")
    conditions = hook.filter_conditions(board, {"Region": ["EU"], "Channel": ["Web"]})
    seconds = time.perf_counter() - started
    assert [c["condition"]["values"] for c in conditions] == [["EU"], ["Web"]]
    counts = emulator.call("request_counts")
    return sum(sum(by_status.values()) for by_status in counts.values()), seconds, int(widget["id"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dashboards", type=int, default=5000)
    args = parser.parse_args()
    with EmulatorProcess() as emulator:
        emulator.call("set_rate_limit", quota=10**6)  # the lookup's cost, not the quota's
        os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json
        titles = [f"Regional sales {n:05d}" for n in range(args.dashboards)]
        emulator.call("add_dashboards", titles)
        wanted = titles[len(titles) * 3 // 4]
        total = args.dashboards + 3
        requests, seconds, _ = lookup(emulator, wanted)
        emulator.call("inject", "list_dashboards_metadata", status=404)  # a service without the metadata list
        paged_requests, paged_seconds, _ = lookup(emulator, wanted)
    pages = math.ceil(total / 100)
    print(f"{total} dashboards; finding {wanted!r}, its widget 'Orders by channel' and two filters by label:")
    print(f"  titles in one list (GET /dashboards/list_metadata): {requests} requests, {seconds:.3f} s")
    print(f"  titles page by page (GET /dashboards, 100 a page):  {paged_requests} requests, {paged_seconds:.3f} s")
    met = report("name_lookup", f"{total} dashboards: requests of a named lookup", str(requests), "<= 2",
                 requests <= 2)
    met &= report("name_lookup", f"{total} dashboards: seconds of a named lookup", f"{seconds:.3f} s", "<= 1 s",
                  seconds <= 1.0)
    met &= report("name_lookup", f"{total} dashboards: requests page by page (the refused list included)",
                  str(paged_requests), f"<= {pages + 2}", paged_requests <= pages + 2)
    print(f"targets: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
