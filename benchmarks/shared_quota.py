"""Benchmark: 200 waits on one key against a small quota (a shortened frame).

Every wait must end in success, 429 answers must stay under 1% of the polls, and each job's
success must be seen within two of its fair-share poll intervals (waits x frame / quota).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from _emulator_process import EmulatorProcess


async def wait_all(job_ids: list[int], interval: float) -> dict[int, tuple[str, float]]:
    from analytics_provider.triggers import AnalyticsJobTrigger

    async def one(job_id: int) -> tuple[int, tuple[str, float]]:
        trigger = AnalyticsJobTrigger("analytics_default", job_id, interval, time.time() + 900)
        async for event in trigger.run():
            return job_id, (event.payload["status"], time.monotonic())
        return job_id, ("none", time.monotonic())

    return dict(await asyncio.gather(*(one(j) for j in job_ids)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--waits", type=int, default=200)
    parser.add_argument("--quota", type=int, default=40, help="GET /jobs/{id} requests per frame")
    parser.add_argument("--frame", type=float, default=2.0, help="seconds per rate-limit frame")
    parser.add_argument("--interval", type=float, default=1.0, help="the poll interval each wait asks for")
    parser.add_argument("--job-seconds", type=float, default=15.0)
    args = parser.parse_args()
    fair_share = args.waits * args.frame / args.quota
    with EmulatorProcess(job_duration=args.job_seconds, rate_limit_frame=args.frame) as emulator:
        emulator.call("set_rate_limit", quota=10**6)  # submissions are not what is measured
        emulator.call("set_rate_limit", quota=args.quota, operation="get_job")
        os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json
        from analytics_provider.hooks.analytics import AnalyticsHook

        hook = AnalyticsHook()
        submitted: dict[int, float] = {}
        for n in range(args.waits):
            condition = [{"dynamic_filter_id": 1, "condition": {"operator": "is", "values": [f"q{n}"]}}]
            submitted[hook.submit_widget_export(101, "csv", condition)["id"]] = time.monotonic()
        emulator.call("clear_requests")
        events = asyncio.run(wait_all(list(submitted), args.interval))
        polls = [r for r in emulator.call("requests") if r["operation"] == "get_job"]
    too_many = sum(1 for r in polls if r["status"] == 429)
    delays = sorted(events[j][1] - (submitted[j] + args.job_seconds) for j in submitted)
    ok = sum(1 for status, _ in events.values() if status == "success")
    print(f"{args.waits} waits, quota {args.quota} per {args.frame:g} s frame: fair share {fair_share:.1f} s a poll")
    print(f"ended in success: {ok}/{args.waits}")
    print(f"polls: {len(polls)}, 429 answers: {too_many} ({100 * too_many / max(len(polls), 1):.2f}%)")
    print(f"success seen after: median {delays[len(delays) // 2]:.1f} s, worst {delays[-1]:.1f} s "
          f"(limit {2 * fair_share:.1f} s)")
    met = ok == args.waits and too_many < 0.01 * len(polls) and delays[-1] <= 2 * fair_share
    print("targets:", "met" if met else "NOT met")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
