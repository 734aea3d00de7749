"""Applying a plan: its changes sent in steps and chunks, in order; a failure says what went through.

Each write goes through the hook, whose retry rules hold (a create is re-sent only when the
service surely did not act on it). Nothing else is retried: the next run reads the service again
and plans only what is still missing, so it converges without duplicates. A step whose failure
nothing after it depends on (the invitations) does not stop the others: what it could not apply
is reported at the end, with whether a rerun can help.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from airflow.providers.common.compat.sdk import AirflowException

from analytics_provider.exceptions import bounded
from analytics_provider.plans.plan import Change, Plan

W = TypeVar("W")
LISTED_FAILURES = 20
"""Changes not applied that a failure lists one by one; the rest are counted."""


class SyncApplyError(AirflowException):
    """A plan applied in part: ``applied`` changes went through, the ``failed`` ones may or may
    not have (or surely did not: ``not_applied`` names them, with why), ``not_sent`` were not sent."""

    def __init__(self, message: str, *, applied: int, failed: int, not_sent: int,
                 not_applied: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.applied = applied
        self.failed = failed
        self.not_sent = not_sent
        self.not_applied = list(not_applied)


class NotApplied(Exception):
    """Raised by a step's ``send``: these ``changes`` (default: the whole chunk) were not sent,
    for ``reason``; ``rerun_helps`` says whether the next run can apply them as they are."""

    def __init__(self, reason: str, *, rerun_helps: bool, changes: Sequence[Change[Any]] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rerun_helps = rerun_helps
        self.changes = changes


@dataclass(frozen=True)
class Step(Generic[W]):
    """Changes sent ``size`` at a time by ``send`` (one request, or one job, per call);
    ``independent``: a failure does not stop the steps after it (none of them needs its changes)."""

    changes: Sequence[Change[W]]
    size: int
    send: Callable[[Sequence[Change[W]]], Any]
    independent: bool = False


RERUN = "Run the task again: it reads the service anew and plans only what is still to do."
SAVED_RERUN = ("This saved plan is used up (an apply of it is refused once tried): plan again, have the new plan "
               "reviewed and apply it; it reads the service anew and plans only what is still to do.")
"""What a failed apply advises: a plan just made (run again), or a saved plan (plan again)."""


def for_saved_plan(exc: SyncApplyError) -> SyncApplyError:
    """``exc`` as a saved plan's apply says it: a rerun of the same apply is refused (the plan is
    recorded as applied, or stale now), so it advises planning again."""
    text = str(exc).replace(RERUN, SAVED_RERUN).replace("(a rerun may apply it)", "(a new plan may apply it)")
    return SyncApplyError(text, applied=exc.applied, failed=exc.failed, not_sent=exc.not_sent,
                          not_applied=[m.replace("(a rerun may apply it)", "(a new plan may apply it)")
                                       for m in exc.not_applied])


def rerun_helps(exc: BaseException) -> bool:
    """Whether sending the same write again can succeed: not when the service refused it as
    wrong (a 4xx other than a timeout, a conflict or a rate limit)."""
    status = getattr(exc, "status", None)
    return not (isinstance(status, int) and 400 <= status < 500 and status not in (408, 409, 429))


def apply_steps(task_id: str, plan: Plan, steps: Sequence[Step[Any]]) -> int:
    """Send each step's changes in order; the number of changes applied. A failure of a
    dependent step raises :class:`SyncApplyError` at once with the counts and the first changes
    not known to be applied; changes not applied otherwise are raised together at the end."""
    total = sum(len(step.changes) for step in steps)
    applied = 0
    missed: list[str] = []
    for step in steps:
        for start in range(0, len(step.changes), step.size):
            chunk = step.changes[start : start + step.size]
            try:
                step.send(chunk)
            except NotApplied as exc:
                left = exc.changes if exc.changes is not None else chunk
                missed += [_missed(c, exc.reason, exc.rerun_helps) for c in left]
                applied += len(chunk) - len(left)
                continue
            except Exception as exc:
                if step.independent:
                    missed += [_missed(c, bounded(str(exc), 300), rerun_helps(exc)) for c in chunk]
                    continue
                raise _failed(task_id, plan, exc, chunk, applied, total, missed) from exc
            applied += len(chunk)
    if missed:
        listed = "\n".join(missed[:LISTED_FAILURES]) + (
            f"\n... and {len(missed) - LISTED_FAILURES} more" if len(missed) > LISTED_FAILURES else "")
        raise SyncApplyError(f"{task_id}: {plan.what}: {applied} of {total} change(s) applied; {len(missed)} "
                             f"not applied:\n{listed}", applied=applied, failed=0, not_sent=len(missed),
                             not_applied=missed)
    return applied


def _failed(task_id: str, plan: Plan, exc: Exception, chunk: Sequence[Change[Any]], applied: int, total: int,
            missed: list[str]) -> SyncApplyError:
    not_sent = total - applied - len(chunk) - len(missed)
    first = "; ".join(_short(c) for c in chunk[:3]) + (" ..." if len(chunk) > 3 else "")
    rerun = (RERUN if rerun_helps(exc)
             else "A rerun will not help as it is: the service refused the write; fix its cause first.")
    also = f" Not applied before it: {'; '.join(missed[:LISTED_FAILURES])}." if missed else ""
    return SyncApplyError(
        f"{task_id}: {plan.what}: {applied} of {total} change(s) applied, then a write of "
        f"{len(chunk)} failed ({bounded(str(exc), 500)}); {not_sent} not sent. The failed "
        f"write may or may not have taken effect: {first}. {rerun}{also}",
        applied=applied, failed=len(chunk), not_sent=not_sent, not_applied=missed,
    )


def _missed(change: Change[Any], reason: str, rerun: bool) -> str:
    return f"{_short(change)}: {reason} ({'a rerun may apply it' if rerun else 'a rerun will not help as it is'})"


def _short(change: Change[Any]) -> str:
    return f"{change.action.value} {change.target} for {change.subject}"
