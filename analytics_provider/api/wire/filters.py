"""Filter conditions, filters by label and data-set queries, checked before any request (exports,
preloads, dashboard URLs, presets, queries; when a DAG file is parsed for what holds no template);
the rules are those of :mod:`.conditions` and :mod:`.queries`. Cheap to import: no operations
table, no lookups (:mod:`.lookup` checks filters against a dashboard's options)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analytics_provider.api.wire.conditions import condition_problems
from analytics_provider.api.wire.queries import query_problems
from analytics_provider.exceptions import AnalyticsParameterError

FilterConditions = Sequence[Mapping[str, Any]]


def check_condition(condition: Any, where: str) -> dict[str, Any]:
    """A Condition as a dict, or :class:`AnalyticsParameterError` naming ``where`` and the allowed values."""
    problems = condition_problems(condition)
    if problems:
        field, message = problems[0]
        raise AnalyticsParameterError(f"{where}{'.' + field if field else ''} {message}")
    return dict(condition)


def check_filter_conditions(
    conditions: FilterConditions, name: str = "dashboard_filter_conditions", id_key: str = "dynamic_filter_id",
    condition_key: str = "condition",
) -> list[dict[str, Any]]:
    """Check DynamicFilterConditions (or presets, with ``condition_key="preset_condition"``):
    an integer ``dynamic_filter_id`` (or its digits as a string) and a valid condition."""
    if isinstance(conditions, (str, Mapping)) or not isinstance(conditions, Sequence):
        raise AnalyticsParameterError(f"{name} must be a list of conditions")
    checked = []
    for index, item in enumerate(conditions):
        where = f"{name}[{index}]"
        if not isinstance(item, Mapping):
            raise AnalyticsParameterError(f"{where} must be a mapping, got {item!r}")
        filter_id = item.get(id_key)
        if isinstance(filter_id, bool) or not (
            isinstance(filter_id, int) or (isinstance(filter_id, str) and filter_id.isdigit())
        ):
            raise AnalyticsParameterError(f"{where}.{id_key} must be an integer, got {filter_id!r}")
        condition = check_condition(item.get(condition_key), f"{where}.{condition_key}")
        checked.append({**item, id_key: filter_id, condition_key: condition})
    return checked


def check_data_set_query(query: Mapping[str, Any]) -> dict[str, Any]:
    """The query as a dict, or :class:`AnalyticsParameterError` naming the first wrong part."""
    problems = query_problems(query)
    if problems:
        field, message = problems[0]
        raise AnalyticsParameterError(f"query.{field} {message}" if field != "query" else f"query {message}")
    return dict(query)


def check_filters(filters: Any, name: str = "filters") -> dict[str, dict[str, Any]]:
    """Filters by name, each as a whole condition (a list of values means ``is``, one value a list
    of one), checked for what is known without the dashboard."""
    if not isinstance(filters, Mapping) or not all(isinstance(k, str) and k.strip() for k in filters):
        raise AnalyticsParameterError(f"{name} must be a mapping of a filter's label to its values or condition, "
                                      f"such as {{'Region': ['EU']}}; got {filters!r}")
    return {label: _condition(wanted, f"{name}[{label!r}]") for label, wanted in filters.items()}


def _condition(wanted: Any, where: str) -> dict[str, Any]:
    if isinstance(wanted, Mapping):
        return check_condition(wanted, where)
    values = list(wanted) if isinstance(wanted, (list, tuple)) else [wanted]
    return check_condition({"operator": "is", "values": values}, where)
