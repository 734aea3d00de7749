"""Sample data for a definition: rows from the slots' types (or a csv file), option values, and the
template filled with them as the service would fill it, ready for the compiler.

A slot's field is named after the slot, so a csv file for :func:`read_rows` has one column per slot.
"""

from __future__ import annotations

import csv
import datetime as dt
import itertools
import re
from pathlib import Path
from typing import Any

from analytics_provider.aml.checks_def import NUMERIC_TEXT
from analytics_provider.aml.limits import describe_character, undrawable
from analytics_provider.aml.model import DefInfo, OptionInfo
from analytics_provider.aml.nodes import Bool, Num, Str
from analytics_provider.aml.template import Placeholder, Template, read_placeholder, to_python

SAMPLE_ROWS = 60
FIELD_FORMAT = ","
"""What ``@{fields.<slot>.format}`` becomes: a d3 number format (the service's own format object is
read only by its own ``serviceFormat`` function, which :mod:`~analytics_provider.aml.compiler` stands in for)."""
_CATEGORIES = ("North", "South", "East", "West", "Central")
_SERIES = ("Online", "Retail", "Partner")
_IN_STRING = re.compile(r"@\{([^}\n\"]*)\}")


class DataError(ValueError):
    """A csv file that does not fit the definition's slots."""


def option_value(option: OptionInfo) -> Any:
    """The value an option has before anyone changes it: its default (numeric text read as a number
    for a number-input), else the first choice, else what the control gives when empty."""
    default = option.default
    if isinstance(default, (Str, Num, Bool)):
        value = default.value
        if option.type == "number-input" and isinstance(value, str) and NUMERIC_TEXT.fullmatch(value.strip()):
            number = float(value)
            return int(number) if number.is_integer() else number
        return value
    if option.choices and isinstance(option.choices[0], (Str, Num)):
        return option.choices[0].value
    return {"toggle": False, "number-input": 0, "color-picker": "#3b60d2"}.get(option.type, "")


def sample_rows(info: DefInfo, limit: int = SAMPLE_ROWS) -> list[dict[str, Any]]:
    """Rows as the service returns them: one per combination of the dimension slots' values (the
    service groups by the dimensions), one column per slot named after it, measures varying with
    the row. The first dimension gets the most values; at most ``limit`` rows."""
    dimensions = [slot for slot in info.slots.values() if slot.kind != "measure"]
    measures = [slot for slot in info.slots.values() if slot.kind == "measure"]
    value_lists = [_dimension_values(slot.data_type, position) for position, slot in enumerate(dimensions)]
    rows: list[dict[str, Any]] = []
    for combination in itertools.product(*value_lists):
        i = len(rows)
        row: dict[str, Any] = {}
        for slot, value in zip(dimensions, combination, strict=True):
            # numbers spread differently in each group, so distributions differ between groups
            row[slot.name] = value + (i * 3) % 7 if slot.data_type == "number" else value
        for j, slot in enumerate(measures):
            row[slot.name] = 20 + (i * 37 + j * 53) % 80 + (i % 4) * 5
        rows.append(row)
        if len(rows) >= limit:
            break
    return rows


def _dimension_values(data_type: str, position: int) -> list[Any]:
    count = (6, 3, 2)[min(position, 2)]
    if data_type == "date":
        return [dt.date(2024, 1 + 2 * k, 1).isoformat() for k in range(count)]
    if data_type == "number":
        return [5 + 10 * k for k in range(max(count, 8))]
    if data_type == "boolean":
        return [True, False]
    names = _CATEGORIES if position % 2 == 0 else _SERIES
    return list((names * 2)[:count]) if count <= len(names) else list(names)


def read_rows(path: str | Path, info: DefInfo) -> list[dict[str, Any]]:
    """Rows from a csv file whose header names the slots; numbers are read as numbers. Raises
    :class:`DataError` naming the missing or unknown columns, or the cell that holds a character the
    compilers abort on."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = list(reader.fieldnames or [])
        missing = [name for name in info.slots if name not in columns]
        unknown = [name for name in columns if name not in info.slots]
        if missing or unknown:
            raise DataError(f"{path}: the columns must be the slots {', '.join(info.slots)}"
                            + (f"; missing: {', '.join(missing)}" if missing else "")
                            + (f"; not slots: {', '.join(unknown)}" if unknown else ""))
        rows = []
        for row in reader:
            for key, value in row.items():
                at = undrawable(value) if isinstance(value, str) else -1
                if at >= 0:
                    raise DataError(f"{path}: line {reader.line_num}, column {key}: the cell holds "
                                    f"{describe_character(value[at])}, which charts cannot draw; remove it")
            rows.append({key: _cell(value) for key, value in row.items()})
        return rows


def _cell(text: str | None) -> Any:
    if text is None or text == "":
        return None
    if NUMERIC_TEXT.fullmatch(text.strip()):
        number = float(text)
        return int(number) if number.is_integer() and "." not in text else number
    return text


def placeholder_value(ph: Placeholder, info: DefInfo, rows: list[dict[str, Any]]) -> Any:
    """What the service puts in place of one placeholder."""
    if ph.kind == "values":
        return rows
    if ph.kind == "field":
        slot = info.slots.get(ph.name)
        if ph.attr == "format":
            return FIELD_FORMAT
        if ph.attr == "type":
            return (slot.data_type if slot else "") or "string"
        return ph.name
    option = info.options.get(ph.name) if ph.kind == "option" else None
    return option_value(option) if option is not None else None


def _in_text(text: str, info: DefInfo, rows: list[dict[str, Any]]) -> str:
    def one(m: re.Match[str]) -> str:
        value = placeholder_value(read_placeholder(m.start(), m.group(1)), info, rows)
        if isinstance(value, bool):
            return "true" if value else "false"
        return m.group(0) if value is None else str(value)

    return _IN_STRING.sub(one, text) if "@{" in text else text


def fill(tpl: Template, info: DefInfo, rows: list[dict[str, Any]]) -> Any:
    """The template as JSON data with every placeholder replaced, inside strings too."""
    data = to_python(tpl.root, lambda ph: placeholder_value(ph, info, rows))
    return _strings(data, info, rows)


def _strings(data: Any, info: DefInfo, rows: list[dict[str, Any]]) -> Any:
    if isinstance(data, dict):
        return {_in_text(k, info, rows): (v if v is rows else _strings(v, info, rows)) for k, v in data.items()}
    if isinstance(data, list):
        return [_strings(item, info, rows) for item in data]
    if isinstance(data, str):
        return _in_text(data, info, rows)
    return data
