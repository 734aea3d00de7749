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
    return _collect([body])


def extract_objects(objects: list[Obj]) -> FileModel:
    """The definitions and uses among blocks found by scanning."""
    return _collect(list(objects))


def _collect(roots: list[Body | Value]) -> FileModel:
    """The definitions and uses in ``roots``, in the order written. A loop over a stack, not
    recursion: a long operator chain is a tree as deep as the chain is long."""
    found = FileModel()
    stack: list[Body | Entry | Value] = list(reversed(roots))
    while stack:
        item = stack.pop()
        if isinstance(item, Body):
            stack.extend(reversed(item.entries))
        elif isinstance(item, Entry):
            if item.is_block and isinstance(item.value, Obj) and item.key == "CustomChartDef":
                found.defs.append(ChartDef(item.name, item.offset, item.name_offset, item.value.body))
            elif item.is_block and isinstance(item.value, Obj) and item.key == "CustomChart":
                found.uses.append(ChartUse(item.offset, item.value.body))
            elif item.value is not None:
                stack.append(item.value)
        elif isinstance(item, Obj) and item.type_name == "CustomChartDef":
            found.defs.append(ChartDef(item.name, item.offset, item.name_offset, item.body))
        elif isinstance(item, Obj) and item.type_name == "CustomChart":
            found.uses.append(ChartUse(item.offset, item.body))
        elif isinstance(item, Obj):
            stack.append(item.body)
        elif isinstance(item, ListV):
            stack.extend(reversed(item.items))
        elif isinstance(item, Call):
            stack.extend(reversed(item.args))
        elif isinstance(item, Expr):
            stack.extend([item.right, item.left] if item.right is not None else [item.left])
    return found


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
