"""The service's users, matched with the users rows name; invitations for those it does not know."""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from analytics_provider.access.plan import AccessPlan
from analytics_provider.access.rows import UserKey, shown_user
from analytics_provider.api.operations import MAX_PAGE_SIZE
from analytics_provider.exceptions import AnalyticsJobError
from analytics_provider.plans.apply import Step
from analytics_provider.plans.plan import Action, Change, Plan

T = TypeVar("T")
Json = dict[str, Any]


def walk_users(
    hook: Any, desired: MutableMapping[UserKey, T], merge: Callable[[T, T], T], *, every_user: bool
) -> Iterator[tuple[Json, T | None]]:
    """Each user of the service (page by page; deleted users left out) with what ``desired`` holds
    for them, by id or by e-mail (both merged); users ``desired`` does not name come only with
    ``every_user``, with None. What is left in ``desired`` afterwards names users the service does
    not know."""
    for user in hook.list_users(exclude_deleted=True, limit=MAX_PAGE_SIZE):
        if user.get("is_deleted"):
            continue
        by_id = desired.pop(("id", user["id"]), None)
        by_email = desired.pop(("email", str(user.get("email") or "").lower()), None)
        want = by_email if by_id is None else by_id if by_email is None else merge(by_id, by_email)
        if want is None and not every_user:
            continue
        yield user, want


def shown(user: Json) -> str:
    return f"{user.get('email')} ({user['id']})"


def unknown_users(left: MutableMapping[UserKey, Any]) -> list[str]:
    return sorted(shown_user(key) for key in left)


def invitable(hook: Any, left: MutableMapping[UserKey, Any], plan: AccessPlan) -> list[str]:
    """The unknown users that can be invited: those named by e-mail whose address the service
    does not hold (one request each); a deleted user's is shown as such in ``plan.unknown``."""
    emails = []
    for email in sorted(key[1] for key in left if key[0] == "email"):
        if hook.is_email_used(email):
            plan.unknown = [f"{u} (a deleted user: restore them first)" if u == email else u for u in plan.unknown]
        else:
            emails.append(email)
    return emails


INVITES_PER_JOB = 100
"""E-mails one invitation job carries."""


@dataclass(frozen=True)
class Invitation:
    """The write of an ``invite`` change: ``email`` invited with ``role``, into ``group_ids``."""

    email: str
    role: str
    group_ids: tuple[int, ...] = ()


def invitations(emails: list[str], role: str, group_ids: dict[str, list[int]] | None = None) -> list[Change[Any]]:
    """Planned invitations of ``emails`` with ``role`` (and the groups each joins, when known)."""
    return [
        Change(Action.INVITE, email, role, "", f"invited as {role}" + (f", groups {ids}" if ids else ""),
               write=Invitation(email, role, tuple(ids)))
        for email in emails
        for ids in [(group_ids or {}).get(email) or []]
    ]


def invite_step(hook: Any, plan: Plan, timeout: float = 600.0) -> Step[Invitation]:
    """The plan's invitations: one job per role and groups (at most 100 e-mails each), waited for.
    A failed invitation does not stop the other writes (none needs it): it is reported at the end."""

    def send(chunk: Sequence[Change[Invitation]]) -> None:
        batches: dict[tuple[str, tuple[int, ...]], list[str]] = {}
        for invitation in (change.sent for change in chunk):
            batches.setdefault((invitation.role, invitation.group_ids), []).append(invitation.email)
        for (role, group_ids), emails in batches.items():
            job = hook.invite_users(emails, role, group_ids=list(group_ids) or None)
            state = hook.wait_for_job(int(job["id"]), poll_interval=2.0, timeout=timeout)
            if state.status != "success":
                raise AnalyticsJobError(f"invitation job {job['id']} ended {state.status}: {state.last_error_log}",
                                        job_id=int(job["id"]), status=state.status,
                                        last_error_log=state.last_error_log)

    return Step(plan.of(Action.INVITE), INVITES_PER_JOB, send, independent=True)
