"""Applying a plan: its changes sent in steps and chunks, in order; a failure says what went through.

Each write goes through the hook, whose retry rules hold (a create is re-sent only when the
service surely did not act on it). Nothing else is retried: the next run reads the service again
and plans only what is still missing, so it converges without duplicates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException

from analytics_provider.access.plan import Change, Plan
from analytics_provider.exceptions import bounded


class SyncApplyError(AirflowException):
    """A plan applied in part: ``applied`` changes went through, the ``failed`` chunk may or may
    not have, ``not_sent`` were not sent."""

    def __init__(self, message: str, *, applied: int, failed: int, not_sent: int) -> None:
        super().__init__(message)
        self.applied = applied
        self.failed = failed
        self.not_sent = not_sent


@dataclass(frozen=True)
class Step:
    """Changes sent ``size`` at a time by ``send`` (one request, or one job, per call)."""

    changes: Sequence[Change]
    size: int
    send: Callable[[Sequence[Change]], Any]


def apply_steps(task_id: str, plan: Plan, steps: Sequence[Step]) -> int:
    """Send each step's changes in order; the number of changes applied. A failure raises
    :class:`SyncApplyError` with the counts and the first changes not known to be applied."""
    total = sum(len(step.changes) for step in steps)
    applied = 0
    for step in steps:
        for start in range(0, len(step.changes), step.size):
            chunk = step.changes[start : start + step.size]
            try:
                step.send(chunk)
            except Exception as exc:
                not_sent = total - applied - len(chunk)
                first = "; ".join(_short(c) for c in chunk[:3]) + (" ..." if len(chunk) > 3 else "")
                raise SyncApplyError(
                    f"{task_id}: {plan.what}: {applied} of {total} change(s) applied, then a write of "
                    f"{len(chunk)} failed ({bounded(str(exc), 500)}); {not_sent} not sent. The failed "
                    f"write may or may not have taken effect: {first}. Run the task again: it reads "
                    "the service anew and plans only what is still to do.",
                    applied=applied,
                    failed=len(chunk),
                    not_sent=not_sent,
                ) from exc
            applied += len(chunk)
    return applied


def _short(change: Change) -> str:
    return f"{change.action} {change.target} for {change.subject}"
