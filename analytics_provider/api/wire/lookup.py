"""Dashboards, widgets and filters by the names people use, and filter values checked, without I/O.

:func:`pick` finds the one item a name means: an exact name wins; otherwise a match that ignores
case and runs of spaces; names are compared in one Unicode normal form (NFC: ``é`` typed as ``e``
and an accent mark, as macOS pastes it, is ``é``). No match is an error naming the closest names
with their ids, several an error naming each with its id and URL and the id to use instead; a
name shown there that looks like another one shown (or like the name asked for) without being it
says how it differs, character by character. :func:`filter_conditions` turns ``{"Region":
["EU"]}`` into the ``dynamic_filter_id`` conditions the API takes, checking each value against
the filter first (a manual option list, a number filter).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from analytics_provider.api.wire.filters import check_filters
from analytics_provider.exceptions import AnalyticsLookupError, AnalyticsParameterError

Json = Mapping[str, Any]
OPTION_OPERATORS = frozenset({"is", "is_not"})
"""The operators whose values must be among a filter's manual options."""
CLOSEST = 5
PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
"""A number as a number filter takes it written: no spaces, no ``_``, no ``nan`` or ``inf``."""
LOOK_ALIKES = str.maketrans(  # Cyrillic a, ie, o, er, es, u, ha, i, je, dze ...; Greek Alpha ... upsilon
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04bb\u051b\u051d\u04cf\u0410"
    "\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0423\u0406\u0408\u0405\u0391\u0392"
    "\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7\u03bf\u03b9\u03bd\u03c1"
    "\u03c5",
    "aeopcyxijsdhqwlABEKMHOPCTXYIJSABEZHIKMNOPTYXoivpu",
)
"""Cyrillic and Greek letters drawn like Latin ones (a title may mix them in unseen)."""


def nfc(name: Any) -> str:
    return unicodedata.normalize("NFC", str(name))


def normalized(name: Any) -> str:
    """A name as people mean it: one normal form, case and runs of spaces ignored."""
    return " ".join(nfc(name).split()).casefold()


def looks(name: str) -> str:
    """What a name looks like: compatibility forms folded (``ﬁ`` is ``fi``), invisible format
    marks dropped, spaces as one space, look-alike letters as Latin ones."""
    folded = unicodedata.normalize("NFKC", name)
    visible = "".join(c for c in folded if unicodedata.category(c) != "Cf")
    return " ".join(visible.split()).translate(LOOK_ALIKES)


def how_it_differs(name: str, other: str) -> str:
    """Where ``name`` differs from ``other``, which it looks like: each differing run of
    characters with its code points (the first three runs)."""
    import difflib

    runs = [(i1, name[i1:i2], other[j1:j2]) for tag, i1, i2, j1, j2 in
            difflib.SequenceMatcher(None, name, other, autojunk=False).get_opcodes() if tag != "equal"]
    described = [f"character {i + 1} is {_code_points(mine) or 'nothing'} where {other!r} has "
                 f"{_code_points(theirs) or 'nothing'}" for i, mine, theirs in runs[:3]]
    more = f" (and {len(runs) - 3} more differences)" if len(runs) > 3 else ""
    return "; ".join(described) + more


def _code_points(text: str) -> str:
    return " + ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in text)


def matches(wanted: str, items: Sequence[Json], names: Callable[[Json], Sequence[str]]) -> list[Json]:
    """The items ``wanted`` names exactly (in NFC), else those it names loosely (:func:`normalized`)."""
    exact = [item for item in items if nfc(wanted) in {nfc(n) for n in names(item)}]
    if exact:
        return exact
    return [item for item in items if normalized(wanted) in {normalized(n) for n in names(item)}]


def listed(wanted: str, items: Sequence[Json], names: Callable[[Json], Sequence[str]],
           describe: Callable[[Json], str]) -> str:
    """``describe(item)`` of each item for an error, each name that looks like the name asked for
    (or like a name listed before it) without being it followed by how it differs."""
    shown: list[str] = []
    parts = []
    for item in items:
        name = str((list(names(item)) or [""])[0])
        like = next((other for other in (wanted, *shown) if other != name and looks(other) == looks(name)), None)
        note = f" [looks like {like!r} but {how_it_differs(name, like)}]" if like is not None else ""
        parts.append(describe(item) + note)
        shown.append(name)
    return "; ".join(parts)


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
    found = matches(wanted, items, names)
    if len(found) == 1:
        return found[0]
    if found:
        shown = listed(wanted, found[:10], names, detail or describe)
        more = f" and {len(found) - 10} more" if len(found) > 10 else ""
        hint = f"; give its id instead ({instead}=<id>)" if instead else ""
        raise AnalyticsLookupError(f"{len(found)} {kind}s are named {wanted!r}{where}: {shown}{more}{hint}")
    import difflib  # only when a name matched nothing (operators are imported at every DAG parse)

    by_name: dict[str, Json] = {}
    for item in items:
        for name in names(item):
            by_name.setdefault(normalized(name), item)
    close = difflib.get_close_matches(normalized(wanted), list(by_name), n=CLOSEST, cutoff=0.5)
    if close:
        suggestion = "; closest: " + listed(wanted, [by_name[name] for name in close], names, describe)
    elif items and len(items) <= CLOSEST * 2:
        suggestion = "; there are: " + listed(wanted, items, names, describe)
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


def _check_values(dynamic_filter: Json, shown: str, condition: Mapping[str, Any]) -> None:
    kind = (dynamic_filter.get("definition") or {}).get("filter_type")
    values = condition.get("values") or []
    if kind == "number":
        text = [v for v in values if not _is_number(v)]
        if text:
            raise AnalyticsParameterError(
                f"{shown} is a number filter; {text[0]!r} is not a number it takes: a finite number written "
                "plainly, such as 1000, -2.5 or 1e3 (no spaces, no _, not nan or inf)")
    options = manual_options(dynamic_filter)
    if options is None or condition.get("operator") not in OPTION_OPERATORS:
        return
    allowed = {str(option) for option in options}
    for value in values:
        if str(value) not in allowed:
            raise AnalyticsParameterError(
                f"{shown} has no option {value!r}; options: {', '.join(str(o) for o in options)}")


def _is_number(value: Any) -> bool:
    """A finite number, or its plain spelling (``float()`` alone takes ``' 5 '``, ``1_000``, ``nan``)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    return isinstance(value, str) and PLAIN_NUMBER.fullmatch(value) is not None and math.isfinite(float(value))
