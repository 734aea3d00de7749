"""What a job's status means to a waiting client: the one reading both waits (sync and async) use."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


class JobOutcome(enum.Enum):
    PENDING = "pending"
    SUCCESS = "success"
    FAILED = "failed"
    FOLLOW = "follow"  # already_existed: the service points at the job that does the work
    UNKNOWN = "unknown"  # a status the API document does not list: neither success nor failure


JOB_STATUS_MEANINGS: Mapping[str, JobOutcome] = MappingProxyType({
    "created": JobOutcome.PENDING,
    "queued": JobOutcome.PENDING,
    "running": JobOutcome.PENDING,
    "flow_pending": JobOutcome.PENDING,  # waiting on the flow it is part of: it runs later
    "cancelling": JobOutcome.PENDING,  # a cancel under way: it ends ``cancelled``
    "success": JobOutcome.SUCCESS,
    "failure": JobOutcome.FAILED,
    "cancelled": JobOutcome.FAILED,
    "already_existed": JobOutcome.FOLLOW,
})
"""Every status of the vendor's ``JobStatus`` enum and what it means to a wait (a test holds the
two together)."""

PENDING_JOB_STATUSES = frozenset(s for s, m in JOB_STATUS_MEANINGS.items() if m is JobOutcome.PENDING)
FINAL_JOB_STATUSES = frozenset(s for s, m in JOB_STATUS_MEANINGS.items() if m in (JobOutcome.SUCCESS,
                                                                                  JobOutcome.FAILED))


def meaning_of(status: str) -> JobOutcome:
    """What ``status`` means (:attr:`JobOutcome.UNKNOWN` for a status the document does not list)."""
    return JOB_STATUS_MEANINGS.get(status, JobOutcome.UNKNOWN)


@dataclass(frozen=True)
class JobState:
    outcome: JobOutcome
    status: str
    job_id: int
    existing_job_id: int | None = None
    last_error_log: str | None = None


def job_state(job: Mapping[str, Any], job_id: int) -> JobState:
    """Classify a Job by :data:`JOB_STATUS_MEANINGS`.

    ``already_existed`` without an ``existing_job_id`` cannot be followed and counts as failed.
    """
    status = str(job.get("status") or "")
    outcome = JOB_STATUS_MEANINGS.get(status, JobOutcome.UNKNOWN)  # as meaning_of(status), without a call per look
    existing = job.get("existing_job_id")
    if outcome is JobOutcome.FOLLOW and existing is None:
        outcome = JobOutcome.FAILED
    return JobState(
        outcome,
        status,
        int(job.get("id") or job_id),
        int(existing) if existing is not None else None,
        job.get("last_error_log"),
    )
