"""Every job status the vendor documents has a meaning, and a status it does not list is waited out as an outage."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from vendor_facts import vendor_document

from analytics_provider.api.jobs.status import JOB_STATUS_MEANINGS, JobOutcome, meaning_of
from analytics_provider.api.jobs.wait import final_state, is_pending_status
from analytics_provider.exceptions import AnalyticsJobError, AnalyticsJobTimeout

from .test_job_waits import FakeTime, job, run


def documented_statuses() -> list[str]:
    """The vendor's ``components.schemas.JobStatus`` enum."""
    schema = vendor_document()["components"]["schemas"]["JobStatus"]
    return list(schema["properties"]["status"]["enum"])


def test_every_status_the_vendor_documents_has_a_meaning() -> None:
    statuses = documented_statuses()
    meanings = {status: meaning_of(status).name for status in statuses}
    print("\n".join(f"{status:>16}: {meaning}" for status, meaning in meanings.items()))
    assert len(statuses) == 9
    without = [s for s, m in meanings.items() if m == JobOutcome.UNKNOWN.name]
    assert not without, f"documented job statuses with no meaning: {without}"
    assert set(JOB_STATUS_MEANINGS) == set(statuses)  # nothing undocumented is given a meaning either


def test_flow_pending_and_cancelling_keep_the_wait_looking() -> None:
    t = FakeTime()
    steps = [(1010, "queued"), (1030, "flow_pending"), (1040, "running"), (None, "success")]
    result, service = run(t, lambda j, now: job(j, next(s for until, s in steps if until is None or now < until)))
    assert (result.status, result.job_status) == ("success", "success")
    assert len(service.reads) == 9 and t.sleeps == [5.0] * 8

    t = FakeTime()
    result, service = run(t, lambda j, now: job(j, "cancelling" if now < 1020 else "cancelled"))
    assert (result.status, result.job_status) == ("failed", "cancelled")  # the cancel is over: final
    assert len(service.reads) == 5


@pytest.mark.parametrize("status", ["flow_pending", "cancelling", "created", "already_existed", "paused",
                                    "unreachable"])
def test_a_status_that_is_not_final_is_waited_on_again_by_a_later_try(status: str) -> None:
    assert is_pending_status(status)


@pytest.mark.parametrize("status", ["success", "failure", "cancelled"])
def test_a_final_status_is_not_waited_on_again(status: str) -> None:
    assert not is_pending_status(status)


def test_an_undocumented_status_is_logged_once_and_ends_the_wait_as_an_outage(caplog) -> None:
    t = FakeTime()
    with caplog.at_level(logging.INFO, logger="analytics_provider"):
        result, service = run(t, lambda j, now: job(j, "paused"), max_outage=120)
    assert result.status == "error" and result.job_status == "paused"
    assert "status 'paused'" in result.message and "max_outage=120 s" in result.message, result.message
    assert 120 <= t.now - 1000 <= 125 and 3 <= len(service.reads) < 20  # backed off meanwhile
    said = [r.getMessage() for r in caplog.records if "paused" in r.getMessage()]
    assert len(said) == 1 and "does not list" in said[0], said
    with pytest.raises(AnalyticsJobError, match=r"waiting for job 1 failed: job 1 reported status 'paused'"):
        final_state(result)


def test_an_undocumented_status_never_outlasts_the_deadline() -> None:
    t = FakeTime()
    result, _ = run(t, lambda j, now: job(j, "paused"), timeout=30, max_outage=600)
    assert result.status == "timeout" and "still paused" in result.message
    assert t.now - 1000 == pytest.approx(30)
    with pytest.raises(AnalyticsJobTimeout):
        final_state(result)


def test_a_known_status_after_an_undocumented_one_ends_the_outage() -> None:
    t = FakeTime()

    def answer(j: int, now: float) -> Any:
        if now < 1100:
            return job(j, "paused")
        if now < 1300:
            return job(j, "running")  # the outage is over: the next one starts from zero
        return job(j, "paused" if now < 1400 else "success")

    result, _ = run(t, answer, max_outage=150)
    assert result.status == "success"
