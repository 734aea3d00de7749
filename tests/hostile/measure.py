"""What a bounded read or write costs, measured: the peak of memory the Python allocator gave
out (``tracemalloc``: every ``bytes`` a read or a decompression makes) and the bytes this thread
wrote with ``write`` calls (the kernel's ``wchar`` of ``/proc/thread-self/io``)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MiB = 1024 * 1024
IO = Path("/proc/thread-self/io")


@dataclass
class Cost:
    peak_memory: int = 0
    bytes_written: int = 0


def written_by_this_thread() -> int:
    for line in IO.read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/thread-self/io")


@contextmanager
def measured() -> Iterator[Cost]:
    """The cost of what runs inside, filled in when it ends (however it ends)."""
    cost = Cost()
    tracemalloc.start()
    written = written_by_this_thread()
    try:
        yield cost
    finally:
        cost.bytes_written = written_by_this_thread() - written
        cost.peak_memory = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
