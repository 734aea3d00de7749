"""``python -m analytics_provider.testing.emulator``: run the emulator until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from analytics_provider.testing.emulator.app import AnalyticsEmulator


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m analytics_provider.testing.emulator",
        description="Run a local emulator of the analytics service's public API v2 until SIGINT or SIGTERM. "
        "It prints its base address, API key and the AIRFLOW_CONN_ANALYTICS_DEFAULT line that points "
        "Airflow's analytics_default connection at it.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="API port (default: a free one)")
    parser.add_argument("--files-port", type=int, default=0, help="port of the files origin (default: a free one)")
    parser.add_argument("--api-key", default=None, help="the admin's API key (default: a random one)")
    parser.add_argument("--job-duration", type=float, default=0.3, help="seconds a job takes (default 0.3)")
    parser.add_argument("--rate-limit-frame", type=float, default=60.0, help="rate-limit frame in seconds (default 60)")
    parser.add_argument("--retry-after", choices=("seconds", "date"), default="seconds",
                        help="write Retry-After as delta-seconds or as an HTTP date (default seconds)")
    parser.add_argument("--header-name", default=None,
                        help="the one header that carries the key (default: X-Service-Key or X-Holistics-Key)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    emulator = AnalyticsEmulator(
        args.host, args.port, files_port=args.files_port, api_key=args.api_key, job_duration=args.job_duration,
        rate_limit_frame=args.rate_limit_frame, header_name=args.header_name, retry_after=args.retry_after,
    )
    with emulator:
        print(f"base_url: {emulator.base_url}")
        print(f"files_url: {emulator.files_url}")
        print(f"api_key: {emulator.api_key}")
        print(f"AIRFLOW_CONN_ANALYTICS_DEFAULT='{emulator.connection_json()}'")
        print("Serving until SIGINT or SIGTERM.", flush=True)
        while not stop.wait(0.5):
            pass
    print("Stopped.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
