"""Reading the jobs of many waits with one request per hundred, without I/O.

The waits of a triggerer each follow their own job (:mod:`~analytics_provider.api.jobs.wait`); their
reads can share List Jobs (``GET /jobs?ids[]=``, at most 100 ids). :class:`DueReads` keeps the
reads asked for, oldest first, and hands out the ids of the next request (the oldest first, so
that under a quota every wait's turn comes alike); :func:`sort_answer` gives each id asked its
job, or says the answer left it out (a job that does not exist, or that the key may not see: it
is then read alone, so that ``GET /jobs/{id}`` says which) or contradicted itself on it;
:func:`list_jobs_request` is the request of those ids.
:func:`refuses_batches` tells an answer that means "this service does not do List Jobs for you"
from one that means "not now" (:func:`degrades_batches`); :class:`BatchBackoff` says when List
Jobs is tried again after that.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping
from itertools import repeat
from typing import Any, Generic, NamedTuple, TypeVar

from analytics_provider.api.call.request import ApiRequest, build_request
from analytics_provider.api.call.retry import is_transient
from analytics_provider.api.wire.operations import MAX_JOB_IDS, OPERATIONS
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
            live = list(filter(alive, waiters))
            if live:
                chunk[job_id] = live
        return chunk


LIST_JOBS = OPERATIONS["list_jobs"]


def list_jobs_request(job_ids: Collection[int]) -> ApiRequest:
    """List Jobs for ``job_ids`` (``GET /jobs?ids[]=``), as ``build_request("list_jobs", query={"ids": ...})``
    makes it, without walking the table's checks at every poll: the ids of a batch are the waits'
    integer job ids, at most :data:`MAX_JOB_IDS` (:meth:`DueReads.take`); more go to those checks
    and are refused there."""
    if len(job_ids) > MAX_JOB_IDS:
        return build_request("list_jobs", query={"ids": list(job_ids)})
    return ApiRequest(LIST_JOBS, LIST_JOBS.path, tuple(zip(repeat("ids[]"), map(str, job_ids))))


class SortedAnswer(NamedTuple):
    """A List Jobs answer sorted by the ids asked."""

    found: dict[int, Mapping[str, Any]]
    """Each asked id answered once (or alike each time) and its job."""
    missing: list[int]
    """The asked ids the answer left out."""
    contradicted: list[int]
    """The asked ids answered more than once with different statuses."""


def sort_answer(asked: Iterable[int], jobs: Any) -> SortedAnswer:
    """Each asked id's job from a List Jobs answer, the ids it left out and those it contradicted
    itself on; records of ids not asked for are ignored.

    Raises :class:`UnexpectedResponseError` for an answer that is not a list of jobs with ids.
    """
    if not isinstance(jobs, list):
        raise UnexpectedResponseError(f"List Jobs answered {type(jobs).__name__}, not a list of jobs",
                                      method="GET", path="/jobs")
    by_id: dict[int, Mapping[str, Any]] = {}
    contradicted: set[int] = set()
    for job in jobs:
        job_id = job.get("id") if isinstance(job, Mapping) else None
        if isinstance(job_id, bool) or not isinstance(job_id, (int, str)) or not str(job_id).isdigit():
            raise UnexpectedResponseError(f"List Jobs answered an item that is not a job with an id: {job!r:.200}",
                                          method="GET", path="/jobs")
        assert isinstance(job, Mapping)
        seen = by_id.setdefault(int(job_id), job)
        if seen.get("status") != job.get("status"):
            contradicted.add(int(job_id))
    answer = SortedAnswer({}, [], [])
    for job_id in asked:
        if job_id in contradicted:
            answer.contradicted.append(job_id)
        elif (job := by_id.get(job_id)) is None:
            answer.missing.append(job_id)
        else:
            answer.found[job_id] = job
    return answer


def refuses_batches(exc: BaseException) -> bool:
    """Whether a List Jobs failure means this service will not answer it (read alone instead)."""
    return isinstance(exc, AnalyticsApiError) and exc.status in REFUSING_STATUSES


def degrades_batches(exc: BaseException) -> bool:
    """Whether a List Jobs failure means "not now" (5xx, 429, no answer, an unusable one): the
    waits read their jobs alone meanwhile (``GET /jobs/{id}`` has a quota of its own)."""
    return is_transient(exc)


class BatchBackoff:
    """When List Jobs is tried again after it failed or answered something unusable.

    After the ``n``-th such answer in a row, reads go alone for ``FIRST * 2 ** (n - 1)`` seconds
    (at most ``LONGEST``), or for the ``Retry-After`` if that is longer; an answer that is sorted
    without a contradiction resets it.
    """

    FIRST = 1.0
    LONGEST = 60.0

    def __init__(self) -> None:
        self.failures = 0
        self.until = -math.inf  # on the reader's clock

    def active(self, now: float) -> bool:
        """Whether reads go alone at ``now``."""
        return now < self.until

    def failed(self, now: float, retry_after: float | None = None) -> float:
        """Record one more unusable answer at ``now``; returns the seconds until List Jobs is tried again."""
        self.failures += 1
        wait = min(self.LONGEST, self.FIRST * 2 ** (self.failures - 1))
        if retry_after is not None:
            wait = max(wait, float(retry_after))
        self.until = now + wait
        return wait

    def succeeded(self) -> None:
        self.failures = 0
