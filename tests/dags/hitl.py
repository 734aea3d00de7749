"""Answering a human-in-the-loop request of a ``dag.test()`` run from another thread, as Airflow's REST
API does (``PATCH .../hitlDetails``) and as the scheduler's time-out sweep does (Airflow 3.3+, where a
waiting task is parked in ``awaiting_input`` and ``dag.test()`` waits for its answer)."""

from __future__ import annotations

import logging
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

WAITING = 0.2
"""Seconds between two looks at the database for the request (Airflow's own loop looks every 1 s)."""


@contextmanager
def answering(dag_id: str, task_id: str, option: str | None, seen: dict[str, Any],
              before: Callable[[], Any] | None = None) -> Iterator[None]:
    """While the block runs, answer ``task_id``'s request with ``option`` ("Approve", "Reject") once
    it is parked, or time it out (``None``: the scheduler's sweep answers with the defaults). The
    request's subject and body are put into ``seen``; ``before`` runs just before the answer."""
    done = threading.Event()
    failures: list[BaseException] = []

    def answer() -> None:
        from airflow.models.hitl import HITLDetail
        from airflow.models.taskinstance import TaskInstance as TI
        from airflow.models.trigger import handle_event_submit
        from airflow.triggers.base import TriggerEvent
        from airflow.utils.session import create_session
        from airflow.utils.state import TaskInstanceState
        from sqlalchemy import select

        while not done.is_set():
            with create_session() as session:
                ti = session.scalar(select(TI).where(TI.dag_id == dag_id, TI.task_id == task_id,
                                                     TI.state == TaskInstanceState.AWAITING_INPUT))
                if ti is not None:
                    detail = session.scalar(select(HITLDetail).where(HITLDetail.ti_id == ti.id))
                    seen.update(subject=detail.subject, body=detail.body, assignees=detail.assignees)
                    chosen = option
                    try:
                        if before is not None:
                            before()
                    except Exception as exc:  # answered anyway (Reject): dag.test() would wait for ever
                        failures.append(exc)
                        chosen = "Reject"
                    if chosen is None:
                        ti.trigger_timeout = datetime.now(timezone.utc)
                        session.flush()
                        from airflow.jobs.scheduler_job_runner import SchedulerJobRunner

                        sweeper = types.SimpleNamespace(log=logging.getLogger("sweep"))
                        SchedulerJobRunner.check_awaiting_input_timeouts(sweeper, session=session)  # type: ignore[arg-type]
                    else:
                        detail.responded_by = {"id": "ann", "name": "Ann"}
                        detail.responded_at = datetime.now(timezone.utc)
                        detail.chosen_options = [chosen]
                        detail.params_input = {}
                        handle_event_submit(TriggerEvent(detail.as_resume_event_payload()), task_instance=ti,
                                            session=session)
                    return
            done.wait(WAITING)

    thread = threading.Thread(target=answer, name=f"answer-{task_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
    if failures:
        raise failures[0]
