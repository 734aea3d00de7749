"""The warehouse tables that asset URIs name: what a load DAG's asset events say it wrote.

Airflow's providers register URIs for their tables (their ``asset-uris``), and the warehouses whose
providers register none are named as OpenLineage names datasets (a namespace, then
``db.schema.table``). Both are read here, nothing else: an asset that names no table (a file, a
dashboard, an unknown scheme, a table URI of the wrong shape) is given back with the reason.

==================  ============================================  =========================
scheme              URI                                           table
==================  ============================================  =========================
postgres(ql)        ``postgres://host:5432/db/schema/table``      ``db.schema.table``
mysql, mariadb      ``mysql://host:3306/db/table``                ``db.table``
trino               ``trino://host:8080/catalog/schema/table``    ``catalog.schema.table``
bigquery            ``bigquery://project/dataset/table``          ``project.dataset.table``
snowflake           ``snowflake://org-account/db.schema.table``   ``db.schema.table``
redshift            ``redshift://cluster.region:5439/db.s.t``     ``db.s.t``
databricks          ``databricks://host/catalog.schema.table``    ``catalog.schema.table``
==================  ============================================  =========================

A part that holds a dot, a quote or a space is quoted as its warehouse quotes names (double
quotes; backticks for MySQL and BigQuery), so that the name splits back into the same parts.

A URI's parts are names as the warehouse stores them, not SQL: what ``create_asset(table=...)``
is given, and what OpenLineage reads from the information schema. PostgreSQL stores an unquoted
name folded to lower case, so a part with a capital letter (``.../public/Orders``) can only be a
name created quoted: it is kept as written (``"Orders"``), never folded into ``orders``, another
table. A part the URI itself quotes (``%22Orders%22``, or the quoted parts of an OpenLineage
``db.schema.table``) is read as quoted, not with its quotes as part of the name.

Each table is given with ``server``, the URI's ``host:port`` (where the table is; None for
BigQuery, whose project is the table's first part), so that it can be compared with the server
a data source reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

PATH_SHAPE = {"postgres": "db/schema/table", "postgresql": "db/schema/table", "mysql": "db/table",
              "mariadb": "db/table", "trino": "catalog/schema/table", "bigquery": "project/dataset/table"}
"""The URIs providers register: the table's parts are the path's segments (BigQuery's project is its host)."""
DOTTED_NAME = {"snowflake": 3, "redshift": 3, "databricks": 3}
"""OpenLineage's naming: the table is the path's one segment, ``db.schema.table``."""
WAREHOUSE = {"postgresql": "postgres", "mariadb": "mysql"}
BACKTICKS = frozenset({"mysql", "bigquery"})
EXACT_CASE = frozenset({"postgres"})
"""Warehouses whose stored names are lower case unless created quoted: a capital letter means quoted."""


@dataclass(frozen=True)
class AssetTable:
    """One asset URI: the table it names (``table``, with its ``warehouse``), or why it names none."""

    uri: str
    table: str | None = None
    warehouse: str | None = None
    why_not: str = ""
    server: str | None = None
    """The URI's ``host:port``, lower case (None for BigQuery)."""


def table_of(uri: str) -> AssetTable:
    """The table ``uri`` names, or why it names none."""
    try:
        parts = urlsplit(uri)
    except ValueError as exc:
        return AssetTable(uri, why_not=f"not a URI ({exc})")
    scheme = parts.scheme.lower()
    warehouse = WAREHOUSE.get(scheme, scheme)
    quote = "`" if warehouse in BACKTICKS else '"'
    if scheme in PATH_SHAPE:
        segments = [_unquoted_segment(unquote(s), quote) for s in parts.path.split("/")[1:]]
        shape = PATH_SHAPE[scheme]
        if scheme == "bigquery":
            segments = [_unquoted_segment(unquote(parts.netloc), quote), *segments]
            if segments[-1][0].partition("$")[0]:  # a partition decorator (page_views$20240101): the table
                segments[-1] = (segments[-1][0].partition("$")[0], segments[-1][1])
        if len(segments) != shape.count("/") + 1 or not all(text for text, _ in segments):
            where = f"{scheme}://{shape}" if scheme == "bigquery" else f"{scheme}://host:port/{shape}"
            return AssetTable(uri, why_not=f"a {scheme} table's URI is {where}")
    elif scheme in DOTTED_NAME:
        from analytics_provider.impact.tables import split_parts

        why = f"OpenLineage names a {scheme} table {scheme}://<namespace>/db.schema.table"
        try:
            segments = split_parts(unquote(parts.path.lstrip("/")))
        except ValueError:
            return AssetTable(uri, why_not=why)
        if len(segments) != DOTTED_NAME[scheme] or not parts.netloc:
            return AssetTable(uri, why_not=why)
    else:
        return AssetTable(uri, why_not=f"not a warehouse table (scheme {scheme or 'none'!r})")
    server = None if scheme == "bigquery" else parts.netloc.rsplit("@", 1)[-1].lower() or None
    name = ".".join(_quoted(text, quoted, quote, warehouse) for text, quoted in segments)
    return AssetTable(uri, name, warehouse, server=server)


def tables_of(uris: Iterable[str]) -> tuple[list[AssetTable], list[AssetTable]]:
    """The distinct tables ``uris`` name (first seen first; the same name in two warehouses, or on
    two servers, is two tables), and the assets that name none."""
    named: dict[tuple[str | None, str | None, str], AssetTable] = {}
    ignored: list[AssetTable] = []
    for uri in uris:
        found = table_of(uri)
        if found.table is None:
            ignored.append(found)
        else:
            named.setdefault((found.warehouse, found.server, found.table), found)
    return list(named.values()), ignored


def _unquoted_segment(segment: str, quote: str) -> tuple[str, bool]:
    """A path segment's name, and whether the URI quoted it (``"Orders"``)."""
    if len(segment) > 2 and segment[0] == segment[-1] == quote:
        return segment[1:-1].replace(quote * 2, quote), True
    return segment, False


def stored_quoted(part: str, warehouse: str | None) -> bool:
    """Whether a name as ``warehouse`` stores it (a URI's part, a location's database) can only have
    been created quoted: a capital letter in PostgreSQL's. Both sides of a comparison read it so."""
    return WAREHOUSE.get(str(warehouse), str(warehouse)) in EXACT_CASE and part != part.lower()


def _quoted(part: str, quoted: bool, quote: str, warehouse: str) -> str:
    """``part`` as its warehouse writes it in a dotted name (BigQuery's project ids hold hyphens):
    quoted where the URI quoted it, where it is not a plain word, or (PostgreSQL) where it holds a
    capital letter, which only a name created quoted holds."""
    bare = part.replace("_", "").replace("-", "") if warehouse == "bigquery" else part.replace("_", "")
    exact = quoted or stored_quoted(part, warehouse)
    if bare.isalnum() and part.isascii() and not exact:
        return part
    return quote + part.replace(quote, quote * 2) + quote
