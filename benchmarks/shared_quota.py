"""Benchmark: many waits on one key against the service's quota, in one process and in several
processes sharing the key (HA triggerers), each learning only from ``RateLimit-*``.

Settings (each ``waits:quota:frame``, the quota of job reads per frame of that many seconds):

- ``5000:120:60`` (the document's level 1), reads in batches (List Jobs): on every run, every wait
  ends in success, no answer is 429, and each job's success is seen within two frames of its end;
- the same setting read one job at a time (``GET /jobs/{id}``, what a connection falls back to), for
  comparison: its waits end two frames after their jobs, and the output says how many had seen
  their job's success by then (no target: the quota allows a look at each job every 49 minutes);
- ``200:40:2``, read one job at a time (a shortened frame): the fallback path itself stays clear
  of 429 (under 1% of the reads) and each success is seen within two fair-share intervals
  (waits x frame / quota).

``--runs`` repeats each setting with targets; ``--processes`` lists the process counts.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from _emulator_process import EmulatorProcess
from _targets import report

CONN_ID = "analytics_default"
READS = ("list_jobs", "get_job")


@dataclass(frozen=True)
class Setting:
    waits: int
    quota: int
    frame: float
    alone: bool  # each job read with GET /jobs/{id}
    targets: bool = True

    @property
    def name(self) -> str:
        how = "one job at a time" if self.alone else "in batches"
        return f"{self.waits} waits, {self.quota} per {self.frame:g} s, {how}"


async def wait_all(job_ids: list[int], interval: float, end_time: float, alone: bool) -> dict[int, tuple[str, float]]:
    from analytics_provider.hooks.async_client import LoopShared
    from analytics_provider.triggers import AnalyticsJobTrigger

    if alone:  # the path of a connection whose service refused List Jobs
        LoopShared.of_running_loop().refusals[CONN_ID] = "benchmark: each job read alone"

    async def one(job_id: int) -> tuple[int, tuple[str, float]]:
        trigger = AnalyticsJobTrigger(CONN_ID, job_id, interval, end_time)
        async for event in trigger.run():
            return job_id, (event.payload["status"], time.time())
        return job_id, ("none", time.time())

    return dict(await asyncio.gather(*(one(j) for j in job_ids)))


def _triggerer(connection_json: str, interval: float, alone: bool, inbox: Any, outbox: Any) -> None:
    """One triggerer process: its own event loop, session, quota budget and reader; one key shared."""
    os.environ[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = connection_json
    import analytics_provider.hooks.async_client
    import analytics_provider.triggers  # noqa: F401  (imported before the clock starts)
    outbox.put("ready")
    job_ids, end_time = inbox.get()
    outbox.put(asyncio.run(wait_all(job_ids, interval, end_time, alone)))


def run_once(emulator: EmulatorProcess, args: argparse.Namespace, setting: Setting, processes: int,
             run: int = 1) -> bool:
    context = mp.get_context("spawn")
    workers = []
    for _ in range(processes):
        inbox, outbox = context.Queue(), context.Queue()
        proc = context.Process(target=_triggerer,
                               args=(emulator.connection_json, args.interval, setting.alone, inbox, outbox))
        proc.start()
        workers.append((proc, inbox, outbox))
    for _, _, outbox in workers:
        outbox.get(timeout=120)
    emulator.call("set_rate_limit", frame=setting.frame)  # a new frame: no count left from the last run
    emulator.call("set_rate_limit", quota=10**6)
    for operation in READS:
        emulator.call("set_rate_limit", quota=setting.quota, operation=operation)
    ids = emulator.call("add_jobs", setting.waits, args.job_seconds)
    ends = time.time() + args.job_seconds
    emulator.call("clear_requests")
    # with targets the waits last until their jobs end; for comparison, two frames past the end
    end_time = ends + (900 if setting.targets else 2 * setting.frame)
    for index, (_, inbox, _) in enumerate(workers):
        inbox.put((ids[index::processes], end_time))
    events: dict[int, tuple[str, float]] = {}
    for proc, _, outbox in workers:
        events.update(outbox.get(timeout=end_time - time.time() + 300))
        proc.join(timeout=30)
    counts = emulator.call("request_counts")
    reads = sum(sum(counts.get(op, {}).values()) for op in READS)
    too_many = sum(counts.get(op, {}).get("429", 0) for op in READS)
    by_operation = ", ".join(f"{op} {sum(counts.get(op, {}).values())}" for op in READS)
    ok = [when - ends for status, when in events.values() if status == "success"]
    delays = sorted(ok) or [float("nan")]
    share = 100 * too_many / max(reads, 1)
    name = f"{setting.name}, {processes} process(es), run {run}"
    summary = (f"  {name}: success {len(ok)}/{setting.waits}; requests {reads} ({by_operation}), 429 answers "
               f"{too_many} ({share:.2f}%); success seen after median {delays[len(delays) // 2]:.1f} s, "
               f"worst {delays[-1]:.1f} s")
    if not setting.targets:
        print(f"{summary} (for comparison: waits end {2 * setting.frame:g} s after their jobs)", flush=True)
        return True
    limit = 2 * setting.frame if not setting.alone else 2 * setting.waits * setting.frame / setting.quota
    met = report("shared_quota", f"{name}: every wait succeeds", f"{len(ok)}/{setting.waits}",
                 str(setting.waits), len(ok) == setting.waits)
    if setting.alone:
        met &= report("shared_quota", f"{name}: 429 share", f"{share:.2f}%", "< 1%", too_many < 0.01 * reads)
    else:
        met &= report("shared_quota", f"{name}: 429 answers", str(too_many), "0", too_many == 0)
    met &= report("shared_quota", f"{name}: worst delay after the job's end", f"{delays[-1]:.1f} s",
                  f"<= {limit:.1f} s", delays[-1] <= limit)
    print(f"{summary} (limit {limit:.1f} s): {'met' if met else 'NOT met'}", flush=True)
    return met


def parse_setting(text: str, alone: bool, targets: bool = True) -> Setting:
    waits, quota, frame = text.split(":")
    return Setting(int(waits), int(quota), float(frame), alone, targets)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batched", default="5000:120:60", help="waits:quota:frame read in batches")
    parser.add_argument("--alone", default="200:40:2", help="waits:quota:frame read one job at a time")
    parser.add_argument("--no-comparison", action="store_true",
                        help="leave out the batched setting read one job at a time")
    parser.add_argument("--interval", type=float, default=1.0, help="the poll interval each wait asks for")
    parser.add_argument("--job-seconds", type=float, default=30.0)
    parser.add_argument("--runs", type=int, default=3, help="consecutive runs of each setting with targets")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 3], help="triggerer processes per run")
    args = parser.parse_args()
    batched = parse_setting(args.batched, alone=False)
    plan = [(batched, processes, run) for processes in args.processes for run in range(args.runs)]
    if not args.no_comparison:
        plan.append((parse_setting(args.batched, alone=True, targets=False), 1, 0))
    alone = parse_setting(args.alone, alone=True)
    plan += [(alone, processes, run) for processes in args.processes for run in range(args.runs)]
    results = []
    with EmulatorProcess(job_duration=args.job_seconds) as emulator:
        emulator.call("set_recording", False)  # counted, not kept
        os.environ[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = emulator.connection_json
        for setting, processes, run in plan:
            results.append(run_once(emulator, args, setting, processes, run + 1))
    met = all(results)
    print("targets:", "met on every run" if met else "NOT met on every run")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
