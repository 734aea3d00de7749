"""Nothing the trigger does blocks the triggerer's event loop (a fresh process, as a triggerer runs it).

The triggerer imports a trigger's module on its event loop; ours loads in milliseconds, and the
first ``run()`` imports aiohttp and the client in a thread, where the loop does not wait for them.
What runs on the loop (each callback, and the connection's settings and TLS context built at the
first read) stays short. Everything is measured as work done by the probe's process, in CPU
seconds (loop_probe.py says how), so that a machine busy with other processes, which delays the
probe without adding work to it, cannot fail the test, while work moved onto the loop always does.
The one pause left in the warm-up is the interpreter's: the objects it allocates may start a full
(generation 2) garbage collection, which stops every thread for as long as it walks all of the
process's objects (about 0.1 s beside Airflow's; none with ``gc.freeze()``). Python would run it
at the next allocations of any trigger; it is measured with gc's callbacks and set apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from analytics_provider.hooks.analytics import AnalyticsHook

PROBE = Path(__file__).with_name("loop_probe.py")
LIMIT = 0.05  # CPU seconds the loop is held at once; the triggerer warns at 0.2 s of wall time
SLOW = 0.02  # CPU seconds of one callback on the loop (what the probe lists)


def probe(emulator: Any, connection: str) -> dict[str, Any]:
    """One fresh triggerer-like process waiting on three new jobs: what loop_probe.py reports."""
    hook = AnalyticsHook(connection)
    job_ids = [str(hook.preload_dashboard(n, [], bust_cache)["id"]) for n in (1, 2) for bust_cache in (True, False)][:3]
    env = {**os.environ, "AIRFLOW_CONN_ANALYTICS_DEFAULT": emulator.connection_json()}
    done = subprocess.run([sys.executable, str(PROBE), *job_ids], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert [e["status"] for e in result["events"]] == ["success"] * 3
    return result


def blocking(result: dict[str, Any]) -> list[str]:
    """What held the loop, garbage collections set apart (all figures in CPU seconds of the probe)."""
    found = []
    if result["class_load"] >= 0.02:
        found.append(f"loading the trigger class took {result['class_load']:.3f} CPU s on the loop")
    if result["warmup_max_lag"] - result["warmup_full_gc"] >= LIMIT:
        held, collecting = result["warmup_max_lag"], result["warmup_full_gc"]
        found.append(f"warm-up held the loop {held:.3f} CPU s (full gc {collecting:.3f} s)")
    if result["max_lag"] - result["full_gc"] >= LIMIT:
        found.append(f"the waits held the loop {result['max_lag']:.3f} CPU s (full gc {result['full_gc']:.3f} s)")
    for text in result["slow"]:  # "0.061 CPU s: <Handle ...>"
        took = float(text.split(" ", 1)[0])
        if took - result["full_gc"] >= SLOW:
            found.append(f"slow callback: {text}")
    found += [f"on the loop's thread while the waits ran: {event}" for event in result["loop_events"]]
    return found


def test_loading_and_running_the_trigger_never_blocks_the_loop(analytics_emulator, analytics_connection) -> None:
    analytics_emulator.job_duration = 0.5
    result = probe(analytics_emulator, analytics_connection)
    held, collecting = result["warmup_max_lag"], result["warmup_full_gc"]
    print(f"warm-up: loop held up to {held:.3f} CPU s, of which a full garbage collection {collecting:.3f} s; "
          f"waits: {result['max_lag']:.3f} CPU s (wall clock {result['wall_max_lag']:.3f} s)")
    assert not blocking(result), "\n".join(blocking(result))


def test_the_machinery_imports_no_deprecated_module_of_airflow(monkeypatch) -> None:
    """Each deprecated module the machinery imports warns in every deferred task's log (``dags test`` runs the
    trigger in the task's process): where Airflow moved one (the log masker, from 3.1), the new home is imported.
    The deprecated aliases are taken out of ``sys.modules`` for the test, so that importing one warns again."""
    import warnings

    from analytics_provider.triggers import analytics

    for name in [m for m in sys.modules if m == "airflow.sdk.execution_time.secrets_masker"]:
        monkeypatch.delitem(sys.modules, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        analytics._import_machinery()  # (not a reload: tests elsewhere hold, and patch, the module's classes)
    # (Airflow's DeprecatedImportWarning is a FutureWarning)
    assert [str(w.message) for w in caught if issubclass(w.category, (DeprecationWarning, FutureWarning))] == []
