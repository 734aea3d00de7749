"""Benchmark: upload a 200 MB dbt manifest; peak memory growth of this process, beside a 200 MB download.

Target: the upload adds under 32 MB to the process's peak resident memory, as the download does.
For comparison it also uploads the same file the plain ``requests`` way (``files=``), which
builds the whole multipart body in memory: that is what the streaming encoder saves. Run with
``make bench`` or ``python benchmarks/upload_memory.py [--megabytes N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from _emulator_process import EmulatorProcess
from _targets import report
from download_memory import WIDGET_ID, reset_peak, status_kb

TARGET_MB = 32.0
UPLOAD_PATH = "/data_sources/upload_multiple_dbt_manifests"


def write_manifest(path: Path, size: int) -> None:
    """A JSON object of exactly ``size`` bytes (one long description), written piece by piece."""
    head, tail = b'{"metadata": {"dbt_version": "1.8.0"}, "description": "', b'"}'
    filler = size - len(head) - len(tail)
    with path.open("wb") as handle:
        handle.write(head)
        chunk = b"x" * (1024 * 1024)
        while filler > 0:
            handle.write(chunk[: min(filler, len(chunk))])
            filler -= min(filler, len(chunk))
        handle.write(tail)


def measured(action: Callable[[], Any]) -> tuple[Any, float, float]:
    """``action``'s result, its peak memory growth (MB) and its duration (s)."""
    baseline = status_kb("VmRSS")
    reset_peak()
    started = time.perf_counter()
    result = action()
    return result, (status_kb("VmHWM") - baseline) / 1024, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args()
    size = args.megabytes * 1024 * 1024
    workdir = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    manifest = workdir / "manifest.json"
    write_manifest(manifest, size)
    small = workdir / "small.json"
    write_manifest(small, 1024)
    try:
        with EmulatorProcess(job_duration=0.2) as emulator:
            os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json
            import requests

            from analytics_provider.hooks.analytics import AnalyticsHook

            hook = AnalyticsHook()
            hook.upload_dbt_manifests([small])  # imports, pools: not the upload's cost
            job, growth, seconds = measured(lambda: hook.upload_dbt_manifests([manifest]))
            state = hook.wait_for_job(job["id"], poll_interval=0.2, timeout=600)

            def plain() -> requests.Response:
                with manifest.open("rb") as handle:
                    return requests.post(emulator.base_url + UPLOAD_PATH, timeout=600,
                                         headers={"X-Service-Key": emulator.api_key},
                                         files=[("files", ("manifest.json", handle, "application/json"))])

            answer, plain_growth, plain_seconds = measured(plain)

            from analytics_provider.operators import AnalyticsUploadDbtManifestOperator
            from analytics_provider.testing.task_instance import FakeTaskInstance

            def operator_run(path: Path) -> dict[str, Any]:
                """The operator as a task runs it: check, upload, wait for the sync job."""
                operator = AnalyticsUploadDbtManifestOperator(
                    task_id="upload_dbt_manifest", manifests=[str(path)], poll_interval=0.2
                )
                return operator.execute({"ti": FakeTaskInstance()})

            operator_run(small)  # imports: not the upload's cost
            synced, operator_growth, operator_seconds = measured(lambda: operator_run(manifest))

            emulator.call("set_export_size", WIDGET_ID, size)
            export = hook.submit_widget_export(WIDGET_ID, "csv")
            hook.wait_for_job(export["id"], poll_interval=0.2, timeout=600)
            hook.download_export(export["id"], workdir / "warm-up.csv")
            (workdir / "warm-up.csv").unlink()
            downloaded, download_growth, download_seconds = measured(
                lambda: hook.download_export(export["id"], workdir / "export.csv")
            )
            curl = shutil.which("curl")
            curl_seconds = None
            if curl:
                out = subprocess.run(
                    [curl, "-sS", "-o", os.devnull, "-w", "%{time_total}", "-H", f"X-Service-Key: {emulator.api_key}",
                     "-F", f"files=@{manifest};type=application/json", emulator.base_url + UPLOAD_PATH],
                    capture_output=True, text=True, check=True,
                )
                curl_seconds = float(out.stdout)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    megabytes = size / 1024 / 1024
    print(f"file: {megabytes:.0f} MB each way")
    print(f"{'':34}{'peak memory growth':>20}{'throughput':>16}")
    print(f"{'hook.upload_dbt_manifests':34}{growth:17.1f} MB{megabytes / seconds:11.1f} MB/s  (job {state.status})")
    print(f"{'AnalyticsUploadDbtManifestOperator':34}{operator_growth:17.1f} MB"
          f"{megabytes / operator_seconds:11.1f} MB/s  (job {synced['status']}, wait included)")
    print(f"{'requests files= (whole body)':34}{plain_growth:17.1f} MB{megabytes / plain_seconds:11.1f} MB/s"
          f"  (HTTP {answer.status_code})")
    print(f"{'hook.download_export':34}{download_growth:17.1f} MB{megabytes / download_seconds:11.1f} MB/s")
    if curl_seconds:
        print(f"{'curl -F, same file':34}{'':>20}{megabytes / curl_seconds:11.1f} MB/s")
    print(f"target: each hook transfer (and the operator's upload) adds < {TARGET_MB:.0f} MB")
    limit = f"< {TARGET_MB:.0f} MB"
    ok = report("upload_memory", "hook upload: memory growth", f"{growth:.1f} MB", limit, growth < TARGET_MB)
    ok &= report("upload_memory", "operator upload: memory growth", f"{operator_growth:.1f} MB", limit,
                 operator_growth < TARGET_MB)
    ok &= report("upload_memory", "hook download: memory growth", f"{download_growth:.1f} MB", limit,
                 download_growth < TARGET_MB)
    ok &= report("upload_memory", "jobs succeed, file whole", f"{state.status}/{synced['status']}, "
                 f"{downloaded['bytes']} bytes", f"success, {size} bytes",
                 state.status == "success" and synced["status"] == "success" and downloaded["bytes"] == size)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
