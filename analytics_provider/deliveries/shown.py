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
        return f"webhook {masked(dest.get('endpoint'), address=True)}"
    if kind == "GsheetDest":
        return f"Google Sheet {masked(dest.get('sheet_url'), address=True)} ({dest.get('sheet_title')})"
    if kind == "SftpDest":
        return f"SFTP data source {dest.get('data_source_id')}, {dest.get('file_path')}"
    if kind == "EmailSubscriptionDest":
        return "the subscribers' e-mail"
    return str(kind)


def masked(value: Any, *, address: bool = False) -> Any:
    """A URL with its secrets masked (``https://hooks.example.com/services/T000/B000/***``): scheme,
    host and port and the path's segments as they are, but :data:`HIDDEN` for a user and password, each
    path segment that looks like a token (:data:`SECRET_LOOKING`), each query value (their names
    shown) and the fragment; blanks around it dropped. ``address``: the value of a field that holds
    an address (:data:`ADDRESSES`), masked so even without a scheme (``hooks.example.com/...``: read
    as host and path). Any other value as it is."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not URL.match(text) and not (address and text):
        return value
    try:
        parts = urlsplit(text if URL.match(text) else f"//{text}")
        port = parts.port
    except ValueError:  # not a URL urlsplit can read (a port out of range, a bad IPv6 address)
        return f"{parts.scheme}://{HIDDEN}" if URL.match(text) else HIDDEN
    user = f"{HIDDEN}@" if "@" in parts.netloc else ""  # a user and password: often a token itself
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname or ""
    path = "/".join(HIDDEN if SECRET_LOOKING.fullmatch(segment) else segment for segment in parts.path.split("/"))
    query = "&".join(f"{pair.split('=', 1)[0]}={HIDDEN}" if "=" in pair else HIDDEN
                     for pair in parts.query.split("&")) if parts.query else ""
    return (f"{parts.scheme + '://' if parts.scheme else ''}{user}{host}{f':{port}' if port is not None else ''}"
            f"{path}{'?' + query if query else ''}{'#' + HIDDEN if parts.fragment else ''}")


ADDRESSES = frozenset({"endpoint", "sheet_url"})
"""The fields of a ``dest`` that hold an address (a webhook's, a sheet's): masked whatever their form."""


def masked_fields(value: Any, name: Any = None) -> Any:
    """``value`` with every URL in it :func:`masked` (mappings and lists walked; the value of a field
    named in :data:`ADDRESSES` masked even without a scheme)."""
    if isinstance(value, Mapping):
        return {key: masked_fields(item, key) for key, item in value.items()}
    if isinstance(value, list):
        return [masked_fields(item, name) for item in value]
    return masked(value, address=name in ADDRESSES)


def compared(held: Any, declared: Any, field: str = "") -> tuple[str, str]:
    """An update's two sides of ``field`` (its dotted path: ``dest.endpoint``) as a row shows them,
    masked; when they differ only in what is masked (a webhook's token), the second says so."""
    name = re.split(r"[.\[]", field)[-1]
    before, after = masked_fields(held, name), masked_fields(declared, name)
    hidden_change = before == after and held != declared
    return repr(before), repr(after) + (" (differs in a masked part)" if hidden_change else "")


def _listed(values: Any) -> str:
    items = [str(v) for v in values] if isinstance(values, list) else []
    more = f" and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return (", ".join(items[:LISTED]) or "(none)") + more
