"""A pytest plugin: which test each process is running, for a CI step stopped past its budget.

With ``ANALYTICS_TESTS_IN_FLIGHT`` naming a folder (``.ci/run`` sets it), each pytest process (each
xdist worker, each run of the version matrix) keeps ``<folder>/<pid>.test`` naming the test it runs
and since when, and writes every thread's stack to ``<folder>/<pid>.stacks`` on SIGUSR1. ``.ci/run``
prints both before it stops a step that ran past its budget. Unset, this plugin does nothing.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_FOLDER = os.environ.get("ANALYTICS_TESTS_IN_FLIGHT")


class _InFlight:
    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.test = folder / f"{os.getpid()}.test"
        self.stacks = open(folder / f"{os.getpid()}.stacks", "w")  # noqa: SIM115 (open while the process lives)
        faulthandler.register(signal.SIGUSR1, file=self.stacks, all_threads=True)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        self.test.write_text(f"{item.nodeid}  (since {time.strftime('%H:%M:%S')}, pid {os.getpid()})\n")
        yield
        self.test.unlink(missing_ok=True)


def pytest_configure(config: pytest.Config) -> None:
    if _FOLDER:
        config.pluginmanager.register(_InFlight(Path(_FOLDER)), "analytics-tests-in-flight")
