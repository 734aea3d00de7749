"""Run AnalyticsJobTrigger as a triggerer does, in a fresh process, and report what held its loop.

Usage: ``python loop_probe.py JOB_ID...`` (``AIRFLOW_CONN_ANALYTICS_DEFAULT`` set). Prints JSON.

Every figure is work done by this process, in CPU seconds, so that a machine busy with other
processes (which delays this one, but does no work in it) changes none of them:

- ``class_load``: CPU of the loop's thread while it imported the trigger's class (as a triggerer does);
- ``warmup_max_lag`` / ``max_lag``: the most CPU the process spent between a 5 ms ticker's due
  time and its wake-up, while the first ``run()`` imports the machinery in its thread, then while
  the waits run: time the loop could not serve its other triggers because this process was busy;
- ``warmup_full_gc`` / ``full_gc``: the CPU of the longest full (generation 2) garbage collection in
  each phase (the interpreter's, stopping every thread whoever allocated);
- ``slow``: the loop's callbacks that ran for ``SLOW`` CPU seconds or more on the loop's thread
  while the waits ran, with what they were;
- ``loop_events``: imports and file opens on the loop's thread while the waits ran (each blocks it);
- ``wall_max_lag``: the ticker's largest wall-clock lag, for information only.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import threading
import time

import airflow.jobs.triggerer_job_runner  # noqa: F401  (what a triggerer process has loaded)

try:
    from airflow._shared.module_loading import import_string
except ImportError:  # Airflow before 3.2
    from airflow.utils.module_loading import import_string

SLOW = 0.02  # CPU seconds of one callback on the loop's thread; the triggerer warns at 0.2 s of wall time
slow: list[str] = []
loop_events: list[str] = []
watching = threading.Event()  # set while the waits run: audit events on the loop's thread count then
LOOP_THREAD = threading.get_ident()
full_collections: list[float] = []  # CPU seconds each full (generation 2) garbage collection took
_collection_started = [0.0]


def time_full_collections(phase: str, info: dict) -> None:
    """gc callback: the interpreter's full collections stop every thread, whoever triggered them."""
    if info["generation"] != 2:
        return
    if phase == "start":
        _collection_started[0] = time.process_time()
    else:
        full_collections.append(time.process_time() - _collection_started[0])


def audit(event: str, args: tuple) -> None:
    """What blocks a loop whatever the machine's load: an import or a file opened on its thread."""
    if event in ("import", "open") and watching.is_set() and threading.get_ident() == LOOP_THREAD:
        loop_events.append(f"{event} {args[0]!r:.200}")


def time_callbacks() -> None:
    """Measure each callback of the loop in CPU seconds of its thread (asyncio's debug mode
    measures wall-clock time, which any other process on the machine stretches)."""
    run = asyncio.events.Handle._run

    def timed_run(handle: asyncio.events.Handle) -> None:
        started = time.thread_time()
        run(handle)
        took = time.thread_time() - started
        if took >= SLOW and watching.is_set():
            slow.append(f"{took:.3f} CPU s: {handle!r:.300}")

    asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]


async def ticker(lags: list[float], wall_lags: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        started, cpu_started = time.monotonic(), time.process_time()
        await asyncio.sleep(0.005)
        wall = time.monotonic() - started - 0.005
        wall_lags.append(wall)
        # the process's CPU over the tick, less the 5 ms a busy process may spend while the loop sleeps
        lags.append(max(0.0, min(wall, time.process_time() - cpu_started - 0.005)))


async def main(job_ids: list[int]) -> dict:
    lags: list[float] = []
    wall_lags: list[float] = []
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(lags, wall_lags, stop))
    await asyncio.sleep(0.05)
    started = time.thread_time()
    trigger_class = import_string("analytics_provider.triggers.analytics.AnalyticsJobTrigger")  # on the loop, as there
    class_load = time.thread_time() - started
    await sys.modules[trigger_class.__module__].load_machinery()  # what the first run() does first
    await asyncio.sleep(0.05)
    warmup_lag = max(lags)
    warmup_full_gc = max(full_collections, default=0.0)
    lags.clear()
    wall_lags.clear()
    full_collections.clear()

    async def first(job_id: int) -> dict:
        trigger = trigger_class("analytics_default", job_id, 0.05, time.time() + 60)
        async for event in trigger.run():
            return dict(event.payload)
        return {}

    watching.set()
    events = await asyncio.gather(*(first(j) for j in job_ids))
    watching.clear()
    stop.set()
    await tick
    return {"class_load": class_load, "warmup_max_lag": warmup_lag, "warmup_full_gc": warmup_full_gc,
            "max_lag": max(lags), "full_gc": max(full_collections, default=0.0), "ticks": len(lags),
            "slow": slow, "loop_events": loop_events, "wall_max_lag": max(wall_lags), "events": events}


if __name__ == "__main__":
    gc.callbacks.append(time_full_collections)
    sys.addaudithook(audit)
    time_callbacks()
    result = asyncio.run(main([int(a) for a in sys.argv[1:]]))
    print(json.dumps(result))
