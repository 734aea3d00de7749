"""Run the "Try it locally" commands of docs/reviewed_changes.rst as they are written (``make try-locally``,
and the last scenario of ``make e2e``, which is how CI runs them).

The bash block of that section runs in a scratch folder whose ``dags/`` is tests/dags/review_dags
(the DAG ``reviewed_deliveries``, built with ``plan_review_apply``), with the venv's ``airflow`` on
the PATH, ``AIRFLOW_CONN_ANALYTICS_DEFAULT`` pointing at an emulator started here, and the port
8080 replaced by a free one (the only change to the text). It passes when the block exits 0, the
review was answered by the docs' user, and the apply wrote what the plan said (one data schedule
and one data alert created). About 110 s and 45 CPU-seconds on two busy cores: a migrated
database, an api-server and a DAG run. The block runs in a process group of its own, stopped whole
when it ends or times out (its api-server and run included).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "reviewed_changes.rst"
HEADING = "Try it locally\n--------------\n"


def docs_commands(text: str) -> str:
    """The first bash block after the section's heading, its indentation taken off."""
    section = text[text.index(HEADING):]
    start = section.index(".. code-block:: bash\n")
    lines = []
    for line in section[start:].splitlines()[2:]:
        if line and not line.startswith("   "):
            break
        lines.append(line[3:])
    return "\n".join(lines).strip() + "\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Tried:
    """What running the docs' block did."""

    ok: bool
    summary: str
    seconds: float
    errors: str


def try_locally(timeout: float = 1800) -> Tried:
    """Run the docs' block as written (the port aside) against an emulator of its own; stopped past
    ``timeout`` seconds."""
    sys.path.insert(0, str(REPO))
    from analytics_provider.testing.emulator.app import AnalyticsEmulator

    commands = docs_commands(DOC.read_text(encoding="utf-8")).replace("8080", str(free_port()))
    with tempfile.TemporaryDirectory(prefix="try-locally-") as scratch, AnalyticsEmulator() as emulator:
        (Path(scratch) / "dags").symlink_to(REPO / "tests" / "dags" / "review_dags")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__") and k != "AIRFLOW_HOME"}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        env["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json()
        began = time.monotonic()
        block = subprocess.Popen(["bash", "-e", "-c", commands], cwd=scratch, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = block.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            out, err = "", f"stopped after {timeout:.0f} s"
        finally:
            _stop_group(block)
        took = time.monotonic() - began
        created = sorted(str(r.operation) for r in emulator.requests if str(r.operation).startswith("create_"))
    answered = '"chosen_options":["Approve"]' in out and '"responded_by":{"id":"ann"' in out
    ok = block.returncode == 0 and answered and created == ["create_data_alert", "create_data_schedule"]
    return Tried(ok, f"the docs' commands exited {block.returncode} in {took:.0f} s; the answer: "
                     f"{out.strip()[-300:]}; written: {created}", took, err[-3000:])


def _stop_group(block: subprocess.Popen[str]) -> None:
    """Whatever of the block's process group still runs (its api-server, after a failure or a
    timeout) stopped: asked, then killed."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(block.pid, sig)
        except ProcessLookupError:  # nothing left in the group
            break
        with suppress(subprocess.TimeoutExpired):
            block.wait(20)
        time.sleep(2)  # the group's other members end after its leader
    block.wait()


def main() -> int:
    tried = try_locally()
    print(f"{'ok' if tried.ok else 'FAILED'}: {tried.summary}")
    if not tried.ok:
        print(tried.errors, file=sys.stderr)
    return 0 if tried.ok else 1


if __name__ == "__main__":
    sys.exit(main())
