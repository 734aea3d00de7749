"""The data sources a refresh may match, and where some of them are: the refresh operator's
``data_sources`` (and ``find_impacted``'s), read without I/O.

* A list of data source ids (``[1, 3]``) and warehouse types (``["postgresql"]``: a data
  source's ``dbtype``, by the names of :data:`~.tables.RULES` and their aliases): only models of
  those data sources are matched. Hand-typed ``tables`` and a dbt run without its manifest say no
  warehouse; this is how a task says which.
* A mapping of data source ids to where each reads (``{1: "postgres://warehouse:5432/analytics"}``,
  ``{4: "bigquery://acme-prod"}``, or None): only those are matched, and a table an asset names on
  another server (its URI's ``host:port``), or with another database, is not theirs. The API
  never says which server a data source reads (its answer leaves ``dbconfig`` out): without this,
  the server of an asset's table cannot be checked, and the result's ``unchecked_tables`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.impact.graph import SourceLocation, SourceScope
from analytics_provider.impact.tables import RULES, known_dialect

ALLOWED = ("a list of data source ids and warehouse types (" + ", ".join(sorted(RULES)) + "), or a mapping of "
           "data source ids to where each reads ('scheme://host:port/database', e.g. "
           "'postgres://warehouse:5432/analytics', 'snowflake://org-account/ANALYTICS', 'bigquery://project') "
           "or None")


def _id(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return str(value)
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return value.strip()
    return None


def location_of(text: str) -> SourceLocation:
    """``scheme://host:port/database`` (``bigquery://project``) as a :class:`SourceLocation`;
    ``ValueError`` naming what is wrong."""
    from analytics_provider.impact.asset_tables import DOTTED_NAME, PATH_SHAPE

    parts = urlsplit(text.strip())
    scheme = parts.scheme.lower()
    if scheme not in PATH_SHAPE and scheme not in DOTTED_NAME:
        raise ValueError(f"{text!r}: the scheme is one of {', '.join(sorted({*PATH_SHAPE, *DOTTED_NAME}))}")
    if "@" in parts.netloc:
        raise ValueError(f"{text!r}: a location names no user or password")
    if parts.query or parts.fragment or text.strip().endswith(("?", "#")):
        raise ValueError(f"{text!r}: a location has no query string or fragment (?sslmode=...: only where the "
                         "data source reads, scheme://host:port/database)")
    try:
        parts.port  # noqa: B018 (read to check it)
    except ValueError:
        raise ValueError(f"{text!r}: the port is not a number from 0 to 65535") from None
    segments = [unquote(s) for s in parts.path.split("/")[1:] if s]
    if scheme == "bigquery":
        if not parts.netloc or segments:
            raise ValueError(f"{text!r}: a BigQuery location is bigquery://project")
        return SourceLocation(None, unquote(parts.netloc), scheme)
    if not parts.netloc or len(segments) > 1:
        raise ValueError(f"{text!r}: a location is {scheme}://host:port or {scheme}://host:port/database")
    return SourceLocation(parts.netloc.lower(), segments[0] if segments else None, scheme)


def source_scope(value: Any, where: str, parameter: str = "data_sources") -> SourceScope:
    """``value`` (see the module's text) as a :class:`SourceScope`;
    :class:`AnalyticsParameterError` naming ``where``, the parameter and the allowed values."""
    def refuse(why: str) -> AnalyticsParameterError:
        return AnalyticsParameterError(f"{where}: {parameter} must be {ALLOWED}; {why}")

    if isinstance(value, Mapping):
        if not value:
            raise refuse("got {} (no data source would be matched)")
        locations: dict[str, SourceLocation] = {}
        ids = []
        for source, place in value.items():
            ident = _id(source)
            if ident is None:
                raise refuse(f"got the key {source!r}, not a data source id")
            if ident in ids:
                raise refuse(f"data source {ident} is given twice")
            ids.append(ident)
            if place is None:
                continue
            if not isinstance(place, str):
                raise refuse(f"got {place!r} for data source {ident}")
            try:
                locations[ident] = location_of(place)
            except ValueError as exc:
                raise refuse(str(exc)) from None
        return SourceScope(frozenset(ids), frozenset(), locations)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        raise refuse(f"got {value!r}")
    ids, dialects = [], []
    for item in value:
        ident = _id(item)
        if ident is not None and ident in ids:
            raise refuse(f"data source {ident} is given twice")
        if ident is not None:
            ids.append(ident)
        elif isinstance(item, str) and known_dialect(item) is not None:
            dialects.append(str(known_dialect(item)))
        else:
            raise refuse(f"got {item!r}, neither a data source id nor a warehouse type")
    return SourceScope(frozenset(ids), frozenset(dialects))
