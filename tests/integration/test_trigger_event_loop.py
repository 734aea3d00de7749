"""Nothing the trigger does blocks the triggerer's event loop (asyncio debug mode, a fresh process).

The triggerer imports a trigger's module on its event loop; ours loads in milliseconds, and the
first ``run()`` imports aiohttp and the client in a thread, where the loop does not wait for them.
The one pause left in that warm-up is the interpreter's: the objects it allocates may start a full
(generation 2) garbage collection, which stops every thread for as long as it walks all of the
process's objects (about 0.1 s beside Airflow's; none with ``gc.freeze()``). Python would run it
at the next allocations of any trigger; it is measured with gc's callbacks and set apart, so that
any other blocking in the warm-up (an import holding the GIL, a lookup on the loop) fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from analytics_provider.hooks.analytics import AnalyticsHook

PROBE = Path(__file__).with_name("loop_probe.py")
LIMIT = 0.05  # seconds; the triggerer warns at 0.2


def test_loading_and_running_the_trigger_never_blocks_the_loop(analytics_emulator, analytics_connection) -> None:
    analytics_emulator.job_duration = 0.5
    hook = AnalyticsHook(analytics_connection)
    job_ids = [str(hook.preload_dashboard(n, [], bust_cache)["id"]) for n in (1, 2) for bust_cache in (True, False)][:3]
    env = {**os.environ, "AIRFLOW_CONN_ANALYTICS_DEFAULT": analytics_emulator.connection_json()}
    done = subprocess.run([sys.executable, str(PROBE), *job_ids], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert [e["status"] for e in result["events"]] == ["success"] * 3
    assert result["class_load"] < 0.02, result
    held, collecting = result["warmup_max_lag"], result["warmup_full_gc"]
    print(f"warm-up: loop held up to {held:.3f} s, of which a full garbage collection {collecting:.3f} s")
    assert result["warmup_max_lag"] - result["warmup_full_gc"] < LIMIT, result
    assert result["slow"] == [], "\n".join(s[-250:] for s in result["slow"]) + f"\nmax lag {result['max_lag']}"
    assert result["max_lag"] - result["full_gc"] < LIMIT, result
