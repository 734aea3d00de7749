"""Reading the jobs of many waits with one request per hundred, without I/O.

The waits of a triggerer each follow their own job (:mod:`~analytics_provider.api.follow`); their
reads can share List Jobs (``GET /jobs?ids[]=``, at most 100 ids). :class:`DueReads` keeps the
reads asked for, oldest first, and hands out the ids of the next request (the oldest first, so
that under a quota every wait's turn comes alike); :func:`sort_answer` gives each id asked its
job, or says the answer left it out (a job that does not exist, or that the key may not see: it
is then read alone, so that ``GET /jobs/{id}`` says which). :func:`refuses_batches` tells an
answer that means "this service does not do List Jobs for you" from an outage.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from analytics_provider.api.operations import MAX_JOB_IDS
from analytics_provider.exceptions import AnalyticsApiError, UnexpectedResponseError

W = TypeVar("W")

REFUSING_STATUSES = frozenset({400, 403, 404, 405, 501})
"""Answers to List Jobs after which a connection reads each job alone: the request is refused
(not an outage, not the key: a 401 ends the waits as it would alone)."""


class DueReads(Generic[W]):
    """The reads waiting for a request: job id -> the waiters asking for it, oldest first.

    Two waits on one job (a follow that meets another wait's job) share its place.
    """

    def __init__(self) -> None:
        self._due: OrderedDict[int, list[W]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._due)

    def add(self, job_id: int, waiter: W) -> None:
        waiters = self._due.get(job_id)
        if waiters is None:
            self._due[job_id] = [waiter]
        else:
            waiters.append(waiter)

    def take(self, alive: Callable[[W], bool], limit: int = MAX_JOB_IDS) -> dict[int, list[W]]:
        """The next request's ids (at most ``limit``, the oldest), with their waiters that are
        still ``alive``; ids left with none are dropped."""
        chunk: dict[int, list[W]] = {}
        while self._due and len(chunk) < limit:
            job_id, waiters = self._due.popitem(last=False)
            live = [w for w in waiters if alive(w)]
            if live:
                chunk[job_id] = live
        return chunk


def sort_answer(asked: Iterable[int], jobs: Any) -> tuple[dict[int, Mapping[str, Any]], list[int]]:
    """Each asked id's job from a List Jobs answer, and the ids it left out.

    Raises :class:`UnexpectedResponseError` (an outage, for the waits of this request only) for
    an answer that is not a list of jobs with ids.
    """
    if not isinstance(jobs, list):
        raise UnexpectedResponseError(f"List Jobs answered {type(jobs).__name__}, not a list of jobs",
                                      method="GET", path="/jobs")
    by_id: dict[int, Mapping[str, Any]] = {}
    for job in jobs:
        job_id = job.get("id") if isinstance(job, Mapping) else None
        if isinstance(job_id, bool) or not isinstance(job_id, (int, str)) or not str(job_id).isdigit():
            raise UnexpectedResponseError(f"List Jobs answered an item that is not a job with an id: {job!r:.200}",
                                          method="GET", path="/jobs")
        by_id[int(job_id)] = job
    found: dict[int, Mapping[str, Any]] = {}
    missing: list[int] = []
    for job_id in asked:
        job = by_id.get(job_id)
        if job is None:
            missing.append(job_id)
        else:
            found[job_id] = job
    return found, missing


def refuses_batches(exc: BaseException) -> bool:
    """Whether a List Jobs failure means this service will not answer it (read alone instead)."""
    return isinstance(exc, AnalyticsApiError) and exc.status in REFUSING_STATUSES
