"""What a data schedule or alert sends, as a plan's row shows it to a reviewer: where it goes
(recipients, Slack channels, a webhook's address, a sheet, a path), from which source (by title
when the service was asked), on which schedule. A URL is shown with its secrets masked
(:func:`masked`): its host, port and path, but ``***`` for each path segment that looks like a
token, each query value, a password and a fragment; so a webhook moved to another path shows,
while its token does not. Where two values differ only in what is masked, the row says so. The
apply sends the real values; only what people read (rows, a saved plan's record of the resources
it touches, a stale plan's refusal, the review's rendered plan) is masked, by one function
(:func:`masked_fields`), which also hides the value of every field with a secret's name
(``headers.Authorization``, ``options.password``, ``api_key``) and of every header."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from analytics_provider.api.call.network import SECRET_LOOKING, masked_path

SOURCES = {"Dashboard": "dashboard", "QueryReport": "query report", "DashboardWidget": "widget"}
LISTED = 10
"""Recipients and channels a row names; the rest are counted."""
HIDDEN = "***"
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def sends(body: Mapping[str, Any], titles: Mapping[tuple[str, int], str] | None = None,
          listed: int | None = LISTED) -> str:
    """``to ann@example.com; from dashboard 'Sales' (1); every '0 8 * * 1'`` for a body the apply sends
    (``listed`` recipients or channels named, the rest counted; None: all)."""
    parts = [f"to {destination(body.get('dest'), listed)}"]
    kind, ident = body.get("source_type"), body.get("source_id")
    if kind is not None:
        title = (titles or {}).get((str(kind), ident))  # type: ignore[arg-type]  # an id as the files give it
        name = SOURCES.get(str(kind), str(kind))
        parts.append(f"from {name} {title!r} ({ident})" if title else f"from {name} {ident}")
    schedule: Mapping[str, Any] = body["schedule"] if isinstance(body.get("schedule"), Mapping) else {}
    if schedule.get("repeat"):
        parts.append(f"every {schedule['repeat']!r}" + (" (paused)" if schedule.get("paused") else ""))
    return "; ".join(parts)


def destination(dest: Any, listed: int | None = LISTED) -> str:
    """Where a ``dest`` sends: its type's recipients, channels, host or place."""
    if not isinstance(dest, Mapping):
        return "(no destination)"
    kind = dest.get("type")
    if kind == "EmailDest":
        return "e-mail " + _listed(dest.get("recipients"), listed)
    if kind == "SlackDest":
        return "Slack " + _listed(dest.get("slack_channels"), listed)
    if kind == "WebhookDest":
        return f"webhook {masked_fields(dest.get('endpoint'), 'endpoint')}"
    if kind == "GsheetDest":
        return f"Google Sheet {masked_fields(dest.get('sheet_url'), 'sheet_url')} ({dest.get('sheet_title')})"
    if kind == "SftpDest":
        return f"SFTP data source {dest.get('data_source_id')}, {masked_fields(dest.get('file_path'))}"
    if kind == "EmailSubscriptionDest":
        return "the subscribers' e-mail"
    return str(kind)


def masked(value: Any, *, address: bool = False) -> Any:
    """A URL with its secrets masked (``https://hooks.example.com/services/T000/B000/***``): scheme,
    host and port and the path's segments as they are, but :data:`HIDDEN` for a user and password, each
    host label left of the registered domain (its last two labels, always shown: ``acmehooks2024.com``
    and ``stealdata9999.com`` must read apart) and path segment that looks like a token
    (:data:`SECRET_LOOKING`), each query value
    (their names shown) and the fragment; blanks around it dropped, a backslash read as a ``/``
    (``https://host\\services\\TOKEN``). ``address``: the value of a field that holds an address
    (:data:`ADDRESSES`), masked so even without a scheme (``hooks.example.com/...``: read as host and
    path). A URL inside another text (``see sftp://user:PW@host/x``) is masked in its place; any
    other value as it is."""
    if not isinstance(value, str):
        return value
    text = value.strip().replace("\\", "/")
    if not URL.match(text) and not (address and text):
        return URL_IN_TEXT.sub(lambda found: _masked_url(found.group(0)), value) if URL.search(text) else value
    return _masked_url(text if URL.match(text) else f"//{text}")


URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*")


def _masked_url(text: str) -> str:
    text = text.replace("\\", "/")
    scheme = text.split("://", 1)[0] + "://" if URL.match(text) else ""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:  # not a URL urlsplit can read (a port out of range, a bad IPv6 address)
        return f"{scheme}{HIDDEN}"
    user = f"{HIDDEN}@" if "@" in parts.netloc else ""  # a user and password: often a token itself
    labels = (parts.hostname or "").split(".")
    host = ".".join(HIDDEN if SECRET_LOOKING.fullmatch(label) and n < len(labels) - 2 else label
                    for n, label in enumerate(labels))  # the registered domain always shown: it is where it goes
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else host
    path = masked_path(parts.path, HIDDEN)
    query = "&".join(f"{pair.split('=', 1)[0]}={HIDDEN}" if "=" in pair else HIDDEN
                     for pair in parts.query.split("&")) if parts.query else ""
    return (f"{scheme}{user}{host}{f':{port}' if port is not None else ''}"
            f"{path}{'?' + query if query else ''}{'#' + HIDDEN if parts.fragment else ''}")


ADDRESSES = frozenset({"endpoint", "sheet_url"})
"""The fields of a ``dest`` that hold an address (a webhook's, a sheet's): masked whatever their form."""
SECRET_WORDS = frozenset({"authorization", "auth", "cookie", "token", "secret", "password", "passwd", "pwd",
                          "passphrase", "credential", "credentials", "signature", "apikey", "pass", "passcode",
                          "hmac", "bearer", "sig", "jwt", "dsn", "session", "sessionid", "pin", "otp", "sas",
                          "connectionstring", "accountkey", "privatekey"})
"""A field named with one of these words (``Authorization``, ``access_token``, ``options.password``,
``hmac``, ``sig``, ``jwt``, ``dsn``) holds a secret: its value is shown as :data:`HIDDEN`; so does a
``key`` of a longer name (``api_key``, ``X-Api-Key``: not a plan's own ``key``), a connection string
(``connection_string``), a lone ``code`` or an ``auth_code``, and every value under a field of
headers (``headers``, ``custom_headers``, a lone ``header``; not ``include_header``)."""


def secret_name(name: Any) -> bool:
    """Whether a field named ``name`` holds a secret (:data:`SECRET_WORDS`)."""
    if not isinstance(name, str):
        return False
    words = re.findall(r"[a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower())
    return any(w in SECRET_WORDS or w.endswith(("token", "secret", "password")) for w in words) or (
        "key" in words and len(words) > 1) or words[-1:] == ["headers"] or words == ["header"] or (
        "connection" in words and "string" in words) or words == ["code"] or (
        "code" in words and any(w in ("auth", "access", "oauth", "verification") for w in words))


def masked_fields(value: Any, name: Any = None, *, secret: bool = False) -> Any:
    """``value`` as people may read it: every URL in it :func:`masked` (mappings and lists walked; the
    value of a field named in :data:`ADDRESSES` masked even without a scheme), the value of a field
    with a secret's name (:func:`secret_name`) and every header's value :data:`HIDDEN` (``None`` kept).
    The one masking of what a plan shows: its rows, a saved plan's ``touched``, a stale plan's
    refusal, the review's rendered ``plan``."""
    secret = secret or secret_name(name)
    if isinstance(value, Mapping):
        inner = secret
        return {key: masked_fields(item, key if name not in ADDRESSES else name, secret=inner)
                for key, item in value.items()}
    if isinstance(value, list):
        return [masked_fields(item, name, secret=secret) for item in value]
    if secret and value is not None:
        return HIDDEN
    return masked(value, address=name in ADDRESSES)


def compared(held: Any, declared: Any, field: str = "") -> tuple[str, str]:
    """An update's two sides of ``field`` (its dotted path: ``dest.endpoint``) as a row shows them,
    masked; when they differ only in what is masked (a webhook's token), the second says so."""
    *outer, name = re.split(r"[.\[]", field)
    secret = any(secret_name(part) for part in outer)  # dest.headers.X-Team
    before, after = masked_fields(held, name, secret=secret), masked_fields(declared, name, secret=secret)
    hidden_change = before == after and held != declared
    return repr(before), repr(after) + (" (differs in a masked part)" if hidden_change else "")


TOLD = {"EmailDest": ("recipients",), "SlackDest": ("slack_channels",), "WebhookDest": ("endpoint",),
        "GsheetDest": ("sheet_url", "sheet_title"), "SftpDest": ("data_source_id", "file_path"),
        "EmailSubscriptionDest": ()}
"""The fields of each kind of ``dest`` that :func:`destination` tells."""


def untold(body: Mapping[str, Any]) -> list[str]:
    """Each field of ``body`` that :func:`sends` does not tell (filters, an alert's conditions, a
    destination's title or options, any field a hand-edited plan added), as ``path=value`` masked,
    empty ones left out: with :func:`sends`, all that the apply sends."""
    told = {"title", "source_type", "source_id", "schedule", "dest"}
    found = [(name, value) for name, value in body.items() if name not in told]
    schedule, dest = body.get("schedule"), body.get("dest")
    if isinstance(schedule, Mapping):
        found += [(f"schedule.{name}", v) for name, v in schedule.items() if name not in ("repeat", "paused")]
    elif schedule is not None:
        found.append(("schedule", schedule))
    if isinstance(dest, Mapping):
        kind = dest.get("type")
        known = TOLD.get(kind, ()) if isinstance(kind, str) else ()
        found += [(f"dest.{name}", v) for name, v in dest.items() if name != "type" and name not in known]
    return [f"{path}={json.dumps(masked_fields(value, path.rsplit('.', 1)[-1]), default=str)}"
            for path, value in found if value not in (None, "", [], {})]


def _listed(values: Any, listed: int | None = LISTED) -> str:
    items = [_plain(str(v)) for v in values] if isinstance(values, list) else []
    shown = items if listed is None else items[:listed]
    more = f" and {len(items) - len(shown)} more" if len(items) > len(shown) else ""
    return (", ".join(shown) or "(none)") + more


def _plain(text: str) -> str:
    """``text``, and when it holds a character outside ASCII (a Cyrillic ``\\u0430`` in an address that
    reads as ``example.com``) its escaped form beside it."""
    return text if text.isascii() else f"{text} (not ASCII: {text.encode('ascii', 'backslashreplace').decode()})"
