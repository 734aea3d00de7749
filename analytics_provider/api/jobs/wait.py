"""Following a job until it ends: the one loop every wait runs (hook, sensor, trigger), without I/O.

:func:`follow_job` is a generator of the events of :mod:`~analytics_provider.api.call.events`: it
yields :class:`~analytics_provider.api.call.events.ReadJob` (look at a job, within the seconds left
before the deadline) and :class:`~analytics_provider.api.call.events.Pause` (wait this long),
receives each read's answer (the Job, or the exception it raised) and returns a
:class:`WaitResult`. The drivers run it as they run a call (``client.run(follow_job(watch))``);
:func:`first_look` is one look of it, up to its first pause (a sensor's poke).
:class:`JobWatch` holds what a wait has learnt (the job it now follows, the outage it is in),
so a sensor can carry it across pokes.

Rules: a pending job (:data:`~analytics_provider.api.jobs.status.JOB_STATUS_MEANINGS`) is read again
after ``poll_interval``; ``already_existed`` is followed to ``existing_job_id``, at most
``MAX_FOLLOWS`` times and never back to a job already seen; a transient failure (no answer,
timeout, 5xx, 429, an answer that is not a Job) is tried again with backoff (``Retry-After``
honoured) until failures in a row have lasted ``max_outage`` seconds; a status the API document
does not list counts as such a failure (logged once per wait); anything else ends the wait.
Every iteration sleeps at least the interval, and no sleep or read goes past the deadline.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from analytics_provider.api.call.events import Pause, ReadJob, Steps
from analytics_provider.api.call.retry import RetryPolicy, backoff, is_transient
from analytics_provider.api.jobs.status import FINAL_JOB_STATUSES, JobOutcome, JobState, job_state
from analytics_provider.api.wire.choices import DEFAULT_MAX_OUTAGE, wait_argument_problem
from analytics_provider.exceptions import AnalyticsDeadlineExceeded, AnalyticsJobError, AnalyticsJobTimeout

log = logging.getLogger(__name__)

MAX_FOLLOWS = 10
"""``already_existed`` hops a wait follows before it calls the chain a loop."""
MAX_BACKOFF = 60.0
"""The longest pause between two tries during an outage (unless the interval or Retry-After is longer)."""
EPSILON = 0.001

WaitStatus = Literal["success", "failed", "timeout", "error"]
EVENT_STATUSES: tuple[WaitStatus, ...] = ("success", "failed", "timeout", "error")
UNREACHABLE = "unreachable"
"""The status reported for a job that could not be read (yet): treated as still pending."""
UNREADABLE = "unreadable"
"""The status of a job kept by an earlier try that cannot be waited on at all (it is submitted anew)."""

ONE_LOOK = RetryPolicy(max_attempts=1)

MAX_EVENT_LOG = 65_536
"""The characters of a job's ``last_error_log`` a trigger's event carries: its end (the decisive error
is usually last). The event is stored in Airflow's database as the task's ``next_kwargs``; the
failure's text is cut further (``job_tasks``)."""


def event_log(log: str | None) -> str | None:
    """``log`` as an event carries it: whole up to :data:`MAX_EVENT_LOG` characters, else its end."""
    if log is None or len(log) <= MAX_EVENT_LOG:
        return log
    return f"[the first {len(log) - MAX_EVENT_LOG:,} characters cut]\n" + log[-MAX_EVENT_LOG:]
"""The retry policy of each read: the wait itself outlasts failures (with ``max_outage``)."""


@dataclass(frozen=True)
class WaitResult:
    """How a wait ended: the one vocabulary of the hook, the sensor, the trigger's events and the operators.

    ``job_id`` is the job finally waited on (after following ``already_existed``).
    """

    status: WaitStatus
    job_id: int
    job_status: str = ""
    message: str = ""
    last_error_log: str | None = None
    error: BaseException | None = field(default=None, compare=False)  # the cause; never in an event

    def to_event(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "job_id": self.job_id,
            "job_status": self.job_status,
            "message": self.message,
            "last_error_log": event_log(self.last_error_log),
        }

    @classmethod
    def from_event(cls, event: Any) -> WaitResult:
        """Read a trigger's event; anything else is a clear :class:`AnalyticsJobError`."""
        if (
            not isinstance(event, Mapping)
            or event.get("status") not in EVENT_STATUSES
            or isinstance(event.get("job_id"), bool)
            or not isinstance(event.get("job_id"), (int, str))
            or not str(event.get("job_id")).isdigit()
        ):
            raise AnalyticsJobError(
                f"unexpected event from the trigger: {event!r} (expected a mapping with 'status' one of "
                f"{', '.join(EVENT_STATUSES)} and an integer 'job_id')",
                job_id=-1,
                status="unknown",
            )
        last_error = event.get("last_error_log")
        return cls(
            event["status"],
            int(event["job_id"]),
            str(event.get("job_status") or ""),
            str(event.get("message") or ""),
            str(last_error) if last_error is not None else None,
        )

    @property
    def state(self) -> JobState:
        """The final job state of a ``success`` or ``failed`` result."""
        outcome = JobOutcome.SUCCESS if self.status == "success" else JobOutcome.FAILED
        return JobState(outcome, self.job_status, self.job_id, None, self.last_error_log)


class JobWatch:
    """What one wait knows: the job it follows, its deadline, and the outage it may be in.

    :param clock: the clock ``deadline`` is on (the hook's monotonic clock, or Unix time in a trigger).
    :param deadline: absolute time on ``clock`` after which the wait ends in ``timeout`` (``inf``: none).
    :param spread_first_wait: make the first pending wait a random half to whole interval, so that
        many waits started together do not read their jobs one by one in lock-step.
    """

    def __init__(
        self,
        job_id: int,
        *,
        poll_interval: float,
        deadline: float = math.inf,
        max_outage: float = DEFAULT_MAX_OUTAGE,
        clock: Callable[[], float],
        spread_first_wait: bool = False,
        rng: random.Random | None = None,
    ) -> None:
        if wait_argument_problem("poll_interval", poll_interval):
            raise ValueError(f"poll_interval must be {wait_argument_problem('poll_interval', poll_interval)}, "
                             f"got {poll_interval!r}")
        if max_outage < 0:
            raise ValueError(f"max_outage must be a number of seconds (0 or more), got {max_outage!r}")
        self.job_id = int(job_id)
        self.poll_interval = float(poll_interval)
        self.deadline = float(deadline)
        self.max_outage = float(max_outage)
        self.clock = clock
        self.chain = [self.job_id]
        self.status = ""  # the last status seen, UNREACHABLE during an outage
        self.outage_since: float | None = None
        self.failures = 0
        self.last_failure: BaseException | None = None
        self.unknown_statuses: set[str] = set()  # the undocumented statuses this wait has logged
        self._spread = spread_first_wait
        self._rng = rng or random.Random()

    # -- decisions ---------------------------------------------------------------------------------

    def expired(self) -> WaitResult | None:
        """The ``timeout`` result once the deadline has come."""
        if self.clock() < self.deadline - EPSILON:
            return None
        if self.outage_since is not None and self.status == UNREACHABLE:
            message = (
                f"job {self.job_id} did not finish before the deadline (it could not be read: "
                f"{self.failures} failed looks in a row; last: {self.last_failure})"
            )
        else:
            message = f"job {self.job_id} did not finish before the deadline (still {self.status or 'pending'})"
            if self.outage_since is not None:  # an undocumented status
                message = f"{message[:-1]}: {self.last_failure})"
        return WaitResult("timeout", self.job_id, self.status, message, error=self.last_failure)

    def on_answer(self, answer: Any) -> WaitResult | Pause:
        """Decide after a read: a final result, or how long to sleep before the next read."""
        if isinstance(answer, BaseException):
            return self._on_failure(answer, str(answer))
        if not isinstance(answer, Mapping) or not answer.get("status"):
            return self._on_failure(None, f"unusable answer for job {self.job_id}: {answer!r:.200}")
        state = job_state(answer, self.job_id)
        if state.outcome is JobOutcome.UNKNOWN:
            return self._on_unknown_status(state.status)
        self.outage_since, self.failures, self.last_failure = None, 0, None
        self.status = state.status
        if state.outcome is JobOutcome.SUCCESS:
            return WaitResult("success", self.job_id, state.status, f"job {self.job_id} succeeded")
        if state.outcome is JobOutcome.FAILED:
            return WaitResult(
                "failed", self.job_id, state.status, f"job {self.job_id} ended {state.status}", state.last_error_log
            )
        if state.outcome is JobOutcome.FOLLOW:
            return self._follow(int(state.existing_job_id or 0))
        wait = self.poll_interval
        if self._spread:
            self._spread = False
            wait *= self._rng.uniform(0.5, 1.0)
        return Pause(self._until_deadline(wait), pending=True)

    def _follow(self, existing: int) -> WaitResult | Pause:
        if existing in self.chain or len(self.chain) > MAX_FOLLOWS:
            chain = " -> ".join(str(j) for j in [*self.chain, existing])
            reason = "loops" if existing in self.chain else f"is longer than {MAX_FOLLOWS} hops"
            return WaitResult(
                "error",
                self.job_id,
                self.status,
                f"job {self.chain[0]} cannot be followed: its already_existed chain {reason} ({chain})",
            )
        log.info("Job %s already existed; following job %s", self.job_id, existing)
        self.chain.append(existing)
        self.job_id = existing
        return Pause(self._until_deadline(self.poll_interval), pending=True)

    def _on_unknown_status(self, status: str) -> WaitResult | Pause:
        """A status the document does not list: neither success nor failure; waited out as an outage."""
        if status not in self.unknown_statuses:
            self.unknown_statuses.add(status)
            log.warning(
                "Job %s reports status %r, which the API document does not list: looking again as during an "
                "outage (the wait ends after max_outage=%g s of it, or at the deadline)",
                self.job_id, status, self.max_outage,
            )
        return self._on_failure(None, f"job {self.job_id} reported status {status!r}, which the API document "
                                      f"does not list", status=status)

    def _on_failure(self, exc: BaseException | None, text: str, status: str = UNREACHABLE) -> WaitResult | Pause:
        """An outage goes on: a failed read (``exc``, or an unusable answer), or an undocumented ``status``."""
        now = self.clock()
        if exc is not None and (now >= self.deadline - EPSILON or isinstance(exc, AnalyticsDeadlineExceeded)):
            # the deadline ended the read, or the read could not end before it (a quota spent past it)
            if self.last_failure is None:
                self.last_failure = exc
            message = (f"job {self.job_id} did not finish before the deadline (still {self.status or 'pending'}; "
                       f"{text})")
            return WaitResult("timeout", self.job_id, self.status, message, error=exc)
        if exc is not None and not is_transient(exc):
            return WaitResult("error", self.job_id, self.status, f"could not read job {self.job_id}: {text}", error=exc)
        self.last_failure = exc or ValueError(text)
        self.failures += 1
        self.status = status
        if self.outage_since is None:
            self.outage_since = now
        lasted = now - self.outage_since
        if lasted >= self.max_outage:
            if status == UNREACHABLE:
                message = (f"job {self.job_id} could not be read for {lasted:.0f} s ({self.failures} failed looks "
                           f"in a row, max_outage={self.max_outage:g} s); last: {text}")
            else:
                message = (f"{text}; it could not be waited on for {lasted:.0f} s ({self.failures} looks in a "
                           f"row, max_outage={self.max_outage:g} s)")
            return WaitResult("error", self.job_id, status, message, error=self.last_failure)
        wait = max(self.poll_interval, backoff(exc, self.failures, self.poll_interval, MAX_BACKOFF, low=0.5,
                                               rng=self._rng))
        outage_left = self.outage_since + self.max_outage - now  # the last look comes as the outage ends
        wait = self._until_deadline(min(wait, max(outage_left, self.poll_interval)))
        if status == UNREACHABLE:
            log.warning(
                "Could not read job %s (%s); looking again in %.1f s (failing for %.0f s of max_outage %g s)",
                self.job_id, text, wait, lasted, self.max_outage,
            )
        return Pause(wait, pending=False)

    def _until_deadline(self, wait: float) -> float:
        return max(0.0, min(wait, self.deadline - self.clock()))


def follow_job(watch: JobWatch) -> Steps[WaitResult]:
    """The job-following loop: read, decide, pause; returns how the wait ended."""
    while True:
        if (timeout := watch.expired()) is not None:
            return timeout
        answer = yield ReadJob(watch.job_id, watch.deadline - watch.clock())
        decision = watch.on_answer(answer)
        if isinstance(decision, WaitResult):
            return decision
        yield decision


def first_look(watch: JobWatch) -> Steps[WaitResult | None]:
    """One look of a wait that spans pokes or tries: :func:`follow_job` up to its first pause;
    None when the wait goes on (``watch`` keeps what the look learnt)."""
    steps = follow_job(watch)
    reply: Any = None
    try:
        while not isinstance(event := steps.send(reply), Pause):
            reply = yield event
    except StopIteration as stop:
        result: WaitResult = stop.value
        return result
    finally:
        steps.close()
    return None


def is_pending_status(status: str) -> bool:
    """Whether a job status (or :data:`UNREACHABLE`, or a status the document does not list) means
    the job may still be running: all but the final statuses."""
    return status not in FINAL_JOB_STATUSES and status != UNREADABLE


def final_state(result: WaitResult) -> JobState:
    """The job's final state (success or failed), or the wait's end raised as an error."""
    if result.status in ("success", "failed"):
        return result.state
    if result.status == "timeout":
        raise AnalyticsJobTimeout(
            result.message or f"job {result.job_id} did not finish before the deadline",
            job_id=result.job_id,
            status=result.job_status or "timeout",
        ) from result.error
    raise AnalyticsJobError(
        f"waiting for job {result.job_id} failed: {result.message}", job_id=result.job_id, status="unknown"
    ) from result.error
