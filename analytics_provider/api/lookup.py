"""Dashboards, widgets and filters by the names people use, and filter values checked, without I/O.

:func:`pick` finds the one item a name means: an exact name wins; otherwise a match that ignores
case and runs of spaces; no match is an error naming the closest names with their ids, several
an error naming each with its id and URL and the id to use instead. :func:`filter_conditions`
turns ``{"Region": ["EU"]}`` into the ``dynamic_filter_id`` conditions the API takes, checking
each value against the filter first (a manual option list, a number filter).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from analytics_provider.api.filters import check_condition
from analytics_provider.exceptions import AnalyticsLookupError, AnalyticsParameterError

Json = Mapping[str, Any]
OPTION_OPERATORS = frozenset({"is", "is_not"})
"""The operators whose values must be among a filter's manual options."""
CLOSEST = 5


def normalized(name: Any) -> str:
    """A name as people mean it: case and runs of spaces ignored."""
    return " ".join(str(name).split()).casefold()


def pick(
    kind: str,
    wanted: str,
    items: Sequence[Json],
    names: Callable[[Json], Sequence[str]],
    describe: Callable[[Json], str],
    *,
    detail: Callable[[Json], str] | None = None,
    where: str = "",
    instead: str = "",
) -> Json:
    """The one item of ``items`` that ``wanted`` names (``names(item)``: the names it answers to).

    ``describe(item)`` says it in an error (its name and id), ``detail(item)`` when several
    match (with its URL; default ``describe``); ``where`` ends the subject (``" on dashboard
    'Sales overview'"``); ``instead`` names the argument that takes an id (``"dashboard"``).
    """
    exact = [item for item in items if wanted in names(item)]
    if len(exact) == 1:
        return exact[0]
    found = exact or [item for item in items if normalized(wanted) in {normalized(n) for n in names(item)}]
    if len(found) == 1:
        return found[0]
    if found:
        listed = "; ".join((detail or describe)(item) for item in found[:10])
        more = f" and {len(found) - 10} more" if len(found) > 10 else ""
        hint = f"; give its id instead ({instead}=<id>)" if instead else ""
        raise AnalyticsLookupError(f"{len(found)} {kind}s are named {wanted!r}{where}: {listed}{more}{hint}")
    import difflib  # only when a name matched nothing (operators are imported at every DAG parse)

    by_name: dict[str, Json] = {}
    for item in items:
        for name in names(item):
            by_name.setdefault(normalized(name), item)
    close = difflib.get_close_matches(normalized(wanted), list(by_name), n=CLOSEST, cutoff=0.5)
    if close:
        suggestion = "; closest: " + "; ".join(describe(by_name[name]) for name in close)
    elif items and len(items) <= CLOSEST * 2:
        suggestion = "; there are: " + "; ".join(describe(item) for item in items)
    else:
        suggestion = f" (none of {len(items)} is close)" if items else " (there are none)"
    raise AnalyticsLookupError(f"no {kind} is named {wanted!r}{where}{suggestion}")


def filter_names(dynamic_filter: Json) -> list[str]:
    """What a dashboard's filter answers to: its label, then its ``uname``."""
    definition = dynamic_filter.get("definition") or {}
    return [str(n) for n in (definition.get("label"), dynamic_filter.get("uname")) if n]


def manual_options(dynamic_filter: Json) -> list[Any] | None:
    """The values a filter offers from a manual list, or None when it takes any value."""
    source = (dynamic_filter.get("definition") or {}).get("filter_source") or {}
    if source.get("source_type") != "ManualFilterSource":
        return None
    options = [option.get("value") for option in source.get("manual_options") or [] if isinstance(option, Mapping)]
    return options or None


def check_filters(filters: Any, name: str = "filters") -> dict[str, dict[str, Any]]:
    """Filters by name, each as a whole condition (a list of values means ``is``, one value a list
    of one), checked for what is known without the dashboard."""
    if not isinstance(filters, Mapping) or not all(isinstance(k, str) and k.strip() for k in filters):
        raise AnalyticsParameterError(f"{name} must be a mapping of a filter's label to its values or condition, "
                                      f"such as {{'Region': ['EU']}}; got {filters!r}")
    return {label: _condition(wanted, f"{name}[{label!r}]") for label, wanted in filters.items()}


def filter_conditions(dashboard: Json, filters: Mapping[str, Any], name: str = "filters") -> list[dict[str, Any]]:
    """``filters`` (a filter's label or uname -> a list of values, meaning ``is``, or a whole
    condition) as the dashboard's ``dynamic_filter_id`` conditions, each value checked."""
    conditions_by_label = check_filters(filters, name)
    available = [f for f in dashboard.get("dynamic_filters") or [] if isinstance(f, Mapping)]
    title = dashboard.get("title", dashboard.get("id"))
    conditions: list[dict[str, Any]] = []
    seen: dict[Any, str] = {}
    for label, condition in conditions_by_label.items():
        found = pick("filter", label, available, filter_names,
                     lambda f: f"{filter_names(f)[0]!r} (id {f.get('id')})", where=f" on dashboard {title!r}")
        shown = filter_names(found)[0]
        if found.get("id") in seen:
            raise AnalyticsParameterError(
                f"{name}: {label!r} and {seen[found['id']]!r} are the same filter ({shown!r})")
        seen[found.get("id")] = label
        _check_values(found, shown, condition)
        conditions.append({"dynamic_filter_id": found.get("id"), "condition": condition})
    return conditions


def _condition(wanted: Any, where: str) -> dict[str, Any]:
    if isinstance(wanted, Mapping):
        return check_condition(wanted, where)
    values = list(wanted) if isinstance(wanted, (list, tuple)) else [wanted]
    return check_condition({"operator": "is", "values": values}, where)


def _check_values(dynamic_filter: Json, shown: str, condition: Mapping[str, Any]) -> None:
    kind = (dynamic_filter.get("definition") or {}).get("filter_type")
    values = condition.get("values") or []
    if kind == "number":
        text = [v for v in values if isinstance(v, bool) or (not isinstance(v, (int, float)) and not _is_number(v))]
        if text:
            raise AnalyticsParameterError(f"{shown} is a number filter; {text[0]!r} is not a number")
    options = manual_options(dynamic_filter)
    if options is None or condition.get("operator") not in OPTION_OPERATORS:
        return
    allowed = {str(option) for option in options}
    for value in values:
        if str(value) not in allowed:
            raise AnalyticsParameterError(
                f"{shown} has no option {value!r}; options: {', '.join(str(o) for o in options)}")


def _is_number(value: Any) -> bool:
    try:
        float(str(value))
    except ValueError:
        return False
    return True
