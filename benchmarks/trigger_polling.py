"""Benchmark: thousands of job waits at once in one event loop, read in batches, one job at a time,
by a bare loop and by the http provider's trigger.

Rows, at each size (``--sizes``, 1,000 and 10,000 waits by default; 1 s interval, 20 s jobs):

- ``bare aiohttp loop``: the floor of a wait that reads its own job: one ``GET /jobs/{id}`` on a
  shared session, read the JSON, sleep; none of a trigger's duties (deadline, outages, quota, follows);
- ``ours, per job``: our trigger reading each job alone (what a connection falls back to where the
  service refuses List Jobs);
- ``ours, batched``: our trigger as it runs: the waits of the loop share ``GET /jobs?ids[]=``;
- ``HttpSensorTrigger``: the http provider's trigger on an emulator endpoint that answers 404
  until the job succeeded (the wait that trigger supports).

The floor and ours run interleaved (the order alternating) for ``--rounds`` rounds at the first
size and ``--rounds-large`` at the others; ratios are medians of the rounds' ratios, latenesses
the worst round's. Figures: CPU ms per wait-read (whole run, and steady state: every wait has read
twice and none has ended), requests per wait-read (counted by the emulator), lateness of a read
(p50, p99: from the moment the wait asked to wake until it had its job's state), and, in rounds of
their own under ``tracemalloc``, memory per wait in this process and its growth from round to
round. Targets at the first size: batched CPU per wait-read at most 0.25x the bare loop's, at most
0.02 requests per wait-read, p99 lateness at most 0.2 s; ours per job at most 1.3x the bare loop's
CPU; at every size, the batched waits' memory flat over the run. The waits read one by one (the
bare loop, ours per job) spread their second read over half an interval, as ours does then. The
emulator runs in a child process, so only the waits' own work is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from _emulator_process import EmulatorProcess
from _targets import report

TARGET_BATCHED_RATIO, TARGET_REQUESTS, TARGET_P99_S, TARGET_PER_JOB_RATIO = 0.25, 0.02, 0.2, 1.3
CONN_ID = "analytics_default"


class PollClock:
    """Counts a row's wait-reads and times each, per asyncio task: from when the wait asked to wake
    (its sleep) until its read returned. Under ``memory``, samples the traced memory once a round."""

    def __init__(self, waits: int, memory: bool = False) -> None:
        self.expected: dict[asyncio.Task[Any], float] = {}
        self.lateness: list[float] = []
        self.polls = 0
        self.waits = waits
        self.memory = memory
        self.samples: list[int] = []  # traced bytes at each round boundary of the steady state
        self.steady: list[tuple[float, int]] = []  # (CPU seconds, reads) once every wait has read twice
        self.ended = False

    def patched_asyncio(self) -> types.SimpleNamespace:
        real_sleep = asyncio.sleep

        async def sleep(delay: float, *args: Any) -> Any:
            task = asyncio.current_task()
            if task is not None:
                self.expected[task] = time.monotonic() + delay
            return await real_sleep(delay, *args)

        return types.SimpleNamespace(**{**vars(asyncio), "sleep": sleep})

    def wrap(self, request: Callable[..., Any]) -> Callable[..., Any]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            self.polls += 1
            if self.polls == 2 * self.waits:
                self.steady.append((time.process_time(), self.polls))
            if self.memory and not self.ended and self.polls % self.waits == 0 and self.polls >= 2 * self.waits:
                self.samples.append(tracemalloc.get_traced_memory()[0])
            expected = self.expected.pop(asyncio.current_task(), None)  # type: ignore[arg-type]
            try:
                return await request(*args, **kwargs)
            finally:
                if expected is not None and not self.memory:  # a growing list would count as the waits' memory
                    self.lateness.append(time.monotonic() - expected)

        return timed


async def _first_events(triggers: list[Any], clock: PollClock, on_loop: Callable[[], None]) -> list[Any]:
    on_loop()
    async def first(trigger: Any) -> Any:
        async for event in trigger.run():
            if not clock.ended:  # the first wait ended: the steady state is over
                clock.ended = True
                if len(clock.steady) == 1:
                    clock.steady.append((time.process_time(), clock.polls))
            return event.payload
        return None

    return await asyncio.gather(*(first(t) for t in triggers), return_exceptions=True)


def run(emulator: EmulatorProcess, make_triggers: Callable[[], list[Any]],
        patch: Callable[[PollClock], Callable[[], None]], *, memory: bool = False,
        on_loop: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """One row's round: the waits until each has its event, measured; ``on_loop`` runs first on the loop."""
    if memory:
        tracemalloc.start()
        baseline = tracemalloc.get_traced_memory()[0]
    triggers = make_triggers()
    clock = PollClock(len(triggers), memory)
    undo = patch(clock)
    before = _api_requests(emulator)
    try:
        cpu, wall = time.process_time(), time.monotonic()
        events = asyncio.run(_first_events(triggers, clock, on_loop))
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    finally:
        undo()
        if memory:
            tracemalloc.stop()
    requests = _api_requests(emulator) - before
    late = sorted(clock.lateness) or [0.0]
    steady = float("nan")
    if len(clock.steady) == 2:
        (cpu0, polls0), (cpu1, polls1) = clock.steady
        steady = 1000 * (cpu1 - cpu0) / max(polls1 - polls0, 1)
    result = {
        "waits": len(events),
        "ok": sum(1 for e in events if e is True or (isinstance(e, dict) and e.get("status") == "success")),
        "crashed": sum(1 for e in events if isinstance(e, BaseException)),
        "polls": clock.polls,
        "requests_per_read": requests / max(clock.polls, 1),
        "cpu_ms_per_poll": 1000 * cpu / max(clock.polls, 1),
        "steady_cpu_ms_per_poll": steady,
        "p50": statistics.median(late),
        "p99": late[min(len(late) - 1, int(len(late) * 0.99))],
        "wall": wall,
    }
    if memory:
        samples = clock.samples
        third = max(1, len(samples) // 3)
        result["bytes_per_wait"] = (statistics.median(samples) - baseline) / len(triggers) if samples else float("nan")
        result["growth_per_wait"] = ((statistics.mean(samples[-third:]) - statistics.mean(samples[:third]))
                                     / len(triggers) if len(samples) >= 3 else float("nan"))
        result["memory_rounds"] = len(samples)
    return result


def _api_requests(emulator: EmulatorProcess) -> int:
    counts = emulator.call("request_counts")
    return sum(sum(by_status.values()) for by_status in counts.values())


def patcher(
    sleeper: Any, sleep_name: str, client_class: type, method: str
) -> Callable[[PollClock], Callable[[], None]]:
    """Instrument a wait: the sleep it calls (when it asks to wake) and its reads.

    ``sleeper.<sleep_name>`` is the trigger's ``sleep`` attribute, or its module's ``asyncio``.
    """

    def patch(clock: PollClock) -> Callable[[], None]:
        saved = (sleeper.__dict__[sleep_name], getattr(client_class, method))
        patched = clock.patched_asyncio()
        setattr(sleeper, sleep_name, patched if sleep_name == "asyncio" else staticmethod(patched.sleep))
        setattr(client_class, method, clock.wrap(saved[1]))

        def undo() -> None:
            setattr(sleeper, sleep_name, saved[0])
            setattr(client_class, method, saved[1])

        return undo

    return patch


class BareGetLoop:
    """The floor: what any wait must do per poll (one GET on a shared session, read the JSON, sleep)."""

    session: Any = None
    users = 0

    def __init__(self, url: str, headers: dict[str, str], interval: float) -> None:
        self.url, self.headers, self.interval = url, headers, interval

    async def get(self) -> Any:
        async with type(self).session.get(self.url, headers=self.headers) as response:
            return await response.json()

    async def run(self) -> Any:
        import aiohttp

        cls = type(self)
        if cls.session is None:
            cls.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100))
        cls.users += 1
        try:
            wait = self.interval * random.uniform(0.5, 1.0)  # spread as ours is read one by one: never in lock-step
            while (await self.get())["job"]["status"] != "success":
                await self.sleep(wait)
                wait = self.interval
            yield types.SimpleNamespace(payload={"status": "success"})
        finally:
            cls.users -= 1
            if cls.users == 0:
                await cls.session.close()
                cls.session = None

    sleep = staticmethod(asyncio.sleep)


class Rows:
    """The rows of one size, each a callable that makes its jobs and runs one round."""

    def __init__(self, emulator: EmulatorProcess, args: argparse.Namespace, waits: int) -> None:
        self.emulator, self.args, self.waits = emulator, args, waits
        self.headers = {"X-Service-Key": emulator.api_key, "Accept": "application/json"}

    def jobs(self) -> list[int]:
        return list(self.emulator.call("add_jobs", self.waits, self.args.job_seconds))

    def bare(self, memory: bool = False) -> dict[str, Any]:
        jobs, base, interval = self.jobs(), self.emulator.base_url, self.args.interval
        return run(self.emulator, lambda: [BareGetLoop(f"{base}/jobs/{j}", self.headers, interval) for j in jobs],
                   patcher(BareGetLoop, "sleep", BareGetLoop, "get"), memory=memory)

    def ours(self, batched: bool, memory: bool = False) -> dict[str, Any]:
        from analytics_provider.hooks.async_client import AsyncAnalyticsClient, LoopShared
        from analytics_provider.triggers import AnalyticsJobTrigger

        def refuse_batches() -> None:  # the path of a connection whose service refused List Jobs
            LoopShared.of_running_loop().refusals[CONN_ID] = "benchmark: each job read alone"

        jobs, deadline = self.jobs(), time.time() + 900
        return run(self.emulator,
                   lambda: [AnalyticsJobTrigger(CONN_ID, j, self.args.interval, deadline) for j in jobs],
                   patcher(AnalyticsJobTrigger, "sleep", AsyncAnalyticsClient, "read_job"), memory=memory,
                   on_loop=(lambda: None) if batched else refuse_batches)

    def http(self) -> dict[str, Any]:
        """The http provider's trigger on the same kind of wait (a comparison row, no target)."""
        from airflow.providers.http.hooks.http import HttpAsyncHook
        from airflow.providers.http.triggers import http as http_module
        from airflow.providers.http.triggers.http import HttpSensorTrigger

        theirs = self.jobs()
        # the comparison row's own noise, not ours: a warning per 404 poll ("not done yet") and
        # the connections its hook leaves open at the end, which asyncio reports one by one
        quiet = [logging.getLogger(name) for name in ("airflow.providers.http", "asyncio")]
        levels = [logger.level for logger in quiet]
        for logger in quiet:
            logger.setLevel(logging.CRITICAL)
        try:
            return run(
                self.emulator,
                lambda: [HttpSensorTrigger(endpoint=f"_emulator/jobs/{j}/done", http_conn_id="bench_http",
                                           poke_interval=self.args.interval) for j in theirs],
                patcher(http_module, "asyncio", HttpAsyncHook, "run"),
            )
        finally:
            for logger, level in zip(quiet, levels, strict=True):
                logger.setLevel(level)


ROWS = ("bare aiohttp loop", "ours, per job", "ours, batched")


def measure_size(emulator: EmulatorProcess, args: argparse.Namespace, waits: int, rounds: int) -> dict[str, Any]:
    rows = Rows(emulator, args, waits)
    measures = {"bare aiohttp loop": rows.bare, "ours, per job": lambda: rows.ours(False),
                "ours, batched": lambda: rows.ours(True)}
    measured: list[dict[str, dict[str, Any]]] = []
    for n in range(rounds):  # interleaved, the order alternating: a drift in the machine's load hits all
        order = list(ROWS) if n % 2 == 0 else list(ROWS)[::-1]
        measured.append({name: measures[name]() for name in order})
        print(f"  {waits} waits, round {n + 1}/{rounds} done", flush=True)
    memory = {"ours, batched": rows.ours(True, memory=True), "ours, per job": rows.ours(False, memory=True)}
    http = None if args.skip_http else rows.http()
    return {"rounds": measured, "memory": memory, "http": http}


def print_size(waits: int, found: dict[str, Any]) -> None:
    print(f"\n{waits} waits at once")
    head = ("round", "row", "ended ok", "crashed", "reads", "req/read", "CPU whole", "CPU steady", "late p50",
            "late p99")
    print(f"{head[0]:<6}{head[1]:<20}" + "".join(f"{h:>11}" for h in head[2:]))
    lines = [(str(n + 1), name, r) for n, one in enumerate(found["rounds"]) for name, r in one.items()]
    lines += [("-", "HttpSensorTrigger", found["http"])] if found["http"] is not None else []
    for label, name, r in lines:
        cells = (r["ok"], r["crashed"], r["polls"])
        figures = (r["requests_per_read"], r["cpu_ms_per_poll"], r["steady_cpu_ms_per_poll"], r["p50"], r["p99"])
        print(f"{label:<6}{name:<20}" + "".join(f"{c:>11}" for c in cells) + "".join(f"{t:>11.3f}" for t in figures))
    for name, r in found["memory"].items():
        print(f"memory, {name}: {r['bytes_per_wait'] / 1024:.1f} KiB per wait (tracemalloc, median of "
              f"{r['memory_rounds']} rounds); growth first third -> last third of the run: "
              f"{r['growth_per_wait']:+.0f} B per wait")


def ratios(found: dict[str, Any], row: str) -> list[float]:
    return [one[row]["steady_cpu_ms_per_poll"] / one["bare aiohttp loop"]["steady_cpu_ms_per_poll"]
            for one in found["rounds"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000], help="waits at once, per size")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--job-seconds", type=float, default=20.0)
    parser.add_argument("--skip-http", action="store_true", help="leave out the http provider's row")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds at the first size")
    parser.add_argument("--rounds-large", type=int, default=1, help="interleaved rounds at the other sizes")
    args = parser.parse_args()
    with EmulatorProcess(job_duration=args.job_seconds) as emulator:
        emulator.call("set_rate_limit", quota=10**9)  # this benchmark measures the client, not the quota
        emulator.call("set_recording", False)  # counted, not kept: hundreds of thousands of reads
        os.environ[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = emulator.connection_json
        os.environ["AIRFLOW_CONN_BENCH_HTTP"] = emulator.base_url.removesuffix("/api/v2")
        found = {waits: measure_size(emulator, args, waits, args.rounds if n == 0 else args.rounds_large)
                 for n, waits in enumerate(args.sizes)}
    print(f"\n{args.interval:g} s interval, jobs of {args.job_seconds:g} s; CPU ms per wait-read: whole run "
          f"(start-up included) and steady state; lateness in seconds, from a wait's wake-up to its job's state")
    met = True
    for n, (waits, one) in enumerate(found.items()):
        print_size(waits, one)
        batched, per_job = ratios(one, "ours, batched"), ratios(one, "ours, per job")
        rounds = one["rounds"]
        requests = max(r["ours, batched"]["requests_per_read"] for r in rounds)
        worst_p99 = max(r["ours, batched"]["p99"] for r in rounds)
        ok = sum(r[row]["ok"] for r in rounds for row in ("ours, batched", "ours, per job"))
        print(f"CPU per read, ours / bare loop (steady), per round: batched "
              f"{', '.join(f'{r:.2f}x' for r in batched)}; per job {', '.join(f'{r:.2f}x' for r in per_job)}")
        if one["http"] is not None:
            http = one["http"]["steady_cpu_ms_per_poll"] / rounds[-1]["ours, batched"]["steady_cpu_ms_per_poll"]
            print(f"HttpSensorTrigger / ours batched (steady CPU per read): {http:.1f}x")
        name = f"{waits} waits"
        if n == 0:
            met &= report("trigger_polling", f"{name}: CPU per read, batched / bare loop (median)",
                          f"{statistics.median(batched):.2f}x", f"<= {TARGET_BATCHED_RATIO}x",
                          statistics.median(batched) <= TARGET_BATCHED_RATIO)
            met &= report("trigger_polling", f"{name}: requests per read, batched (worst round)",
                          f"{requests:.4f}", f"<= {TARGET_REQUESTS}", requests <= TARGET_REQUESTS)
            met &= report("trigger_polling", f"{name}: p99 lateness, batched (worst round)", f"{worst_p99:.3f} s",
                          f"<= {TARGET_P99_S} s", worst_p99 <= TARGET_P99_S)
            met &= report("trigger_polling", f"{name}: CPU per read, per job / bare loop (median)",
                          f"{statistics.median(per_job):.2f}x", f"<= {TARGET_PER_JOB_RATIO}x",
                          statistics.median(per_job) <= TARGET_PER_JOB_RATIO)
        met &= report("trigger_polling", f"{name}: every wait of ours succeeds", f"{ok}/{2 * waits * len(rounds)}",
                      str(2 * waits * len(rounds)), ok == 2 * waits * len(rounds))
        for row, r in one["memory"].items():
            if row != "ours, batched":
                continue  # reported for comparison: read one by one, the waits' requests in flight vary a lot
            flat = abs(r["growth_per_wait"]) <= max(64.0, 0.05 * r["bytes_per_wait"])
            met &= report("trigger_polling", f"{name}: memory per wait, {row}, flat over the run",
                          f"{r['bytes_per_wait'] / 1024:.1f} KiB, {r['growth_per_wait']:+.0f} B",
                          "growth <= max(64 B, 5%)", flat)
    print(f"\ntargets: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
