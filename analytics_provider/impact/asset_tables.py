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


@dataclass(frozen=True)
class AssetTable:
    """One asset URI: the table it names (``table``, with its ``warehouse``), or why it names none."""

    uri: str
    table: str | None = None
    warehouse: str | None = None
    why_not: str = ""


def table_of(uri: str) -> AssetTable:
    """The table ``uri`` names, or why it names none."""
    try:
        parts = urlsplit(uri)
    except ValueError as exc:
        return AssetTable(uri, why_not=f"not a URI ({exc})")
    scheme = parts.scheme.lower()
    if scheme in PATH_SHAPE:
        segments = [unquote(s) for s in parts.path.split("/")[1:]]
        shape = PATH_SHAPE[scheme]
        if scheme == "bigquery":
            segments = [unquote(parts.netloc), *segments]
        if len(segments) != shape.count("/") + 1 or not all(segments):
            where = f"{scheme}://{shape}" if scheme == "bigquery" else f"{scheme}://host:port/{shape}"
            return AssetTable(uri, why_not=f"a {scheme} table's URI is {where}")
    elif scheme in DOTTED_NAME:
        name = unquote(parts.path.lstrip("/"))
        segments = name.split(".")
        if len(segments) != DOTTED_NAME[scheme] or not all(segments) or not parts.netloc:
            return AssetTable(uri, why_not=f"OpenLineage names a {scheme} table {scheme}://<namespace>/db.schema.table")
    else:
        return AssetTable(uri, why_not=f"not a warehouse table (scheme {scheme or 'none'!r})")
    warehouse = WAREHOUSE.get(scheme, scheme)
    quote = "`" if warehouse in BACKTICKS else '"'
    return AssetTable(uri, ".".join(_quoted(s, quote, warehouse) for s in segments), warehouse)


def tables_of(uris: Iterable[str]) -> tuple[list[AssetTable], list[AssetTable]]:
    """The distinct tables ``uris`` name (first seen first), and the assets that name none."""
    named: dict[str, AssetTable] = {}
    ignored: list[AssetTable] = []
    for uri in uris:
        found = table_of(uri)
        if found.table is None:
            ignored.append(found)
        else:
            named.setdefault(found.table, found)
    return list(named.values()), ignored


def _quoted(part: str, quote: str, warehouse: str) -> str:
    """``part`` as its warehouse writes it in a dotted name (BigQuery's project ids hold hyphens)."""
    bare = part.replace("_", "").replace("-", "") if warehouse == "bigquery" else part.replace("_", "")
    if bare.isalnum() and part.isascii():
        return part
    return quote + part.replace(quote, quote * 2) + quote
