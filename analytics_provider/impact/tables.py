"""Warehouse table names compared the way the warehouse of their data source compares them.

A name is one to three parts, ``table``, ``schema.table`` or ``database.schema.table`` (a
BigQuery project, a Databricks catalog), each bare or quoted as its warehouse quotes it: double
quotes (PostgreSQL, Redshift, Snowflake, DuckDB, Oracle), backticks (BigQuery, Databricks, Spark,
MySQL) or brackets (SQL Server, Synapse, Fabric); a quote doubled inside is one quote. Any of the
three is read whatever the warehouse, so that a dbt ``relation_name`` is read as its adapter wrote
it. In BigQuery one pair of backticks may hold the whole path (``my-project.sales.orders`` in one pair).

How parts compare is the warehouse's (:data:`RULES`, by the data source's ``dbtype``): what a bare
part is folded to (PostgreSQL lower case, Snowflake upper case, BigQuery and ClickHouse kept as
written), whether a quoted part is compared without case all the same (Redshift, DuckDB, SQL
Server, Databricks), and the schema of a name given without one. ``fold`` and ``default_schema``
override the warehouse's. Two names that both give a part match only when those agree; a name
without a database matches that table in any database (whether a database given on one side only
may match is the caller's to say: :mod:`.graph` checks it against the databases a data source's
models name); a warehouse without a default schema (BigQuery) matches a name without one in any
schema. In BigQuery a table part ending in ``*`` is a wildcard table: it matches every table that
begins with the rest.

The ``dbtype`` values are the service's own, which its document does not list: a value not in
:data:`RULES` is compared as PostgreSQL compares names (the service's sample warehouse), and
:func:`known_dialect` tells the caller so that it can say it. A dbt ``adapter_type`` is read
by the same names (``postgres``, ``snowflake``, ``bigquery``, ``spark``...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from analytics_provider.exceptions import AnalyticsParameterError

FOLDS = ("lower", "upper")
DEFAULT_SCHEMA = "public"
QUOTES = {'"': '"', "`": "`", "[": "]"}
"""Each opening quote and its closing one."""


@dataclass(frozen=True)
class NameRules:
    """How one warehouse compares a table's name."""

    dialect: str
    fold: str = "lower"
    """What a bare part becomes: ``lower``, ``upper`` or ``none`` (kept as written)."""
    fold_quoted: bool = False
    """Quoted parts are compared without case too (the warehouse's identifiers ignore case)."""
    default_schema: str | None = DEFAULT_SCHEMA
    """The schema of a name given without one (None: any schema)."""
    database_ignores_case: bool = False
    """The database part is compared without case (BigQuery's project ids), whatever ``fold`` says."""
    dotted_quotes: bool = False
    """One pair of quotes may hold the whole dotted path (BigQuery)."""
    wildcard_tables: bool = False
    """A table part ending in ``*`` names every table that begins with the rest (BigQuery)."""

    def compared(self, text: str, quoted: bool, *, database: bool = False) -> str:
        if (database and self.database_ignores_case) or (quoted and self.fold_quoted):
            return text.lower()
        if quoted or self.fold == "none":
            return text
        return text.upper() if self.fold == "upper" else text.lower()


_POSTGRES = NameRules("postgresql")
_CASELESS = NameRules("caseless", fold="lower", fold_quoted=True)
RULES: dict[str, NameRules] = {
    "postgresql": _POSTGRES,
    "redshift": replace(_CASELESS, dialect="redshift", default_schema="public"),
    "snowflake": NameRules("snowflake", fold="upper", default_schema="PUBLIC"),
    "oracle": NameRules("oracle", fold="upper", default_schema=None),
    "bigquery": NameRules("bigquery", fold="none", default_schema=None, database_ignores_case=True,
                          dotted_quotes=True, wildcard_tables=True),
    "databricks": replace(_CASELESS, dialect="databricks", default_schema="default"),
    "sqlserver": replace(_CASELESS, dialect="sqlserver", default_schema="dbo"),
    "duckdb": replace(_CASELESS, dialect="duckdb", default_schema="main"),
    "mysql": NameRules("mysql", fold="none", default_schema=None),
    "clickhouse": NameRules("clickhouse", fold="none", default_schema="default"),
    "trino": replace(_CASELESS, dialect="trino", default_schema=None),
}
"""The rules of each warehouse, by the name :func:`dialect_of` gives a ``dbtype``."""
ALIASES = {
    "postgres": "postgresql", "pg": "postgresql", "greenplum": "postgresql", "timescaledb": "postgresql",
    "bq": "bigquery", "big_query": "bigquery", "google_bigquery": "bigquery",
    "spark": "databricks", "databricks_sql": "databricks", "hive": "databricks",
    "mssql": "sqlserver", "sql_server": "sqlserver", "azure": "sqlserver", "azure_sql": "sqlserver",
    "azuresql": "sqlserver", "synapse": "sqlserver", "fabric": "sqlserver", "azure_synapse": "sqlserver",
    "motherduck": "duckdb", "mariadb": "mysql", "presto": "trino", "athena": "trino", "amazon_athena": "trino",
}


def known_dialect(dbtype: object) -> str | None:
    """The key of :data:`RULES` for a data source's ``dbtype`` or a dbt ``adapter_type``; None
    for one not known (or none)."""
    name = str(dbtype or "").strip().lower().replace("-", "_").replace(" ", "_")
    name = ALIASES.get(name, name)
    return name if name in RULES else None


BACKTICK_DIALECTS = frozenset({"bigquery", "databricks", "mysql", "clickhouse"})
"""The warehouses whose SQL quotes names with backticks (dbt-bigquery, dbt-databricks, dbt-spark...)."""


def dialects_quoting(name: str) -> frozenset[str] | None:
    """The warehouses that can have written ``name`` as it is quoted, where its quoting rules some
    out: backticks are never PostgreSQL's (nor Snowflake's...). None: double quotes or none, which
    most warehouses write."""
    return BACKTICK_DIALECTS if re.search(r"(^|\.)\s*`", name.strip()) else None


def dialect_of(dbtype: object) -> str:
    """The key of :data:`RULES` for a data source's ``dbtype`` (``postgresql`` for one not known)."""
    return known_dialect(dbtype) or "postgresql"


@lru_cache(maxsize=256)
def name_rules(dbtype: str | None = None, *, fold: str | None = None, default_schema: str | None = None) -> NameRules:
    """The rules of a data source's ``dbtype``, with ``fold``/``default_schema`` overriding them."""
    if fold is not None and fold not in FOLDS:
        raise AnalyticsParameterError(f"fold must be one of {', '.join(FOLDS)}; got {fold!r}")
    rules = RULES[dialect_of(dbtype)]
    if fold is not None:
        rules = replace(rules, fold=fold)
    if default_schema is not None:
        rules = replace(rules, default_schema=default_schema)
    return rules


@dataclass(frozen=True)
class TableName:
    """A table's name in its compared form."""

    table: str
    schema: str | None
    database: str | None = None
    prefix: bool = False
    """A wildcard table (BigQuery's ``events_*``): ``table`` is what the names it stands for begin with."""

    def matches(self, other: TableName) -> bool:
        if self.prefix or other.prefix:
            short, long = sorted((self, other), key=lambda n: (not n.prefix, len(n.table)))
            if not long.table.startswith(short.table):
                return False
        elif self.table != other.table:
            return False
        if self.schema is not None and other.schema is not None and self.schema != other.schema:
            return False
        return self.database is None or other.database is None or self.database == other.database

    def __str__(self) -> str:
        return ".".join(p for p in (self.database, self.schema, self.table + "*" * self.prefix) if p is not None)


def _quoted_part(text: str, i: int, name: str) -> tuple[str, int]:
    """The quoted part that opens at ``text[i]`` and the index after its closing quote."""
    closing = QUOTES[text[i]]
    i += 1
    chars = []
    while True:
        if i >= len(text):
            raise ValueError(f"{name!r} has an unclosed quote")
        if text[i] == closing:
            if text[i + 1:i + 2] == closing:
                chars.append(closing)
                i += 2
                continue
            return "".join(chars), i + 1
        chars.append(text[i])
        i += 1


def split_parts(name: str, *, dotted_quotes: bool = False) -> list[tuple[str, bool]]:
    """The dot-separated parts of ``name``: ``(text, quoted)`` each; ``ValueError`` when malformed.
    With ``dotted_quotes`` a quoted part that holds dots is that many parts (BigQuery)."""
    parts: list[tuple[str, bool]] = []
    text = name.strip()
    i, n = 0, len(text)
    while True:
        if i < n and text[i] in QUOTES:
            part, i = _quoted_part(text, i, name)
            pieces = part.split(".") if dotted_quotes and "." in part else [part]
            if any(not p for p in pieces):
                raise ValueError(f"{name!r} has an empty part")
            parts += [(p, True) for p in pieces]
        else:
            end = text.find(".", i)
            end = n if end == -1 else end
            part = text[i:end].strip()
            if any(q in part for q in (*QUOTES, "]")):
                raise ValueError(f"{name!r} has a quote inside a part")
            if not part:
                raise ValueError(f"{name!r} has an empty part")
            parts.append((part, False))
            i = end
        if i >= n:
            return parts
        if text[i] != ".":
            raise ValueError(f"{name!r} has text after a quoted part")
        i += 1


def parse_table(name: object, *, default_schema: str | None = None, fold: str | None = None,
                dbtype: str | None = None, assume_schema: bool = True) -> TableName:
    """``name`` in the compared form of the warehouse ``dbtype`` names (see the module's text);
    :class:`AnalyticsParameterError` when it is not a table's name. Without ``assume_schema`` a
    name without a schema is in any schema (a model's: its connection's schema is not known)."""
    rules = name_rules(dbtype, fold=fold, default_schema=default_schema)
    if not isinstance(name, str) or not name.strip():
        raise AnalyticsParameterError(f"a table is named 'schema.table' or 'db.schema.table'; got {name!r}")
    try:
        parts = split_parts(name, dotted_quotes=rules.dotted_quotes)
    except ValueError as exc:
        raise AnalyticsParameterError(f"a table is named 'schema.table' or 'db.schema.table': {exc}") from None
    if len(parts) > 3:
        raise AnalyticsParameterError(f"a table is named 'schema.table' or 'db.schema.table'; got {name!r} "
                                      f"({len(parts)} parts)")
    last = len(parts) - 1
    folded = [rules.compared(text, quoted, database=last == 2 and index == 0)
              for index, (text, quoted) in enumerate(parts)]
    prefix = rules.wildcard_tables and folded[-1].endswith("*") and len(folded[-1]) > 1
    if prefix:
        folded[-1] = folded[-1][:-1]
    if len(folded) == 1:
        schema = rules.default_schema if assume_schema else None
        return TableName(folded[0], None if schema is None else rules.compared(schema, False), prefix=prefix)
    if len(folded) == 2:
        return TableName(folded[1], folded[0], prefix=prefix)
    return TableName(folded[2], folded[1], folded[0], prefix=prefix)


def table_or_none(name: object, *, default_schema: str | None = None, fold: str | None = None,
                  dbtype: str | None = None, assume_schema: bool = True) -> TableName | None:
    """A model's ``table_name`` in its compared form; None for a model without one (an SQL model)
    or with one that is not a table's name."""
    try:
        return parse_table(name, default_schema=default_schema, fold=fold, dbtype=dbtype,
                           assume_schema=assume_schema)
    except AnalyticsParameterError:
        return None
