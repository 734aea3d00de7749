"""Injected faults: the next answers of an operation fail in a chosen way, or succeed as scripted."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from analytics_provider.api.wire.operations import OPERATIONS

FILES_OPERATION = "download_file"
"""The operation name of a request to the files origin."""


def _jobs(answer: Any) -> list[dict[str, Any]]:
    return list(answer["jobs"])


def _unasked(job: dict[str, Any]) -> dict[str, Any]:
    return {**job, "id": job["id"] + 1_000_000, "status": "failure", "last_error_log": "not yours"}


LIST_JOBS_REWRITES: dict[str, Callable[[Any], Any]] = {
    "leave_out": lambda a: {"jobs": _jobs(a)[::2]},  # every other job asked for is missing
    "add_unasked": lambda a: {"jobs": _jobs(a) + [_unasked(j) for j in _jobs(a)]},
    "none_asked": lambda a: {"jobs": [_unasked(j) for j in _jobs(a)]},
    "jobs_object": lambda a: {"jobs": {str(j["id"]): j for j in _jobs(a)}},
    "contradict": lambda a: {"jobs": [{**j, "status": s} for j in _jobs(a) for s in ("success", "failure")]},
}
"""Unusable List Jobs answers, made from the true one (a 200 all the same)."""
REWRITES = (*LIST_JOBS_REWRITES, "truncated_json")
"""``truncated_json``: the first half of the body, with a Content-Length that matches it."""


def rewrite_body(name: str, body: bytes) -> bytes:
    """The body of an answer rewritten as ``name`` (one of :data:`REWRITES`) says."""
    if name == "truncated_json":
        return body[: len(body) // 2]
    return json.dumps(LIST_JOBS_REWRITES[name](json.loads(body))).encode("utf-8")


@dataclass(frozen=True)
class Fault:
    """One faulty answer: wait ``delay`` seconds, then drop, answer ``status``, truncate, or rewrite.

    A success status (2xx) with a ``body`` is a scripted answer: that JSON, as it is (a partial
    resource, as the live service sometimes answers), instead of running the operation.
    ``rewrite`` (one of :data:`REWRITES`) runs the operation and answers 200 with its answer made
    unusable (List Jobs only, but for ``truncated_json``).
    """

    status: int | None = None
    retry_after: float | None = None
    delay: float | None = None
    drop: bool = False
    truncate: bool = False
    body: Any = None
    rewrite: str | None = None

    def __post_init__(self) -> None:
        kinds = sum((self.status is not None, self.drop, self.truncate, self.rewrite is not None))
        if kinds > 1:
            raise ValueError("a fault is one of status, drop, truncate or rewrite (a delay may come with any)")
        if kinds == 0 and not self.delay:
            raise ValueError("a fault needs a status, a delay, drop=True, truncate=True or a rewrite")
        if self.rewrite is not None and self.rewrite not in REWRITES:
            raise ValueError(f"rewrite must be one of {', '.join(REWRITES)}; got {self.rewrite!r}")
        if self.status is not None and 200 <= self.status <= 299:
            if self.body is None:
                raise ValueError("a scripted success (2xx) needs the body to answer")
        elif self.status is not None and not 400 <= self.status <= 599:
            raise ValueError(f"an injected status must be a success (2xx) with a body or an error (400-599), "
                             f"got {self.status}")
        if self.delay is not None and self.delay < 0:
            raise ValueError("delay must not be negative")

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status, "retry_after": self.retry_after, "delay": self.delay,
            "drop": self.drop, "truncate": self.truncate, "body": self.body, "rewrite": self.rewrite,
        }


def check_operation(name: str) -> None:
    if name not in OPERATIONS and name != FILES_OPERATION:
        raise ValueError(f"unknown operation {name!r}: use a name of the operations table or {FILES_OPERATION!r}")


JOB_READS = {"list_jobs": "get_job"}
"""Operations that take the faults of another when they have none of their own."""


class FaultPlan:
    """Queued faults per operation, consumed one per answer. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: dict[str, deque[Fault | None]] = {}  # None: an answer as usual

    def add(self, operation: str, fault: Fault, times: int = 1, after: int = 0) -> None:
        """Queue ``times`` faults of ``operation``, after ``after`` answers of it as usual."""
        check_operation(operation)
        if operation == FILES_OPERATION and ((fault.status is not None and fault.status < 300) or fault.rewrite):
            raise ValueError(f"{FILES_OPERATION} serves files: a scripted JSON success does not apply")
        if fault.rewrite in LIST_JOBS_REWRITES and operation != "list_jobs":
            raise ValueError(f"rewrite={fault.rewrite!r} rewrites a List Jobs answer; not one of {operation}")
        if times < 1:
            raise ValueError("times must be at least 1")
        if after < 0:
            raise ValueError("after must not be negative")
        with self._lock:
            self._queued.setdefault(operation, deque()).extend([None] * after + [fault] * times)

    def take(self, operation: str) -> Fault | None:
        """The next fault of ``operation``. A read of several jobs (``list_jobs``) without faults
        of its own takes those of ``get_job``: a fault injected on reading a job reaches a wait
        however it reads (a trigger reads in batches, a worker one job at a time)."""
        with self._lock:
            queue = self._queued.get(operation)
            if not queue and operation in JOB_READS:
                queue = self._queued.get(JOB_READS[operation])
            return queue.popleft() if queue else None

    def pending(self) -> dict[str, list[dict[str, Any]]]:
        with self._lock:
            return {op: [f.to_dict() if f else {"as_usual": True} for f in queue]
                    for op, queue in self._queued.items() if queue}

    def clear(self) -> None:
        with self._lock:
            self._queued.clear()
