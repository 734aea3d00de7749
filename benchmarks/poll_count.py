"""Benchmark: how much of our code one poll of a waiting trigger runs, in the steady state.

One :class:`~analytics_provider.triggers.analytics.AnalyticsJobTrigger` waits on a long job of the
emulator (in a child process, so only the trigger's side is seen). ``sys.setprofile`` records each
function of ``analytics_provider`` (the emulator and the test helpers excluded) entered between two
of the trigger's sleeps; once the wait is in its steady state (its third look on), each look's
distinct functions and modules are counted. The figures are the most any of ``--looks`` looks ran.
They say how much a reader must follow to understand one look, not how fast it is (the trigger's
CPU is ``trigger_polling``'s). Targets: at most 10 modules and 40 functions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from _emulator_process import EmulatorProcess
from _targets import report

TARGET_MODULES, TARGET_FUNCTIONS = 10, 40
CONN_ID = "analytics_default"
COMPREHENSIONS = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")
STEADY_FROM = 3  # the looks before are the wait's start: the machinery's import, the first settings read


def ours(filename: str, package: str) -> str | None:
    """The module of a function of ours (``api/jobs/wait``), or None for anything else."""
    if not filename.startswith(package):
        return None
    module = filename[len(package):].removesuffix(".py")
    return None if module.startswith("testing") else module


def count_looks(looks: int, interval: float) -> list[tuple[set[str], set[str]]]:
    """Each steady look's (modules, functions) of ours."""
    import analytics_provider
    from analytics_provider.triggers.analytics import AnalyticsJobTrigger

    package = str(Path(analytics_provider.__file__).resolve().parent) + os.sep
    per_look: list[tuple[set[str], set[str]]] = [(set(), set())]

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = ours(frame.f_code.co_filename, package)
            if module is not None:
                per_look[-1][0].add(module)
                per_look[-1][1].add(f"{module}:{frame.f_code.co_qualname}")

    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        per_look.append((set(), set()))  # a look ends where the trigger sleeps
        if len(per_look) > STEADY_FROM + looks:
            raise asyncio.CancelledError  # enough looks: end the wait here
        await real_sleep(seconds)

    async def wait(job_id: int) -> None:
        trigger = AnalyticsJobTrigger(CONN_ID, job_id, interval, time.time() + 3600)
        trigger.sleep = sleep  # type: ignore[method-assign]
        sys.setprofile(profile)
        try:
            async for _event in trigger.run():
                raise RuntimeError("the job ended before the looks were counted")
        except asyncio.CancelledError:
            pass
        finally:
            sys.setprofile(None)

    with EmulatorProcess(job_duration=3600.0) as emulator:
        emulator.call("set_rate_limit", quota=10**9)
        os.environ[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = emulator.connection_json
        job_id = emulator.call("add_jobs", 1, 3600.0)[0]
        asyncio.run(wait(job_id))
    return per_look[STEADY_FROM:STEADY_FROM + looks]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--looks", type=int, default=5, help="steady looks counted")
    parser.add_argument("--interval", type=float, default=0.2, help="the trigger's poll interval, seconds")
    parser.add_argument("--show", action="store_true", help="list the functions of the busiest look")
    args = parser.parse_args()
    looks = count_looks(args.looks, args.interval)
    modules = max(len(m) for m, _ in looks)
    functions = max(len(f) for _, f in looks)
    busiest = max(looks, key=lambda look: len(look[1]))
    print(f"one steady look of a waiting trigger, the most of {len(looks)} looks: {functions} functions of ours "
          f"in {modules} modules")
    plain = max(len([f for f in names if not f.endswith(COMPREHENSIONS)]) for _, names in looks)
    print(f"  (without comprehensions and generator expressions, functions of their own in Python 3.11: {plain})")
    print("modules: " + ", ".join(sorted(busiest[0])))
    if args.show:
        for name in sorted(busiest[1]):
            print(f"  {name}")
    met = report("poll_count", "modules of ours per steady look", str(modules), f"<= {TARGET_MODULES}",
                 modules <= TARGET_MODULES)
    met &= report("poll_count", "functions of ours per steady look", str(functions), f"<= {TARGET_FUNCTIONS}",
                  functions <= TARGET_FUNCTIONS)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
