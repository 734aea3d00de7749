"""Checking delivery files against the API's schemas, each finding at its file, line and column.

A file declares ``schedules`` (data schedules) and ``alerts`` (data alerts), each a list of
objects with a stable ``key``. :func:`check` needs no service (it runs when a DAG is parsed);
:func:`check_references` asks the service whether the dashboards, reports and widgets named exist.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from analytics_provider.aml.diagnostics import Diagnostic
from analytics_provider.api.wire.destinations import ALERT_DESTS, SCHEDULE_DESTS, dest_value_problems
from analytics_provider.deliveries.files import KEY, DeliveryFile, Where

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+\Z")
"""An e-mail address as the service accepts one (the pattern of access's rows: features do not
import each other)."""
KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}\Z")
SCOPE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}\Z")
MARKER = re.compile(r"\s*\[managed: (?:([^\]/]+)/)?([^\]/]+)\]\Z")
"""The patterns end in ``\\Z``, not ``$`` (which also matches before a final newline: ``"sales\\n"``
would pass as a look-alike of ``sales``)."""
SOURCES = {"schedules": {"dashboard": "Dashboard", "query_report": "QueryReport"},
           "alerts": {"widget": "DashboardWidget"}}
FIELDS = {
    "schedules": ("key", "title", "dashboard", "query_report", "repeat", "paused", "filters", "dest"),
    "alerts": ("key", "title", "widget", "repeat", "paused", "filters", "conditions", "dest"),
}
DESTS = {"schedules": SCHEDULE_DESTS, "alerts": ALERT_DESTS}
KINDS = {"schedules": "data schedule", "alerts": "data alert"}
CRON_FIELDS = ("minute", "hour", "day of month", "month", "day of week")


@dataclass(frozen=True)
class Declared:
    """One object of a file: its section (``schedules`` or ``alerts``), key, the API body it
    stands for (its title carries the key), and where it is."""

    section: str
    key: str
    body: dict[str, Any]
    """Its title carries the key without a scope; :func:`scoped` gives the body sent."""
    path: str
    line: int
    source_line: int
    index: int
    """The object's place in its section (its findings' path: ``(section, index, ...)``)."""

    @property
    def kind(self) -> str:
        return KINDS[self.section]

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def managed_title(title: str | None, key: str, scope: str | None = None) -> str:
    """The title the service keeps: the file's title with the scope and key after it (``Weekly
    sales [managed: sales/weekly-sales]``; without a scope ``[managed: weekly-sales]``, as made
    before scopes); it marks the resource as one the files of that scope manage."""
    marker = f"[managed: {scope}/{key}]" if scope else f"[managed: {key}]"
    return f"{title} {marker}" if title else marker


def marker_of(title: Any) -> tuple[str | None, str] | None:
    """The scope (None: made without one) and key a title carries, or None for a resource the
    files do not manage."""
    found = MARKER.search(title) if isinstance(title, str) else None
    return (found.group(1), found.group(2)) if found else None


def scoped(item: Declared, scope: str | None) -> dict[str, Any]:
    """The body sent for ``item`` by the files of ``scope``: its title carries the scope."""
    title = item.body["title"]
    found = MARKER.search(title)
    plain = title[: found.start()] if found else title
    return {**item.body, "title": managed_title(plain or None, item.key, scope)}


def scope_problem(scope: Any) -> str | None:
    """What is wrong with a scope's name, or None (None itself: no scope)."""
    if scope is None or (isinstance(scope, str) and SCOPE_PATTERN.match(scope)):
        return None
    return "letters, digits, '_', '.', '-' (up to 40), starting with a letter or digit"


class _Findings:
    def __init__(self, file: DeliveryFile) -> None:
        self.file = file
        self.found: list[Diagnostic] = []

    def add(self, where: Where, code: str, message: str) -> None:
        line, column = self.file.position(where)
        self.found.append(Diagnostic(self.file.path, line, column, code, message))


def check(files: Iterable[DeliveryFile]) -> tuple[list[Declared], list[Diagnostic]]:
    """The objects the files declare, and what is wrong with them (sorted by file and line). A
    key declared twice is reported whether or not the objects have other findings."""
    declared: list[Declared] = []
    found: list[Diagnostic] = []
    keys: dict[tuple[str, str], str] = {}  # where each key was first declared
    for file in files:
        findings = _Findings(file)
        found += [Diagnostic(file.path, line, column, code, message) for line, column, code, message in file.problems]
        if file.data is None:
            continue
        for section, index, key, item in _objects(file, findings):
            if (section, key) in keys:
                findings.add((section, index, "key"), "DL112",
                             f"key {key!r} is declared twice: at {keys[(section, key)]} and here")
                continue
            keys[(section, key)] = f"{file.path}:{file.position((section, index))[0]}"
            if item is not None:
                declared.append(item)
        found += findings.found
    return declared, sorted(found)


def _objects(file: DeliveryFile, findings: _Findings) -> list[tuple[str, int, str, Declared | None]]:
    """Each object that has a well-formed key: its section, place, key, and what it declares
    (None when it has findings)."""
    data = file.data
    if not isinstance(data, dict):
        findings.add((), "DL101", "a delivery file is a mapping with 'schedules' and/or 'alerts'")
        return []
    objects: list[tuple[str, int, str, Declared | None]] = []
    for section, items in data.items():
        if section not in FIELDS:
            findings.add((section, KEY), "DL101", f"unknown section {section!r}; the sections: schedules, alerts"
                         f"{_did_you_mean(section, list(FIELDS))}")
            continue
        if not isinstance(items, list):
            findings.add((section,), "DL102", f"{section} is a list of objects")
            continue
        for index, item in enumerate(items):
            where = (section, index)
            if not isinstance(item, dict):
                findings.add(where, "DL102", f"each of {section} is a mapping (key, ...)")
                continue
            before = len(findings.found)
            body = _body(section, item, where, findings)
            key = item.get("key")
            if not isinstance(key, str) or not KEY_PATTERN.match(key):
                continue
            valid = None
            if body is not None and len(findings.found) == before:
                source_field = next(name for name in SOURCES[section] if name in item)
                valid = Declared(section, key, body, file.path, file.position(where)[0],
                                 file.position((*where, source_field))[0], index)
            objects.append((section, index, key, valid))
    return objects


def _body(section: str, item: dict[str, Any], where: Where, findings: _Findings) -> dict[str, Any] | None:
    for name in item:
        if name not in FIELDS[section]:
            hint = _did_you_mean(name, FIELDS[section])
            fields = ", ".join(FIELDS[section])
            findings.add((*where, name, KEY), "DL111",
                         f"unknown field {name!r}{hint}; the fields of a {KINDS[section]}: {fields}")
    key = item.get("key")
    if key is None:
        findings.add(where, "DL110", f"a {KINDS[section]} needs a key (a stable name: letters, digits, _ . -)")
    elif not isinstance(key, str) or not KEY_PATTERN.match(key):
        findings.add((*where, "key"), "DL112", f"key {key!r}: letters, digits, '_', '.', '-' (up to 80), "
                                               "starting with a letter or digit")
    source = _source(section, item, where, findings)
    repeat = _repeat(item, where, findings)
    paused = item.get("paused", False)
    if not isinstance(paused, bool):
        findings.add((*where, "paused"), "DL121", f"paused is true or false; got {paused!r}")
    dest = _dest(section, item, where, findings)
    title = item.get("title")
    if title is not None and not isinstance(title, str):
        findings.add((*where, "title"), "DL113", "title is a string")
    for name in ("filters", "conditions"):
        if item.get(name) is not None and not isinstance(item[name], list):
            findings.add((*where, name), "DL114", f"{name} is a list")
    if source is None or repeat is None or dest is None or not isinstance(key, str):
        return None
    body: dict[str, Any] = {
        "title": managed_title(title, key), "source_type": source[0], "source_id": source[1],
        "schedule": {"repeat": repeat, "paused": paused},
        "dynamic_filter_presets": list(item.get("filters") or []), "dest": dest,
    }
    if section == "alerts":
        body["viz_conditions"] = list(item.get("conditions") or [])
    return body


def _source(section: str, item: dict[str, Any], where: Where, findings: _Findings) -> tuple[str, Any] | None:
    named = [name for name in SOURCES[section] if name in item]
    if len(named) != 1:
        choices = " or ".join(SOURCES[section])
        findings.add(where, "DL140", f"a {KINDS[section]} names one source: {choices} (an id)"
                     + (f"; it names {', '.join(named)}" if named else ""))
        return None
    value = item[named[0]]
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.isdigit())):
        findings.add((*where, named[0]), "DL140", f"{named[0]} is the id of a {named[0].replace('_', ' ')}; "
                                                  f"got {value!r}")
        return None
    return SOURCES[section][named[0]], int(value)


def _repeat(item: dict[str, Any], where: Where, findings: _Findings) -> str | None:
    repeat = item.get("repeat")
    if repeat is None:
        findings.add(where, "DL110", "repeat is required: a crontab expression (minute hour day month weekday)")
        return None
    problem = cron_problem(repeat)
    if problem:
        findings.add((*where, "repeat"), "DL120", f"repeat {repeat!r} is not a crontab expression: {problem}")
        return None
    return str(repeat)


def cron_problem(expression: Any) -> str | None:
    """What is wrong with a five-field crontab expression, or None."""
    from croniter import croniter

    if not isinstance(expression, str):
        return "it is a string of five fields (minute hour day month weekday)"
    fields = expression.split()
    if len(fields) != 5:
        return f"{len(fields)} field(s); five are needed (minute hour day month weekday)"
    for index, value in enumerate(fields):
        probe = ["*"] * 5
        probe[index] = value
        if not croniter.is_valid(" ".join(probe)):
            return f"its {CRON_FIELDS[index]} field {value!r} is out of range or malformed"
    if not croniter.is_valid(expression):
        return "the fields do not make a valid expression together"
    return None


def _dest(section: str, item: dict[str, Any], where: Where, findings: _Findings) -> dict[str, Any] | None:
    dest = item.get("dest")
    if dest is None:
        findings.add(where, "DL110", f"dest is required: where the {KINDS[section]} sends (type, ...)")
        return None
    if not isinstance(dest, dict):
        findings.add((*where, "dest"), "DL130", "dest is a mapping (type, ...)")
        return None
    allowed = DESTS[section]
    kind = dest.get("type")
    if kind not in allowed:
        findings.add((*where, "dest", "type") if "type" in dest else (*where, "dest"), "DL130",
                     f"dest type {kind!r} is not one a {KINDS[section]} sends to; the types: {', '.join(allowed)}")
        return None
    before = len(findings.found)
    for name in allowed[kind]:
        if dest.get(name) in (None, "", []):
            misspelt = [key for key in dest if key not in allowed[kind] and _did_you_mean(key, [name])]
            if misspelt:  # ``recipient:`` for ``recipients:``: point at it
                findings.add((*where, "dest", misspelt[0], KEY), "DL131", f"{_a(kind)} needs {name}; "
                             f"{misspelt[0]!r} is not one of its fields{_did_you_mean(misspelt[0], [name])}")
            else:
                findings.add((*where, "dest"), "DL131", f"{_a(kind)} needs {name}")
    recipients = dest.get("recipients")
    if recipients is not None:
        if not isinstance(recipients, list):
            findings.add((*where, "dest", "recipients"), "DL132", "recipients is a list of e-mail addresses")
        for index, address in enumerate(recipients if isinstance(recipients, list) else []):
            if not isinstance(address, str) or not EMAIL.match(address):
                findings.add((*where, "dest", "recipients", index), "DL132", f"{address!r} is not an e-mail address")
    for path, must, values in dest_value_problems(dest):  # the service's own rules (it would answer 422)
        value: Any = dest
        for part in path:
            value = value[part]
        wrong: list[tuple[int | None, Any]] = [(place, item) for place, item in enumerate(value)
                                               if item not in values] if isinstance(value, list) and values else []
        for place, item in wrong or [(None, value)]:
            at = (*where, "dest", *path) if place is None else (*where, "dest", *path, place)
            shown = f"{item!r}: " if values and not isinstance(item, (list, dict)) else ""
            hint = _did_you_mean(item, values) if values and isinstance(item, str) else ""
            findings.add(at, "DL133", f"{shown}dest.{'.'.join(path)} {must}{hint}")
    return dict(dest) if len(findings.found) == before else None


def _a(word: str) -> str:
    """``word`` with its indefinite article: "an EmailDest", "a SlackDest"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _did_you_mean(name: Any, choices: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` when one of ``choices`` is close to ``name``, else an empty string."""
    import difflib  # only for a misspelt field (the operator checks the files at every DAG parse)

    close = difflib.get_close_matches(str(name), list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_references(declared: Sequence[Declared], hook: Any,
                     titles: dict[tuple[str, int], str] | None = None) -> list[Diagnostic]:
    """Whether the dashboards, query reports and widgets the objects name exist on the service
    (one request per distinct source); ``titles`` receives each one's title, by ``(type, id)``."""
    from analytics_provider.exceptions import NotFoundError

    read = {"Dashboard": hook.get_dashboard, "QueryReport": hook.get_query_report,
            "DashboardWidget": hook.get_dashboard_widget}
    seen: dict[tuple[str, int], bool] = {}
    found = []
    for item in declared:
        source = (item.body["source_type"], item.body["source_id"])
        if source not in seen:
            try:
                answer = read[source[0]](source[1])
                seen[source] = True
                if titles is not None and isinstance(answer, dict) and answer.get("title"):
                    titles[source] = str(answer["title"])
            except NotFoundError:
                seen[source] = False
        if not seen[source]:
            name = {"Dashboard": "dashboard", "QueryReport": "query report", "DashboardWidget": "widget"}[source[0]]
            found.append(Diagnostic(item.path, item.source_line, 1, "DL150",
                                    f"{item.kind} {item.key!r}: {name} {source[1]} does not exist on the service"))
    return sorted(found)
