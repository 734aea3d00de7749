"""Rules for a CustomChartDef: its name, properties, field slots and options."""

from __future__ import annotations

import difflib
import math
import re

from analytics_provider.aml.diagnostics import Reporter
from analytics_provider.aml.limits import describe_character, undrawable
from analytics_provider.aml.model import (
    CHOICE_TYPES,
    DATA_TYPES,
    DEF_PROPERTIES,
    FIELD_PROPERTIES,
    FIELD_TYPES,
    OPTION_PROPERTIES,
    OPTION_TYPES,
    SORT_DIRECTIONS,
    SORT_PROPERTIES,
    ChartDef,
    DefInfo,
    OptionInfo,
    Slot,
    block_body,
    properties,
)
from analytics_provider.aml.nodes import DYNAMIC, Body, Bool, Entry, ListV, Num, Ref, Str, Value, describe

SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
HEX_COLOUR = re.compile(r"#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})")
_COLOUR_WORDS = """
    aliceblue antiquewhite aqua aquamarine azure beige bisque black blanchedalmond blue blueviolet brown
    burlywood cadetblue chartreuse chocolate coral cornflowerblue cornsilk crimson cyan darkblue darkcyan
    darkgoldenrod darkgray darkgreen darkgrey darkkhaki darkmagenta darkolivegreen darkorange darkorchid
    darkred darksalmon darkseagreen darkslateblue darkslategray darkslategrey darkturquoise darkviolet
    deeppink deepskyblue dimgray dimgrey dodgerblue firebrick floralwhite forestgreen fuchsia gainsboro
    ghostwhite gold goldenrod gray green greenyellow grey honeydew hotpink indianred indigo ivory khaki
    lavender lavenderblush lawngreen lemonchiffon lightblue lightcoral lightcyan lightgoldenrodyellow
    lightgray lightgreen lightgrey lightpink lightsalmon lightseagreen lightskyblue lightslategray
    lightslategrey lightsteelblue lightyellow lime limegreen linen magenta maroon mediumaquamarine mediumblue
    mediumorchid mediumpurple mediumseagreen mediumslateblue mediumspringgreen mediumturquoise mediumvioletred
    midnightblue mintcream mistyrose moccasin navajowhite navy oldlace olive olivedrab orange orangered orchid
    palegoldenrod palegreen paleturquoise palevioletred papayawhip peachpuff peru pink plum powderblue purple
    rebeccapurple red rosybrown royalblue saddlebrown salmon sandybrown seagreen seashell sienna silver
    skyblue slateblue slategray slategrey snow springgreen steelblue tan teal thistle tomato transparent
    turquoise violet wheat white whitesmoke yellow yellowgreen
"""
CSS_COLOUR_NAMES = frozenset(_COLOUR_WORDS.split())
"""The CSS colour keywords: a colour the charts draw with, which the service passes on as written."""
COLOUR_FUNCTION = re.compile(r"(?:rgba?|hsla?|hwb|lab|lch|oklab|oklch)\([^()]*\)")
NUMERIC_TEXT = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_EXAMPLES = {
    "label": "label: 'My chart'",
    "fields": "fields { field x { type: 'dimension' } }",
    "template": 'template: @vgl { "data": {"values": @{values}}, ... };;',
}


def did_you_mean(word: str, choices: tuple[str, ...] | list[str]) -> str:
    """`` (did you mean 'x'?)`` when a choice is close to ``word``, else an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.62)
    return f" (did you mean '{close[0]}'?)" if close else ""


def one_of(allowed: tuple[str, ...]) -> str:
    """``'a', 'b' or 'c'``."""
    quoted = [f"'{a}'" for a in allowed]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def to_snake_case(name: str) -> str:
    """A snake_case suggestion for a name."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    name = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()
    return name if SNAKE_CASE.fullmatch(name) else "my_chart"


def check_def(chart: ChartDef, rep: Reporter) -> DefInfo:
    """Report every rule a definition breaks (the template excepted); return its slots and options."""
    info = DefInfo()
    title = f"CustomChartDef '{chart.name}'" if chart.name else "this CustomChartDef"
    if chart.name is None and not chart.inline:
        rep.add("CC101", chart.offset, "CustomChartDef has no chart_name: write CustomChartDef my_chart { ... }")
    elif chart.name is not None and not SNAKE_CASE.fullmatch(chart.name):
        rep.add("CC102", chart.name_offset, f"chart_name '{chart.name}' is not snake_case: use lower-case words "
                                            f"joined by '_', e.g. '{to_snake_case(chart.name)}'")
    props = properties(chart.body, rep, "CustomChartDef")
    for key, entry in props.items():
        if key not in DEF_PROPERTIES:
            hint = did_you_mean(key, DEF_PROPERTIES)
            rep.add("CC104", entry.offset, f"'{key}' is not a CustomChartDef property{hint}; use "
                                           f"{', '.join(DEF_PROPERTIES)}")
    for key in ("label", "fields", "template"):
        if key not in props:
            rep.add("CC101", chart.offset, f"{title} has no {key}: add {_EXAMPLES[key]}")
    for key in ("label", "description", "icon"):
        if key in props:
            expect_text(props[key], rep)
    if "fields" in props:
        _fields(props["fields"], rep, info)
    if "options" in props:
        _options(props["options"], rep, info)
    return info


def expect_text(entry: Entry, rep: Reporter, code: str = "CC105") -> None:
    """A property whose value must be a string (names of constants are left alone)."""
    if entry.is_block or not isinstance(entry.value, (Str, *DYNAMIC)):
        offset = entry.value.offset if entry.value is not None and not entry.is_block else entry.offset
        rep.add(code, offset, f"'{entry.key}' must be a string such as '{entry.key} text', found "
                              f"{describe(entry.value)}")


def expect_enum(entry: Entry, allowed: tuple[str, ...], code: str, rep: Reporter, what: str) -> str:
    """A property whose value must be one of ``allowed`` strings; returns it, or '' when it is not."""
    value = entry.value
    choices = one_of(allowed)
    if isinstance(value, Str) and value.value in allowed:
        return value.value
    if isinstance(value, Str):
        rep.add(code, value.offset, f"{what} is '{value.value}', which is not valid"
                                    f"{did_you_mean(value.value, allowed)}; use {choices}")
    elif isinstance(value, Ref) and value.name in allowed:
        rep.add(code, value.offset, f"{what} must be a quoted string: write '{value.name}'")
    else:
        offset = value.offset if value is not None and not entry.is_block else entry.offset
        rep.add(code, offset, f"{what} must be one of {choices}, found {describe(value)}")
    return ""


def _block(entry: Entry, rep: Reporter, example: str) -> Body | None:
    body = block_body(entry)
    if body is None:
        offset = entry.value.offset if entry.value is not None else entry.offset
        rep.add("CC105", offset, f"'{entry.key}' must be a block: {example}, found {describe(entry.value)}")
    return body


def _named_blocks(body: Body, key: str, code: str, rep: Reporter, container: str) -> list[tuple[Entry, Body]]:
    """The ``key <name> { ... }`` entries of a container; anything else is reported with ``code``."""
    found = []
    for entry in body.entries:
        inner = block_body(entry)
        if entry.key != key:
            rep.add(code, entry.offset, f"'{entry.key}' is not allowed in {container}{did_you_mean(entry.key, (key,))};"
                                        f" write {key} <name> {{ ... }}")
        elif entry.name is None:
            rep.add(code, entry.offset, f"{key} needs a name: write {key} <name> {{ ... }}")
        elif inner is None:
            rep.add(code, entry.offset, f"{key} '{entry.name}' must be a block: {key} {entry.name} {{ ... }}")
        else:
            found.append((entry, inner))
    return found


def _unknown(props: dict[str, Entry], allowed: tuple[str, ...], code: str, rep: Reporter, where: str) -> None:
    for key, entry in props.items():
        if key not in allowed:
            rep.add(code, entry.offset, f"'{key}' is not a property of {where}{did_you_mean(key, allowed)}; "
                                        f"use {', '.join(allowed)}")


def _fields(entry: Entry, rep: Reporter, info: DefInfo) -> None:
    body = _block(entry, rep, "fields { field x { type: 'dimension' } }")
    if body is None:
        return
    info.slots_known = True
    slots = _named_blocks(body, "field", "CC207", rep, "fields")
    if not body.entries:
        rep.add("CC208", entry.offset, "fields declares no slot: add field <name> { type: 'dimension' }")
    for slot_entry, slot_body in slots:
        name = slot_entry.name or ""
        if name in info.slots:
            line = rep.source.line_of(info.slots[name].offset)
            rep.add("CC206", slot_entry.name_offset, f"field slot '{name}' is already declared on line {line}; "
                                                     "rename or remove one")
            continue
        info.slots[name] = Slot(name, slot_entry.name_offset, *_slot(name, slot_entry, slot_body, rep))


def _slot(name: str, entry: Entry, body: Body, rep: Reporter) -> tuple[str, str]:
    """Check a slot; return its kind and data_type ('' when unknown)."""
    props = properties(body, rep, f"field '{name}'")
    _unknown(props, FIELD_PROPERTIES, "CC207", rep, f"field '{name}'")
    kind = data_type = ""
    if "type" not in props:
        rep.add("CC201", entry.offset, f"field '{name}' has no type: add type: 'dimension' or type: 'measure'")
    else:
        kind = expect_enum(props["type"], FIELD_TYPES, "CC202", rep, f"type of field '{name}'")
    if "label" in props:
        expect_text(props["label"], rep)
    if "data_type" in props:
        data_type = expect_enum(props["data_type"], DATA_TYPES, "CC203", rep, f"data_type of field '{name}'")
    if "sort" in props:
        sort = _block(props["sort"], rep, "sort { direction: 'asc' apply_order: 1 }")
        if sort is not None:
            sort_props = properties(sort, rep, f"sort of field '{name}'")
            _unknown(sort_props, SORT_PROPERTIES, "CC207", rep, f"the sort of field '{name}'")
            if "direction" in sort_props:
                expect_enum(sort_props["direction"], SORT_DIRECTIONS, "CC204", rep, "sort.direction")
            order = sort_props.get("apply_order")
            if order is not None and (order.is_block or not isinstance(order.value, (Num, *DYNAMIC))):
                offset = order.value.offset if order.value is not None else order.offset
                rep.add("CC205", offset, f"sort.apply_order must be a number such as 1, found {describe(order.value)}")
    return kind, data_type


def _options(entry: Entry, rep: Reporter, info: DefInfo) -> None:
    body = _block(entry, rep, "options { option x { type: 'toggle' } }")
    if body is None:
        info.options_known = False
        return
    for opt_entry, opt_body in _named_blocks(body, "option", "CC307", rep, "options"):
        name = opt_entry.name or ""
        if name in info.options:
            line = rep.source.line_of(info.options[name].offset)
            rep.add("CC306", opt_entry.name_offset, f"option '{name}' is already declared on line {line}; "
                                                    "rename or remove one")
            continue
        info.options[name] = _option(name, opt_entry, opt_body, rep)


def _option(name: str, entry: Entry, body: Body, rep: Reporter) -> OptionInfo:
    props = properties(body, rep, f"option '{name}'")
    _unknown(props, OPTION_PROPERTIES, "CC307", rep, f"option '{name}'")
    info = OptionInfo(name, entry.name_offset, "")
    if "type" not in props:
        rep.add("CC301", entry.offset, f"option '{name}' has no type: add one such as type: 'toggle' (one of "
                                       f"{one_of(OPTION_TYPES)})")
    else:
        info.type = expect_enum(props["type"], OPTION_TYPES, "CC302", rep, f"type of option '{name}'")
    if "label" in props:
        expect_text(props["label"], rep)
    choices_ok = _choices(name, props.get("options"), info, rep)
    if info.type in CHOICE_TYPES and "options" not in props:
        rep.add("CC303", entry.offset, f"option '{name}' of type '{info.type}' needs its choices: "
                                       "add options: ['first', 'second']")
    elif info.type and info.type not in CHOICE_TYPES and "options" in props:
        rep.add("CC308", props["options"].offset, f"a '{info.type}' option ignores its options list; remove it or "
                                                  "use type 'radio' or 'select'")
    if "default_value" in props:
        default = props["default_value"]
        if _default(name, default, info, choices_ok, rep) and isinstance(default.value, (Str, Num, Bool)):
            info.default = default.value
    # the values go into the template: one the compilers abort on is reported, and left out
    info.choices = [item for item in info.choices if _drawable(item, rep)]
    if info.default is not None and not _drawable(info.default, rep):
        info.default = None
    return info


def _drawable(value: Value, rep: Reporter) -> bool:
    """False, reported (CC417), for a string holding a character the compilers abort on."""
    at = undrawable(value.value) if isinstance(value, Str) else -1
    if isinstance(value, Str) and at >= 0:
        rep.add("CC417", value.offset, f"this value holds {describe_character(value.value[at])}, which charts "
                                       "cannot draw; remove it (tab and line breaks are allowed)")
    return at < 0


def _choices(name: str, entry: Entry | None, info: OptionInfo, rep: Reporter) -> bool:
    """Check the options list; True when every choice is a literal, so defaults can be compared."""
    if entry is None:
        return False
    value = entry.value
    if isinstance(value, DYNAMIC) and not entry.is_block:
        return False
    if entry.is_block or not isinstance(value, ListV):
        offset = value.offset if value is not None and not entry.is_block else entry.offset
        rep.add("CC305", offset, f"options of option '{name}' must be a list such as ['a', 'b'], found "
                                 f"{describe(value)}")
        return False
    if not value.items:
        rep.add("CC305", value.offset, f"options of option '{name}' is empty: list at least one choice")
        return False
    literal, seen = True, set()
    for item in value.items:
        if isinstance(item, (Str, Num)):
            key = (type(item), item.value)
            if key in seen:
                rep.add("CC305", item.offset, f"choice {_show(item)} is listed twice in option '{name}'")
            seen.add(key)
            info.choices.append(item)
        elif isinstance(item, DYNAMIC):
            literal = False
        else:
            rep.add("CC305", item.offset, f"choices must be strings or numbers, found {describe(item)}")
            literal = False
    return literal


def _show(value: Value) -> str:
    if isinstance(value, Str):
        return repr(value.value)
    if isinstance(value, Bool):
        return "true" if value.value else "false"
    if isinstance(value, Num):
        return str(value.value)
    return describe(value)


def is_number(value: Value) -> bool:
    """A number, or text that reads as one (the API document types default_value as string, number
    or boolean, and the service reads '25' as 25)."""
    return isinstance(value, Num) or (isinstance(value, Str) and NUMERIC_TEXT.fullmatch(value.value.strip()) is not None
                                      and math.isfinite(float(value.value)))


def is_colour(value: Value) -> bool:
    """A hex colour, a CSS colour name or a CSS colour function, as the renderer reads colours."""
    if not isinstance(value, Str):
        return False
    text = value.value.strip()
    return bool(HEX_COLOUR.fullmatch(text) or text.lower() in CSS_COLOUR_NAMES or COLOUR_FUNCTION.fullmatch(text))


def _default(name: str, entry: Entry, info: OptionInfo, choices_ok: bool, rep: Reporter) -> bool:
    """Check a default value against the control type; True when it is a literal that fits."""
    before = len(rep.items)
    value = entry.value
    if isinstance(value, DYNAMIC) and not entry.is_block:
        return False
    offset = value.offset if value is not None and not entry.is_block else entry.offset
    where = f"default_value of option '{name}'"
    if entry.is_block or not isinstance(value, (Str, Num, Bool)):
        rep.add("CC304", offset, f"{where} must be a string, number or boolean, found {describe(value)}")
        return False
    kind = info.type
    if kind == "toggle" and not isinstance(value, Bool):
        rep.add("CC304", offset, f"{where} is {_show(value)} but a toggle gives true or false; write true or false")
    elif kind == "number-input" and not is_number(value):
        rep.add("CC304", offset, f"{where} is {_show(value)} but a number-input gives a number; write a number")
    elif kind == "input" and not isinstance(value, Str):
        rep.add("CC304", offset, f"{where} is {_show(value)} but an input gives text; write it in quotes")
    elif kind == "color-picker" and not is_colour(value):
        hint = did_you_mean(value.value.lower(), sorted(CSS_COLOUR_NAMES)) if isinstance(value, Str) else ""
        rep.add("CC304", offset, f"{where} is {_show(value)}, which is not a colour{hint}; write a hex colour such "
                                 "as '#3b60d2' or a CSS colour name such as 'green'")
    elif kind in CHOICE_TYPES and choices_ok:
        keys = {(type(c), c.value) for c in info.choices if isinstance(c, (Str, Num))}
        if isinstance(value, Bool) or (type(value), value.value) not in keys:
            listed = ", ".join(_show(c) for c in info.choices)
            rep.add("CC304", offset, f"{where} is {_show(value)}, which is not one of its choices ({listed}); "
                                     "use one of them")
    return len(rep.items) == before
