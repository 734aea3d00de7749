"""Run the "Try it locally" commands of docs/reviewed_changes.rst as they are written (``make try-locally``).

The bash block of that section runs in a scratch folder whose ``dags/`` is tests/dags/review_dags
(the DAG ``reviewed_deliveries``, built with ``plan_review_apply``), with the venv's ``airflow`` on
the PATH, ``AIRFLOW_CONN_ANALYTICS_DEFAULT`` pointing at an emulator started here, and the port
8080 replaced by a free one (the only change to the text). It passes when the block exits 0, the
review was answered by the docs' user, and the apply wrote what the plan said (one data schedule
and one data alert created). Minutes: a migrated database, an api-server and a DAG run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
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


def main() -> int:
    sys.path.insert(0, str(REPO))
    from analytics_provider.testing.emulator.app import AnalyticsEmulator

    commands = docs_commands(DOC.read_text(encoding="utf-8")).replace("8080", str(free_port()))
    with tempfile.TemporaryDirectory(prefix="try-locally-") as scratch, AnalyticsEmulator() as emulator:
        (Path(scratch) / "dags").symlink_to(REPO / "tests" / "dags" / "review_dags")
        env = {**os.environ, "AIRFLOW_CONN_ANALYTICS_DEFAULT": emulator.connection_json(),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        env = {k: v for k, v in env.items() if not k.startswith("AIRFLOW__") and k != "AIRFLOW_HOME"}
        env["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = emulator.connection_json()
        began = time.monotonic()
        done = subprocess.run(["bash", "-e", "-c", commands], cwd=scratch, env=env, capture_output=True, text=True,
                              timeout=1800, check=False)
        took = time.monotonic() - began
        created = sorted(str(r.operation) for r in emulator.requests if str(r.operation).startswith("create_"))
    answered = '"chosen_options":["Approve"]' in done.stdout and '"responded_by":{"id":"ann"' in done.stdout
    ok = done.returncode == 0 and answered and created == ["create_data_alert", "create_data_schedule"]
    print(f"{'ok' if ok else 'FAILED'}: the docs' commands exited {done.returncode} in {took:.0f} s; the answer: "
          f"{done.stdout.strip()[-300:]}; written: {created}")
    if not ok:
        print(done.stderr[-3000:], file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
