"""The rows a sync follows: read from a SQL query (streamed) or given; each names a user.

A user is named by e-mail (compared without case; its syntax checked before any write) or by id
(an int, or a string of digits).
Rows are mappings (a column's name to its value) or sequences (values in the order of the
columns the sync names). Rows that cannot be understood are all reported at once, before any
request writes anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from typing import Any, NamedTuple

from analytics_provider.exceptions import AnalyticsParameterError

UserKey = tuple[str, Any]
"""``("email", "ann@example.com")`` or ``("id", 12)``."""
FETCH_SIZE = 5000
"""Rows fetched from the cursor at a time: a query's result is never held whole."""
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
"""An e-mail address as the service accepts one (no space, one @, a dot in the domain)."""
MAX_ROW_ERRORS = 20
"""Row errors listed in one refusal (the rest are counted)."""


class AttributeColumns(NamedTuple):  # not a dataclass: a DAG file makes one at every parse, in a tenth of the time
    """Which columns of a row hold the user, the attribute (name or id) and one value."""

    user: str = "user"
    attribute: str = "attribute"
    value: str = "value"

    def names(self) -> tuple[str, str, str]:
        return (self.user, self.attribute, self.value)


class MemberColumns(NamedTuple):
    """Which columns of a row hold the user and the group: its name (``group``), or its id
    (``group_id``, when given: then ``group`` is not read)."""

    user: str = "user"
    group: str = "group"
    group_id: str | None = None

    def names(self) -> tuple[str, str]:
        return (self.user, self.group_id or self.group)


class RowErrors:
    """Collects what is wrong with rows; :meth:`check` raises them together."""

    def __init__(self, task_id: str, source: str) -> None:
        self.task_id = task_id
        self.source = source
        self.messages: list[str] = []
        self.count = 0

    def add(self, index: int, message: str) -> None:
        self.count += 1
        if len(self.messages) < MAX_ROW_ERRORS:
            self.messages.append(f"row {index + 1}: {message}")

    def check(self) -> None:
        if not self.count:
            return
        more = f"\n... and {self.count - len(self.messages)} more" if self.count > len(self.messages) else ""
        raise AnalyticsParameterError(
            f"{self.task_id}: {self.count} row(s) of {self.source} cannot be synced (nothing was written):\n"
            + "\n".join(self.messages) + more
        )


def user_key(value: Any) -> UserKey | None:
    """The key of the user a cell names, or None when it names none (empty, not an e-mail or id)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return ("id", value) if value > 0 else None
    text = str(value).strip()
    if text.isdigit():
        return ("id", int(text))
    if EMAIL.match(text):
        return ("email", text.lower())
    return None


def shown_user(key: UserKey) -> str:
    return str(key[1]) if key[0] == "email" else f"user {key[1]}"


def cells(row: Any, columns: Sequence[str], index: int, errors: RowErrors) -> tuple[Any, ...] | None:
    """The row's values of ``columns`` (by name from a mapping, by position from a sequence)."""
    if isinstance(row, Mapping):
        missing = [c for c in columns if c not in row]
        if missing:
            errors.add(index, f"no column {', '.join(map(repr, missing))} (it has {', '.join(map(repr, row))})")
            return None
        return tuple(row[c] for c in columns)
    if isinstance(row, Sequence) and not isinstance(row, (str, bytes)):
        if len(row) < len(columns):
            errors.add(index, f"{len(row)} value(s); expected {len(columns)} ({', '.join(columns)})")
            return None
        return tuple(row[: len(columns)])
    errors.add(index, f"a row is a mapping or a sequence, not {type(row).__name__}")
    return None


def query_rows(
    conn_id: str, sql: str, parameters: Any = None, *, fetch_size: int = FETCH_SIZE
) -> Iterator[dict[str, Any]]:
    """The rows of ``sql`` on the Airflow connection ``conn_id`` (any ``common.sql`` database), as
    mappings by column name, fetched ``fetch_size`` at a time."""
    hook = sql_hook(conn_id)
    with closing(hook.get_conn()) as connection, closing(connection.cursor()) as cursor:
        if parameters is None:
            cursor.execute(sql)
        else:
            cursor.execute(sql, parameters)
        names = [str(d[0]) for d in cursor.description or ()]
        while batch := cursor.fetchmany(fetch_size):
            for row in batch:
                yield dict(zip(names, row, strict=False))


def sql_hook(conn_id: str) -> Any:
    """The ``common.sql`` hook of a connection; refused when the connection is not a SQL database."""
    from airflow.providers.common.compat.sdk import BaseHook
    from airflow.providers.common.sql.hooks.sql import DbApiHook

    hook = BaseHook.get_hook(conn_id)
    if not isinstance(hook, DbApiHook):
        raise AnalyticsParameterError(
            f"sql_conn_id {conn_id!r} is a {type(hook).__name__}, not a SQL database's hook (common.sql's DbApiHook)"
        )
    return hook


def given_rows(rows: Any, task_id: str) -> Iterable[Any]:
    """Rows handed in (a list, an XCom's value); one mapping alone is refused (it is not a list)."""
    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Iterable):
        raise AnalyticsParameterError(
            f"{task_id}: rows must be a list of rows (mappings or sequences); got {type(rows).__name__}"
        )
    return rows
