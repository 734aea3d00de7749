"""Benchmark: download a 200 MB export; peak memory growth of this process and throughput vs curl.

Target: the download adds under 32 MB to the process's peak resident memory. Run with
``make bench`` or ``python benchmarks/download_memory.py [--megabytes N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from _emulator_process import EmulatorProcess
from _targets import report

TARGET_MB = 32.0
WIDGET_ID = 101


def status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # Linux: the peak (VmHWM) restarts from now


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args()
    size = args.megabytes * 1024 * 1024
    workdir = Path(tempfile.mkdtemp(prefix="bench-download-"))
    try:
        with EmulatorProcess(job_duration=0.2) as emulator:
            os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json
            from analytics_provider.hooks.analytics import AnalyticsHook

            emulator.call("set_export_size", WIDGET_ID, size)
            hook = AnalyticsHook()
            job = hook.submit_widget_export(WIDGET_ID, "csv")
            hook.wait_for_job(job["id"], poll_interval=0.2, timeout=600)
            hook.download_export(job["id"], workdir / "warm-up.csv")  # imports, pools: not the download's cost
            (workdir / "warm-up.csv").unlink()

            baseline = status_kb("VmRSS")
            reset_peak()
            started = time.perf_counter()
            result = hook.download_export(job["id"], workdir / "export.csv")
            ours = time.perf_counter() - started
            growth_mb = (status_kb("VmHWM") - baseline) / 1024

            import requests

            location = requests.get(
                emulator.base_url + "/exports/download",
                params={"job_id": job["id"]},
                headers={"X-Service-Key": emulator.api_key},
                allow_redirects=False,
                timeout=30,
            ).headers["Location"]
            curl = shutil.which("curl")
            curl_seconds = None
            if curl:
                out = subprocess.run(
                    [curl, "-sS", "-o", str(workdir / "curl.csv"), "-w", "%{time_total}", location],
                    capture_output=True, text=True, check=True,
                )
                curl_seconds = float(out.stdout)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    megabytes = result["bytes"] / 1024 / 1024
    print(f"file: {megabytes:.0f} MB ({result['content_type']})")
    print(f"peak memory growth during the download: {growth_mb:.1f} MB (target < {TARGET_MB:.0f} MB)")
    print(f"hook.download_export: {megabytes / ours:8.1f} MB/s ({ours:.2f} s)")
    if curl_seconds:
        print(f"curl, same file:      {megabytes / curl_seconds:8.1f} MB/s ({curl_seconds:.2f} s)")
    else:
        print("curl: not installed, no comparison")
    met = report("download_memory", "peak memory growth of a download", f"{growth_mb:.1f} MB", f"< {TARGET_MB:.0f} MB",
                 growth_mb < TARGET_MB)
    met &= report("download_memory", "the whole file arrives", f"{result['bytes']} bytes", f"{size} bytes",
                  result["bytes"] == size)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
