"""Benchmark: syncing user attributes for 20,000 users with 2 attributes each, from a SQL table.

The rows (40,000: each user's region and department) come from a SQLite table through the same
path an operator takes (a ``common.sql`` hook, fetched 5,000 at a time); the emulator runs in a
child process with the quota lifted (the sync's cost, not the quota's). Printed per run: requests by
operation, seconds, and the peak of memory the sync's Python objects took (tracemalloc, in a run of
its own: tracing slows the code it traces).

1. the first sync plans 40,000 additions and writes them in 400 upserts (100 entries each: the
   fewest the API allows);
2. the second sync, same table, plans nothing and writes nothing;
3. the first sync again on a fresh account, traced: its memory peak.

Targets: writes = ceil(changes / 100); no write on the second run; one read per user on the second
run (the values a user has), two at most on the first (their own entries too, for a user who holds
other values, here those of the groups the emulator put half of them in); a peak below 100 MB
(the rows are streamed; the plan holds only the changes; what the service holds is read user by
user and let go).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from _emulator_process import EmulatorProcess
from _targets import report

WRITE = "upsert_user_attribute_entries"
USER_READS = ("compute_user_attribute_values", "list_user_attribute_entries")
PEAK_LIMIT_MB = 100.0


def make_warehouse(path: Path, emails: list[str]) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE IF EXISTS user_access")
        db.execute("CREATE TABLE user_access (email TEXT, attribute TEXT, value TEXT)")
        db.executemany("INSERT INTO user_access VALUES (?, ?, ?)", (
            row for n, email in enumerate(emails)
            for row in ((email, "region", ("EU", "US", "APAC", "LATAM")[n % 4]), (email, "department", f"D{n % 40}"))
        ))
    db.close()


def sync(emulator: EmulatorProcess, trace: bool = False) -> tuple[dict[str, int], int, float, float]:
    """One sync (plan and apply) as the operator runs it: requests by operation, changes, seconds, peak MB."""
    from analytics_provider.access.attributes import AttributeColumns, UserAttributeSync
    from analytics_provider.access.rows import query_rows
    from analytics_provider.hooks.analytics import AnalyticsHook

    emulator.call("clear_requests")
    hook = AnalyticsHook()
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    task = UserAttributeSync(hook, "bench", columns=AttributeColumns(user="email"), attributes=["region", "department"])
    plan = task.plan(query_rows("bench_warehouse", "SELECT email, attribute, value FROM user_access"))
    changes = len(plan.changes)
    task.apply(plan)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace else 0.0
    if trace:
        tracemalloc.stop()
    hook.close()
    counts = {op: sum(by_status.values()) for op, by_status in emulator.call("request_counts").items()}
    return counts, changes, seconds, peak


def fresh_account(emulator: EmulatorProcess, users: int, warehouse: Path) -> None:
    from analytics_provider.hooks.analytics import AnalyticsHook

    emulator.call("reset")
    emulator.call("set_rate_limit", quota=10**7)
    emulator.call("add_users", users)
    hook = AnalyticsHook()
    emails = [u["email"] for u in hook.list_users(exclude_deleted=True, limit=100)]
    hook.close()
    make_warehouse(warehouse, emails)


def shown(counts: dict[str, int]) -> str:
    return ", ".join(f"{op} {n}" for op, n in sorted(counts.items(), key=lambda item: -item[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", type=int, default=20_000)
    args = parser.parse_args()
    warehouse = Path(tempfile.mkdtemp(prefix="bench-warehouse-")) / "warehouse.db"
    os.environ["AIRFLOW_CONN_BENCH_WAREHOUSE"] = json.dumps({"conn_type": "sqlite", "host": str(warehouse)})
    with EmulatorProcess() as emulator:
        os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json
        fresh_account(emulator, args.users, warehouse)
        first, first_changes, first_s, _ = sync(emulator)
        second, second_changes, second_s, _ = sync(emulator)
        fresh_account(emulator, args.users, warehouse)
        _, _, traced_s, peak = sync(emulator, trace=True)
    with sqlite3.connect(warehouse) as db:  # the seed's active users are in the table too
        (rows,) = db.execute("SELECT COUNT(*) FROM user_access").fetchone()
    db.close()
    print(f"{args.users} users added to the seed's; {rows} rows (2 attributes a user) from SQLite:")
    print(f"  first sync:  {first_changes} changes, {sum(first.values())} requests in {first_s:.1f} s ({shown(first)})")
    print(f"  second sync: {second_changes} changes, {sum(second.values())} requests in {second_s:.1f} s "
          f"({shown(second)})")
    print(f"  first sync traced: peak {peak:.1f} MB of Python objects ({traced_s:.1f} s under tracemalloc)")
    writes = first.get(WRITE, 0)
    met = report("access_sync", f"{args.users} users x 2 attributes: upserts of the first sync", str(writes),
                 f"= ceil({first_changes} / 100)", writes == math.ceil(first_changes / 100) and first_changes > 0)
    met &= report("access_sync", "writes of the second sync (same table)", str(second.get(WRITE, 0)), "0",
                  second.get(WRITE, 0) == 0 and second_changes == 0)
    for name, counts, limit in (("first", first, 2.0), ("second", second, 1.0)):
        per_user = sum(counts.get(op, 0) for op in USER_READS) / (rows / 2)
        met &= report("access_sync", f"reads per user of the {name} sync", f"{per_user:.2f}", f"<= {limit:g}",
                      per_user <= limit)
    met &= report("access_sync", f"{args.users} users x 2 attributes: peak memory of a sync", f"{peak:.1f} MB",
                  f"< {PEAK_LIMIT_MB:.0f} MB", peak < PEAK_LIMIT_MB)
    print(f"targets: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
