"""The log of the requests both origins received, for tests to inspect."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

MASK = "***"


@dataclass
class RecordedRequest:
    """One request as received. ``headers`` has the key header's value masked; ``carried_key``
    says whether it was there. ``status`` is None until answered, and stays None when the
    connection was dropped. ``time`` is a Unix time; ``path`` is the full path, without the query.
    """

    origin: str
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    carried_key: bool
    json: Any = None
    operation: str | None = None
    status: int | None = None
    time: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def mask_headers(headers: Any, key_headers: tuple[str, ...]) -> tuple[dict[str, str], bool]:
    """The headers as a plain dict with the key hidden, and whether a key header was sent."""
    lowered = {name.lower() for name in key_headers}
    masked: dict[str, str] = {}
    carried = False
    for name, value in headers.items():
        if name.lower() in lowered:
            carried = True
            value = MASK
        masked[name] = value
    return masked, carried


class RequestLog:
    """Thread-safe list of recorded requests, in order of arrival."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[RecordedRequest] = []
        self._counts: Counter[tuple[str, str]] = Counter()
        self.recording = True  # off: requests are counted, not kept

    def add(self, record: RecordedRequest) -> RecordedRequest:
        if self.recording:
            with self._lock:
                self._items.append(record)
        return record

    def count(self, operation: str | None, status: int | None) -> None:
        """One answered (or dropped: ``status`` None) request of ``operation``."""
        with self._lock:
            self._counts[(operation or "unrouted", "dropped" if status is None else str(status))] += 1

    def counts(self) -> dict[str, dict[str, int]]:
        """``{operation: {status: requests}}``."""
        found: dict[str, dict[str, int]] = {}
        with self._lock:
            for (operation, status), n in sorted(self._counts.items()):
                found.setdefault(operation, {})[status] = n
        return found

    def snapshot(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._counts.clear()
