"""What a job's status means to a waiting client: the one reading both waits (sync and async) use."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analytics_provider.api.operations import PENDING_JOB_STATUSES


class JobOutcome(enum.Enum):
    PENDING = "pending"
    SUCCESS = "success"
    FAILED = "failed"
    FOLLOW = "follow"  # already_existed: the service points at the job that does the work


@dataclass(frozen=True)
class JobState:
    outcome: JobOutcome
    status: str
    job_id: int
    existing_job_id: int | None = None
    last_error_log: str | None = None


def read_job(job: Mapping[str, Any], job_id: int) -> JobState:
    """Classify a Job: pending (created, queued, running), success, a job to follow, or failed.

    Any other status is final and a failure; ``already_existed`` without an ``existing_job_id``
    cannot be followed and counts as failed too.
    """
    status = str(job.get("status") or "")
    if status in PENDING_JOB_STATUSES:
        outcome = JobOutcome.PENDING
    elif status == "success":
        outcome = JobOutcome.SUCCESS
    elif status == "already_existed" and job.get("existing_job_id") is not None:
        outcome = JobOutcome.FOLLOW
    else:
        outcome = JobOutcome.FAILED
    existing = job.get("existing_job_id")
    return JobState(
        outcome,
        status,
        int(job.get("id") or job_id),
        int(existing) if existing is not None else None,
        job.get("last_error_log"),
    )
