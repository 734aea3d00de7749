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
from typing import Any, NamedTuple

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


def _quoted(part: Any, name: str | None = None) -> str:
    name = str(part.name) if name is None else name
    return '"' + name.replace('"', '""') + '"' if part.args.get("quoted") else name


TEMPLATE_MARK = "__aml_template_{}__"
"""What a ``{{ ... }}`` becomes before parsing: a word, so that a name it completes stays a name."""
_MARK = re.compile(r"__aml_template_(\d+)__")
DYNAMIC = re.compile(r"\b(?:identifier|table)\s*\(", re.IGNORECASE)
"""Snowflake's ``identifier('db.s.t')`` and ``table('db.s.t')``: a table named by a text."""


class Unresolved(NamedTuple):
    """A name only the run completes: as written (``{{ schema }}.orders``, ``identifier($t)``) and
    its parts, each ``(text, quoted)`` with :data:`ANY` where a template stands (None: a variable
    names the whole table)."""

    written: str
    parts: tuple[tuple[str, bool], ...] | None

    def could_name(self, table: Any, rules: Any) -> bool:
        """Whether a completion could name ``table`` (a :class:`~.tables.TableName`): its parts
        written as they are, compared by the warehouse's ``rules``, templates standing for any text."""
        if self.parts is None:
            return True
        wanted = (table.table, table.schema, table.database)
        for (text, quoted), want in zip(reversed(self.parts), wanted, strict=False):
            if want is None:
                continue
            pieces = [re.escape(rules.compared(piece, quoted)) for piece in text.split(ANY)]
            if re.fullmatch(".*".join(pieces), want, re.DOTALL) is None:
                return False
        return True


ANY = "\x00"


class SqlRead(NamedTuple):
    tables: list[str]
    """The tables the SQL reads, each once, in order (``db.schema.table`` as far as it names them)."""
    unresolved: list[Unresolved]
    """The names only the run completes (a template's part, a variable)."""


def models_named(sql: str) -> set[str]:
    """The models a query model's SQL names (``{{ #orders o }}``: ``orders``), lower case."""
    return {found.group(1).lower() for found in MODEL_REF.finditer(sql)}


def tables_read(sql: str, dbtype: Any = None) -> list[str]:
    """The tables ``sql`` reads, each once, in order (``db.schema.table`` as far as it names them)."""
    return read_sql(sql, dbtype).tables


def read_sql(sql: str, dbtype: Any = None) -> SqlRead:
    """The tables ``sql`` reads and the names it leaves to the run (a template's part, a variable)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from analytics_provider.impact.tables import name_rules

    text = MODEL_REF.sub(lambda m: f"{AML_SCHEMA}.{m.group(1)} {m.group(2) or ''}", sql)
    templates: list[str] = []

    def mark(match: re.Match[str]) -> str:
        templates.append(match.group(0))
        return TEMPLATE_MARK.format(len(templates) - 1)

    rules = name_rules(str(dbtype) if dbtype is not None else None)
    statements = None
    for attempt in (OTHER_TEMPLATE.sub(mark, text), OTHER_TEMPLATE.sub("NULL", text)):
        try:  # a template read as a word first; where a word cannot stand (a value's place), as NULL
            statements = [s for s in sqlglot.parse(attempt, read=dialect_of(dbtype)) if s is not None]
            break
        except (SqlglotError, RecursionError, ValueError) as exc:
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if statements is None:
        raise SqlNotRead(problem)
    if not statements:
        raise SqlNotRead("no statement")
    found = SqlRead([], [])

    def add(into: list[Any], name: Any) -> None:
        if name not in into:
            into.append(name)

    def written(part: str) -> str:
        return _MARK.sub(lambda m: templates[int(m.group(1))], part)

    def by_text(named: Any, call: str) -> None:
        """A table named by a text (``identifier('db.s.t')``), read as a name is written; a
        variable, or a text that is no table's name, left to the run."""
        from analytics_provider.impact.tables import split_parts

        if isinstance(named, exp.Literal) and named.is_string:
            try:
                if 1 <= len(split_parts(named.name)) <= 3:
                    add(found.tables, named.name.strip())
                    return
            except ValueError:
                pass
        add(found.unresolved, Unresolved(f"{call}({named.sql(dialect_of(dbtype))})", None))

    for statement in statements:
        for node in statement.find_all(exp.TableFromRows):
            by_text(node.this.this if isinstance(node.this, exp.DynamicIdentifier) else node.this, "table")
        for table in statement.find_all(exp.Table):
            if isinstance(table.this, exp.DynamicIdentifier):
                by_text(table.this.this, "identifier")
                continue
            parts = [p for p in table.parts if isinstance(p, exp.Identifier)]
            if not parts or not table.name:
                continue  # a table function, a subquery's alias
            if len(parts) == 1 and _names_cte(table, exp, rules):
                continue
            if len(parts) > 1 and parts[-2].name == AML_SCHEMA:
                continue
            if any(_MARK.search(p.name) or (templates and p.name.upper() == "NULL" and not p.args.get("quoted"))
                   for p in parts):
                add(found.unresolved, Unresolved(".".join(written(_quoted(p)) for p in parts), tuple(
                    (ANY if p.name.upper() == "NULL" else _MARK.sub(ANY, p.name), bool(p.args.get("quoted")))
                    for p in parts)))
                continue
            names = [_quoted(p) for p in parts]
            if rules.wildcard_tables and "$" in parts[-1].name:  # BigQuery's partition decorator: t$20240101
                names[-1] = _quoted(parts[-1], parts[-1].name.split("$", 1)[0])
            if len(parts) == 2 and table.args.get("catalog") is not None and not table.text("db"):
                if rules.default_schema is None:  # db..table: the database's default schema
                    add(found.unresolved, Unresolved(f"{names[0]}..{names[1]}", None))
                    continue
                names.insert(1, rules.default_schema)
            add(found.tables, ".".join(names))
    return found


def _names_cte(table: Any, exp: Any, rules: Any) -> bool:
    """Whether a one-part table reference names a CTE in its scope: one of a ``WITH`` around it, or
    an earlier CTE of the ``WITH`` it is defined in (itself too when ``RECURSIVE``); names compared
    by the warehouse's rules (``"Orders"`` is not ``orders`` in PostgreSQL)."""
    def compared(identifier: Any) -> str:
        return str(rules.compared(str(identifier.name), bool(identifier.args.get("quoted"))))

    def names(ctes: Any) -> set[str]:
        return {compared(c.args["alias"].this) for c in ctes
                if isinstance(c.args.get("alias"), exp.TableAlias) and isinstance(c.args["alias"].this, exp.Identifier)}

    name = compared(table.this)
    child, node = table, table.parent
    while node is not None:
        if isinstance(node, exp.With):
            ctes = list(node.expressions)
            upto = ctes.index(child) + (1 if node.args.get("recursive") else 0) if child in ctes else len(ctes)
            if name in names(ctes[:upto]):
                return True
        else:
            with_ = node.args.get("with_", node.args.get("with"))
            if isinstance(with_, exp.With) and child is not with_ and name in names(with_.expressions):
                return True
        child, node = node, node.parent
    return False


def names_table(sql: str, table: str) -> bool:
    """Whether ``sql`` could name ``table``: its last part as a word, a wildcard (``events_*``)
    that it begins with, or a template or ``identifier(...)``/``table(...)`` anywhere. Cheap and
    wider than any reading (it decides whether to read the SQL)."""
    last = table.strip().split(".")[-1].strip('"`[] ')
    if not last:
        return False
    if OTHER_TEMPLATE.search(MODEL_REF.sub(" ", sql)) or DYNAMIC.search(sql):
        return True  # a name a template or a variable completes may be any table's
    if re.search(rf"(?<![\w$]){re.escape(last)}(?:\$\w*)?(?![\w$])", sql, re.IGNORECASE) is not None:
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
