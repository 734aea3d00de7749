"""Cursor pagination: ``before``/``after`` take opaque cursors, ``limit`` is 1 to 100 (default 20);
where an operation takes ``page`` (data schedules), a 1-based page number of ``limit`` items."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from analytics_provider.api.wire.operations import MAX_PAGE_SIZE
from analytics_provider.testing.emulator.errors import by_rule, invalid_parameter

T = TypeVar("T")
DEFAULT_LIMIT = 20
_PREFIX = "pos:"


def encode_cursor(position: int) -> str:
    return base64.urlsafe_b64encode(f"{_PREFIX}{position}".encode()).decode().rstrip("=")


def decode_cursor(name: str, cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if text.startswith(_PREFIX) and text[len(_PREFIX):].isdigit():
            return int(text[len(_PREFIX):])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise by_rule(invalid_parameter(f"{name} is not a valid cursor: {cursor!r}"), "cursor")


def page(items: Sequence[T], query: Mapping[str, Any]) -> tuple[list[T], dict[str, str | None]]:
    """One page of ``items`` and its ``cursors``; ``previous`` is null on the first page, ``next`` on the last."""
    limit = query.get("limit")
    limit = DEFAULT_LIMIT if limit is None else int(limit)
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise invalid_parameter(f"limit must be between 1 and {MAX_PAGE_SIZE}, got {limit}")
    if query.get("after") is not None:
        start = min(decode_cursor("after", query["after"]), len(items))
        end = min(start + limit, len(items))
    elif query.get("before") is not None:
        end = min(decode_cursor("before", query["before"]), len(items))
        start = max(0, end - limit)
    elif query.get("page") is not None:
        if int(query["page"]) < 1:
            raise invalid_parameter(f"page must be 1 or more, got {query['page']}")
        start = min((int(query["page"]) - 1) * limit, len(items))
        end = min(start + limit, len(items))
    else:
        start, end = 0, min(limit, len(items))
    cursors = {
        "previous": encode_cursor(start) if start > 0 else None,
        "next": encode_cursor(end) if end < len(items) else None,
    }
    return list(items[start:end]), cursors
