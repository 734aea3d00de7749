"""What a data schedule or alert sends, as a plan's row shows it to a reviewer: where it goes
(recipients, Slack channels, a webhook's host, a sheet, a path), from which source (by title when
the service was asked), on which schedule. A URL is shown by its host only: a webhook's path and
query often hold its token. The apply sends the real values; only the rows are shortened."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

SOURCES = {"Dashboard": "dashboard", "QueryReport": "query report", "DashboardWidget": "widget"}
LISTED = 10
"""Recipients and channels a row names; the rest are counted."""


def sends(body: Mapping[str, Any], titles: Mapping[tuple[str, int], str] | None = None) -> str:
    """``to ann@example.com; from dashboard 'Sales' (1); every '0 8 * * 1'`` for a body the apply sends."""
    parts = [f"to {destination(body.get('dest'))}"]
    kind, ident = body.get("source_type"), body.get("source_id")
    if kind is not None:
        title = (titles or {}).get((str(kind), ident))  # type: ignore[arg-type]  # an id as the files give it
        name = SOURCES.get(str(kind), str(kind))
        parts.append(f"from {name} {title!r} ({ident})" if title else f"from {name} {ident}")
    schedule: Mapping[str, Any] = body["schedule"] if isinstance(body.get("schedule"), Mapping) else {}
    if schedule.get("repeat"):
        parts.append(f"every {schedule['repeat']!r}" + (" (paused)" if schedule.get("paused") else ""))
    return "; ".join(parts)


def destination(dest: Any) -> str:
    """Where a ``dest`` sends: its type's recipients, channels, host or place."""
    if not isinstance(dest, Mapping):
        return "(no destination)"
    kind = dest.get("type")
    if kind == "EmailDest":
        return "e-mail " + _listed(dest.get("recipients"))
    if kind == "SlackDest":
        return "Slack " + _listed(dest.get("slack_channels"))
    if kind == "WebhookDest":
        return f"webhook {masked(dest.get('endpoint'))}"
    if kind == "GsheetDest":
        return f"Google Sheet {masked(dest.get('sheet_url'))} ({dest.get('sheet_title')})"
    if kind == "SftpDest":
        return f"SFTP data source {dest.get('data_source_id')}, {dest.get('file_path')}"
    if kind == "EmailSubscriptionDest":
        return "the subscribers' e-mail"
    return str(kind)


def masked(value: Any) -> Any:
    """A URL as its scheme and host, the rest hidden (``https://hooks.example.com/***``); any other
    value as it is."""
    if not isinstance(value, str) or "://" not in value:
        return value
    parts = urlsplit(value)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}/***" if (parts.path.strip("/") or parts.query or parts.username) \
        else f"{parts.scheme}://{host}"


def _listed(values: Any) -> str:
    items = [str(v) for v in values] if isinstance(values, list) else []
    more = f" and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return (", ".join(items[:LISTED]) or "(none)") + more
