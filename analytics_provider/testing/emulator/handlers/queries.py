"""Data-set queries: run on the seeded widget tables, answered by a job or (once cached) at once."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from analytics_provider.api.wire.queries import query_problems
from analytics_provider.testing.emulator.errors import ApiError, by_rule, record_error
from analytics_provider.testing.emulator.handlers import Call, handles
from analytics_provider.testing.emulator.state import Json, State, Table
from analytics_provider.testing.emulator.tables import OPERATORS, VALUELESS

QUERY_RESULT = "DataModel.execute_model_query"
DEFAULT_PAGE_SIZE = 20
_AGGREGATE: dict[str, Callable[[list[float]], float]] = {
    "sum": sum, "count": len, "max": max, "min": min, "avg": lambda v: sum(v) / len(v),
}


def _checked_query(call: Call) -> Json:
    query = call.body.get("query")
    problems = query_problems(query)
    if problems:
        raise record_error({f"query.{field}" if field != "query" else "query": [message]
                            for field, message in problems})
    return dict(query)


def _column(reference: str) -> str:
    """``orders.revenue`` or ``revenue``: the column name of a field reference."""
    return reference.rsplit(".", 1)[-1]


def _table(state: State, data_set: Json, columns: set[str]) -> Table:
    """The seeded table (of a report on this data set, or of one of its models) that holds every
    column the query names."""
    report_ids = {r["id"] for r in state.query_reports.values() if r["data_set_id"] == data_set["id"]}
    for widget in state.widgets.values():
        table = state.tables.get(widget["id"])
        if int(widget["source_id"]) in report_ids and table is not None and columns <= set(table.columns):
            return table
    for model_id in data_set["model_ids"]:
        table = state.model_tables.get(model_id)
        if table is not None and columns <= set(table.columns):
            return table
    raise by_rule(ApiError(422, "BaseError", f"Data set {data_set['id']} has no field(s) {', '.join(sorted(columns))} "
                                     "together in one model"), "query-fields")


def _fields(query: Json) -> tuple[list[Json], list[Json]]:
    return list(query.get("dimensions") or []), list(query.get("metrics") or [])


def _run(state: State, data_set: Json, query: Json) -> Json:
    dimensions, metrics = _fields(query)
    filters = list(query.get("filters") or [])
    names = {_column(item["field"]) for item in [*dimensions, *metrics, *filters]}
    table = _table(state, data_set, names)
    rows = table.rows
    for item in filters:
        values = item.get("values") or []
        if values or item["operator"] in VALUELESS:
            index = table.columns.index(_column(item["field"]))
            rows = [row for row in rows if OPERATORS[item["operator"]](row[index], values)]
    groups: dict[tuple[Any, ...], list[list[Any]]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[table.columns.index(_column(d["field"]))] for d in dimensions)].append(row)
    result = []
    for key, members in groups.items():
        line = list(key)
        for metric in metrics:
            index = table.columns.index(_column(metric["field"]))
            numbers = [float(r[index]) for r in members if isinstance(r[index], (int, float))]
            compute = _AGGREGATE.get(metric.get("aggregation") or "sum", sum)
            line.append(round(compute(numbers), 2) if numbers or compute is len else None)
        result.append(line)
    ids = [item.get("id") or item["field"] for item in [*dimensions, *metrics]]
    for order in reversed(query.get("order") or []):
        if order["id"] in ids:
            position = ids.index(order["id"])
            result.sort(key=_sort_key(position), reverse=order["order"] == "desc")
    if query.get("limit"):
        result = result[: query["limit"]]
    page, size = int(query.get("page") or 1), int(query.get("page_size") or DEFAULT_PAGE_SIZE)
    shown = result if size == -1 else result[(page - 1) * size: page * size]
    return {
        "fields": [item.get("id") or item["field"] for item in [*dimensions, *metrics]],
        "values": [["" if cell is None else str(cell) for cell in line] for line in shown],
        "meta": {"page": page, "page_size": size, "num_rows": len(result)},
    }


def _sort_key(position: int) -> Callable[[list[Any]], tuple[bool, Any]]:
    return lambda line: (line[position] is None, line[position])


@handles("submit_data_set_query")
def submit_data_set_query(call: Call) -> Json:
    data_set = call.find("DataSet")
    query = _checked_query(call)
    data = _run(call.state, data_set, query)  # unknown fields are refused now, not in the job
    fingerprint = hashlib.sha1(json.dumps([data_set["id"], {k: v for k, v in query.items() if k != "bust_cache"}],
                                          sort_keys=True).encode()).hexdigest()
    cached = call.state.query_cache.get(fingerprint)
    if cached is not None and not query.get("bust_cache"):
        job = call.world.jobs.jobs.get(cached["job_id"])
        if job is not None and job.status_at(call.now) == "success":
            return data  # the service answers a cached result at once
    job = call.submit_job({"id": data_set["id"], "query": query}, result_type=QUERY_RESULT, result_data=data,
                          source={"type": "DataSet", "id": data_set["id"], "action": "submit_query"},
                          notes=(f"Query on data set {data_set['id']}: {data['meta']['num_rows']} row(s)",))
    if job.existing_job_id is None:
        call.state.query_cache[fingerprint] = {"job_id": job.id}
    return job.async_result(call.now)


@handles("generate_data_set_sql")
def generate_data_set_sql(call: Call) -> Json:
    data_set = call.find("DataSet")
    query = _checked_query(call)
    dimensions, metrics = _fields(query)
    filters = list(query.get("filters") or [])
    table_name = _sql_table(call.state, data_set, {_column(i["field"]) for i in [*dimensions, *metrics, *filters]})
    select = [_column(d["field"]) for d in dimensions]
    select += [f"{(m.get('aggregation') or 'sum').upper()}({_column(m['field'])})" for m in metrics]
    sql = f"SELECT {', '.join(select) or '*'}\nFROM {table_name}"
    if filters:
        sql += "\nWHERE " + " AND ".join(f"{_column(f['field'])} {f['operator'].upper()} {f.get('values')!r}"
                                        for f in filters)
    if dimensions and metrics:
        sql += "\nGROUP BY " + ", ".join(str(i + 1) for i in range(len(dimensions)))
    if query.get("limit"):
        sql += f"\nLIMIT {query['limit']}"
    return {"sql": sql}


def _sql_table(state: State, data_set: Json, columns: set[str]) -> str:
    _table(state, data_set, columns)  # the same fields a run accepts
    model_ids = data_set["model_ids"]
    for model_id in model_ids:
        model = state.data_models[model_id]
        if columns <= {f["name"] for f in model["fields"]}:
            return _relation(model)
    return _relation(state.data_models[model_ids[0]])


def _relation(model: Json) -> str:
    """What a query reads for a model: its table, or a query model's SQL as a subquery."""
    return str(model["table_name"] or f"({model['sql']}) {model['name']}")
