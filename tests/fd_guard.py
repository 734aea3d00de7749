"""A pytest plugin: the suite lets go of the file descriptors it opens.

After each test module the process may hold at most ``MODULE_GROWTH`` more descriptors than
before it (what a module may leave on purpose: a session fixture it was the first to use, a warm
cache), and never more than ``TOTAL`` in all: a leak of a few sockets per test would otherwise
only show as "Too many open files" far from its cause, once the whole suite passes a limit of
1,024. The garbage collector is not run first: a socket left to it is open until a collection
that may not come before the limit. Linux and macOS (``/proc/self/fd``, ``/dev/fd``); elsewhere
nothing is checked.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

MODULE_GROWTH = 64  # the first module to use Airflow's database, the emulator and vl-convert opens ~30
TOTAL = 256
_AIRFLOW = tuple(int(part) for part in metadata.version("apache-airflow").split(".")[:2])
DAG_TESTS_KEEP_SOCKETS = (3, 0) <= _AIRFLOW < (3, 3)
"""Airflow 3.0 to 3.2's ``dag.test()`` keeps sockets and event descriptors of each task run open (not
garbage: about 100 per module of DAG tests, seen on 3.1.8), so the DAG tests' modules are not held
to the bounds there; every other module is."""


_excused = [0]  # descriptors the DAG tests of Airflow 3.0 to 3.2 left open


def open_descriptors() -> dict[int, str] | None:
    """Each open descriptor and what it is (``socket:[…]``, ``pipe:[…]``, a path); None where
    the system cannot tell."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        if os.path.isdir(folder):
            found: dict[int, str] = {}
            for name in os.listdir(folder):
                try:
                    found[int(name)] = os.readlink(os.path.join(folder, name))
                except OSError:  # the listing's own descriptor, closed meanwhile; or no links (macOS)
                    if folder == "/dev/fd":
                        found[int(name)] = "?"
            return found
    return None


def kinds(descriptors: dict[int, str]) -> str:
    """``socket 40, pipe 2, /tmp/x 1``: what the descriptors are, most first."""
    counted = Counter(what.split(":[", 1)[0] for what in descriptors.values())
    return ", ".join(f"{kind} {count}" for kind, count in counted.most_common(6))


@pytest.fixture(scope="module", autouse=True)
def _module_lets_go_of_its_descriptors(request: pytest.FixtureRequest) -> Iterator[None]:
    before = open_descriptors()
    yield
    after = open_descriptors()
    if before is None or after is None:
        return
    new = {fd: what for fd, what in after.items() if before.get(fd) != what}
    grown = len(after) - len(before)
    if DAG_TESTS_KEEP_SOCKETS and Path(str(request.node.path)).parent.name == "dags":
        _excused[0] += max(0, grown)  # Airflow's, not ours: not counted against the modules after it either
        return
    if grown > MODULE_GROWTH or len(after) - _excused[0] > TOTAL:
        pytest.fail(
            f"{request.node.nodeid} left {grown} more file descriptors open than before it "
            f"({len(after)} open in all; allowed: {MODULE_GROWTH} more, {TOTAL} in all); new: {kinds(new)}",
            pytrace=False,
        )
