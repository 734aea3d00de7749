"""What the API's parameters take: the values of each choice, the limits of the dbt upload, and the
default of a wait's ``max_outage``.

Plain values without imports: the operators check their arguments against them when a DAG file is
parsed, without loading the operations table (:mod:`.operations`), which is built on them.
"""

from __future__ import annotations

from typing import Any

USER_ROLES = ("user", "explorer", "analyst", "admin", "growth_admin", "it_admin")
USER_STATUSES = ("active", "deleted", "pending")
SCHEDULE_DEST_TYPES = ("EmailDest", "SlackDest", "Adls2Dest", "SftpDest", "EmailSubscriptionDest")
ALERT_DEST_TYPES = ("EmailDest", "SlackDest")
EXPORT_OUTPUTS = ("csv", "xlsx", "pdf")
DEPENDANT_TYPES = ("DataSource", "DataModel", "DataSet")
SUBJECT_TYPES = ("User", "Group")
BASIC_SORTS = ("natural", "id_asc", "id_desc")
USER_SORTS = (*BASIC_SORTS, "name_asc", "name_desc", "initials_asc", "initials_desc")
SCHEDULE_SORTS = tuple(
    f"{key}_{direction}"
    for key in ("id", "title", "destination", "source_title", "last_run", "org_id", "external_user_id")
    for direction in ("asc", "desc")
)
CREATOR_ROLES = ("admin", "growth_admin", "analyst", "user", "public", "explorer", "embed")
PERMISSION_ACTIONS = ("create", "read", "update", "destroy")
TAG_OBJECT_TYPES = ("dataset", "dashboard")
DASHBOARD_CATEGORIES = ("ReportCategory", "EmbedOrgWorkspace", "EmbedPersonalWorkspace", "PersonalCategory")
GITHUB_EVENTS = ("pull_request", "push", "ping")
GITLAB_EVENTS = ("Merge Request Hook", "Push Hook", "System Hook")
MAX_MANIFEST_FILES = 5
MAX_MANIFEST_BYTES = 200 * 1024 * 1024
"""The upload limits of ``upload_dbt_manifests``: files per request, bytes per file."""
MANIFEST_FIELD = "files"
"""The form field of each manifest (repeated once per file, as the vendor's schema names it)."""

DEFAULT_MAX_OUTAGE = 600.0
"""Seconds of failures in a row a wait (hook, sensor, trigger) tolerates before it ends in an error:
the default of the operators' and the sensor's ``max_outage``, needed when a DAG file is parsed."""


WAIT_BOUNDS = {"poll_interval": (86_400.0, "a day"), "timeout": (604_800.0, "7 days"),
               "max_outage": (604_800.0, "7 days")}
"""The most a job wait's ``poll_interval``, ``timeout`` and ``max_outage`` may be: no job is polled
less than daily, waited for longer than a week, or through failures for longer (a larger value is a
slip, and a huge one overflows a sleep)."""


def wait_argument_problem(name: str, value: Any) -> str | None:
    """What ``value`` would have to be as a wait's ``poll_interval``, ``timeout`` or ``max_outage``
    (which may be 0: no failure outlasted); None when it is."""
    most, said = WAIT_BOUNDS[name]
    number = not isinstance(value, bool) and isinstance(value, (int, float))
    if name == "max_outage":
        return None if number and 0 <= value <= most else f"a number of seconds, from 0 to {most:,g} ({said})"
    if not number or not 0 < value <= most:
        return f"a positive number of seconds, at most {most:,g} ({said})"
    return None
