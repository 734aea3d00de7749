"""The custom-chart model read off the syntax tree: definitions, their slots and options, and uses."""

from __future__ import annotations

from dataclasses import dataclass, field

from analytics_provider.aml.diagnostics import Reporter
from analytics_provider.aml.nodes import Body, Call, Entry, Expr, ListV, Obj, Value

DEF_PROPERTIES = ("label", "description", "icon", "fields", "options", "template")
FIELD_PROPERTIES = ("type", "label", "data_type", "sort")
SORT_PROPERTIES = ("direction", "apply_order")
OPTION_PROPERTIES = ("type", "label", "options", "default_value")
USE_PROPERTIES = (
    "custom_chart", "custom_chart_id", "dataset", "field", "calculation", "conditions", "having_conditions",
    "filter_groups", "filter", "setting", "settings", "theme",
)
USE_REPEATABLE = ("field", "calculation", "filter", "setting")

FIELD_TYPES = ("dimension", "measure")
DATA_TYPES = ("string", "number", "boolean", "date")
SORT_DIRECTIONS = ("asc", "desc")
OPTION_TYPES = ("input", "number-input", "toggle", "radio", "select", "color-picker")
CHOICE_TYPES = ("radio", "select")
TEMPLATE_TAGS = ("vgl", "vg")


@dataclass
class ChartDef:
    """A ``CustomChartDef``: top-level (``inline`` False) or written inside a CustomChart."""

    name: str | None
    offset: int
    name_offset: int
    body: Body
    inline: bool = False


@dataclass
class ChartUse:
    """A ``CustomChart`` (the viz of a VizBlock)."""

    offset: int
    body: Body


@dataclass
class Slot:
    """A declared field slot; ``kind`` is 'dimension', 'measure' or '' when unknown; ``data_type``
    the declared data_type, '' when none is declared."""

    name: str
    offset: int
    kind: str
    data_type: str = ""


@dataclass
class OptionInfo:
    """A declared option: its control type ('' when unknown) and default value node."""

    name: str
    offset: int
    type: str
    default: Value | None = None
    choices: list[Value] = field(default_factory=list)


@dataclass
class DefInfo:
    """What the template and the uses need to know of a definition."""

    slots: dict[str, Slot] = field(default_factory=dict)
    options: dict[str, OptionInfo] = field(default_factory=dict)
    slots_known: bool = False
    """False when fields is missing or not a block: names cannot be checked against it."""
    options_known: bool = True


@dataclass
class FileModel:
    """The definitions and uses of one file."""

    defs: list[ChartDef] = field(default_factory=list)
    uses: list[ChartUse] = field(default_factory=list)


def extract(body: Body) -> FileModel:
    """Every CustomChartDef and CustomChart of a parsed file."""
    found = FileModel()
    _walk_body(body, found)
    return found


def extract_objects(objects: list[Obj]) -> FileModel:
    """The definitions and uses among blocks found by scanning."""
    found = FileModel()
    for obj in objects:
        _walk_value(obj, found)
    return found


def _walk_body(body: Body, found: FileModel) -> None:
    for entry in body.entries:
        if entry.is_block and isinstance(entry.value, Obj) and entry.key == "CustomChartDef":
            found.defs.append(ChartDef(entry.name, entry.offset, entry.name_offset, entry.value.body))
        elif entry.is_block and isinstance(entry.value, Obj) and entry.key == "CustomChart":
            found.uses.append(ChartUse(entry.offset, entry.value.body))
        elif entry.value is not None:
            _walk_value(entry.value, found)


def _walk_value(value: Value, found: FileModel) -> None:
    if isinstance(value, Obj):
        if value.type_name == "CustomChartDef":
            found.defs.append(ChartDef(value.name, value.offset, value.name_offset, value.body))
        elif value.type_name == "CustomChart":
            found.uses.append(ChartUse(value.offset, value.body))
        else:
            _walk_body(value.body, found)
    elif isinstance(value, ListV):
        for item in value.items:
            _walk_value(item, found)
    elif isinstance(value, Call):
        for arg in value.args:
            _walk_value(arg, found)
    elif isinstance(value, Expr):
        _walk_value(value.left, found)
        if value.right is not None:
            _walk_value(value.right, found)


def properties(body: Body, rep: Reporter, what: str, repeatable: tuple[str, ...] = ()) -> dict[str, Entry]:
    """The first entry of each key; a key given again is reported (CC106) unless repeatable."""
    seen: dict[str, Entry] = {}
    for entry in body.entries:
        if entry.key in seen and entry.key not in repeatable:
            line = rep.source.line_of(seen[entry.key].offset)
            rep.add("CC106", entry.offset, f"'{entry.key}' is already set in this {what} on line {line}; "
                                           "keep only one")
            continue
        seen.setdefault(entry.key, entry)
    return seen


def block_body(entry: Entry) -> Body | None:
    """The body of an entry written as a block (``key { ... }`` or ``key: { ... }``), else None."""
    if isinstance(entry.value, Obj) and entry.value.type_name is None:
        return entry.value.body
    return None
