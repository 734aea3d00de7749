"""Benchmark: waits on one key against a small quota (a shortened frame), in one process and in
several processes sharing the key (HA triggerers), each learning only from ``RateLimit-*``.

Targets, on every run (not on average): every wait ends in success, 429 answers stay under 1% of
the polls, and each job's success is seen within two of its fair-share poll intervals
(waits x frame / quota). ``--runs`` repeats each setting; ``--processes`` lists the settings.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from _emulator_process import EmulatorProcess
from _targets import report


async def wait_all(job_ids: list[int], interval: float) -> dict[int, tuple[str, float]]:
    from analytics_provider.triggers import AnalyticsJobTrigger

    async def one(job_id: int) -> tuple[int, tuple[str, float]]:
        trigger = AnalyticsJobTrigger("analytics_default", job_id, interval, time.time() + 900)
        async for event in trigger.run():
            return job_id, (event.payload["status"], time.time())
        return job_id, ("none", time.time())

    return dict(await asyncio.gather(*(one(j) for j in job_ids)))


def _triggerer(connection_json: str, interval: float, inbox: Any, outbox: Any) -> None:
    """One triggerer process: its own event loop, session and quota budget; one key shared."""
    os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = connection_json
    import analytics_provider.triggers  # noqa: F401  (imported before the clock starts)

    outbox.put("ready")
    job_ids = inbox.get()
    outbox.put(asyncio.run(wait_all(job_ids, interval)))


def run_once(emulator: EmulatorProcess, args: argparse.Namespace, processes: int, run: int = 1) -> bool:
    from analytics_provider.hooks.analytics import AnalyticsHook

    context = mp.get_context("spawn")
    workers = []
    for _ in range(processes):
        inbox, outbox = context.Queue(), context.Queue()
        proc = context.Process(target=_triggerer, args=(emulator.connection_json, args.interval, inbox, outbox))
        proc.start()
        workers.append((proc, inbox, outbox))
    for _, _, outbox in workers:
        outbox.get(timeout=120)
    emulator.call("set_rate_limit", quota=10**6)  # submissions are not what is measured
    emulator.call("set_rate_limit", quota=args.quota, operation="get_job")
    hook = AnalyticsHook()
    submitted: dict[int, float] = {}
    tag = time.time_ns()  # distinct exports each run (the service de-duplicates pending ones)
    for n in range(args.waits):
        condition = [{"dynamic_filter_id": 1, "condition": {"operator": "is", "values": [f"{tag}-{n}"]}}]
        submitted[hook.submit_widget_export(101, "csv", condition)["id"]] = time.time()
    emulator.call("clear_requests")
    ids = list(submitted)
    for index, (_, inbox, _) in enumerate(workers):
        inbox.put(ids[index::processes])
    events: dict[int, tuple[str, float]] = {}
    for proc, _, outbox in workers:
        events.update(outbox.get(timeout=900))
        proc.join(timeout=30)
    polls = [r for r in emulator.call("requests") if r["operation"] == "get_job"]
    too_many = sum(1 for r in polls if r["status"] == 429)
    if os.environ.get("QUOTA_DEBUG"):
        frames: dict[int, list[int]] = {}
        for r in polls:
            frames.setdefault(int(r["time"] // args.frame), []).append(r["status"])
            if r["status"] == 429:
                print(f"    429 at {r['time'] % args.frame:.3f} s into its frame")
        for number, statuses in sorted(frames.items()):
            print(f"    frame {number}: {len(statuses)} polls, {statuses.count(429)} x 429")
    fair_share = args.waits * args.frame / args.quota
    share = 100 * too_many / max(len(polls), 1)
    delays = sorted(events[j][1] - (submitted[j] + args.job_seconds) for j in submitted)
    ok = sum(1 for status, _ in events.values() if status == "success")
    name = f"{processes} process(es), {args.waits} waits, run {run}"
    met = report("shared_quota", f"{name}: every wait succeeds", f"{ok}/{args.waits}", str(args.waits),
                 ok == args.waits)
    met &= report("shared_quota", f"{name}: 429 share", f"{share:.2f}%", "< 1%", too_many < 0.01 * len(polls))
    met &= report("shared_quota", f"{name}: worst delay", f"{delays[-1]:.1f} s", f"<= {2 * fair_share:.1f} s",
                  delays[-1] <= 2 * fair_share)
    print(f"  {processes} process(es): success {ok}/{args.waits}; polls {len(polls)}, 429 answers {too_many} "
          f"({share:.2f}%); success seen after median {delays[len(delays) // 2]:.1f} s, worst {delays[-1]:.1f} s "
          f"(limit {2 * fair_share:.1f} s): {'met' if met else 'NOT met'}", flush=True)
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--waits", type=int, default=200)
    parser.add_argument("--quota", type=int, default=40, help="GET /jobs/{id} requests per frame")
    parser.add_argument("--frame", type=float, default=2.0, help="seconds per rate-limit frame")
    parser.add_argument("--interval", type=float, default=1.0, help="the poll interval each wait asks for")
    parser.add_argument("--job-seconds", type=float, default=15.0)
    parser.add_argument("--runs", type=int, default=3, help="consecutive runs of each setting")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 3], help="triggerer processes per run")
    args = parser.parse_args()
    fair_share = args.waits * args.frame / args.quota
    print(f"{args.waits} waits on one key, quota {args.quota} per {args.frame:g} s frame: "
          f"fair share {fair_share:.1f} s a poll")
    results = []
    with EmulatorProcess(job_duration=args.job_seconds, rate_limit_frame=args.frame) as emulator:
        os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json
        for processes in args.processes:
            for run in range(args.runs):
                print(f"run {run + 1}/{args.runs}:", flush=True)
                results.append(run_once(emulator, args, processes, run + 1))
    met = all(results)
    print("targets:", "met on every run" if met else "NOT met on every run")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
