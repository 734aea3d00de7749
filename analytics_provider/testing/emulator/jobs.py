"""Jobs: the status is read from the clock (no thread per job); de-duplication, logs, results.

A job is ``created`` for its first sixth of ``duration``, ``queued`` until a third, ``running``
until the end, then ``success`` or ``failure``. A scripted job passes through the statuses of its
script instead (``flow_pending`` and ``cancelling`` among them, or one the document does not
list), each for its seconds. Submitting a job identical (operation, params and user) to one
still pending answers a new job in status ``already_existed`` that points at it.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from analytics_provider.api.jobs.status import FINAL_JOB_STATUSES, PENDING_JOB_STATUSES

JOB_ERROR = "JobExecutionError"
"""The error class a failed job's result names."""
SUCCESS_RESULT_TYPES = frozenset({
    "AmlStudio::Publish.call", "AmlStudio::RemoteObjectValidation.call", "DataModel.execute_model_query",
    "DashboardWidget.export",  # the API document's JobResult has a result for every kind of job
})
FAILURE_RESULT_TYPES = frozenset({
    "AmlStudio::Publish.call", "AmlStudio::RemoteDeploy.call", "AmlStudio::RemoteObjectValidation.call",
})
"""The result kinds the vendor's JobResult types; other jobs answer no ``result`` once final."""
UNSTARTED = frozenset({"created", "queued", "flow_pending", "already_existed"})
"""Statuses of a job that has not started running (it has no ``start_time``)."""

Script = tuple[tuple[str, float], ...]


def check_script(script: Iterable[Any]) -> Script:
    """A job's statuses in order, each with the seconds it lasts; the last one is final
    (``success``, ``failure`` or ``cancelled``, its seconds ignored). Raises ``ValueError``."""
    steps = tuple((str(status), float(seconds)) for status, seconds in script)
    if not steps or steps[-1][0] not in FINAL_JOB_STATUSES:
        raise ValueError(f"a job's script ends with a final status ({', '.join(sorted(FINAL_JOB_STATUSES))}); "
                         f"got {steps!r}")
    if any(not status or seconds < 0 for status, seconds in steps):
        raise ValueError(f"each step of a script is (a status, seconds >= 0); got {steps!r}")
    if any(status in FINAL_JOB_STATUSES or status == "already_existed" for status, _ in steps[:-1]):
        raise ValueError(f"only the last step of a script may be final; got {steps!r}")
    return steps


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Job:
    """One job. ``operation`` (alias ``kind``) is the name of the operation that started it."""

    id: int
    operation: str
    user_id: int
    params: dict[str, Any]
    created: float
    duration: float
    result_type: str = "Job.call"
    result_data: Any = None
    last_error_log: str | None = None
    error_class: str = JOB_ERROR
    failure_data: Any = None
    existing_job_id: int | None = None
    source: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    script: Script = ()
    error_lines: list[str] = field(default_factory=list)  # ERROR lines a failure logs before its last error
    by_reads: bool = False  # the script's steps last so many reads of the job (Get Job, List Jobs), not seconds
    answered: list[str] = field(default_factory=list)  # the status each read of the job answered, in order
    clock: Callable[[], float] = field(default=time.time, repr=False, compare=False)  # its world's (JobBook's)

    def __post_init__(self) -> None:
        if self.script:
            self.duration = sum(seconds for _, seconds in self.script[:-1])
            if self.script[-1][0] == "failure" and self.last_error_log is None:
                self.last_error_log = "Job failed"

    @property
    def kind(self) -> str:
        return self.operation

    @property
    def fails(self) -> bool:
        return self.last_error_log is not None

    @property
    def status(self) -> str:
        """The status now, on the world's clock."""
        return self.status_at(self.clock())

    def status_at(self, now: float) -> str:
        if self.existing_job_id is not None:
            return "already_existed"
        if self.script:
            return self._scripted_status(len(self.answered) if self.by_reads else now - self.created)
        elapsed = now - self.created
        if elapsed >= self.duration:
            return "failure" if self.fails else "success"
        if elapsed < self.duration / 6:
            return "created"
        return "queued" if elapsed < self.duration / 3 else "running"

    def _scripted_status(self, elapsed: float) -> str:
        for status, seconds in self.script[:-1]:
            if elapsed < seconds:
                return status
            elapsed -= seconds
        return self.script[-1][0]

    def _steps(self) -> list[tuple[float, str]]:
        """When each status began, after creation: the script's, or created, queued, running."""
        if not self.script:
            return [(0.0, "created"), (self.duration / 6, "queued"), (self.duration / 3, "running")]
        steps, at = [], 0.0
        for status, seconds in self.script[:-1]:
            steps.append((at, status))
            at += seconds
        return steps

    def to_json(self, now: float, *, source: bool = True, data_source_stats: bool = False) -> dict[str, Any]:
        """The Job; ``source`` and ``data_source_stats`` as the ``include_*`` options ask (null otherwise)."""
        status = self.status_at(now)
        started_at = next((at for at, step in self._steps() if step not in UNSTARTED), self.duration)
        started = status not in UNSTARTED and now - self.created >= started_at
        final = status in FINAL_JOB_STATUSES
        return {
            "id": self.id,
            "user_id": self.user_id,
            "status": status,
            "created_at": iso(self.created),
            "start_time": iso(self.created + started_at) if started else None,
            "end_time": iso(self.created + self.duration) if final else None,
            "cancellable": status in PENDING_JOB_STATUSES and status != "cancelling",
            "last_error_log": self.last_error_log if status == "failure" else None,
            "existing_job_id": self.existing_job_id,
            "source": self.source if source else None,
            "data_source_stats": self._data_source_stats() if data_source_stats and final else None,
        }

    def read(self, now: float, **details: bool) -> dict[str, Any]:
        """The Job as a read of it answers (``to_json``), kept in ``answered``: a script by reads moves on."""
        answer = self.to_json(now, **details)
        self.answered.append(answer["status"])
        return answer

    def _data_source_stats(self) -> list[dict[str, str]]:
        """What the job's queries cost in the data source: one execution, bytes scanned (as BigQuery reports)."""
        return [{"id": f"emu-job-{self.id}-q1", "cost": str(max(1, round(self.duration * 1_000_000))),
                 "cost_unit": "B"}]

    def async_result(self, now: float) -> dict[str, Any]:
        job: dict[str, Any] = {"id": self.id, "status": self.status_at(now)}
        if self.existing_job_id is not None:
            job["existing_job_id"] = self.existing_job_id
        return {"job": job}

    def logs(self, now: float) -> list[dict[str, Any]]:
        """The log lines written so far: INFO along the way, ERROR lines when it fails."""
        if self.existing_job_id is not None:
            text = f"An identical job ({self.existing_job_id}) is already pending; this one does not run"
            return [_line("INFO", text, self.created)]
        d = self.duration
        said = {"created": f"Job {self.id} created ({self.operation})", "queued": "Job queued",
                "running": "Job started"}
        lines = [
            *((self.created + at, "INFO", said.get(status, f"Job {status}")) for at, status in self._steps()),
            *((self.created + d / 2, "INFO", note) for note in self.notes),
        ]
        if self.script and self.script[-1][0] == "cancelled":
            lines.append((self.created + d, "INFO", "Job cancelled"))
        elif self.fails:
            errors = [*self.error_lines, self.last_error_log or "", *_diagnostic_lines(self.failure_data)]
            lines += [(self.created + d, "ERROR", text) for text in errors]
        else:
            lines.append((self.created + d, "INFO", "Job finished successfully"))
        return [_line(level, text, at) for at, level, text in lines if at <= now]

    def result(self, now: float) -> dict[str, Any]:
        """``{status, error, result}``: result data on success, the error class on failure.

        ``result`` is there only for the kinds of result the vendor types (AML publish and
        validation, data-set queries); a pending job's is null, another final job has none.
        """
        status = self.status_at(now)
        if status == "success":
            answer: dict[str, Any] = {"status": status, "error": None}
            if self.result_type in SUCCESS_RESULT_TYPES:
                answer["result"] = {"type": self.result_type, "data": self.result_data}
            return answer
        if status == "failure":
            answer = {"status": status, "error": self.error_class}
            if self.result_type in FAILURE_RESULT_TYPES:
                answer["result"] = {"type": self.result_type, "data": self.failure_data}
            return answer
        return {"status": status, "error": None, "result": None}


def _line(level: str, message: str, at: float) -> dict[str, Any]:
    return {"level": level, "message": message, "timestamp": iso(at)}


def _diagnostic_lines(data: Any) -> list[str]:
    details = data.get("error_details") if isinstance(data, dict) else None
    diagnostics = details.get("diagnostics") if isinstance(details, dict) else None
    return [
        f"{d.get('file_path')} [{d.get('start')}-{d.get('end')}] {d.get('category')} {d.get('code')}: "
        f"{d.get('message')}"
        for d in diagnostics or []
        if isinstance(d, dict)
    ]


class JobBook:
    """Every job of the account, and the failures queued for the next jobs of a kind."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._ids = itertools.count(1)
        self.jobs: dict[int, Job] = {}
        self._fail_next: dict[str, deque[tuple[str, list[str]]]] = {}
        self._script_next: dict[str, deque[tuple[Script, bool]]] = {}

    def fail_next(self, operation: str, last_error_log: str, error_lines: Iterable[str] = ()) -> None:
        self._fail_next.setdefault(operation, deque()).append((last_error_log, [str(e) for e in error_lines]))

    def script_next(self, operation: str, script: Iterable[Any], *, by_reads: bool = False) -> None:
        """The next job of ``operation`` passes through ``script`` (see :func:`check_script`), each step
        lasting its number in seconds or, ``by_reads``, in reads of the job."""
        self._script_next.setdefault(operation, deque()).append((check_script(script), by_reads))

    def reserve_id(self) -> int:
        return next(self._ids)

    def submit(
        self,
        operation: str,
        user_id: int,
        params: dict[str, Any],
        *,
        duration: float,
        result_type: str = "Job.call",
        result_data: Any = None,
        failure: tuple[str, str, Any] | None = None,
        source: dict[str, Any] | None = None,
        notes: Iterable[str] = (),
        now: float | None = None,
    ) -> Job:
        """A new job; ``failure`` is ``(last_error_log, error_class, result data)`` for a job bound to fail."""
        now = self._clock() if now is None else now
        pending = self._pending_twin(operation, user_id, params, now)
        scripted = self._script_next.get(operation) if pending is None else None
        script, by_reads = scripted.popleft() if scripted else ((), False)
        job = Job(next(self._ids), operation, user_id, params, now, max(0.0, duration), result_type, result_data,
                  source=source, notes=list(notes), script=script, by_reads=by_reads, clock=self._clock)
        if pending is not None:
            job.existing_job_id, job.duration = pending.id, 0.0
        elif queued := self._fail_next.get(operation):
            job.last_error_log, job.error_lines = queued.popleft()
        elif failure is not None:
            job.last_error_log, job.error_class, job.failure_data = failure
        self.jobs[job.id] = job
        return job

    def add_many(self, count: int, user_id: int, duration: float, script: Iterable[Any] = ()) -> list[int]:
        """``count`` running preload jobs of ``user_id`` at once, none a twin of another (for the
        tests and benchmarks of many waits), each passing through ``script`` when given; returns their ids."""
        now = self._clock()
        steps = check_script(script) if script else ()
        ids = []
        for _ in range(count):
            job = Job(next(self._ids), "preload_dashboard", user_id, {"bulk": True}, now, max(0.0, duration),
                      "Dashboard.preload", script=steps, clock=self._clock)
            self.jobs[job.id] = job
            ids.append(job.id)
        return ids

    def _pending_twin(self, operation: str, user_id: int, params: dict[str, Any], now: float) -> Job | None:
        for job in self.jobs.values():
            if (
                job.operation == operation
                and job.user_id == user_id
                and job.existing_job_id is None
                and job.params == params
                and job.status_at(now) in PENDING_JOB_STATUSES
            ):
                return job
        return None
