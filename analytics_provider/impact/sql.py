"""The warehouse tables a query model's SQL reads, found by a real SQL parser (sqlglot) in the
dialect of the model's data source (its ``dbtype``).

A query model's SQL may name other models through AML's ``{{ #model alias }}``: those are the
models it is built on (the service gives them as the model's dependants), not tables, and are left
out; any other ``{{ ... }}`` is read as a value. A reference to a CTE is not a table, where that
CTE is in scope (``WITH orders AS (SELECT * FROM orders) ...`` reads the table ``orders`` inside
the CTE); a BigQuery wildcard table (``dataset.events_*``) is given as written, and :mod:`.tables`
matches it to the tables it stands for. A part quoted in the SQL is given double-quoted
(``"Sales".orders``), as :mod:`.tables` reads a quoted part: kept as written, not folded.

sqlglot is imported when a model's SQL is read (in a running task, never at a DAG file's parse);
:func:`names_table` first says cheaply whether its text could name a table at all (a word match).
SQL sqlglot cannot parse is :class:`SqlNotRead`; :func:`names_in_text` then gives the dotted names
its text holds (outside comments and templates), each compared with a table as a parsed name is:
the SQL names a table only when it writes every part the table is given with, by the rules of its
data source (``fnance.revenue_targets`` does not name ``finance.revenue_targets``).
"""

from __future__ import annotations

import re
from typing import Any

MODEL_REF = re.compile(r"\{\{\s*#\s*([A-Za-z_]\w*)(?:\s+(?:AS\s+)?([A-Za-z_]\w*))?\s*\}\}", re.IGNORECASE)
OTHER_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.DOTALL)
TEMPLATE_TAG = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.DOTALL)
COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_QUOTED_PART = r'"(?:[^"]|"")+"|`(?:[^`]|``)+`|\[[^\]]+\]'
_BARE_PART = r"[A-Za-z_][\w$]*\*?"
_BARE_HYPHENATED = r"[A-Za-z_][\w$]*(?:-[\w$]+)*\*?"  # BigQuery's project ids, bare
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
        for table in statement.find_all(exp.Table):
            parts = [p for p in table.parts if isinstance(p, exp.Identifier)]
            if not parts or not table.name:
                continue  # a table function, a subquery's alias
            if len(parts) == 1 and _names_cte(table, exp):
                continue
            if len(parts) > 1 and parts[-2].name == AML_SCHEMA:
                continue
            name = ".".join(_quoted(p) for p in parts)
            if name not in found:
                found.append(name)
    return found


def _names_cte(table: Any, exp: Any) -> bool:
    """Whether a one-part table reference names a CTE in its scope: one of a ``WITH`` around it, or
    an earlier CTE of the ``WITH`` it is defined in (itself too when ``RECURSIVE``)."""
    name = table.name.lower()
    child, node = table, table.parent
    while node is not None:
        if isinstance(node, exp.With):
            ctes = list(node.expressions)
            upto = ctes.index(child) + (1 if node.args.get("recursive") else 0) if child in ctes else len(ctes)
            if name in {str(c.alias_or_name).lower() for c in ctes[:upto]}:
                return True
        else:
            with_ = node.args.get("with_", node.args.get("with"))
            if isinstance(with_, exp.With) and child is not with_ and name in {
                    str(c.alias_or_name).lower() for c in with_.expressions}:
                return True
        child, node = node, node.parent
    return False


def names_table(sql: str, table: str) -> bool:
    """Whether ``sql`` could name ``table``: its last part as a word, or a wildcard (``events_*``)
    that it begins with. Cheap and wider than any reading (it decides whether to read the SQL)."""
    last = table.strip().split(".")[-1].strip('"`[] ')
    if not last:
        return False
    if re.search(rf"(?<![\w$]){re.escape(last)}(?![\w$])", sql, re.IGNORECASE) is not None:
        return True
    return any(last.lower().startswith(p.lower()) for p in re.findall(r"([\w$]+)\*", sql))


def names_in_text(sql: str, *, hyphens: bool = False) -> list[str]:
    """The dotted names (one to three parts, quoted or bare) the text of ``sql`` holds outside its
    comments and templates, for SQL that could not be parsed; each name of more than three parts
    (``schema.table.column``) is given as its first one, two and three parts. ``hyphens``: a bare
    part may hold hyphens (BigQuery's project ids)."""
    text = MODEL_REF.sub(" NULL ", sql)
    text = TEMPLATE_TAG.sub(" ", OTHER_TEMPLATE.sub(" NULL ", COMMENT.sub(" ", text)))
    part = f"(?:{_QUOTED_PART}|{_BARE_HYPHENATED if hyphens else _BARE_PART})"
    chain = re.compile(rf"(?<![\w$.\"`\]]){part}(?:\s*\.\s*{part})*")
    found: list[str] = []
    for match in chain.finditer(text):
        parts = re.findall(part, match.group(0))
        for size in range(1, min(3, len(parts)) + 1):
            name = ".".join(parts[:size])
            if name not in found:
                found.append(name)
    return found
