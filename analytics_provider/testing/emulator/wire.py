"""What the HTTP layer hands a service (``Incoming``) and what it writes back (``Outcome``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analytics_provider.testing.emulator.errors import ApiError

JSON_TYPE = "application/json; charset=utf-8"


@dataclass(frozen=True)
class Incoming:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: Mapping[str, str]  # names in lower case
    body: bytes
    client: str = ""
    stream: Any = None
    """A multipart body, spooled to a temporary file (``body`` is then empty)."""


@dataclass
class Outcome:
    """An answer: a body or a file to stream; or ``drop`` (close without answering); ``truncate``
    sends the full Content-Length but only half of the bytes, then closes."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    operation: str | None = None
    file: Path | None = None
    drop: bool = False
    truncate: bool = False
    injected: bool = False  # an injected fault's answer, not the emulated service's


def json_outcome(status: int, payload: Any, headers: Mapping[str, str] | None = None) -> Outcome:
    body = b"" if payload is None else json.dumps(payload).encode("utf-8")
    found = dict(headers or {})
    if payload is not None:
        found.setdefault("Content-Type", JSON_TYPE)
    return Outcome(status, body, found)


def error_outcome(error: ApiError, headers: Mapping[str, str] | None = None) -> Outcome:
    return json_outcome(error.status, error.body(), {**(headers or {}), **error.headers})


def parse_json(body: bytes) -> Any:
    """The request's JSON (None when empty); a 400 when it is not JSON."""
    if not body.strip():
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "InvalidParameterError", "The request body is not valid JSON") from None
