"""Run AnalyticsJobTrigger as a triggerer does, in a fresh process, and report how long the loop was blocked.

Usage: ``python loop_probe.py JOB_ID...`` (``AIRFLOW_CONN_ANALYTICS_DEFAULT`` set). Prints JSON:
how long loading the trigger class took on the loop; the longest lag of a 5 ms ticker while the
first ``run()`` imports the machinery in its thread (``warmup_max_lag``) and while the waits run
(``max_lag``); the longest full garbage collection in each phase (``warmup_full_gc``, ``full_gc``:
the interpreter's, stopping every thread whoever allocated); the callbacks asyncio's debug mode
found slow while the waits ran; the events.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import sys
import time

import airflow.jobs.triggerer_job_runner  # noqa: F401  (what a triggerer process has loaded)

try:
    from airflow._shared.module_loading import import_string
except ImportError:  # Airflow before 3.2
    from airflow.utils.module_loading import import_string

SLOW = 0.05  # a loaded 2-core test machine; the triggerer itself warns at 0.2
slow: list[str] = []
full_collections: list[float] = []  # seconds each full (generation 2) garbage collection took
_collection_started = [0.0]


def time_full_collections(phase: str, info: dict) -> None:
    """gc callback: the interpreter's full collections stop every thread, whoever triggered them."""
    if info["generation"] != 2:
        return
    if phase == "start":
        _collection_started[0] = time.monotonic()
    else:
        full_collections.append(time.monotonic() - _collection_started[0])


class SlowCallbacks(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "took" in text and "Executing" in text:
            slow.append(text[-400:])


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.monotonic()
        await asyncio.sleep(0.005)
        lags.append(time.monotonic() - started - 0.005)


async def main(job_ids: list[int]) -> dict:
    asyncio.get_running_loop().slow_callback_duration = SLOW
    lags: list[float] = []
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(lags, stop))
    await asyncio.sleep(0.05)
    started = time.monotonic()
    trigger_class = import_string("analytics_provider.triggers.analytics.AnalyticsJobTrigger")  # on the loop, as there
    class_load = time.monotonic() - started
    await sys.modules[trigger_class.__module__].load_machinery()  # what the first run() does first
    await asyncio.sleep(0.05)
    warmup_lag = max(lags)
    warmup_full_gc = max(full_collections, default=0.0)
    lags.clear()
    slow.clear()
    full_collections.clear()

    async def first(job_id: int) -> dict:
        trigger = trigger_class("analytics_default", job_id, 0.05, time.time() + 60)
        async for event in trigger.run():
            return dict(event.payload)
        return {}

    events = await asyncio.gather(*(first(j) for j in job_ids))
    stop.set()
    await tick
    return {"class_load": class_load, "warmup_max_lag": warmup_lag, "warmup_full_gc": warmup_full_gc,
            "max_lag": max(lags), "full_gc": max(full_collections, default=0.0), "ticks": len(lags),
            "slow": slow, "events": events}


if __name__ == "__main__":
    gc.callbacks.append(time_full_collections)
    logging.getLogger("asyncio").addHandler(SlowCallbacks())
    logging.getLogger("asyncio").setLevel(logging.WARNING)
    result = asyncio.run(main([int(a) for a in sys.argv[1:]]), debug=True)
    print(json.dumps(result))
