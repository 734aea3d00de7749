"""Answering a review in a DAG test, as a person would on the review page or through Airflow's REST
API: ``with answering_review("my_dag", "deliveries.review", "Approve"): dag.test()``.

Airflow 3.3 and later: ``dag.test()`` parks a human-in-the-loop task in ``awaiting_input`` and waits
for its answer with no end. Two things make a naive answer unsafe there, and this helper handles both:

* the answer must come after the parking is complete. ``dag.test()`` writes the task's state once
  more after the task process has parked it; an answer recorded in between is overwritten (the
  request shows the answer, the task is ``awaiting_input`` again) and the run waits for ever. The
  helper answers once ``dag.test()`` says it waits for this task's input (its "Waiting for
  Human-in-the-loop input" line), and if the task is still seen parked with the answer recorded,
  gives the answer again (``ReviewRequest.given`` counts how often); past ``GIVEN_AT_MOST`` it fails
  the task (so that ``dag.test()`` ends) and the test, saying so;
* the answer is written as the REST API's handler writes it (the response on the request, the task
  resumed with it in one transaction), and a time-out as the scheduler's sweep resolves one.

On Airflow before 3.3 the request is answered by a trigger ``dag.test()`` runs in line, which this
helper does not drive: it refuses at once rather than leave a test waiting.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

LOOK_EVERY = 0.2
"""Seconds between two looks at Airflow's database (``dag.test()`` itself looks every second)."""

UNHEARD = 10.0
"""Seconds a parked task is waited on for ``dag.test()``'s "waiting for input" line before it is
answered anyway (an Airflow that words the line differently): a lost answer is then given again."""

GIVEN_AT_MOST = 3
"""How often an answer is given before the test fails: more than one loss means something else
writes the task's state back, and answering for ever would hide it."""

_DAG_TEST_LOGGER = "airflow.sdk.definitions.dag"
_WAITING_LINE = "Waiting for Human-in-the-loop input"


class ReviewNotAnswered(AssertionError):
    """The review could not be answered so that the task took the answer."""


@dataclass
class ReviewRequest:
    """What the review asked (set once the task is parked) and how the answer went."""

    subject: str | None = None
    body: str | None = None
    assignees: Any = None
    answer: str | None = None
    """The option given ("Approve", "Reject"); None when the review was timed out (or not asked)."""
    given: int = 0
    """How many times the answer was given: 1, or 2 when the first was lost to the parking race."""
    failures: list[BaseException] = field(default_factory=list)

    @property
    def asked(self) -> bool:
        """Whether a request was made at all (a plan that changes nothing is put to no one)."""
        return self.subject is not None


class _HeardWaiting(logging.Handler):
    """Sets ``event`` when ``dag.test()`` logs that it waits for ``task_id``'s input: the task
    process has parked it and ``dag.test()`` has written its state (the parking is complete)."""

    def __init__(self, task_id: str, event: threading.Event) -> None:
        super().__init__(logging.INFO)
        self.task_id, self.event = task_id, event

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith(_WAITING_LINE) and self.task_id in str(record.args):
            self.event.set()


@contextmanager
def answering_review(dag_id: str, task_id: str, answer: str | None = "Approve", *,
                     params_input: Mapping[str, Any] | None = None,
                     before: Callable[[], Any] | None = None,
                     responded_by: str = "reviewer") -> Iterator[ReviewRequest]:
    """While the block runs (``dag.test()`` of ``dag_id``), answer ``task_id``'s review with
    ``answer`` ("Approve", "Reject"; ``None``: time it out, as the scheduler does once
    ``response_timeout`` has passed) once it is parked; ``before`` runs just before the answer (to
    change the world between review and apply). Yields the :class:`ReviewRequest`, filled in as the
    review is asked. Raises :class:`ReviewNotAnswered` at the block's end if the answer did not take.
    """
    from airflow.providers.common.compat.sdk import AirflowException

    from analytics_provider.version_compat import AIRFLOW_V_3_3_PLUS

    if not AIRFLOW_V_3_3_PLUS:
        raise AirflowException("answering_review needs Airflow 3.3 or later (dag.test() answers human-in-the-"
                               "loop requests from 3.3; before, a trigger run in line waits for the answer)")
    request = ReviewRequest()
    done, parked = threading.Event(), threading.Event()
    logger = logging.getLogger(_DAG_TEST_LOGGER)
    heard = _HeardWaiting(task_id, parked)
    level = logger.level
    if not logger.isEnabledFor(logging.INFO):
        logger.setLevel(logging.INFO)
    logger.addHandler(heard)
    watcher = threading.Thread(
        target=_answer, name=f"answer-{task_id}", daemon=True,
        args=(dag_id, task_id, answer, dict(params_input or {}), before, responded_by, request, done, parked))
    watcher.start()
    try:
        yield request
    finally:
        done.set()
        watcher.join(60)
        logger.removeHandler(heard)
        logger.setLevel(level)
    if watcher.is_alive():
        request.failures.append(ReviewNotAnswered(f"{dag_id}.{task_id}: the answering thread did not end"))
    if request.failures:
        raise request.failures[0]


def _answer(dag_id: str, task_id: str, answer: str | None, params_input: dict[str, Any],
            before: Callable[[], Any] | None, responded_by: str, request: ReviewRequest,
            done: threading.Event, parked: threading.Event) -> None:
    from airflow.models.hitl import HITLDetail
    from airflow.models.taskinstance import TaskInstance as TI
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState
    from sqlalchemy import select

    answered: Any = None  # the task instance's id once answered
    first_seen: float | None = None
    try:
        while not done.is_set():
            with create_session() as session:
                if answered is None:
                    ti = session.scalar(select(TI).where(TI.dag_id == dag_id, TI.task_id == task_id,
                                                         TI.state == TaskInstanceState.AWAITING_INPUT))
                    if ti is not None:
                        first_seen = first_seen or time.monotonic()
                        detail = session.scalar(select(HITLDetail).where(HITLDetail.ti_id == ti.id))
                        if detail is not None and (parked.is_set() or time.monotonic() - first_seen > UNHEARD):
                            request.subject, request.body = detail.subject, detail.body
                            request.assignees = detail.assignees
                            chosen = answer
                            try:
                                if before is not None:
                                    before()
                            except Exception as exc:  # answered anyway (Reject): dag.test() would wait for ever
                                request.failures.append(exc)
                                chosen = "Reject"
                            _give(session, ti, detail, chosen, params_input, responded_by)
                            request.answer, request.given, answered = chosen, 1, ti.id
                else:
                    ti = session.get(TI, answered)
                    if ti is None or ti.state in _ENDED:
                        return
                    detail = session.scalar(select(HITLDetail).where(HITLDetail.ti_id == ti.id))
                    if ti.state == TaskInstanceState.AWAITING_INPUT and detail and detail.responded_at is not None:
                        # parked again with the answer recorded: the answer was written over; give it again
                        if request.given >= GIVEN_AT_MOST:  # the task fails (committed), so dag.test() ends
                            ti.set_state(TaskInstanceState.FAILED, session=session)
                            request.failures.append(ReviewNotAnswered(
                                f"{dag_id}.{task_id}: the answer {request.answer!r} was given {request.given} "
                                "times and the task is still awaiting input"))
                            return
                        _resume(session, ti, detail, timedout=request.answer is None)
                        request.given += 1
            done.wait(LOOK_EVERY)
    except BaseException as exc:  # said at the block's end, in the test's own thread
        request.failures.append(exc)


_ENDED = frozenset({"success", "failed", "skipped", "upstream_failed", "removed"})


def _give(session: Any, ti: Any, detail: Any, chosen: str | None, params_input: dict[str, Any],
          responded_by: str) -> None:
    """The answer as the REST API's handler records it, or a time-out as the scheduler's sweep does."""
    if chosen is None:
        from airflow.jobs.scheduler_job_runner import SchedulerJobRunner

        ti.trigger_timeout = datetime.now(timezone.utc)
        session.flush()
        sweeper = _Sweeper()
        SchedulerJobRunner.check_awaiting_input_timeouts(sweeper, session=session)  # type: ignore[arg-type]
        return
    detail.responded_by = {"id": responded_by, "name": responded_by}
    detail.responded_at = datetime.now(timezone.utc)
    detail.chosen_options = [chosen]
    detail.params_input = params_input
    _resume(session, ti, detail, timedout=False)


def _resume(session: Any, ti: Any, detail: Any, *, timedout: bool) -> None:
    from airflow.models.trigger import handle_event_submit
    from airflow.triggers.base import TriggerEvent

    handle_event_submit(TriggerEvent(detail.as_resume_event_payload(timedout=timedout)), task_instance=ti,
                        session=session)


class _Sweeper:
    """What ``check_awaiting_input_timeouts`` needs of the scheduler it is a method of."""

    log = logging.getLogger("analytics_provider.testing.review")
