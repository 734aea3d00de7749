"""``[core] hostname_callable`` of the e2e's processes: the name the e2e gave each (``worker-1``,
``triggerer-2``...), so that Airflow's database says which process ran a task or holds a trigger."""

from __future__ import annotations

import os
import socket


def hostname() -> str:
    return os.environ.get("E2E_PROCESS_NAME") or socket.getfqdn()
