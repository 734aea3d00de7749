"""What the job operators and the sensor share: their argument checks and their failure texts."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from airflow.exceptions import AirflowProviderDeprecationWarning

from analytics_provider.exceptions import refused

if TYPE_CHECKING:
    from analytics_provider.hooks.analytics import AnalyticsHook


def check_max_outage(task_id: str, max_outage: float, max_failures: int | None) -> None:
    """Refuse a negative ``max_outage``; warn that ``max_failures`` (its predecessor) is ignored."""
    if isinstance(max_outage, bool) or not isinstance(max_outage, (int, float)) or not max_outage >= 0:
        raise refused(task_id, "max_outage", max_outage, "a number of seconds, 0 or more")
    if max_failures is not None:
        warnings.warn(
            "max_failures is deprecated and ignored: a wait now outlasts failures for max_outage seconds",
            AirflowProviderDeprecationWarning,
            stacklevel=3,
        )


def describe_job_failure(hook: AnalyticsHook, job_id: int, status: str, last_error_log: str | None) -> str:
    """The failure text: job id, status, last error, and the job's ERROR log lines."""
    lines = [f"job {job_id} ended with status {status!r}"]
    if last_error_log:
        lines.append(f"last error: {last_error_log}")
    try:
        errors = [entry for entry in hook.get_job_logs(job_id) if entry.get("level") == "ERROR"]
    except Exception as exc:
        lines.append(f"(its logs could not be read: {exc})")
    else:
        lines.extend(f"  {e.get('timestamp', '')} ERROR {e.get('message', '')}".rstrip() for e in errors)
    return "\n".join(lines)
