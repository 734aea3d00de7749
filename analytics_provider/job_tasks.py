"""What the job operators and the sensor share: their argument checks, their failure texts and
what a job cost."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow.exceptions import AirflowProviderDeprecationWarning

from analytics_provider.api.wire.choices import (  # noqa: F401 (DEFAULT_MAX_OUTAGE: the job tasks' default, named here too)
    DEFAULT_MAX_OUTAGE,
    wait_argument_problem,
)
from analytics_provider.exceptions import MAX_TEXT, bounded, refused

if TYPE_CHECKING:
    from analytics_provider.hooks.analytics import AnalyticsHook



def check_wait(task_id: str, poll_interval: Any, timeout: Any, poll_name: str = "poll_interval") -> None:
    """Refuse a job wait's ``poll_interval`` (a sensor's ``poke_interval``) or ``timeout`` outside its
    bounds, naming the task and the argument."""
    for name, value, shown in (("poll_interval", poll_interval, poll_name), ("timeout", timeout, "timeout")):
        problem = wait_argument_problem(name, value)
        if problem:
            raise refused(task_id, shown, value, problem)


def check_max_outage(task_id: str, max_outage: float, max_failures: int | None) -> None:
    """Refuse a negative ``max_outage``; warn that ``max_failures`` (its predecessor) is ignored."""
    problem = wait_argument_problem("max_outage", max_outage)  # past the longest wait: a slip (inf was taken)
    if problem:
        raise refused(task_id, "max_outage", max_outage, problem)
    if max_failures is not None:
        warnings.warn(
            "max_failures is deprecated and ignored: a wait now outlasts failures for max_outage seconds",
            AirflowProviderDeprecationWarning,
            stacklevel=3,
        )


MAX_ERROR_LINES = 20
"""The most ERROR lines of a job a failure shows: the last ones (the decisive error is usually last)."""
MAX_ERROR_LINE = 400
"""The most characters of one ERROR line a failure shows."""
STORY_ROOM = 2 * MAX_TEXT - 200
"""The characters a failure's text may take (an AnalyticsJobError keeps 4,000 and cuts the rest)."""


def describe_job_failure(hook: AnalyticsHook, job_id: int, status: str, last_error_log: str | None) -> str:
    """The failure text: job id, status, last error, and the job's last ERROR log lines (at most
    :data:`MAX_ERROR_LINES`, fewer when they would not fit), saying how many were left out."""
    lines = [f"job {job_id} ended with status {status!r}"]
    if last_error_log:
        lines.append(f"last error: {bounded(last_error_log, MAX_TEXT // 2)}")
    try:
        errors = [entry for entry in hook.get_job_logs(job_id) if entry.get("level") == "ERROR"]
    except Exception as exc:
        lines.append(f"(its logs could not be read: {exc})")
        return "\n".join(lines)
    shown = [bounded(f"  {e.get('timestamp', '')} ERROR {e.get('message', '')}".rstrip(), MAX_ERROR_LINE)
             for e in errors[-MAX_ERROR_LINES:]]
    room = STORY_ROOM - sum(len(line) + 1 for line in lines) - 100
    while shown and sum(len(line) + 1 for line in shown) > room:
        shown.pop(0)
    if len(shown) < len(errors):
        lines.append(f"  ({len(errors) - len(shown)} earlier ERROR lines left out; the last {len(shown)} follow)")
    return "\n".join([*lines, *shown])


def data_source_stats(job: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """A Job's ``data_source_stats`` (``[{"id", "cost", "cost_unit"}]``), None when it has none."""
    stats = job.get("data_source_stats")
    if not isinstance(stats, list):
        return None
    return [{k: s.get(k) for k in ("id", "cost", "cost_unit")} for s in stats if isinstance(s, Mapping)]


def describe_cost(job_id: int, stats: list[dict[str, Any]] | None) -> str:
    """One line: what a job cost in its data source, summed per unit."""
    if stats is None:
        return (f"Job {job_id}: the data source reported no statistics (data_source_stats is null: it does not "
                f"collect them, or not for this kind of job)")
    totals: dict[str, float] = {}
    others: list[str] = []
    for item in stats:
        unit = str(item.get("cost_unit") or "")
        try:
            totals[unit] = totals.get(unit, 0) + float(str(item.get("cost")))
        except ValueError:
            others.append(f"{item.get('cost')} {unit}".strip())
    figures = [f"{total:,.0f} {unit}".strip() if total == int(total) else f"{total:,} {unit}".strip()
               for unit, total in totals.items()]
    executions = f"{len(stats)} execution{'s' if len(stats) != 1 else ''} in the data source"
    return f"Job {job_id} cost {', '.join([*figures, *others]) or 'nothing reported'} ({executions})"
