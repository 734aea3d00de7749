"""The waits of one event loop read their jobs together: List Jobs over real sockets to the emulator.

Each test runs real triggers (their own deadlines, intervals, follows, outages) in one loop and
counts the emulator's requests per operation. The events are compared with those of the same
waits reading each job alone (what every wait did before batching: the reference).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import Counter
from typing import Any

import pytest

from analytics_provider.hooks.async_client import LoopShared
from analytics_provider.triggers import AnalyticsJobTrigger

INTERVAL = 0.25


async def event_of(trigger: AnalyticsJobTrigger) -> dict[str, Any]:
    events = [event.payload async for event in trigger.run()]
    assert len(events) == 1
    return events[0]


def trigger(job_id: int, timeout: float = 30.0, interval: float = INTERVAL) -> AnalyticsJobTrigger:
    return AnalyticsJobTrigger("analytics_default", job_id, interval, time.time() + timeout)


def batches(emulator) -> list[list[int]]:
    """The ids of each List Jobs request, in order."""
    return [[int(i) for i in r.query.get("ids[]", [])] for r in emulator.requests if r.operation == "list_jobs"]


def singles(emulator) -> list[int]:
    return [int(r.path.rsplit("/", 1)[1]) for r in emulator.requests if r.operation == "get_job"]


def answered(emulator) -> set[int]:
    """The jobs a read has been answered for (200), batched or alone."""
    found: set[int] = set()
    for r in emulator.requests:
        if r.status == 200 and r.operation == "list_jobs":
            found.update(int(i) for i in r.query.get("ids[]", []))
        elif r.status == 200 and r.operation == "get_job":
            found.add(int(r.path.rsplit("/", 1)[1]))
    return found


class Scenario:
    """One of every way a wait ends, on jobs made in the emulator; ``kinds`` maps job id -> kind."""

    def __init__(self, emulator, counts: dict[str, int]) -> None:
        self.emulator = emulator
        self.kinds: dict[int, str] = {}
        self.timeouts: set[int] = set()
        self.deleted: list[int] = []
        jobs = emulator.world.jobs.jobs
        for kind, count in counts.items():
            seconds = 3600 if kind in ("timeout", "deleted") else 1.0
            ids = emulator.add_jobs(count, seconds=seconds)
            with emulator.world.lock:
                for job_id in ids:
                    self.kinds[job_id] = kind
                    if kind == "failed":
                        jobs[job_id].last_error_log = f"warehouse refused job {job_id}"
                    if kind == "followed":  # already_existed, pointing at a job that succeeds
                        (target,) = emulator.add_jobs(1, seconds=1.0)
                        jobs[job_id].existing_job_id = target
            if kind == "timeout":
                self.timeouts.update(ids)
            if kind == "deleted":
                self.deleted += ids

    def triggers(self) -> dict[int, AnalyticsJobTrigger]:
        # a timeout's wait reads its job before its deadline however loaded the machine (at 1.5 s, beside
        # four CPU burners, 250 waits started had not read some jobs yet: "still pending", not "created")
        return {j: trigger(j, timeout=5.0 if j in self.timeouts else 30.0) for j in self.kinds}

    def delete_once_read(self) -> asyncio.Future[None]:
        """Delete the ``deleted`` jobs once the service has answered a read of each: mid-wait
        whatever the machine's speed (a fixed delay raced the first read)."""

        async def delete() -> None:
            hang_after = time.monotonic() + 600  # not a bound on speed: a wait that never read its job
            while not set(self.deleted) <= answered(self.emulator):
                assert time.monotonic() < hang_after, f"never answered: {set(self.deleted) - answered(self.emulator)}"
                await asyncio.sleep(0.01)
            with self.emulator.world.lock:
                for job_id in self.deleted:
                    del self.emulator.world.jobs.jobs[job_id]

        return asyncio.ensure_future(delete())


def shape(event: dict[str, Any], job_id: int) -> dict[str, Any]:
    """An event with its job ids written as placeholders, to compare waits on different jobs. A
    timeout's message loses what ended a read the deadline caught mid-way (whether a read was
    under way at the deadline is a matter of the machine's speed, batched or not)."""
    followed = str(event["job_id"])
    text = {k: re.sub(rf"\b{job_id}\b", "<job>", str(v)) for k, v in event.items()}
    text["message"] = re.sub(r"(did not finish before the deadline \(still \w+); .*\)$", r"\1)", text["message"])
    if followed != str(job_id):
        text = {k: v.replace(followed, "<followed>") for k, v in text.items()}
    return text


async def reference_events(emulator) -> dict[str, dict[str, Any]]:
    """One wait of each kind, each job read alone (the refused-batches path): the events of today."""
    scenario = Scenario(emulator, {"success": 1, "failed": 1, "timeout": 1, "followed": 1, "deleted": 1})
    refusals = LoopShared.of_running_loop().refusals
    refusals["analytics_default"] = "reference run"
    try:
        deleting = scenario.delete_once_read()
        triggers = scenario.triggers()
        events = await asyncio.gather(*(event_of(t) for t in triggers.values()))
        await deleting
    finally:
        refusals.clear()  # the test's waits after these read in batches again
    return {scenario.kinds[j]: shape(e, j) for j, e in zip(triggers, events, strict=True)}


async def test_250_waits_read_in_batches_and_end_as_they_would_alone(analytics_emulator, analytics_connection):
    expected = await reference_events(analytics_emulator)
    analytics_emulator.clear_requests()
    scenario = Scenario(analytics_emulator,
                        {"success": 200, "failed": 20, "timeout": 10, "followed": 10, "deleted": 10})
    triggers = scenario.triggers()
    deleting = scenario.delete_once_read()

    restarted_id = next(j for j, kind in scenario.kinds.items() if kind == "success")
    held = analytics_emulator.world.jobs.jobs[restarted_id]
    with analytics_emulator.world.lock:
        held.duration = 3600.0  # running until restarted: mid-wait however slowly a loaded machine reads it
    first_run = asyncio.ensure_future(event_of(triggers.pop(restarted_id)))
    others = asyncio.ensure_future(asyncio.gather(*(event_of(t) for t in triggers.values())))
    while sum(restarted_id in ids for ids in batches(analytics_emulator)) < 2:  # mid-wait: read twice
        assert not first_run.done(), f"the wait to restart ended before its second read: {first_run.result()}"
        await asyncio.sleep(0.01)
    first_run.cancel()  # the triggerer holding it died; another one restores it from serialize()
    with analytics_emulator.world.lock:  # its job runs on for a second, as the others' do: the restored
        held.duration = analytics_emulator.world.clock() - held.created + 1.0  # wait reads it among them
    reads_before_restart = len(batches(analytics_emulator))
    _, kwargs = trigger(restarted_id).serialize()
    restored = AnalyticsJobTrigger(**{**kwargs, "end_time": time.time() + 30})
    restored_event = await event_of(restored)
    events = dict(zip(triggers, await others, strict=True))
    events[restarted_id] = restored_event
    await deleting

    assert Counter(e["status"] for e in events.values()) == Counter(
        {"success": 210, "failed": 20, "timeout": 10, "error": 10})
    for job_id, event in events.items():
        assert shape(event, job_id) == expected[scenario.kinds[job_id]], (job_id, scenario.kinds[job_id])

    requests = batches(analytics_emulator)
    assert all(1 <= len(ids) <= 100 and len(set(ids)) == len(ids) for ids in requests)
    # Read alone, these waits would send one request per read. Gathered, a round of reads goes in three
    # requests (100, 100, 50) on a quiet machine; on a loaded one the loop can be descheduled for longer
    # than a gathering's 10 ms of quiet, and the round goes in more: what load cannot change is that
    # reads share requests, ten to a request at the least on average (a round split ten ways).
    reads = sum(len(ids) for ids in requests)
    assert len(requests) * 10 <= reads, (len(requests), reads)
    assert set(singles(analytics_emulator)) <= set(scenario.deleted)  # alone: only what a batch left out
    # the restored wait reads through the shared reader (List Jobs), as every other wait does; whether a
    # read of it shares a request with another wait's is timing (on a loaded machine the others had ended)
    assert any(restarted_id in ids for ids in requests[reads_before_restart:])


def list_jobs_times(emulator) -> list[float]:
    return [r.time for r in emulator.requests if r.operation == "list_jobs"]


FAULTS = {  # the List Jobs faults of issue 31: how List Jobs answers every time, while GET /jobs/{id} is healthy
    "leaves some ids out": {"rewrite": "leave_out"},
    "adds ids nobody asked for": {"rewrite": "add_unasked"},
    "none of the asked ids": {"rewrite": "none_asked"},
    "500": {"status": 500},
    "429 with Retry-After: 1": {"status": 429, "retry_after": 1},
    "200 with truncated JSON": {"rewrite": "truncated_json"},
    "200 with jobs as an object": {"rewrite": "jobs_object"},
    "each id twice, success and failure": {"rewrite": "contradict"},
}
UNUSABLE = {"500", "429 with Retry-After: 1", "200 with truncated JSON", "200 with jobs as an object",
            "each id twice, success and failure"}
"""The faults after which List Jobs is tried again only after a back-off (1 s, then 2 s...) or the Retry-After."""


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_every_wait_ends_right_whatever_list_jobs_answers(analytics_emulator, analytics_connection, fault):
    ids = analytics_emulator.add_jobs(30, seconds=2.5)
    analytics_emulator.inject("list_jobs", times=10_000, **FAULTS[fault])
    events = await asyncio.gather(*(event_of(trigger(j)) for j in ids))
    batched, alone = batches(analytics_emulator), singles(analytics_emulator)
    right = sum(e["status"] == "success" and e["job_status"] == "success" for e in events)
    print(f"\n{fault:>36}: {right}/30 ended right; List Jobs requests {len(batched)}, GET /jobs/{{id}} {len(alone)}")
    assert right == 30, Counter((e["status"], e["job_status"]) for e in events)
    assert set(alone) <= set(ids) and analytics_emulator.faults.pending()["list_jobs"]  # the fault held throughout
    if fault == "adds ids nobody asked for":
        assert alone == []  # the others are ignored
    elif fault == "leaves some ids out":  # (every other job of each answer: which ones depends on each batch)
        left_out = {i for ids in batched for i in ids[1::2]}
        assert set(alone) == left_out and len(left_out) >= 15  # those left out, each time, and only those
    else:
        assert set(alone) == set(ids)
    if fault in UNUSABLE:  # read alone meanwhile, List Jobs tried again after 1 s, then 2 s (or the Retry-After)
        first, again, *_ = list_jobs_times(analytics_emulator)
        assert again >= first + 1  # nothing batched during the first back-off (or the Retry-After)
    else:  # List Jobs stays in use: every read of a job goes batched first
        assert len(batched) >= max(Counter(alone).values(), default=1)


async def test_at_most_so_many_reads_go_alone_at_once_the_others_wait_it_out(
    analytics_emulator, analytics_connection, monkeypatch, caplog
):
    from analytics_provider.hooks.async_client import AsyncAnalyticsClient
    from analytics_provider.hooks.job_reader import JobReader

    monkeypatch.setattr(JobReader, "ALONE_AT_ONCE", 5)
    in_flight, most = 0, 0
    read_alone = AsyncAnalyticsClient.read_job_alone

    async def counted(self, job_id, deadline):
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            return await read_alone(self, job_id, deadline)
        finally:
            in_flight -= 1

    monkeypatch.setattr(AsyncAnalyticsClient, "read_job_alone", counted)
    ids = analytics_emulator.add_jobs(30, seconds=2.5)
    analytics_emulator.inject("list_jobs", status=500, times=10_000)
    with caplog.at_level(logging.WARNING, logger="analytics_provider"):
        events = await asyncio.gather(*(event_of(trigger(j)) for j in ids))
    assert [e["status"] for e in events] == ["success"] * 30
    assert most == 5 and set(singles(analytics_emulator)) == set(ids)
    assert "and 5 reads already go alone" in caplog.text  # the others waited it out as an outage


async def test_list_jobs_is_used_again_once_it_answers(analytics_emulator, analytics_connection, caplog):
    ids = analytics_emulator.add_jobs(30, seconds=2.5)
    analytics_emulator.inject("list_jobs", status=503, times=1)
    with caplog.at_level(logging.WARNING, logger="analytics_provider"):
        events = await asyncio.gather(*(event_of(trigger(j)) for j in ids))
    assert [e["status"] for e in events] == ["success"] * 30
    statuses = [r.status for r in analytics_emulator.requests if r.operation == "list_jobs"]
    assert statuses[0] == 503 and statuses[1:] and set(statuses[1:]) == {200}
    last_reads = {}
    for request in analytics_emulator.requests:
        if request.operation == "list_jobs":
            last_reads.update({int(j): "list_jobs" for j in request.query["ids[]"]})
        elif request.operation == "get_job":
            last_reads[int(request.path.rsplit("/", 1)[1])] = "get_job"
    assert set(last_reads.values()) == {"list_jobs"}  # every wait's last look was batched again
    said = [r.getMessage() for r in caplog.records if "List Jobs (GET /jobs)" in r.getMessage()]
    assert len(said) == 1 and "503" in said[0] and "tried again" in said[0], said
    assert "Could not read job" not in caplog.text  # no wait saw an outage


@pytest.mark.parametrize("status", [400, 403, 404])
async def test_a_refused_batch_falls_back_to_reading_each_job_alone(
    analytics_emulator, analytics_connection, caplog, status
):
    ids = analytics_emulator.add_jobs(30, seconds=1.0)
    analytics_emulator.inject("list_jobs", status=status, times=1_000)
    with caplog.at_level(logging.WARNING, logger="analytics_provider"):
        events = await asyncio.gather(*(event_of(trigger(j)) for j in ids))
        later = await event_of(trigger(analytics_emulator.add_jobs(1, seconds=0.3)[0]))
    assert [e["status"] for e in events] == ["success"] * 30 and later["status"] == "success"
    assert len(batches(analytics_emulator)) == 1  # refused once: never asked again in this process
    assert set(ids) <= set(singles(analytics_emulator))
    said = [r for r in caplog.records if "refused List Jobs" in r.getMessage()]
    assert len(said) == 1 and str(status) in said[0].getMessage()
    assert {"analytics_default": said[0].args[1].__str__()} == LoopShared.of_running_loop().refusals


async def test_a_batched_read_carries_the_key_and_names_the_triggerer(analytics_emulator, analytics_connection):
    ids = analytics_emulator.add_jobs(3, seconds=0.2)
    events = await asyncio.gather(*(event_of(trigger(j)) for j in ids))
    assert analytics_emulator.api_key not in repr(events)
    (request, *_) = [r for r in analytics_emulator.requests if r.operation == "list_jobs"]
    assert request.carried_key and "triggerer" in request.headers["User-Agent"]


async def test_a_wait_ends_at_its_deadline_while_a_shared_request_is_slow(analytics_emulator, analytics_connection):
    patient, hurried = analytics_emulator.add_jobs(2, seconds=3600)
    analytics_emulator.inject("list_jobs", delay=8.0)  # the first batch takes eight seconds to answer
    patient_run = asyncio.ensure_future(event_of(trigger(patient, timeout=60)))
    event = await event_of(trigger(hurried, timeout=3.0))  # well before the answer, with time to join the batch
    assert event["status"] == "timeout" and "did not finish before the deadline" in event["message"]
    (shared,) = [r for r in analytics_emulator.requests if r.path.endswith("/jobs")]
    assert shared.status is None  # at its own deadline, not when the request both share was answered
    assert sorted(shared.query["ids[]"]) == sorted([str(patient), str(hurried)]) and not patient_run.done()
    patient_run.cancel()


async def test_under_a_tight_quota_every_wait_is_read_as_often_as_the_others(analytics_emulator, analytics_connection,
                                                                             monkeypatch):
    """300 waits, 2 List Jobs a one-second frame: a round takes 3 requests, 1.5 frames; the reads
    queue oldest first, so the rounds slow down alike for every wait and none starves. One request in
    flight at a time: the reads wait in the reader's queue (not the quota's), whose order is tested."""
    from analytics_provider.hooks.job_reader import JobReader

    monkeypatch.setattr(JobReader, "MAX_SENDING", 1)
    analytics_emulator.set_rate_limit(quota=2, operation="list_jobs")
    ids = analytics_emulator.add_jobs(300, seconds=6.0)
    events = await asyncio.gather(*(event_of(trigger(j, interval=0.2)) for j in ids))
    assert [e["status"] for e in events] == ["success"] * 300
    # Fairness is reads per wait: every wait read as often as every other, give or take the round in
    # which it ended. (How many requests a round takes is the reader's batching, and load splits rounds:
    # a loop descheduled past a gathering's 10 ms of quiet sends what it has.)
    reads = Counter(i for request in batches(analytics_emulator) for i in request)
    assert set(reads) == set(ids) and max(reads.values()) - min(reads.values()) <= 1, sorted(set(reads.values()))
    assert all(len(request) <= 100 for request in batches(analytics_emulator))
    statuses = Counter(r.status for r in analytics_emulator.requests if r.operation == "list_jobs")
    assert statuses[429] == 0  # the quota waited out, never hit
