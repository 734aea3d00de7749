"""The warehouse tables a query model's SQL reads, found by a real SQL parser (sqlglot) in the
dialect of the model's data source (its ``dbtype``).

A query model's SQL may name other models through AML's ``{{ #model alias }}``: those are the
models it is built on (the service gives them as the model's dependants), not tables, and are left
out; any other ``{{ ... }}`` is read as a value. Names of CTEs are not tables. A part quoted in the
SQL is given double-quoted (``"Sales".orders``), as :mod:`.tables` reads a quoted part: kept as
written, not folded.

sqlglot is imported when a model's SQL is read (in a running task, never at a DAG file's parse).
SQL it cannot parse is :class:`SqlNotRead`; :func:`names_table` then says whether the text names a
table at all (a word match, case-insensitive: wider than the parse, never narrower).
"""

from __future__ import annotations

import re
from typing import Any

MODEL_REF = re.compile(r"\{\{\s*#\s*([A-Za-z_]\w*)(?:\s+([A-Za-z_]\w*))?\s*\}\}")
OTHER_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.DOTALL)
AML_SCHEMA = "__aml_model__"

DIALECTS = {
    "postgresql": "postgres", "postgres": "postgres", "redshift": "redshift", "snowflake": "snowflake",
    "bigquery": "bigquery", "mysql": "mysql", "mariadb": "mysql", "sqlserver": "tsql", "mssql": "tsql",
    "databricks": "databricks", "spark": "spark", "clickhouse": "clickhouse", "athena": "athena",
    "presto": "presto", "trino": "trino", "duckdb": "duckdb", "oracle": "oracle", "teradata": "teradata",
    "sqlite": "sqlite",
}
"""A data source's ``dbtype`` to sqlglot's dialect; another (or none) is read as generic SQL."""


class SqlNotRead(ValueError):
    """The SQL could not be parsed (its text says why)."""


def dialect_of(dbtype: Any) -> str | None:
    return DIALECTS.get(str(dbtype or "").strip().lower())


def _quoted(part: Any) -> str:
    name = str(part.name)
    return '"' + name.replace('"', '""') + '"' if part.args.get("quoted") else name


def tables_read(sql: str, dbtype: Any = None) -> list[str]:
    """The tables ``sql`` reads, each once, in order (``db.schema.table`` as far as it names them)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    text = MODEL_REF.sub(lambda m: f"{AML_SCHEMA}.{m.group(1)} {m.group(2) or ''}", sql)
    text = OTHER_TEMPLATE.sub("NULL", text)
    try:
        statements = [s for s in sqlglot.parse(text, read=dialect_of(dbtype)) if s is not None]
    except (SqlglotError, RecursionError, ValueError) as exc:
        raise SqlNotRead(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if not statements:
        raise SqlNotRead("no statement")
    found: list[str] = []
    for statement in statements:
        ctes = {str(c.alias_or_name).lower() for c in statement.find_all(exp.CTE)}
        for table in statement.find_all(exp.Table):
            parts = [p for p in table.parts if isinstance(p, exp.Identifier)]
            if not parts or not table.name:
                continue  # a table function, a subquery's alias
            if len(parts) == 1 and table.name.lower() in ctes:
                continue
            if len(parts) > 1 and parts[-2].name == AML_SCHEMA:
                continue
            name = ".".join(_quoted(p) for p in parts)
            if name not in found:
                found.append(name)
    return found


def names_table(sql: str, table: str) -> bool:
    """Whether ``sql`` names ``table``'s last part as a word (for SQL that could not be parsed)."""
    last = table.strip().split(".")[-1].strip('"`[] ')
    return bool(last) and re.search(rf"(?<![\w$]){re.escape(last)}(?![\w$])", sql, re.IGNORECASE) is not None
