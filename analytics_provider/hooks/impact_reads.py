"""The reads of :meth:`AnalyticsHook.find_impacted <analytics_provider.hooks.analytics.AnalyticsHook.find_impacted>`:
what the walk of :mod:`analytics_provider.impact.graph` needs, each read once per call.

In order: the models of the AML projects (``GET /data_models``; the projects from ``GET
/dashboards/list_metadata`` unless given), the dashboards 100 a page with their widgets (the data
sources they read: each widget's report, or its data set; one listed without widgets read alone,
and skipped with a note when that read answers 404: deleted since it was listed), the dependants
of every data source of those models, of the dashboards and of ``data_sources`` (models in no
project, found in the data sets that hold them; a widget whose data source no answer says is
counted in a note), the data source of each query model (its ``dbtype``: the dialect of its SQL),
the data sets and models built on each changed model, in turn (``GET
/dependencies/downstream_dependencies``), each impacted data set with its models and reports
(``GET /data_sets/{id}``), a report alone only where a data set's answer lacked its reports, and
the name of each impacted data source. Nothing is kept across calls: a
dashboard added since the last run is seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from analytics_provider.exceptions import AnalyticsApiError, AnalyticsLookupError, AnalyticsParameterError
from analytics_provider.hooks.names import LISTING_REFUSED, is_id

Json = dict[str, Any]
PAGE = 100
MAX_SOURCE_SETS = 20
"""The most data sets read only to learn which data source a dashboard's widget reads (its report
in none of the answers): past them, a note names the dashboards."""


class ImpactHook(Protocol):
    """The reads the walk makes, through the :class:`~analytics_provider.hooks.analytics.AnalyticsHook`
    that calls it (a protocol: the hook imports this module, so this one does not import the hook)."""

    def get_query_report(self, report_id: Any) -> Any: ...
    def list_data_models(self, project_id: int) -> Any: ...
    def list_dashboards_metadata(self) -> Any: ...
    def get_dependants(self, object_id: int, object_type: str) -> Any: ...
    def get_data_set(self, data_set_id: Any, *, include_models: bool | None = None,
                     include_reports: bool | None = None) -> Any: ...
    def list_dashboards(self, *, limit: int | None = None) -> Any: ...
    def get_dashboard(self, dashboard_id: Any) -> Any: ...
    def get_data_source(self, data_source_id: Any) -> Any: ...


def check_refs(method: str, name: str, value: Any) -> list[Any]:
    """A list argument of names or ids; a single string is refused (it would be read letter by letter)."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise AnalyticsParameterError(f"{method}: {name} must be a list; got {value!r}")
    items = list(value)
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int)) or not str(item).strip():
            raise AnalyticsParameterError(f"{method}: each of {name} must be a name or an id; got {item!r}")
    return items


def find_impacted(
    hook: ImpactHook,
    tables: Any,
    data_models: Any,
    data_sets: Any,
    *,
    project_ids: Sequence[int] | None,
    default_schema: str | None,
    fold: str | None,
    warehouses: Mapping[str, Any] | None = None,
    data_sources: Any = None,
) -> Json:
    from analytics_provider.impact.graph import (
        ImpactWalk,
        SourceScope,
        TableMatcher,
        TableOrigin,
        closest_tables,
        key,
        match_sql_models,
        model_tables,
        source_databases,
    )
    from analytics_provider.impact.tables import parse_table

    given = {name: check_refs("find_impacted", name, value)
             for name, value in (("tables", tables), ("data_models", data_models), ("data_sets", data_sets))}
    for table in given["tables"]:
        parse_table(table, default_schema=default_schema, fold=fold)
    if project_ids is not None and (isinstance(project_ids, (str, bytes)) or not all(is_id(p) for p in project_ids)):
        raise AnalyticsParameterError(f"find_impacted: project_ids must be a list of project ids; got {project_ids!r}")
    if project_ids is not None and not list(project_ids):
        raise AnalyticsParameterError("find_impacted: project_ids must name at least one AML project (None: those "
                                      "the dashboards belong to); got []")
    def origin(value: Any) -> bool:
        return value is None or isinstance(value, (str, TableOrigin))

    if warehouses is not None and (not isinstance(warehouses, Mapping) or not all(
            isinstance(t, str) and (origin(w) or (isinstance(w, list) and all(map(origin, w))))
            for t, w in warehouses.items())):
        raise AnalyticsParameterError("find_impacted: warehouses must map a table to its warehouse (a dbt "
                                      f"adapter_type or a dbtype, or None), or a list of them; got {warehouses!r}")
    if data_sources is not None and not isinstance(data_sources, SourceScope):
        raise AnalyticsParameterError("find_impacted: data_sources must be a SourceScope (analytics_provider.impact."
                                      f"scope.source_scope makes one) or None; got {data_sources!r}")
    if not any(given.values()):
        raise AnalyticsParameterError("find_impacted: give tables, data_models or data_sets (none was given)")
    reads = ImpactReads(hook, project_ids, data_sources.ids if data_sources is not None else ())
    walk = ImpactWalk()
    needs_catalog = bool(given["tables"]) or any(not is_id(m) for m in given["data_models"])
    catalog = reads.catalog() if needs_catalog else {}
    if needs_catalog and not catalog:
        raise AnalyticsLookupError(
            "find_impacted: no data model could be found, so nothing can be matched: " + reads.why_no_models()
            + "; give data_sources (the ids of the data sources whose models read the tables) or project_ids "
            "(the AML projects that define them)")
    for note in reads.catalog_notes:
        walk.impact.note(note)
    dbtypes = reads.dbtypes(catalog.values()) if given["tables"] else {}
    for note in reads.dbtype_notes(dbtypes):
        walk.impact.note(note)
    scope = data_sources or SourceScope()
    if given["tables"]:
        from analytics_provider.impact.graph import check_schemes

        check_schemes(scope, dbtypes)
    unknown = sorted(set(scope.ids) - set(dbtypes), key=lambda i: (len(i), i)) if given["tables"] else []
    if unknown:
        walk.impact.note(f"data_sources names {', '.join(unknown)}, no data source of the service's models (the "
                         f"ids: {', '.join(sorted(dbtypes, key=lambda i: (len(i), i)))})")
    matcher = TableMatcher(given["tables"], default_schema, fold, dbtypes,
                           source_databases(catalog.values(), dbtypes, default_schema=default_schema, fold=fold),
                           {t: w for t, w in (warehouses or {}).items() if t in given["tables"]},
                           reads.scope(scope, dbtypes))
    by_name = matcher.match(catalog.values()) if given["tables"] else {}
    by_sql = match_sql_models(matcher, catalog.values(), reads.dbtype) if given["tables"] else {}
    for note in matcher.finish():
        walk.impact.note(note)
    walk.impact.unchecked = [{"table": t, "data_source_id": s, "not_checked": sorted(what)}
                             for (t, s), what in matcher.unchecked.items()]
    named: list[str] | None = None
    hinted = 0
    for table in given["tables"]:
        readers = [(m, "") for m in by_name.get(table, [])] + [(m, how) for m, how in by_sql.get(table, [])]
        walk.impact.tables[table] = [m.get("id") for m, _ in readers]
        if not readers:
            named = named if named is not None else model_tables(catalog.values(), reads.dbtype)
            hinted += 1  # the nearest spellings of the first CLOSEST_HINTS (each a search of every model's)
            closest = closest_tables(table, named) if hinted <= CLOSEST_HINTS else []
            walk.impact.unmatched[table] = closest
            left_out = matcher.why_left_out(table, catalog.values())
            if left_out:
                walk.impact.left_out[table] = left_out
            walk.impact.note(f"table {table}: no data model reads it"
                             + (f"; {left_out}" if left_out else f" (closest: {', '.join(closest)})"
                                if closest else ""))
        for model, how in readers:
            walk.add_model(model, f"table {table}", how)
    if hinted > CLOSEST_HINTS:
        walk.impact.note(f"{hinted:,} tables no data model reads: the closest model tables are named for the first "
                         f"{CLOSEST_HINTS} only")
    for ref in given["data_models"]:
        walk.add_model(reads.model(ref, catalog), "")
    for ref in given["data_sets"]:
        walk.add_data_set(reads.data_set_named(ref), "")
    followed: list[str] = list(walk.changed_models)
    while followed:  # the dependants of each changed model, and of the models built on it in turn
        model_id = followed.pop(0)
        found = reads.dependants(model_id, "DataModel")
        walk.uses(model_id, found.get("data_set_ids") or [])
        built = [reads.known_model(m) for m in found.get("data_model_ids") or [] if key(m) not in walk.changed_models]
        built += walk.built_by_sql(model_id, found.get("data_model_ids") or [], catalog.values())
        followed += walk.builds(model_id, built)
    complete = True
    for set_id in walk.impacted_set_ids():
        complete = walk.read_data_set(reads.data_set(set_id)) and complete
    if walk.impact.data_sets:
        boards = reads.dashboards()
        for note in reads.notes:
            walk.impact.note(note)
        if not complete:
            for report_id in walk.unknown_reports(boards):
                walk.read_report(hook.get_query_report(report_id))
        walk.read_dashboards(boards)
    for source_id, node in walk.impact.data_sources.items():
        node.label = reads.source_name(source_id) or node.label
    return walk.impact.as_dict()


CLOSEST_HINTS = 200
"""Tables no model reads whose nearest model tables are searched for (a dbt build's tables are mostly
read by no model: 20,000 of them against 1,000 models were half an hour of spelling hints)."""


class ImpactReads:
    """The reads of one call, each made once."""

    def __init__(self, hook: ImpactHook, project_ids: Sequence[int] | None = None,
                 source_ids: Iterable[str] = ()) -> None:
        self.hook = hook
        self.source_ids = [str(s) for s in source_ids]
        """Data sources whose models are searched whatever the projects and dashboards say (``data_sources``)."""
        self.searched: list[str] = []
        """The data sources whose models the catalog holds (those of the projects' models, the dashboards' and
        ``source_ids``)."""
        self.catalog_notes: list[str] = []
        """What the catalog could not search (widgets whose data source the list does not say)."""
        self.unknown_widgets = 0
        self.unknown_boards: list[str] = []
        self.project_ids = None if project_ids is None else [int(p) for p in project_ids]
        self._catalog: dict[str, Json] | None = None
        self._dependants: dict[tuple[str, str], Json] = {}
        self._data_sets: dict[str, Json] = {}
        self._sources: dict[str, Json] = {}
        self._source_refused: dict[str, int] = {}
        self._dashboards: list[Json] | None = None
        self._listing_refused: int | None = None
        self.notes: list[str] = []
        """What the reads could not give as asked (dashboards listed without their widgets)."""

    def catalog(self) -> dict[str, Json]:
        """Every data model the key can see, by id: the projects' models, then those of their data
        sources that are in no project (read from the data sets that hold them)."""
        if self._catalog is not None:
            return self._catalog
        models: dict[str, Json] = {}
        missing: list[int] = []
        for project_id in self.projects():
            try:
                listed = list(self.hook.list_data_models(project_id))  # its pages are read here
            except AnalyticsApiError as exc:
                if exc.status != 404:
                    raise
                missing.append(project_id)
                continue
            for model in listed:
                models.setdefault(str(model.get("id")), model)
        if missing:
            raise AnalyticsLookupError(
                f"find_impacted: project_ids: no AML project {', '.join(map(str, missing))} (GET /data_models "
                f"answered 404); {self.known_projects()}")
        sources = {str(m["data_source_id"]) for m in models.values() if m.get("data_source_id") is not None}
        sources |= set(self.source_ids)
        sources |= self.dashboard_sources(sources)
        self.searched = sorted(sources, key=lambda s: (len(s), s))
        if self.unknown_widgets:
            boards = self.unknown_boards
            self.catalog_notes.append(
                f"the data sources of {self.unknown_widgets} widget(s) of dashboard(s) {', '.join(boards[:5])}"
                + (f" (and {len(boards) - 5} more)" if len(boards) > 5 else "")
                + " are not known (the dashboards' list does not carry their reports): searched the models of "
                "data source(s) "
                f"{', '.join(self.searched) or '(none)'} only; a model on another data source is matched when "
                "data_sources names it")
        for source_id in self.searched:
            found = self.dependants(source_id, "DataSource")
            unlisted = {str(m) for m in found.get("data_model_ids") or []} - set(models)
            for set_id in found.get("data_set_ids") or []:
                if not unlisted:
                    break
                for model in self.data_set(set_id).get("data_models") or []:
                    if str(model.get("id")) in unlisted:
                        models[str(model["id"])] = model
                        unlisted.discard(str(model["id"]))
        self._catalog = models
        return models

    def dashboard_sources(self, known: Iterable[str]) -> set[str]:
        """The data sources the dashboards read, as far as the answers say: the data sets their
        filters map, each widget's report (in the list, or in a data set read: those the filters
        map, then at most :data:`MAX_SOURCE_SETS` of the ``known`` data sources' while a widget's
        report is not found) or its data set. :attr:`unknown_widgets` counts the widgets it does
        not say for."""
        found: set[str] = set()
        boards = self.dashboards()
        for board in boards:
            for dynamic_filter in board.get("dynamic_filters") or []:
                for mapping in (dynamic_filter or {}).get("mappings") or []:
                    path = mapping.get("field_path") if isinstance(mapping, Mapping) else None
                    set_id = path.get("data_set_id") if isinstance(path, Mapping) else None
                    source = self.data_set_if_any(set_id).get("data_source_id") if is_id(set_id) else None
                    if is_id(source):
                        found.add(str(source).strip())
        widgets = [(board, w) for board in boards for w in board.get("widgets") or []
                   if isinstance(w, Mapping) and w.get("source_type") != "Text"]
        reports = {str(r.get("id")): r for d in list(self._data_sets.values()) for r in d.get("reports") or []
                   if isinstance(r, Mapping)}
        unknown: dict[str, list[Json]] = {}  # report id (or widget id) -> the boards of widgets not placed
        for board, widget in widgets:
            embedded = widget.get("query_report")
            report: Mapping[str, Any] = embedded if isinstance(embedded, Mapping) else (
                reports.get(str(widget.get("source_id"))) or {})
            block = widget.get("viz_block_definition")
            viz = (block.get("viz") or {}) if isinstance(block, Mapping) else {}
            source, set_id = report.get("data_source_id"), report.get("data_set_id") or viz.get("dataset_id")
            if source is None and is_id(set_id):
                source = self.data_set_if_any(set_id).get("data_source_id")
            if is_id(source):
                found.add(str(source).strip())
            else:
                placed_by = widget.get("source_id") if widget.get("source_type") == "QueryReport" else None
                unknown.setdefault(f"report {placed_by}" if placed_by else f"widget {widget.get('id')}",
                                   []).append(board)
        more = [d for s in sorted({*known, *found}, key=lambda s: (len(s), s))
                for d in self.dependants(s, "DataSource").get("data_set_ids") or []
                if str(d) not in self._data_sets] if unknown else []
        for set_id in more[:MAX_SOURCE_SETS]:
            if not any(k.startswith("report ") for k in unknown):
                break
            data_set = self.data_set(set_id)
            for report in data_set.get("reports") or []:
                if isinstance(report, Mapping) and unknown.pop(f"report {report.get('id')}", None) is not None:
                    source = report.get("data_source_id") or data_set.get("data_source_id")
                    if is_id(source):
                        found.add(str(source).strip())
        boards_left = [b for left in unknown.values() for b in left]
        self.unknown_widgets = len(boards_left)
        self.unknown_boards = list(dict.fromkeys(f"{b.get('title')!r} ({b.get('id')})" for b in boards_left))
        return found

    def projects(self) -> list[int]:
        """The AML projects given, or those the dashboards belong to (one request)."""
        if self.project_ids is not None:
            return self.project_ids
        try:
            listed = self.hook.list_dashboards_metadata()
        except AnalyticsApiError as exc:
            if exc.status not in LISTING_REFUSED:
                raise
            listed, self._listing_refused = [], exc.status
        self.project_ids = sorted({int(d["project_id"]) for d in listed if is_id(d.get("project_id"))})
        return self.project_ids

    def known_projects(self) -> str:
        """The AML projects the dashboards name, for the error that says a given one is not there."""
        try:
            listed = self.hook.list_dashboards_metadata()
        except AnalyticsApiError as exc:
            if exc.status not in LISTING_REFUSED:
                raise
            return f"the projects that exist cannot be listed (GET /dashboards/list_metadata answered {exc.status})"
        found = sorted({int(d["project_id"]) for d in listed if is_id(d.get("project_id"))})
        return (f"the dashboards name AML project(s) {', '.join(map(str, found))}" if found
                else "no dashboard names an AML project")

    def dependants(self, object_id: Any, object_type: str) -> Json:
        cached = (str(object_id), object_type)
        if cached not in self._dependants:
            try:
                self._dependants[cached] = self.hook.get_dependants(int(object_id), object_type) or {}
            except AnalyticsApiError as exc:
                if exc.status != 404 or object_type != "DataSource":
                    raise
                self._dependants[cached] = {}  # a data source data_sources names that is not there: noted
        return self._dependants[cached]

    def data_set_if_any(self, data_set_id: Any) -> Json:
        """A data set a dashboard names (``{}`` when it answers 404: deleted since)."""
        try:
            return self.data_set(data_set_id)
        except AnalyticsApiError as exc:
            if exc.status != 404:
                raise
            return {}

    def data_set(self, data_set_id: Any) -> Json:
        cached = str(data_set_id)
        if cached not in self._data_sets:
            self._data_sets[cached] = self.hook.get_data_set(data_set_id, include_models=True, include_reports=True)
        return self._data_sets[cached]

    def why_no_models(self) -> str:
        """Why the catalog is empty, for the error that says so."""
        if self.project_ids:
            projects = f"the AML project(s) {', '.join(map(str, self.project_ids))} list no data model"
        elif self._listing_refused is not None:
            projects = f"GET /dashboards/list_metadata answered {self._listing_refused}, so no AML project is known"
        else:
            projects = "no dashboard names an AML project"
        sources = (f"data source(s) {', '.join(self.searched)} hold none either" if self.searched else
                   "no data source is known from the dashboards' widgets" + (
                       f" ({self.unknown_widgets} of them do not say which they read)" if self.unknown_widgets else ""))
        return f"{projects}, and {sources}"

    def known_model(self, model_id: Any) -> Json:
        """A model named by a dependants answer: from the catalog (read if not yet), or its id alone."""
        return dict(self.catalog().get(str(model_id).strip()) or {"id": model_id, "name": str(model_id)})

    def dashboards(self) -> list[Json]:
        """Every dashboard with its widgets; one the list gave without them is read alone."""
        if self._dashboards is None:
            boards = list(self.hook.list_dashboards(limit=PAGE))
            for index, board in enumerate(boards):
                if isinstance(board.get("widgets"), list) or board.get("id") is None:
                    continue
                label = f"dashboard {board.get('title')!r} ({board.get('id')})"
                try:
                    alone = self.hook.get_dashboard(board["id"]) or {}
                except AnalyticsApiError as exc:
                    if exc.status != 404:
                        raise
                    self.notes.append(f"{label}: deleted since it was listed (its read answered 404): skipped")
                    boards[index] = {}
                    continue
                self.notes.append(f"{label}: the list did not carry its widgets; read alone"
                                  + ("" if isinstance(alone.get("widgets"), list) else ", without them either"))
                boards[index] = {**board, **alone}
            self._dashboards = [b for b in boards if b]
        return self._dashboards

    def source(self, source_id: Any) -> Json:
        """A data source (``{}`` where the key may not read it: its name and ``dbtype`` are niceties)."""
        cached = str(source_id)
        if cached not in self._sources:
            try:
                self._sources[cached] = dict(self.hook.get_data_source(int(source_id)) or {})
            except AnalyticsApiError as exc:
                if exc.status not in (403, 404):
                    raise
                self._sources[cached], self._source_refused[cached] = {}, exc.status
        return self._sources[cached]

    def scope(self, scope: Any, dbtypes: Mapping[str, Any]) -> Any:
        """``scope`` with the location of each data source the task did not give one for and
        whose answer says where it is (a ``dbconfig`` with its host and database; the document
        says the answer leaves it out, so mostly none)."""
        from dataclasses import replace

        from analytics_provider.impact.graph import SourceLocation

        locations = dict(scope.locations)
        for source_id in dbtypes:
            config = self.source(source_id).get("dbconfig")
            if source_id in locations or not isinstance(config, Mapping):
                continue
            host, port, database = config.get("host"), config.get("port"), config.get("database")
            server = f"{host}:{port}" if host and port else host or None
            if server or database:
                locations[source_id] = SourceLocation(str(server) if server else None,
                                                      str(database) if database else None)
        return replace(scope, locations=locations)

    def source_name(self, source_id: Any) -> str | None:
        return self.source(source_id).get("name")

    def dbtype(self, source_id: Any) -> Any:
        """The ``dbtype`` of a data source (None when not known): the dialect of its models' SQL."""
        return None if source_id is None else self.source(source_id).get("dbtype")

    def dbtypes(self, models: Iterable[Json]) -> dict[str, Any]:
        """The ``dbtype`` of each data source of ``models``: how its warehouse compares names."""
        sources = sorted({str(m["data_source_id"]) for m in models if m.get("data_source_id") is not None},
                         key=lambda s: (len(s), s))
        return {source_id: self.dbtype(source_id) for source_id in sources}

    def dbtype_notes(self, dbtypes: Mapping[str, Any]) -> list[str]:
        """What is said of each data source whose names are compared by PostgreSQL's rules for want
        of its own: its read was refused, or its ``dbtype`` is missing or not one known."""
        from analytics_provider.impact.tables import known_dialect

        notes = []
        for source_id, dbtype in dbtypes.items():
            if known_dialect(dbtype) is not None:
                continue
            why = (f"GET /data_sources/{source_id} answered {self._source_refused[source_id]}"
                   if source_id in self._source_refused else
                   "its answer has no dbtype" if not dbtype else f"its dbtype {dbtype!r} is not one known")
            notes.append(f"data source {source_id}: its warehouse is not known ({why}): its models' tables are "
                         "compared by PostgreSQL's rules (lower case, schema public) and with tables of any "
                         "warehouse; give fold/default_schema if they differ")
        return notes

    def model(self, ref: Any, catalog: Mapping[str, Json]) -> Json:
        """A data model by id (as it is when no catalog was read) or by name."""
        if is_id(ref):
            return dict(catalog.get(str(ref).strip()) or {"id": int(str(ref).strip()), "name": str(ref).strip()})
        from analytics_provider.api.wire.lookup import pick

        return dict(pick("data model", str(ref), list(catalog.values()), lambda m: [str(m.get("name") or "")],
                         lambda m: f"{m.get('name')!r} (id {m.get('id')}, table {m.get('table_name')})"))

    def data_set_named(self, ref: Any) -> Json:
        """A data set by id, or by ``uname`` or ``name`` among those of the projects' data sources."""
        if is_id(ref):
            return self.data_set(str(ref).strip())
        from analytics_provider.api.wire.lookup import pick

        candidates: list[Json] = []
        sources = {str(m.get("data_source_id")) for m in self.catalog().values() if m.get("data_source_id")}
        for source_id in sorted(sources):
            for set_id in self.dependants(source_id, "DataSource").get("data_set_ids") or []:
                candidates.append(self.data_set(set_id))
        return dict(pick("data set", str(ref), candidates,
                         lambda d: [str(d.get("uname") or ""), str(d.get("name") or "")],
                         lambda d: f"{d.get('uname') or d.get('name')!r} (id {d.get('id')})"))
