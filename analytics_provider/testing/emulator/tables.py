"""The widgets' tabular data, and dashboard filter conditions applied to it."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta, timezone
from typing import Any

from analytics_provider.api.wire.conditions import condition_problems
from analytics_provider.testing.emulator.errors import record_error
from analytics_provider.testing.emulator.state import Table

REGIONS = ("EU", "US", "APAC", "LATAM")


def daily_orders(today: date | None = None, days: int = 400) -> Table:
    """The orders model's daily rows (``created_at``, ``region``, ``orders``, ``revenue``) from
    ``days`` days before ``today`` (UTC) to tomorrow. Each day's figures depend on its date only, so
    any process computes the same rows (the revenue check example's demo warehouse does)."""
    today = today or datetime.now(timezone.utc).date()
    return Table(["created_at", "region", "orders", "revenue"], [list(row) for row in _daily_rows(today, days)])


@functools.lru_cache(maxsize=4)
def _daily_rows(today: date, days: int) -> tuple[tuple[Any, ...], ...]:
    """The rows, computed once a day and process: each reset of the emulator asks for them, and
    seeding a random generator for each of the 1,600 rows took most of a reset's time."""
    rows = []
    for offset in range(-days, 2):
        day = (today + timedelta(days=offset)).isoformat()
        for region in REGIONS:
            rng = random.Random(f"{day}/{region}")
            orders = rng.randint(5, 60)
            rows.append((day, region, orders, round(orders * rng.uniform(38, 96), 2)))
    return tuple(rows)


def seed_tables() -> dict[str, Table]:
    """About twenty plausible rows for each seeded widget (the same every time)."""
    rng = random.Random(20250301)
    months = [f"2025-{m:02d}" for m in range(1, 6)]
    revenue = [[m, r, o := rng.randint(120, 900), round(o * rng.uniform(38, 96), 2)] for m in months for r in REGIONS]
    channels = ("Web", "Mobile app", "Marketplace", "Retail partner", "Phone")
    weeks = ("2025-W14", "2025-W15", "2025-W16", "2025-W17")
    orders = [
        [w, c, rng.choice(REGIONS), o := rng.randint(40, 640), round(rng.uniform(35, 120), 2)]
        for w in weeks for c in channels
    ]
    themes = ("Spring Sale", "Brand Awareness", "Retargeting", "Newsletter", "Black Friday Teaser")
    campaigns = []
    for theme in themes:
        for region in REGIONS:
            impressions = rng.randint(20_000, 400_000)
            clicks = int(impressions * rng.uniform(0.008, 0.05))
            campaigns.append([f"{theme} {region}", rng.choice(("Search", "Social", "Display", "Email")), region,
                              impressions, clicks, round(clicks * rng.uniform(0.3, 1.9), 2),
                              int(clicks * rng.uniform(0.02, 0.12))])
    countries = (("Germany", "EU"), ("France", "EU"), ("Spain", "EU"), ("Italy", "EU"), ("Netherlands", "EU"),
                 ("Poland", "EU"), ("United States", "US"), ("Canada", "US"), ("Japan", "APAC"),
                 ("Australia", "APAC"), ("Singapore", "APAC"), ("India", "APAC"), ("Vietnam", "APAC"),
                 ("South Korea", "APAC"), ("Brazil", "LATAM"), ("Mexico", "LATAM"), ("Argentina", "LATAM"),
                 ("Chile", "LATAM"), ("Colombia", "LATAM"), ("Peru", "LATAM"))
    signups = [[c, r, rng.randint(80, 2400), round(rng.uniform(1.2, 9.5), 2)] for c, r in countries]
    quarters = ("2024-Q1", "2024-Q2", "2024-Q3", "2024-Q4", "2025-Q1")
    targets = []
    for quarter in quarters:
        for region in REGIONS:
            target = rng.randint(40, 160) * 1000
            actual = round(target * rng.uniform(0.78, 1.21), 2)
            targets.append([quarter, region, actual, target, round(100 * actual / target, 1)])
    return {
        "101": Table(["month", "region", "orders", "revenue"], revenue),
        "102": Table(["week", "channel", "region", "orders", "avg_order_value"], orders),
        "201": Table(["campaign", "channel", "region", "impressions", "clicks", "spend", "conversions"], campaigns),
        "202": Table(["country", "region", "signups", "conversion_rate"], signups),
        "301": Table(["quarter", "region", "revenue", "target", "attainment_pct"], targets),
        "401": Table(["region", "orders", "revenue"], _by_region(revenue)),
        "501": Table(["channel", "spend", "conversions", "cost_per_conversion"], _by_channel(campaigns)),
    }


def _by_region(revenue: list[list[Any]]) -> list[list[Any]]:
    return [[region, sum(int(row[2]) for row in revenue if row[1] == region),
             round(sum(float(row[3]) for row in revenue if row[1] == region), 2)] for region in REGIONS]


def _by_channel(campaigns: list[list[Any]]) -> list[list[Any]]:
    rows = []
    for channel in sorted({row[1] for row in campaigns}):
        spend = round(sum(row[5] for row in campaigns if row[1] == channel), 2)
        conversions = sum(row[6] for row in campaigns if row[1] == channel)
        rows.append([channel, spend, conversions, round(spend / conversions, 2) if conversions else None])
    return rows


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _compare(op: Callable[[float, float], bool]) -> Callable[[Any, Sequence[Any]], bool]:
    def test(cell: Any, values: Sequence[Any]) -> bool:
        left, right = _number(cell), _number(values[0]) if values else None
        return left is not None and right is not None and op(left, right)

    return test


def _same(cell: Any, value: Any) -> bool:
    left, right = _number(cell), _number(value)
    if left is not None and right is not None:
        return left == right
    return str(cell).lower() == str(value).lower()


def _between(cell: Any, values: Sequence[Any]) -> bool:
    if len(values) < 2:
        return False
    low, high, number = _number(values[0]), _number(values[1]), _number(cell)
    return low is not None and high is not None and number is not None and low <= number <= high


OPERATORS: dict[str, Callable[[Any, Sequence[Any]], bool]] = {
    "is": lambda cell, values: any(_same(cell, v) for v in values),
    "is_not": lambda cell, values: not any(_same(cell, v) for v in values),
    "contains": lambda cell, values: any(str(v).lower() in str(cell).lower() for v in values),
    "does_not_contain": lambda cell, values: not any(str(v).lower() in str(cell).lower() for v in values),
    "starts_with": lambda cell, values: any(str(cell).lower().startswith(str(v).lower()) for v in values),
    "ends_with": lambda cell, values: any(str(cell).lower().endswith(str(v).lower()) for v in values),
    "matches": lambda cell, values: any(str(v).lower() in str(cell).lower() for v in values),
    "greater_than": _compare(lambda a, b: a > b),
    "less_than": _compare(lambda a, b: a < b),
    "between": _between,
    "is_null": lambda cell, values: cell in (None, ""),
    "not_null": lambda cell, values: cell not in (None, ""),
    "none": lambda cell, values: True,
    "is_true": lambda cell, values: str(cell).lower() in ("true", "1", "t", "yes"),
    "is_false": lambda cell, values: str(cell).lower() in ("false", "0", "f", "no"),
    "before": lambda cell, values: str(cell) < str(values[0]),
    "after": lambda cell, values: str(cell) > str(values[0]),
    "matches_user_attribute": lambda cell, values: True,  # the caller's attribute values: not narrowed here
}
for _relative in ("last", "next", "transform_pop_relative", "transform_pop_absolute", "transform_pop_none",
                  "transform_date_drill"):
    OPERATORS[_relative] = lambda cell, values: True  # relative to "now" or a display transform: rows kept
VALUELESS = frozenset({"is_null", "not_null", "none", "is_true", "is_false"})


def check_condition(condition: Any, field: str) -> dict[str, Any]:
    """A Condition body (operators and value counts as the vendor's schema), or a 422 naming ``field``."""
    problems = condition_problems(condition)
    if problems:
        raise record_error({f"{field}.{name}".rstrip("."): [message] for name, message in problems})
    return dict(condition)


def apply_conditions(table: Table, conditions: Sequence[tuple[str, dict[str, Any]]]) -> list[list[Any]]:
    """The rows that pass every ``(column, condition)``; empty values mean "no filter"."""
    rows = table.rows
    for column, condition in conditions:
        if column not in table.columns:
            continue
        operator, values = condition["operator"], condition.get("values") or []
        if not values and operator not in VALUELESS:
            continue
        index, test = table.columns.index(column), OPERATORS[operator]
        rows = [row for row in rows if test(row[index], values)]
    return rows
