"""Dynamic filter conditions, checked before any request (exports, preloads, dashboard URLs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analytics_provider.exceptions import AnalyticsParameterError

FilterConditions = Sequence[Mapping[str, Any]]


def check_filter_conditions(conditions: FilterConditions) -> list[dict[str, Any]]:
    """Check DynamicFilterConditions: an integer ``dynamic_filter_id`` and a ``condition`` with
    an ``operator`` and a ``values`` list."""
    if isinstance(conditions, (str, Mapping)) or not isinstance(conditions, Sequence):
        raise AnalyticsParameterError("dashboard_filter_conditions must be a list of conditions")
    checked = []
    for index, item in enumerate(conditions):
        where = f"dashboard_filter_conditions[{index}]"
        if not isinstance(item, Mapping):
            raise AnalyticsParameterError(f"{where} must be a mapping, got {item!r}")
        filter_id = item.get("dynamic_filter_id")
        if isinstance(filter_id, bool) or not isinstance(filter_id, int):
            raise AnalyticsParameterError(f"{where}.dynamic_filter_id must be an integer, got {filter_id!r}")
        condition = item.get("condition")
        if not isinstance(condition, Mapping):
            raise AnalyticsParameterError(f"{where}.condition must be a mapping with operator and values")
        if not isinstance(condition.get("operator"), str) or not condition["operator"]:
            raise AnalyticsParameterError(f"{where}.condition.operator must be a non-empty string")
        if not isinstance(condition.get("values"), list):
            raise AnalyticsParameterError(f"{where}.condition.values must be a list")
        checked.append({"dynamic_filter_id": filter_id, "condition": dict(condition)})
    return checked
