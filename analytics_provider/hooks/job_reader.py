"""The reads of a triggerer's waits gathered into List Jobs requests (I/O of :mod:`~analytics_provider.api.jobs.batch`).

One :class:`JobReader` per event loop and connection (kept by the loop's
:class:`~analytics_provider.hooks.async_client.LoopShared`). A wait's read joins the open gathering (sent once
``GATHER`` seconds pass without a new read, at most ``GATHER_MAX`` after its first); when it is
sent, its reads go out in requests of at most 100 ids (``MAX_SENDING`` at a time, each taking
its turn of the ``GET /jobs`` quota), and each wait gets its job, or the failure of its request
as an outage, or reads its job alone when the answer left it out or contradicted itself on it.
Waits that ask at the same time (they started together, or their previous reads were answered
together) keep being read together.

Where List Jobs fails for now (5xx, 429, no answer, an answer that is not a list of jobs, or one
that contradicts itself), the waits of that request read their jobs alone at once, and so do all
the reader's waits until List Jobs is tried again (after the ``Retry-After``, or a back-off:
:class:`~analytics_provider.api.jobs.batch.BatchBackoff`), at most ``ALONE_AT_ONCE`` at a time.
Where the service refuses List Jobs (see
:data:`~analytics_provider.api.jobs.batch.REFUSING_STATUSES`), the connection reads each job
alone on that event loop from then on (the triggerer's one loop: in this process), and says so
once in the log.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol

from analytics_provider.api.call.events import Steps
from analytics_provider.api.call.exchange import Exchange
from analytics_provider.api.call.request import ApiRequest
from analytics_provider.api.call.retry import RetryPolicy
from analytics_provider.api.jobs.batch import (
    BatchBackoff,
    DueReads,
    degrades_batches,
    list_jobs_request,
    refuses_batches,
    sort_answer,
)
from analytics_provider.api.jobs.wait import ONE_LOOK
from analytics_provider.exceptions import AnalyticsDeadlineExceeded, AnalyticsTransportError, UnexpectedResponseError

log = logging.getLogger(__name__)

READ_ALONE = object()
"""What a waiter gets when its job must be read with ``GET /jobs/{id}``."""
READ_ALONE_FOR_NOW = object()
"""What a waiter gets when List Jobs failed for now: read alone, unless too many reads already do."""



class JobSender(Protocol):
    """What a reader sends its requests with: the triggerer's client (``AsyncAnalyticsClient``)."""

    analytics_conn_id: str
    clock: Callable[[], float]

    async def exchange(self, request: ApiRequest, retry_policy: RetryPolicy | None = None,
                       deadline: float | None = None) -> Exchange: ...

    async def run(self, steps: Steps[Any]) -> Any: ...

    async def read_job_alone(self, job_id: int, deadline: float = math.inf) -> Any: ...


@dataclass(slots=True, eq=False)
class _Ask:
    """One wait's read: its job, its deadline (on the reader's clock) and where its answer goes."""

    future: asyncio.Future[Any]
    job_id: int
    deadline: float
    timed: bool = False  # a timer ends it at its deadline


def _pending(ask: _Ask) -> bool:
    return not ask.future.done()


def _expire(ask: _Ask) -> None:
    if not ask.future.done():
        ask.future.set_exception(AnalyticsDeadlineExceeded(
            "the deadline passed while the read waited for its turn", method="GET", path="/jobs"))


class JobReader:
    """Batched reads of one connection's jobs, shared by the waits of one event loop.

    ``client`` sends the requests: a client of the connection that is not any one wait's.
    ``refusals`` are the event loop's connections whose List Jobs the service refused, and why.
    """

    GATHER = 0.01
    """Seconds without a new read after which a gathering is sent (the reads of waits answered
    together come in one after another as their tasks resume: on a loaded loop, over tens of ms)."""
    GATHER_MAX = 0.04
    """Seconds a gathering stays open at most: the most a read waits for others."""
    MAX_SENDING = 8
    """List Jobs requests in flight at once (more wait, their ids still due, oldest first)."""
    SWEEP = 1.0
    """Seconds between two looks for reads whose deadline comes before the next look (each gets a
    timer then: most reads are answered long before their deadline, and need none)."""
    ALONE_AT_ONCE = 100
    """Reads going alone at once, at most, because List Jobs failed: the reads beyond take its
    failure as an outage of their own wait (thousands of waits would otherwise queue for the
    ``GET /jobs/{id}`` quota, and stay there after List Jobs answers again)."""

    def __init__(self, client: JobSender, refusals: MutableMapping[str, str]) -> None:
        self.client = client
        self._refusals = refusals
        self.conn_id = client.analytics_conn_id
        self._gathering: list[_Ask] | None = None
        self._gathering_since = 0.0  # on the loop's clock
        self._last_ask = 0.0
        self._due: DueReads[_Ask] = DueReads()
        self._sending = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiting: set[_Ask] = set()
        self._sweep: asyncio.TimerHandle | None = None
        self.backoff = BatchBackoff()  # on the loop's clock
        self._alone = 0  # reads going alone because List Jobs failed
        self._batch_failure = ""  # how List Jobs failed last

    @property
    def refused(self) -> str | None:
        """Why this connection reads each job alone on this loop (None: it reads in batches)."""
        return self._refusals.get(self.conn_id)

    async def read(self, client: JobSender, job_id: int, deadline: float) -> Any:
        """The job of one wait's read (raises what its read failed with), over by ``deadline``
        (on the client's clock)."""
        if self.conn_id in self._refusals:
            return await client.read_job_alone(job_id, deadline)
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self.backoff.active(now):
            return await self._read_alone_for_now(client, job_id, deadline)
        ask = _Ask(loop.create_future(), job_id, deadline)
        self._last_ask = now
        if self._gathering is None:
            self._gathering, self._gathering_since = [], self._last_ask
            loop.call_later(self.GATHER, self._close_gathering)
        self._gathering.append(ask)
        self._waiting.add(ask)
        if self._sweep is None:
            self._sweep_expiring()
        elif deadline - self.client.clock() < self.SWEEP:
            self._time(ask, loop)
        try:
            answer = await ask.future
        finally:
            self._waiting.discard(ask)
        if answer is READ_ALONE:
            return await client.read_job_alone(job_id, deadline)
        if answer is READ_ALONE_FOR_NOW:
            return await self._read_alone_for_now(client, job_id, deadline)
        return answer

    async def _read_alone_for_now(self, client: JobSender, job_id: int, deadline: float) -> Any:
        """A read alone while List Jobs is backed off, or its failure once ``ALONE_AT_ONCE`` reads go alone."""
        if self._alone >= self.ALONE_AT_ONCE:
            raise AnalyticsTransportError(
                f"List Jobs failed ({self._batch_failure}) and {self.ALONE_AT_ONCE} reads already go alone",
                method="GET", path="/jobs")
        self._alone += 1
        try:
            return await client.read_job_alone(job_id, deadline)
        finally:
            self._alone -= 1

    def _sweep_expiring(self) -> None:
        """Give a timer to each read whose deadline comes before the next sweep; again in
        ``SWEEP`` seconds while reads wait."""
        loop = asyncio.get_running_loop()
        horizon = self.client.clock() + self.SWEEP
        for ask in self._waiting:
            if not ask.timed and ask.deadline < horizon:
                self._time(ask, loop)
        self._sweep = loop.call_later(self.SWEEP, self._sweep_expiring) if self._waiting else None

    def _time(self, ask: _Ask, loop: asyncio.AbstractEventLoop) -> None:
        ask.timed = True
        loop.call_later(max(0.0, ask.deadline - self.client.clock()), _expire, ask)

    def _close_gathering(self) -> None:
        """Send the gathering once ``GATHER`` passed without a read (or ``GATHER_MAX`` in all)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        quiet_at = self._last_ask + self.GATHER
        if now < quiet_at and now < self._gathering_since + self.GATHER_MAX:
            loop.call_at(min(quiet_at, self._gathering_since + self.GATHER_MAX), self._close_gathering)
            return
        gathered, self._gathering = self._gathering or [], None
        for ask in gathered:
            if not ask.future.done():
                self._due.add(ask.job_id, ask)
        self._send_due()

    def _send_due(self) -> None:
        while self._sending < self.MAX_SENDING:
            chunk = self._due.take(_pending)
            if not chunk:  # none due (still waiting)
                return
            self._sending += 1
            task = asyncio.get_running_loop().create_task(self._send(chunk))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, chunk: dict[int, list[_Ask]]) -> None:
        """One List Jobs request for ``chunk``; each wait gets its job, its request's failure, or
        word to read its job alone."""
        try:
            deadline = max(ask.deadline for asks in chunk.values() for ask in asks)
            outcomes: dict[int, Any]  # what each asked id's waits get
            try:
                exchange = await self.client.exchange(list_jobs_request(chunk), ONE_LOOK,
                                                      None if math.isinf(deadline) else deadline)
                jobs = await self.client.run(exchange.call())
                answer = sort_answer(chunk, jobs)
            except Exception as exc:
                if refuses_batches(exc):
                    self._refuse(exc)
                    failed: Any = READ_ALONE
                elif degrades_batches(exc):
                    self._back_off(exc)
                    failed = READ_ALONE_FOR_NOW
                else:
                    failed = exc
                outcomes = dict.fromkeys(chunk, failed)
            else:
                if answer.contradicted:
                    self._back_off(UnexpectedResponseError(
                        f"List Jobs answered {len(answer.contradicted)} job(s) twice with different statuses (job "
                        f"{answer.contradicted[0]} first)", method="GET", path="/jobs"))
                else:
                    self.backoff.succeeded()
                outcomes = {**answer.found, **dict.fromkeys(answer.missing, READ_ALONE),
                            **dict.fromkeys(answer.contradicted, READ_ALONE_FOR_NOW)}
            for job_id, asks in chunk.items():
                for ask in asks:
                    if not ask.future.done():  # not ended by its deadline meanwhile
                        ask.future.set_result(outcomes[job_id])
        finally:
            self._sending -= 1
            self._send_due()

    def _back_off(self, exc: BaseException) -> None:
        """List Jobs answered nothing usable: read alone until it is tried again."""
        now = asyncio.get_running_loop().time()
        self._batch_failure = str(exc)
        if self.backoff.active(now):  # another request of the same round failed too: one back-off
            return
        wait = self.backoff.failed(now, getattr(exc, "retry_after", None))
        log.warning(
            "List Jobs (GET /jobs) on connection %r failed (%s): its waits read each job alone (GET /jobs/{id}) "
            "for %.0f s, then List Jobs is tried again", self.conn_id, exc, wait,
        )

    def _refuse(self, exc: BaseException) -> None:
        if self.conn_id not in self._refusals:
            self._refusals[self.conn_id] = str(exc)
            log.warning(
                "The service refused List Jobs (GET /jobs) on connection %r (%s): its waits in this process "
                "read each job alone (GET /jobs/{id}) from now on", self.conn_id, exc,
            )
