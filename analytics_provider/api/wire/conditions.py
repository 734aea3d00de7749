"""Filter conditions as the vendor's ``Condition`` schema defines them: operators and value counts.

The operators and how many values each takes are the vendor's (its ``Condition`` schema and the
schemas its discriminator maps each operator to). The hook (:mod:`.filters`, before sending) and
the emulator (on receiving) read this one table, so they cannot disagree on what the service accepts.
No Airflow here: the emulator imports it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

DATE_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute")
"""The ``modifier`` of the relative date operators (``last``, ``next``, ``transform_pop_relative``)."""

# operator: (fewest values, most values or None for no limit)
OPERATOR_VALUES: dict[str, tuple[int, int | None]] = {
    "is": (0, None),
    "is_not": (0, None),
    "is_null": (0, 0),
    "not_null": (0, 0),
    "greater_than": (1, 1),
    "less_than": (1, 1),
    "between": (2, 2),
    "matches_user_attribute": (1, None),
    "contains": (1, None),
    "does_not_contain": (1, None),
    "starts_with": (1, None),
    "ends_with": (1, None),
    "is_true": (0, 0),
    "is_false": (0, 0),
    "last": (1, 1),
    "next": (1, 1),
    "before": (1, 1),
    "after": (1, 1),
    "matches": (1, 1),
    "transform_pop_relative": (1, 1),
    "transform_pop_absolute": (2, 2),
    "transform_pop_none": (0, 0),
    "transform_date_drill": (1, 1),
    "none": (0, 0),
}
DATE_UNIT_OPERATORS = frozenset({"last", "next", "transform_pop_relative"})


def _count(low: int, high: int | None) -> str:
    if high is None:
        return f"at least {low} value" + ("s" if low != 1 else "")
    if low == high:
        return "no values" if low == 0 else f"exactly {low} value" + ("s" if low != 1 else "")
    return f"{low} to {high} values"


def condition_problems(condition: Any) -> list[tuple[str, str]]:
    """What is wrong with a Condition, as ``(field, message)`` pairs; empty when it is valid."""
    if not isinstance(condition, Mapping):
        return [("", "must be an object with operator and values")]
    operator = condition.get("operator")
    if operator not in OPERATOR_VALUES:
        return [("operator", f"must be one of {', '.join(OPERATOR_VALUES)}; got {operator!r}")]
    problems: list[tuple[str, str]] = []
    values = condition.get("values")
    low, high = OPERATOR_VALUES[operator]
    if not isinstance(values, list):
        problems.append(("values", f"must be a list ({operator} takes {_count(low, high)}); got {values!r}"))
    else:
        if len(values) < low or (high is not None and len(values) > high):
            problems.append(("values", f"{operator} takes {_count(low, high)}; got {len(values)}"))
        wrong = [v for v in values if v is None or not isinstance(v, (str, int, float))]
        endless = [v for v in values if isinstance(v, float) and not math.isfinite(v)]
        if wrong:
            problems.append(("values", f"must hold strings, numbers or booleans; got {wrong[0]!r}"))
        elif endless:
            problems.append(("values", f"must hold finite numbers (JSON has no NaN or infinity); got {endless[0]!r}"))
    modifier = condition.get("modifier")
    if operator in DATE_UNIT_OPERATORS and modifier is not None and modifier not in DATE_UNITS:
        problems.append(("modifier", f"of {operator} must be one of {', '.join(DATE_UNITS)}; got {modifier!r}"))
    elif modifier is not None and not isinstance(modifier, str):
        problems.append(("modifier", f"must be a string or null; got {modifier!r}"))
    return problems
