"""Warehouse table names compared the way the warehouse compares them.

A name is one to three parts, ``table``, ``schema.table`` or ``database.schema.table``, each
bare or double-quoted (``"Sales"."Orders"``; ``""`` inside quotes is one quote). A bare part is
folded (``fold="lower"``, as PostgreSQL, Redshift and DuckDB do; ``"upper"`` for Snowflake and
Oracle), a quoted part is kept as written. A name without a schema is in ``default_schema``.
A name without a database matches that table in any database; two names that both give one
match only when those agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from analytics_provider.exceptions import AnalyticsParameterError

FOLDS = ("lower", "upper")
DEFAULT_SCHEMA = "public"


@dataclass(frozen=True)
class TableName:
    """A table's name in its compared form."""

    table: str
    schema: str
    database: str | None = None

    def matches(self, other: TableName) -> bool:
        if (self.table, self.schema) != (other.table, other.schema):
            return False
        return self.database is None or other.database is None or self.database == other.database

    def __str__(self) -> str:
        return ".".join(p for p in (self.database, self.schema, self.table) if p is not None)


def split_parts(name: str) -> list[tuple[str, bool]]:
    """The dot-separated parts of ``name``: ``(text, quoted)`` each; ``ValueError`` when malformed."""
    parts: list[tuple[str, bool]] = []
    text, i, n = name.strip(), 0, len(name.strip())
    while True:
        if i < n and text[i] == '"':
            i += 1
            chars = []
            while True:
                if i >= n:
                    raise ValueError(f"{name!r} has an unclosed quote")
                if text[i] == '"':
                    if i + 1 < n and text[i + 1] == '"':
                        chars.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                chars.append(text[i])
                i += 1
            part, quoted = "".join(chars), True
        else:
            end = text.find(".", i)
            end = n if end == -1 else end
            part, quoted = text[i:end].strip(), False
            if '"' in part:
                raise ValueError(f"{name!r} has a quote inside a part")
            i = end
        if not part:
            raise ValueError(f"{name!r} has an empty part")
        parts.append((part, quoted))
        if i >= n:
            return parts
        if text[i] != ".":
            raise ValueError(f"{name!r} has text after a quoted part")
        i += 1


def parse_table(name: object, *, default_schema: str = DEFAULT_SCHEMA, fold: str = "lower") -> TableName:
    """``name`` in its compared form; :class:`AnalyticsParameterError` when it is not a table's name."""
    if fold not in FOLDS:
        raise AnalyticsParameterError(f"fold must be one of {', '.join(FOLDS)}; got {fold!r}")
    if not isinstance(name, str) or not name.strip():
        raise AnalyticsParameterError(f"a table is named 'schema.table' or 'db.schema.table'; got {name!r}")
    try:
        parts = split_parts(name)
    except ValueError as exc:
        raise AnalyticsParameterError(f"a table is named 'schema.table' or 'db.schema.table': {exc}") from None
    if len(parts) > 3:
        raise AnalyticsParameterError(f"a table is named 'schema.table' or 'db.schema.table'; got {name!r} "
                                      f"({len(parts)} parts)")
    folded = [text if quoted else (text.lower() if fold == "lower" else text.upper()) for text, quoted in parts]
    schema_default = default_schema.lower() if fold == "lower" else default_schema.upper()
    if len(folded) == 1:
        return TableName(folded[0], schema_default)
    if len(folded) == 2:
        return TableName(folded[1], folded[0])
    return TableName(folded[2], folded[1], folded[0])


def table_or_none(name: object, *, default_schema: str = DEFAULT_SCHEMA, fold: str = "lower") -> TableName | None:
    """A model's ``table_name`` in its compared form; None for a model without one (an SQL model)
    or with one that is not a table's name."""
    try:
        return parse_table(name, default_schema=default_schema, fold=fold)
    except AnalyticsParameterError:
        return None
