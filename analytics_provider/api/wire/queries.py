"""Data-set queries (the vendor's ``Query`` schema): what is wrong with one, for the hook and the emulator."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from analytics_provider.api.wire.conditions import condition_problems

AGGREGATIONS = (
    "sum", "avg", "max", "min", "running sum", "running avg", "running max", "running min", "count",
    "count distinct", "median", "stdev", "stdevp", "var", "varp", "custom",
)
"""The aggregations of a metric or an alert's viz condition."""
TRANSFORMATIONS = tuple(f"datetrunc {unit}" for unit in ("year", "quarter", "month", "week", "day", "hour", "minute"))
"""The transformations of a dimension or an alert's viz condition."""
ORDERS = ("asc", "desc")
TIMEZONE = re.compile(r"^[A-Za-z]+/[A-Za-z_]+$")
# integer option: (lowest, highest)
RANGES = {"limit": (1, 1_000_000), "page": (1, None), "page_size": (-1, 1000)}
Problems = list[tuple[str, str]]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _items(query: Mapping[str, Any], key: str, problems: Problems) -> list[Mapping[str, Any]]:
    items = query.get(key)
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        problems.append((key, "must be a list of objects"))
        return []
    return items


def _field(item: Mapping[str, Any], where: str, problems: Problems) -> None:
    if not isinstance(item.get("field"), str):
        problems.append((f"{where}.field", "is required (a field name such as orders.status)"))
    if "id" in item and not isinstance(item["id"], str):
        problems.append((f"{where}.id", "must be a string"))


def _choice(item: Mapping[str, Any], key: str, choices: tuple[str, ...], where: str, problems: Problems) -> None:
    value = item.get(key)
    if value is not None and value not in choices:
        problems.append((f"{where}.{key}", f"must be one of {', '.join(choices)} or null; got {value!r}"))


def query_problems(query: Any) -> Problems:
    """What is wrong with a Query, as ``(field, message)`` pairs; empty when it is valid."""
    if not isinstance(query, Mapping):
        return [("query", "must be an object (metrics, dimensions, filters, order, limit...)")]
    problems: Problems = []
    for index, metric in enumerate(_items(query, "metrics", problems)):
        _field(metric, f"metrics[{index}]", problems)
        _choice(metric, "aggregation", AGGREGATIONS, f"metrics[{index}]", problems)
    for index, dimension in enumerate(_items(query, "dimensions", problems)):
        _field(dimension, f"dimensions[{index}]", problems)
        _choice(dimension, "transformation", TRANSFORMATIONS, f"dimensions[{index}]", problems)
    for index, item in enumerate(_items(query, "filters", problems)):
        _field(item, f"filters[{index}]", problems)
        problems += [(f"filters[{index}].{field}".rstrip("."), message) for field, message in condition_problems(item)]
    for index, order in enumerate(_items(query, "order", problems)):
        if not isinstance(order.get("id"), str):
            problems.append((f"order[{index}].id", "is required (the id of a metric or dimension)"))
        if order.get("order") not in ORDERS:
            problems.append((f"order[{index}].order", f"must be one of {', '.join(ORDERS)}"))
    for key, (low, high) in RANGES.items():
        value = query.get(key)
        if value is not None and (not _is_int(value) or value < low or (high is not None and value > high)):
            bounds = f"from {low}" + (f" to {high}" if high else "")
            problems.append((key, f"must be an integer {bounds}; got {value!r}"))
    timezone = query.get("timezone")
    if timezone is not None and (not isinstance(timezone, str) or not TIMEZONE.match(timezone)):
        problems.append(("timezone", f"must be an IANA name such as Europe/Berlin; got {timezone!r}"))
    if "bust_cache" in query and not isinstance(query["bust_cache"], bool):
        problems.append(("bust_cache", "must be true or false"))
    return problems
