"""What a data schedule or alert sends, as a plan's row shows it to a reviewer: where it goes
(recipients, Slack channels, a webhook's address, a sheet, a path), from which source (by title
when the service was asked), on which schedule. A URL is shown with its secrets masked
(:func:`masked`): its host, port and path, but ``***`` for each path segment that looks like a
token, each query value, a password and a fragment; so a webhook moved to another path shows,
while its token does not. Where two values differ only in what is masked, the row says so. The
apply sends the real values; only what people read (rows, a saved plan's record of the resources
it touches, a stale plan's refusal) is masked."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

SOURCES = {"Dashboard": "dashboard", "QueryReport": "query report", "DashboardWidget": "widget"}
LISTED = 10
"""Recipients and channels a row names; the rest are counted."""
HIDDEN = "***"
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
SECRET_LOOKING = re.compile(r"(?=[^/]*[0-9])(?=[^/]*[A-Za-z])[^/]{8,}|[^/]{20,}")
"""A path segment masked as a token: eight characters or more mixing letters and digits
(``SECRETTOKEN1``, ``T024BE7LD``, a UUID), or any of twenty or more; words (``services``,
``IncomingWebhook``) and short ids (``T000``) are shown."""


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
    """A URL with its secrets masked (``https://hooks.example.com/services/T000/B000/***``): scheme,
    host and port and the path's segments as they are, but :data:`HIDDEN` for a user and password, each
    path segment that looks like a token (:data:`SECRET_LOOKING`), each query value (their names
    shown) and the fragment; any other value as it is."""
    if not isinstance(value, str) or not URL.match(value):
        return value
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:  # not a URL urlsplit can read (a port out of range, a bad IPv6 address)
        return f"{value.split('://', 1)[0]}://{HIDDEN}"
    user = f"{HIDDEN}@" if "@" in parts.netloc else ""  # a user and password: often a token itself
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname or ""
    path = "/".join(HIDDEN if SECRET_LOOKING.fullmatch(segment) else segment for segment in parts.path.split("/"))
    query = "&".join(f"{pair.split('=', 1)[0]}={HIDDEN}" if "=" in pair else HIDDEN
                     for pair in parts.query.split("&")) if parts.query else ""
    return (f"{parts.scheme}://{user}{host}{f':{port}' if port is not None else ''}{path}"
            f"{'?' + query if query else ''}{'#' + HIDDEN if parts.fragment else ''}")


def masked_fields(value: Any) -> Any:
    """``value`` with every URL in it :func:`masked` (mappings and lists walked)."""
    if isinstance(value, Mapping):
        return {name: masked_fields(item) for name, item in value.items()}
    if isinstance(value, list):
        return [masked_fields(item) for item in value]
    return masked(value)


def compared(held: Any, declared: Any) -> tuple[str, str]:
    """An update's two sides as a row shows them, masked; when they differ only in what is masked
    (a webhook's token), the second says so."""
    before, after = masked_fields(held), masked_fields(declared)
    hidden_change = before == after and held != declared
    return repr(before), repr(after) + (" (differs in a masked part)" if hidden_change else "")


def _listed(values: Any) -> str:
    items = [str(v) for v in values] if isinstance(values, list) else []
    more = f" and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return (", ".join(items[:LISTED]) or "(none)") + more
