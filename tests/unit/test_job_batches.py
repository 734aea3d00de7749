"""The sans-IO part of batched reads: which ids go next, what each asked id gets, what a refusal is."""

from __future__ import annotations

import pytest

from analytics_provider.api.call.request import build_request
from analytics_provider.api.jobs.batch import (
    BatchBackoff,
    DueReads,
    degrades_batches,
    list_jobs_request,
    refuses_batches,
    sort_answer,
)
from analytics_provider.exceptions import (
    AnalyticsApiError,
    AnalyticsDeadlineExceeded,
    AnalyticsParameterError,
    AnalyticsTransportError,
    InternalServiceError,
    RateLimitExceedError,
    UnexpectedResponseError,
)


def test_the_oldest_reads_go_first_at_most_100_ids_a_request() -> None:
    due: DueReads[str] = DueReads()
    for job_id in range(1, 251):
        due.add(job_id, f"wait-{job_id}")
    due.add(7, "second wait on job 7")  # two waits on one job share its place
    first = due.take(lambda w: True)
    assert list(first) == list(range(1, 101)) and first[7] == ["wait-7", "second wait on job 7"]
    due.add(1, "wait-1 again")  # asked again: behind everything already due
    assert list(due.take(lambda w: True)) == list(range(101, 201))
    assert list(due.take(lambda w: True)) == [*range(201, 251), 1]
    assert len(due) == 0 and due.take(lambda w: True) == {}


def test_waits_that_ended_meanwhile_are_dropped_from_the_request() -> None:
    due: DueReads[str] = DueReads()
    for job_id, waiter in ((1, "gone"), (2, "live"), (2, "gone"), (3, "gone")):
        due.add(job_id, waiter)
    assert due.take(lambda w: w == "live") == {2: ["live"]}


def test_each_asked_id_gets_its_job_and_the_left_out_ones_are_named() -> None:
    jobs = [{"id": 3, "status": "running"}, {"id": "1", "status": "success"}, {"id": 99, "status": "running"}]
    found, missing, contradicted = sort_answer([1, 2, 3], jobs)
    assert found == {1: jobs[1], 3: jobs[0]} and missing == [2]  # a job not asked for is ignored
    assert contradicted == []


def test_an_id_answered_twice_with_different_statuses_is_read_alone() -> None:
    jobs = [{"id": 1, "status": "success"}, {"id": 2, "status": "running"}, {"id": 1, "status": "failure"},
            {"id": 2, "status": "running", "extra": True}, {"id": 9, "status": "x"}, {"id": 9, "status": "y"}]
    answer = sort_answer([1, 2, 3], jobs)
    assert answer.contradicted == [1] and answer.missing == [3]  # 9 was not asked: its contradiction is no matter
    assert answer.found == {2: jobs[1]}  # answered twice alike: the first record


@pytest.mark.parametrize("answer", [None, {"jobs": []}, "[]", [{"status": "running"}], [{"id": True}], [7]])
def test_an_answer_that_is_not_a_list_of_jobs_is_an_outage(answer) -> None:
    with pytest.raises(UnexpectedResponseError, match="List Jobs answered"):
        sort_answer([1], answer)


def test_which_failures_mean_the_service_refuses_batches() -> None:
    assert [s for s in (400, 401, 403, 404, 405, 422, 429, 500, 501, 503)
            if refuses_batches(AnalyticsApiError("x", status=s))] == [400, 403, 404, 405, 501]
    assert not refuses_batches(AnalyticsTransportError("connection reset"))
    assert not refuses_batches(ValueError("x"))


def test_which_failures_mean_list_jobs_is_read_alone_for_a_while() -> None:
    assert degrades_batches(InternalServiceError("x", status=500))
    assert degrades_batches(RateLimitExceedError("x", status=429, retry_after=1.0))
    assert degrades_batches(UnexpectedResponseError("not JSON")) and degrades_batches(AnalyticsTransportError("reset"))
    assert not degrades_batches(AnalyticsApiError("x", status=401))  # the key: every read would say so
    assert not degrades_batches(AnalyticsDeadlineExceeded("the deadline came"))


def test_list_jobs_is_tried_again_after_a_growing_back_off_or_the_retry_after() -> None:
    backoff = BatchBackoff()
    assert not backoff.active(0.0)
    waits = [backoff.failed(now) for now in (0.0, 10.0, 20.0)]
    assert waits == [1.0, 2.0, 4.0] and backoff.active(23.9) and not backoff.active(24.0)
    assert backoff.failed(30.0, retry_after=30.0) == 30.0  # a longer Retry-After wins
    for now in range(100, 110):
        backoff.failed(float(now))
    assert backoff.failed(200.0) == BatchBackoff.LONGEST
    backoff.succeeded()
    assert backoff.failed(300.0) == 1.0


def test_more_than_100_ids_are_refused_before_any_request() -> None:
    assert len(build_request("list_jobs", query={"ids": list(range(1, 101))}).params) == 100
    with pytest.raises(AnalyticsParameterError, match="list_jobs: ids takes at most 100 values, got 101"):
        build_request("list_jobs", query={"ids": list(range(1, 102))})


def test_a_batch_sends_the_list_jobs_request_the_table_builds() -> None:
    """The batch's request is built without the table's checks (it runs every poll): it must be
    the very request :func:`build_request` makes, and refuse what that refuses."""
    for ids in ([7], [3, 1, 2], list(range(1, 101))):
        assert list_jobs_request(ids) == build_request("list_jobs", query={"ids": ids})
    with pytest.raises(AnalyticsParameterError, match="list_jobs: ids takes at most 100 values, got 101"):
        list_jobs_request(list(range(1, 102)))
