"""From changed tables, models and data sets to the dashboards that read them, each with why.

The walk, over what the API gives (no I/O here; the hook reads and hands the answers in):

* a table is read by the data models whose ``table_name`` names it (:mod:`.tables`); a table no
  model reads is noted, not an error;
* a query model (``sql``, no ``table_name``) reads the tables its SQL names (:mod:`.sql`, parsed
  in its data source's dialect); SQL that cannot be parsed is taken to read a table it names, and
  a note says so;
* a changed model changes the data sets that use it and the models built on it, followed
  transitively (``GET /dependencies/downstream_dependencies``: ``data_set_ids``,
  ``data_model_ids``), and its data source's cache;
* in such a data set, a report is impacted when any of what it reads is: a field (``viz_setting``:
  each field's ``path_hash`` or ``field_path`` names its ``model_id``; an ad-hoc field's SQL names
  models as ``{{ #model.field }}``) on a changed model; or a field that names no model (a data
  set's metric, ad-hoc SQL without a model), which may read any model of the data set, so it is
  taken as impacted and its why names the field. One whose fields all name other models is not;
  one whose fields name no model at all is taken as impacted, and its why says the contract could
  not tell. Every report of a changed data set (given as an input) is impacted;
* a widget shows a report (``source_type`` QueryReport, ``source_id``); a dashboard filter mapped
  to a widget on a changed model's field impacts that widget too; a widget whose source the API
  does not describe (a VizBlock without its definition, a QueryMetric) is taken as impacted when
  any data set is, and says so; text widgets never are;
* a dashboard is impacted when one of its widgets is; one whose widgets are not known (a list
  that left them out, and reading it alone did not give them) is taken as impacted, with a note.
  Each impacted dashboard names the data sources it reads (``data_source_ids``; None: not known),
  whose cache busts its preload waits for.

Ids are compared as text (the API gives widget and some model ids as strings).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.impact.asset_tables import DOTTED_NAME, PATH_SHAPE, stored_quoted
from analytics_provider.impact.tables import (
    BACKTICK_DIALECTS,
    TableName,
    dialects_quoting,
    known_dialect,
    name_rules,
    parse_table,
    table_or_none,
)

Json = Mapping[str, Any]
ARROW = " -> "
MAX_WHYS = 3
"""The most chains a dashboard's why shows (then how many more there are)."""
UNDESCRIBED_SOURCES = frozenset({"VizBlock", "QueryMetric"})
TEXT_SOURCES = frozenset({"Text"})


def key(value: Any) -> str:
    return str(value).strip()


@dataclass
class Node:
    """One impacted object: its id, its label and the chains that link it to an input."""

    id: Any
    label: str
    whys: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def why(self) -> str:
        shown = self.whys[:MAX_WHYS]
        more = len(self.whys) - len(shown)
        return "; ".join(shown) + (f" (and {more} more)" if more else "")

    def add(self, why: str) -> None:
        if why not in self.whys:
            self.whys.append(why)


@dataclass
class Impact:
    """What the inputs impact. ``notes`` say where the answer is wider than it might be, and which
    inputs nothing reads."""

    tables: dict[str, list[Any]] = field(default_factory=dict)
    """Each table asked (as given) and the ids of the models that read it (none: nothing reads it)."""
    data_sources: dict[str, Node] = field(default_factory=dict)
    data_models: dict[str, Node] = field(default_factory=dict)
    data_sets: dict[str, Node] = field(default_factory=dict)
    reports: dict[str, Node] = field(default_factory=dict)
    widgets: dict[str, Node] = field(default_factory=dict)
    dashboards: dict[str, Node] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unmatched: dict[str, list[str]] = field(default_factory=dict)
    """Each table asked that no model reads, and the model tables closest to it by spelling."""
    left_out: dict[str, str] = field(default_factory=dict)
    """Each table asked whose models were left out, and why (data_sources, warehouse, server, database)."""
    unchecked: list[dict[str, Any]] = field(default_factory=list)
    """Each match whose server or database could not be checked: ``{"table", "data_source_id", "not_checked"}``."""

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON: each kind a list of ``{"id", "name" or "title", "why"}``."""
        def rows(nodes: Mapping[str, Node], label: str) -> list[dict[str, Any]]:
            return [{"id": n.id, label: n.label, "why": n.why, **n.extra} for n in nodes.values()]

        return {
            "tables": [{"table": t, "data_model_ids": ids, **({"closest": self.unmatched[t]} if t in self.unmatched
                                                               else {}),
                        **({"left_out": self.left_out[t]} if t in self.left_out else {})}
                       for t, ids in self.tables.items()],
            "data_sources": rows(self.data_sources, "name"),
            "data_models": rows(self.data_models, "name"),
            "data_sets": rows(self.data_sets, "name"),
            "reports": rows(self.reports, "title"),
            "widgets": rows(self.widgets, "title"),
            "dashboards": rows(self.dashboards, "title"),
            "notes": list(self.notes),
            "unchecked": list(self.unchecked),
        }


class TableOrigin(NamedTuple):
    """Where a table was said to be written: its warehouse (a dbt ``adapter_type`` or a ``dbtype``;
    None: a dbt run that does not say) and, from an asset URI, its server (``host:port``)."""

    warehouse: str | None
    server: str | None = None


class SourceLocation(NamedTuple):
    """The server (``host:port``, or ``host``) and database a data source reads, where known."""

    server: str | None = None
    database: str | None = None
    scheme: str | None = None
    """The location's scheme (``postgres``), checked against the data source's ``dbtype``."""


@dataclass(frozen=True)
class SourceScope:
    """The data sources whose models may be matched (``ids``, or of the ``dialects``, keys of
    :data:`~.tables.RULES`; both empty: every one), and where some of them are (``locations``,
    by data source id)."""

    ids: frozenset[str] = frozenset()
    dialects: frozenset[str] = frozenset()
    locations: Mapping[str, SourceLocation] = field(default_factory=dict)

    def allows(self, source_id: str, dbtype: Any) -> bool:
        if not self.ids and not self.dialects:
            return True
        return source_id in self.ids or known_dialect(dbtype) in self.dialects

    def __str__(self) -> str:
        return ", ".join([*sorted(self.ids, key=_id_order), *sorted(self.dialects)])


def check_schemes(scope: SourceScope, dbtypes: Mapping[str, Any], where: str = "find_impacted") -> None:
    """Refuse a location whose scheme is not its data source's warehouse (``snowflake://`` for a
    PostgreSQL data source), once the ``dbtype`` of each is known (at run time)."""
    for source, location in scope.locations.items():
        said, known = known_dialect(location.scheme), known_dialect(dbtypes.get(source))
        if said is not None and known is not None and said != known:
            raise AnalyticsParameterError(
                f"{where}: data_sources: data source {source} is {dbtypes.get(source)} (its dbtype), but its location "
                f"is a {location.scheme}:// one; give where it reads as {_scheme_of(known)}://...")


def _scheme_of(dialect: str) -> str:
    return next((s for s in (*PATH_SHAPE, *DOTTED_NAME) if known_dialect(s) == dialect), dialect)


def origins_of(value: Any) -> list[TableOrigin]:
    """A table's origins from what ``find_impacted``'s ``warehouses`` gives for it: a warehouse,
    None, a :class:`TableOrigin` or a list of them."""
    items = list(value) if isinstance(value, list) else [value]
    return [item if isinstance(item, TableOrigin) else TableOrigin(item) for item in items]


def same_server(one: str, other: str) -> bool:
    """Two ``host[:port]`` compared: the host without case; the port where both give one."""
    host, _, port = one.lower().rpartition(":") if ":" in one.split("]")[-1] else (one.lower(), "", "")
    other_host, _, other_port = (other.lower().rpartition(":") if ":" in other.split("]")[-1]
                                 else (other.lower(), "", ""))
    return host == other_host and (not port or not other_port or port == other_port)


@dataclass
class TableMatcher:
    """Matches the tables asked to models' tables, each compared by the rules of the model's data
    source (``dbtypes``: data source id -> its ``dbtype``; :mod:`.tables`), and says where it could
    not check all it was given (:attr:`notes`).

    * A database given with a table and not by the model's name must be one its data source's
      models name (``databases``; default: those of the models matched): a misspelt database, or
      another warehouse's, matches nothing. Where none of them names one (the API does not give a
      data source's database), it cannot be checked either way: matched on schema and table, and
      noted (refusing it would leave every dbt-postgres relation, and every OpenLineage-style
      ``db.schema.table``, unmatched).
    * A table from a known warehouse (``warehouses``: table -> its :class:`TableOrigin` list, or
      a dbt ``adapter_type`` or ``dbtype``) matches only models of data sources of that warehouse
      (a Snowflake run never refreshes PostgreSQL dashboards); an adapter not known, a table
      whose warehouse was not said (None), or a data source whose ``dbtype`` is not known: by
      name alone, noted. The same name written in two warehouses matches the models of both.
    * A table from a server (an asset URI's ``host:port``) matches only models of data sources
      that read that server, where the data source's server is known (``scope.locations``: given
      by the task, or in the service's answer); where it is not, matched, and :attr:`unchecked`
      says so. So is a database the data source's location names.
    * Only models of the data sources ``scope`` allows are matched.
    """

    tables: Sequence[str]
    default_schema: str | None = None
    fold: str | None = None
    dbtypes: Mapping[str, Any] = field(default_factory=dict)
    databases: Mapping[str, set[str]] | None = None
    warehouses: Mapping[str, Any] = field(default_factory=dict)
    scope: SourceScope = field(default_factory=SourceScope)
    notes: list[str] = field(default_factory=list)
    unchecked: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    """(table, data source id) -> what could not be checked (``server``, ``database``) of a match made."""
    _origins: dict[str, list[TableOrigin]] = field(default_factory=dict)
    _wanted: dict[Any, list[tuple[str, TableName]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for table in self.tables:
            parse_table(table, default_schema=self.default_schema, fold=self.fold)
        self._origins = {t: origins_of(w) for t, w in self.warehouses.items()}
        said = [o.warehouse for origins in self._origins.values() for o in origins]
        unknown = sorted({str(w) for w in said if w is not None and known_dialect(w) is None})
        if unknown:
            self.note(f"the warehouse of {', '.join(unknown)} is not one whose names are known: its tables are "
                      "matched by name in every data source")
        unsaid = [t for t, origins in self._origins.items() if any(o.warehouse is None for o in origins)]
        if any(dialects_quoting(t) is None for t in unsaid):
            self.note("the dbt run does not say its adapter (its manifest.json carries it): its relations are "
                      "matched by name in every data source")
        if any(dialects_quoting(t) is not None for t in unsaid):
            self.note("the dbt run does not say its adapter (its manifest.json carries it): its relations quoted "
                      f"with backticks are matched only in data sources of {', '.join(sorted(BACKTICK_DIALECTS))} "
                      "(or of a dbtype not known)")

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _source_databases(self, models: Sequence[Json]) -> Mapping[str, set[str]]:
        if self.databases is not None:
            return self.databases
        return source_databases(models, self.dbtypes, default_schema=self.default_schema, fold=self.fold)

    def match(self, models: Iterable[Json], why: Callable[[Json, TableName], Any] | None = None
              ) -> dict[str, list[Any]]:
        """Each table (as given) and the models whose ``table_name`` names it (or ``why(model,
        name)`` for each, when given). Call :meth:`finish` for the notes once all are matched."""
        models = list(models)
        databases = self._source_databases(models)
        found: dict[str, list[Any]] = {t: [] for t in self.tables}
        for model in models:
            source = key(model.get("data_source_id"))
            dbtype = self.dbtypes.get(source)
            if not self.scope.allows(source, dbtype):
                continue
            # a model's name without a schema is in its connection's, which the API does not give: any
            parsed = table_or_none(model.get("table_name"), default_schema=self.default_schema, fold=self.fold,
                                   dbtype=dbtype, assume_schema=self.default_schema is not None)
            if parsed is None:
                continue
            location = self.scope.locations.get(source) or SourceLocation()
            for table, want in self._wanted_by(dbtype):
                if not want.matches(parsed):
                    continue

                server_known = self._same_place(table, dbtype, location)
                if server_known is False:
                    continue  # another warehouse, or another server than the data source's
                unchecked = set() if server_known else {"server"}
                if want.database is not None and parsed.database is None:
                    known = set(databases.get(source) or ())
                    if location.database is not None:
                        known.add(name_rules(dbtype).compared(
                            location.database, stored_quoted(location.database, known_dialect(dbtype)), database=True))
                    if known and want.database not in known:
                        continue  # another database than the data source's
                    if not known:
                        unchecked.add("database")
                if unchecked:
                    self.unchecked.setdefault((table, source), set()).update(unchecked)
                if parsed.schema is None and want.schema is not None and name_rules(dbtype).default_schema:
                    self.note(f"data source {source}: model {model.get('name') or '?'} ({model.get('id')}) names "
                              f"{model.get('table_name')} without a schema, and the API does not say its default "
                              f"schema: matched on the table name to {table} (default_schema says it)")
                found[table].append(model if why is None else why(model, parsed))
        return found

    def why_left_out(self, table: str, models: Iterable[Json]) -> str:
        """Why the models whose ``table_name`` names ``table`` were not matched (the task's
        ``data_sources``, the table's warehouse, server or database); '' when no model names it."""
        by_name = TableMatcher([table], self.default_schema, self.fold, self.dbtypes, {}, {}, SourceScope())
        reasons: list[str] = []
        for source in dict.fromkeys(key(m.get("data_source_id")) for m in by_name.match(models)[table]):
            why = self._why_not_source(table, source)
            if why and why not in reasons:
                reasons.append(why)
        return "; ".join(f"{table} is read by data source {r}" for r in reasons)

    def _why_not_source(self, table: str, source: str) -> str:
        dbtype = self.dbtypes.get(source)
        if not self.scope.allows(source, dbtype):
            return f"{source}'s models, but data_sources=[{self.scope}] leaves data source {source} out"
        location = self.scope.locations.get(source) or SourceLocation()
        if self._same_place(table, dbtype, location) is False:
            origins = self._origins.get(table) or []
            servers = sorted({o.server for o in origins if o.server})
            if location.server is not None and servers and not any(same_server(s, location.server) for s in servers):
                return (f"{source}'s models, but data source {source} is on another server ({location.server}, "
                        f"data_sources; the table's: {', '.join(servers)})")
            written = sorted({str(o.warehouse) for o in origins if o.warehouse}) or ["a warehouse quoting backticks"]
            return (f"{source}'s models, but data source {source} is {dbtype} and the table was written to "
                    f"{', '.join(written)}")
        return f"{source}'s models, but in another database than the table's (the data source's: " + ", ".join(
            sorted(self._source_databases([]).get(source) or ()) or [str(location.database)]) + ")"

    def may_read(self, table: str, source: str) -> bool:
        """Whether a model of data source ``source`` may read ``table`` at all (its scope, its
        warehouse and server), whatever its names."""
        dbtype = self.dbtypes.get(source)
        location = self.scope.locations.get(source) or SourceLocation()
        return self.scope.allows(source, dbtype) and self._same_place(table, dbtype, location) is not False

    def _wanted_by(self, dbtype: Any) -> list[tuple[str, TableName]]:
        if dbtype not in self._wanted:
            self._wanted[dbtype] = [(t, parse_table(t, default_schema=self.default_schema, fold=self.fold,
                                                    dbtype=dbtype)) for t in self.tables]
        return self._wanted[dbtype]

    def _same_place(self, table: str, dbtype: Any, location: SourceLocation) -> bool | None:
        """Whether ``table`` may be in the data source: False when no origin of it is (another
        warehouse, another server); True when one is and its server is checked or not said;
        None when one may be but its server could not be checked (the data source's is not known)."""
        origins = self._origins.get(table)
        if not origins:
            return True  # given by name: any warehouse
        source = known_dialect(dbtype)
        found: bool | None = False
        for origin in origins:
            warehouse = known_dialect(origin.warehouse)
            if warehouse is not None and source is not None and warehouse != source:
                continue
            family = dialects_quoting(table) if origin.warehouse is None else None
            if family is not None and source is not None and source not in family:
                continue  # a dbt run that does not say its adapter, but whose quoting does
            if origin.server is None:
                return True
            if location.server is None:
                found = None
            elif same_server(origin.server, location.server):
                return True
        return found

    def finish(self) -> list[str]:
        """The notes: what could not be checked (also in :attr:`unchecked`)."""
        for what in ("database", "server"):
            by_source: dict[str, list[str]] = {}
            for (table, source), unchecked in self.unchecked.items():
                if what in unchecked:
                    by_source.setdefault(source, []).append(table)
            for source, tables in by_source.items():
                self.note(f"data source {source}: none of its models names a database, so the database of "
                          f"{_some(tables)} could not be checked: matched on schema and table" if what == "database"
                          else f"data source {source}: the API does not say which server it reads, so the server of "
                          f"{_some(tables)} (an asset's host) could not be checked: matched on its name "
                          f"(data_sources={{{source}: 'scheme://host:port/database'}} says it)")
        return self.notes


def _some(names: Iterable[str], shown: int = 5) -> str:
    found = sorted(set(names))
    return ", ".join(found[:shown]) + (f" (and {len(found) - shown} more)" if len(found) > shown else "")


def source_databases(models: Iterable[Json], dbtypes: Mapping[str, Any], *, default_schema: str | None = None,
                     fold: str | None = None) -> dict[str, set[str]]:
    """The databases the models of each data source name (in the compared form of its warehouse)."""
    found: dict[str, set[str]] = {}
    for model in models:
        source = key(model.get("data_source_id"))
        parsed = table_or_none(model.get("table_name"), default_schema=default_schema, fold=fold,
                               dbtype=dbtypes.get(source))
        if parsed is not None and parsed.database is not None:
            found.setdefault(source, set()).add(parsed.database)
    return found


def match_tables(
    tables: Sequence[str], models: Iterable[Json], *, default_schema: str | None = None, fold: str | None = None,
    dbtypes: Mapping[str, Any] | None = None,
) -> dict[str, list[Json]]:
    """Each table (as given) and the models whose ``table_name`` names it (:class:`TableMatcher`,
    its notes left out). A name that is not a table's raises
    :class:`~analytics_provider.exceptions.AnalyticsParameterError`."""
    return TableMatcher(tables, default_schema, fold, dict(dbtypes or {})).match(models)


def model_label(model: Json) -> str:
    kind = "query model" if model.get("sql") and not model.get("table_name") else "model"
    return f"{kind} {model.get('name') or '?'} ({model.get('id')})"


def match_sql_models(
    matcher: TableMatcher, models: Iterable[Json], dbtype_of: Callable[[Any], Any],
) -> dict[str, list[tuple[Json, str]]]:
    """Each table of ``matcher`` and the query models whose SQL reads it, each with how: the SQL
    reads it, or could not be parsed and names it (every part the table is given with, by the
    rules of the model's data source: :func:`~.sql.names_in_text`), noted."""
    from analytics_provider.impact.sql import SqlNotRead, names_in_text, names_table, read_sql

    found: dict[str, list[tuple[Json, str]]] = {t: [] for t in matcher.tables}
    for model in models:
        sql = model.get("sql")
        if model.get("table_name") or not isinstance(sql, str) or not sql.strip():
            continue
        if not any(names_table(sql, t) for t in matcher.tables):
            continue  # a table its text does not name, its parse cannot find (and sqlglot's import costs 0.8 s)
        dbtype = dbtype_of(model.get("data_source_id"))
        problem = None
        unresolved: list[Any] = []
        try:
            read, unresolved = read_sql(sql, dbtype)
        except SqlNotRead as exc:
            problem = str(exc)
            read = names_in_text(sql, hyphens=name_rules(dbtype).dotted_quotes)
        how = "its SQL reads {}" if problem is None else "its SQL could not be parsed and names {}: taken as impacted"
        as_tables = [{**model, "table_name": name} for name in read]
        named = []
        for table, readers in matcher.match(as_tables, lambda m, _: m["table_name"]).items():
            for name in readers[:1]:
                found[table].append((model, how.format(name)))
                named.append(table)
        if problem is not None:
            matcher.note(f"{model_label(model)}: its SQL could not be parsed ({problem}); "
                         + (f"it names {', '.join(named)}: taken as impacted" if named else
                            "it names none of the tables given (every part of each, by its data source's rules)"))
        for name in unresolved:
            source, rules = key(model.get("data_source_id")), name_rules(dbtype)
            could = [t for t, want in matcher._wanted_by(dbtype)
                     if t not in named and matcher.may_read(t, source) and name.could_name(want, rules)]
            for table in could:
                found[table].append((model, f"its SQL names {name.written}, which only the run completes: "
                                            "taken as impacted"))
                named.append(table)
            matcher.note(f"{model_label(model)}: its SQL names {name.written}, which only the run completes (a "
                         "template or a variable): unresolved; " + (
                             f"it could name {', '.join(could)}: taken as impacted" if could
                             else "it cannot name any of the tables given"))
    return found


def model_tables(models: Iterable[Json], dbtype_of: Callable[[Any], Any]) -> list[str]:
    """Every table the models name: ``table_name``, or what a query model's SQL reads (where it parses)."""
    from analytics_provider.impact.sql import SqlNotRead, tables_read

    names = []
    for model in models:
        if isinstance(model.get("table_name"), str):
            names.append(model["table_name"])
        elif isinstance(model.get("sql"), str):
            try:
                names += tables_read(model["sql"], dbtype_of(model.get("data_source_id")))
            except SqlNotRead:
                continue
    return names


def closest_tables(table: str, names: Iterable[str], n: int = 3) -> list[str]:
    """The model tables nearest to ``table`` by spelling (difflib), for a table no model reads:
    those whose table part is close (nearest first, then by the whole name); where none is, those
    close as a whole."""
    import difflib

    def folded(name: str) -> str:
        return name.lower().replace('"', "").replace("`", "").replace("[", "").replace("]", "")

    def ratio(one: str, other: str, least: float) -> float:
        """difflib's ratio, or 0 where its cheap upper bounds already fall short of ``least`` (a lookup
        against 1,000 models took 86 ms: a dbt build of 20,000 tables nothing reads, half an hour)."""
        matcher = difflib.SequenceMatcher(None, one, other)
        if matcher.real_quick_ratio() < least or matcher.quick_ratio() < least:
            return 0.0
        return matcher.ratio()

    want = folded(table)
    want_last = want.rsplit(".", 1)[-1]
    scored = []
    for name in sorted(set(names)):
        last = ratio(want_last, folded(name).rsplit(".", 1)[-1], 0.6)
        whole = ratio(want, folded(name), 0.6 if last < 0.6 else 0.0)
        if last >= 0.6 or whole >= 0.6:
            scored.append((last >= 0.6, last if last >= 0.6 else whole, whole, name))
    if any(by_table for by_table, *_ in scored):
        scored = [s for s in scored if s[0]]
    scored.sort(key=lambda s: (-s[1], -s[2], s[3]))
    return [name for *_, name in scored[:n]]


def data_set_label(data_set: Json) -> str:
    return f"data set {data_set.get('uname') or data_set.get('name') or '?'} ({data_set.get('id')})"


def field_models(viz_setting: Any) -> set[str]:
    """The model ids a report's fields, filters and ad-hoc fields name (``path_hash`` or ``field_path``)."""
    return field_sources(viz_setting).model_ids


class FieldSources(NamedTuple):
    """What a report's fields read, as far as they say."""

    model_ids: set[str]
    """The models named by a field's ``path_hash`` or ``field_path``."""
    model_names: set[str]
    """The models an ad-hoc field's SQL names (``{{ #orders.revenue }}``), lower case."""
    unnamed: list[str]
    """The fields that name no model (a data set's metric, ad-hoc SQL without a model): they may
    read any model of the data set."""


_MODEL_IN_SQL = re.compile(r"\{\{\s*#\s*([A-Za-z_]\w*)")


def field_sources(viz_setting: Any) -> FieldSources:
    """The models a report's fields, filters and ad-hoc fields read (:class:`FieldSources`)."""
    found = FieldSources(set(), set(), [])

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            paths: list[Mapping[str, Any]] = [value[n] for n in ("path_hash", "field_path")
                                              if isinstance(value.get(n), Mapping)]
            for path in paths:
                if path.get("model_id") not in (None, ""):
                    found.model_ids.add(key(path["model_id"]))
                else:
                    found.unnamed.append(str(path.get("field_name") or value.get("name") or "?"))
            if not paths and isinstance(value.get("sql"), str):  # an ad-hoc field
                names = {n.lower() for n in _MODEL_IN_SQL.findall(value["sql"])}
                found.model_names.update(names)
                if not names:
                    found.unnamed.append(str(value.get("name") or value.get("label") or "?"))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(viz_setting)
    return found


class ImpactWalk:
    """Builds an :class:`Impact` step by step as the hook hands in what it read."""

    def __init__(self) -> None:
        self.impact = Impact()
        self.changed_models: dict[str, str] = {}
        """Changed model id -> the chain to it."""
        self.changed_sets: dict[str, str] = {}
        """Data set id -> chain, for a data set that changed whole (given as an input)."""
        self.model_sets: dict[str, set[str]] = {}
        """Changed model id -> the data sets that use it."""
        self.sourceless: set[str] = set()
        """Changed models whose data source is not known (taken from the data sets that use them)."""
        self.model_sources: dict[str, str] = {}
        """Model id -> its data source's id (where known)."""
        self.set_sources: dict[str, str] = {}
        """Data set id -> its data source's id (the data sets read)."""
        self.report_sources: dict[str, str] = {}
        """Impacted report id -> the data source it reads."""
        self.model_names: dict[str, str] = {}
        """Changed model id -> its name, lower case (ad-hoc fields name models by name)."""

    # -- inputs ------------------------------------------------------------------------------------

    def add_model(self, model: Json, why: str, how: str = "") -> None:
        """A changed model; ``why`` the chain to it, ``how`` what links it (``its SQL reads ...``)."""
        ident = key(model.get("id"))
        label = f"{model_label(model)} ({how})" if how else model_label(model)
        chain = f"{why}{ARROW}{label}" if why else label
        node = self.impact.data_models.setdefault(ident, Node(model.get("id"), str(model.get("name") or ""),
                                                              extra={"table_name": model.get("table_name")}))
        node.add(chain)
        self.changed_models.setdefault(ident, chain)
        if model.get("name"):
            self.model_names.setdefault(ident, str(model["name"]).lower())
        if model.get("data_source_id") is None:
            self.sourceless.add(ident)  # given by id alone: its data source is its data sets'
        else:
            self.model_sources[ident] = key(model["data_source_id"])
        self._add_source(model.get("data_source_id"), chain)

    def builds(self, model_id: Any, models: Iterable[Json]) -> list[str]:
        """The models built on a changed model (its dependants' ``data_model_ids``): changed too,
        each once, with the chain through it. Returns the ids newly changed (to follow in turn)."""
        parent = self.changed_models[key(model_id)]
        added = []
        for model in models:
            if key(model.get("id")) not in self.changed_models:
                self.add_model(model, parent, "built on it")
                added.append(key(model.get("id")))
        return added

    def built_by_sql(self, model_id: Any, listed: Iterable[Any], models: Iterable[Json]) -> list[dict[str, Any]]:
        """The query models among ``models`` whose SQL names the changed model ``model_id``
        (``{{ #orders o }}``) and that the service did not list among its dependants (``listed``):
        built on it all the same (the service's answer left one out, and its dashboard stale, with
        no note); said in a note."""
        from analytics_provider.impact.sql import models_named

        name = self.model_names.get(key(model_id))
        seen = {key(m) for m in listed} | set(self.changed_models)
        found = [dict(m) for m in models if name and isinstance(m.get("sql"), str) and key(m.get("id")) not in seen
                 and name in models_named(m["sql"])]
        if found:
            self.impact.note(f"{_some(model_label(m) for m in found)}: built on data model {name} by their SQL, "
                             "which the service did not list among its dependants; taken as changed too")
        return found

    def add_data_set(self, data_set: Json, why: str) -> None:
        """A data set given as an input: all of it changed."""
        ident = key(data_set.get("id"))
        chain = f"{why}{ARROW}{data_set_label(data_set)}" if why else data_set_label(data_set)
        self._set_node(data_set).add(chain)
        self.changed_sets.setdefault(ident, chain)
        if data_set.get("data_source_id") is not None:
            self.set_sources[ident] = key(data_set["data_source_id"])
        self._add_source(data_set.get("data_source_id"), chain)

    def _add_source(self, source_id: Any, chain: str) -> None:
        if source_id is None:
            return
        node = self.impact.data_sources.setdefault(key(source_id), Node(source_id, f"data source {source_id}"))
        node.add(f"{chain}{ARROW}data source {source_id}")

    def _set_node(self, data_set: Json) -> Node:
        ident = key(data_set.get("id"))
        return self.impact.data_sets.setdefault(
            ident, Node(data_set.get("id"), str(data_set.get("uname") or data_set.get("name") or "")))

    # -- models to data sets -----------------------------------------------------------------------

    def uses(self, model_id: Any, data_set_ids: Iterable[Any]) -> None:
        """The data sets that use a changed model (its downstream dependants)."""
        self.model_sets.setdefault(key(model_id), set()).update(key(d) for d in data_set_ids)

    def impacted_set_ids(self) -> list[str]:
        """The data sets that use a changed model or changed whole, in a stable order."""
        found = set(self.changed_sets)
        for model_id in self.changed_models:
            found |= self.model_sets.get(model_id, set())
        return sorted(found, key=_id_order)

    # -- data sets to reports ----------------------------------------------------------------------

    def read_data_set(self, data_set: Json) -> bool:
        """Take a data set as read with its models and reports; mark the reports impacted.
        False when its answer has no ``reports`` (they are then known only from the widgets)."""
        ident = key(data_set.get("id"))
        if data_set.get("data_source_id") is not None:
            self.set_sources[ident] = key(data_set["data_source_id"])
        whole = self.changed_sets.get(ident)
        changed_here = {m: self.changed_models[m] for m in self.changed_models if ident in self.model_sets.get(m, ())}
        if not whole and not changed_here:
            return True
        node = self._set_node(data_set)
        for model_id, chain in changed_here.items():
            node.add(f"{chain}{ARROW}{data_set_label(data_set)}")
            if model_id in self.sourceless:
                self._add_source(data_set.get("data_source_id"), f"{chain}{ARROW}{data_set_label(data_set)}")
        reports = data_set.get("reports")
        if not isinstance(reports, list):
            return False
        for report in reports:
            if isinstance(report, Mapping):
                self.read_report(report, data_set)
        return True

    def read_report(self, report: Json, data_set: Json | None = None) -> None:
        """Mark a report impacted when it reads a changed model of its data set (or the data set changed)."""
        set_id = key(report.get("data_set_id") if data_set is None else data_set.get("id"))
        set_chain = self._set_chain(set_id, data_set)
        if set_chain is None:
            return
        label = f"report {report.get('title')!r} ({report.get('id')})"
        whole = self.changed_sets.get(set_id)
        read = field_sources(report.get("viz_setting"))
        changed_here = [m for m in self.changed_models if set_id in self.model_sets.get(m, ())]
        used = [m for m in changed_here if m in read.model_ids or self.model_names.get(m) in read.model_names]
        if whole:
            why = f"{whole}{ARROW}{label}"
        elif used:
            set_label = data_set_label(data_set) if data_set is not None else f"data set {set_id}"
            why = f"{self.changed_models[used[0]]}{ARROW}{set_label}{ARROW}{label}"
        elif not read.model_ids and not read.model_names:
            why = f"{set_chain}{ARROW}{label} (its fields do not name their models: taken as impacted)"
        elif read.unnamed:
            shown = ", ".join(dict.fromkeys(read.unnamed))
            why = (f"{set_chain}{ARROW}{label} (its field(s) {shown} name no model, so may read the changed one: "
                   "taken as impacted)")
        else:
            return
        node = self.impact.reports.setdefault(key(report.get("id")), Node(report.get("id"), str(report.get("title"))))
        node.add(why)
        source = self.set_sources.get(set_id) or (key(report["data_source_id"]) if report.get("data_source_id")
                                                  is not None else None)
        if source is not None:
            self.report_sources[key(report.get("id"))] = source

    def _set_chain(self, set_id: str, data_set: Json | None) -> str | None:
        if set_id in self.changed_sets:
            return self.changed_sets[set_id]
        for model_id, chain in self.changed_models.items():
            if set_id in self.model_sets.get(model_id, ()):
                label = data_set_label(data_set) if data_set is not None else f"data set {set_id}"
                return f"{chain}{ARROW}{label}"
        return None

    # -- widgets and dashboards --------------------------------------------------------------------

    def unknown_reports(self, dashboards: Iterable[Json]) -> list[str]:
        """Report ids shown by widgets whose report was not read and is not in the widget's answer
        (asked for where a data set's answer gave no reports)."""
        missing = []
        for board in dashboards:
            for widget in board.get("widgets") or []:
                if (isinstance(widget, Mapping) and widget.get("source_type") == "QueryReport"
                        and key(widget.get("source_id")) not in self.impact.reports
                        and not isinstance(widget.get("query_report"), Mapping)):
                    missing.append(key(widget.get("source_id")))
        return sorted(set(missing), key=_id_order)

    def read_dashboards(self, dashboards: Iterable[Json]) -> None:
        """Mark the widgets and dashboards impacted (after the data sets and reports were read)."""
        anything = bool(self.changed_models or self.changed_sets)
        for board in dashboards:
            board_label = f"dashboard {board.get('title')!r} ({board.get('id')})"
            whys: list[str] = []
            board_whys: list[str] = []
            sources: set[str] | None = set()
            if not isinstance(board.get("widgets"), list) and anything:
                self.impact.note(f"{board_label}: its widgets are not known (not in the list, nor read alone); "
                                 "taken as impacted")
                board_whys, sources = [f"{board_label} (its widgets are not known: taken as impacted)"], None
            for widget in board.get("widgets") or []:
                if not isinstance(widget, Mapping):
                    continue
                why = self._widget_why(widget, board, anything)
                if why is None:
                    continue
                wid = key(widget.get("id"))
                title = str(widget.get("source_title") or "")
                node = self.impact.widgets.setdefault(wid, Node(widget.get("id"), title,
                                                                extra={"dashboard_id": board.get("id")}))
                node.add(why)
                whys.append(why)
                read = self._widget_sources(widget, board)
                sources = None if read is None or sources is None else sources | read
            if whys or board_whys:
                node = self.impact.dashboards.setdefault(
                    key(board.get("id")),
                    Node(board.get("id"), str(board.get("title") or ""),
                         extra={"tags": list(board.get("tags") or []), "data_source_ids": []}))
                for why in [f"{w}{ARROW}{board_label}" for w in whys] + board_whys:
                    node.add(why)
                known = node.extra["data_source_ids"]
                node.extra["data_source_ids"] = None if sources is None or known is None else sorted(
                    set(known) | sources, key=_id_order)

    def _widget_sources(self, widget: Json, board: Json) -> set[str] | None:
        """The data sources an impacted widget reads; None when the API does not say."""
        found: set[str] = set()
        if widget.get("source_type") == "QueryReport":
            source = self.report_sources.get(key(widget.get("source_id")))
            if source is not None:
                found.add(source)
        elif widget.get("source_type") == "VizBlock" and isinstance(widget.get("viz_block_definition"), Mapping):
            viz = widget["viz_block_definition"].get("viz") or {}
            source = self.set_sources.get(key(viz.get("dataset_id")))
            if source is not None:
                found.add(source)
        wid = key(widget.get("id"))
        for dynamic_filter in board.get("dynamic_filters") or []:
            for mapping in (dynamic_filter or {}).get("mappings") or []:
                if isinstance(mapping, Mapping) and key(mapping.get("viz_conditionable_id")) == wid:
                    source = self.model_sources.get(key((mapping.get("field_path") or {}).get("model_id")))
                    if source is not None:
                        found.add(source)
        return found or None

    def _widget_why(self, widget: Json, board: Json, anything: bool) -> str | None:
        label = f"widget {widget.get('source_title')!r} ({widget.get('id')})"
        source_type = widget.get("source_type")
        if source_type in TEXT_SOURCES:
            return None
        embedded = widget.get("query_report")
        if source_type == "QueryReport":
            report_id = key(widget.get("source_id"))
            if report_id not in self.impact.reports and isinstance(embedded, Mapping):
                self.read_report(embedded)
            if report_id in self.impact.reports:
                return f"{self.impact.reports[report_id].whys[0]}{ARROW}{label}"
        elif source_type == "VizBlock" and isinstance(widget.get("viz_block_definition"), Mapping):
            viz = widget["viz_block_definition"].get("viz") or {}
            as_report = {"id": f"viz {widget.get('id')}", "title": widget.get("source_title"),
                         "data_set_id": viz.get("dataset_id"), "viz_setting": viz.get("viz_setting")}
            if viz.get("dataset_id") is not None:
                self.read_report(as_report)
                found = self.impact.reports.pop(key(as_report["id"]), None)
                if found is not None:
                    return f"{found.whys[0]}{ARROW}{label}"
        elif anything and source_type in UNDESCRIBED_SOURCES | {None}:
            self.impact.note(f"dashboard {board.get('title')!r} ({board.get('id')}): the API does not say what its "
                             f"{source_type or 'untyped'} widgets read; taken as impacted")
            return f"{label} (a {source_type}: what it reads is not in the API; taken as impacted)"
        return self._filter_why(widget, board, label)

    def _filter_why(self, widget: Json, board: Json, label: str) -> str | None:
        """A dashboard filter mapped to this widget on a changed model's field."""
        wid = key(widget.get("id"))
        for dynamic_filter in board.get("dynamic_filters") or []:
            for mapping in (dynamic_filter or {}).get("mappings") or []:
                if not isinstance(mapping, Mapping) or key(mapping.get("viz_conditionable_id")) != wid:
                    continue
                model_id = key((mapping.get("field_path") or {}).get("model_id"))
                if model_id in self.changed_models:
                    name = ((dynamic_filter.get("definition") or {}).get("label")) or dynamic_filter.get("uname")
                    return f"{self.changed_models[model_id]}{ARROW}filter {name!r} of {label}"
        return None


def _id_order(value: str) -> tuple[int, int | str]:
    return (0, int(value)) if value.isdigit() else (1, value)
