"""Rules for a definition's template: engine, JSON, data, placeholders, serviceConfig, formats, aggregation."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from analytics_provider.aml.checks_def import did_you_mean
from analytics_provider.aml.diagnostics import Reporter
from analytics_provider.aml.limits import describe_character, undrawable
from analytics_provider.aml.model import TEMPLATE_TAGS, DefInfo, Slot
from analytics_provider.aml.nodes import Entry, Heredoc, describe
from analytics_provider.aml.template import (
    JArray,
    JNode,
    JObject,
    JPlaceholder,
    JString,
    Placeholder,
    Template,
    TemplateSyntaxError,
    parse_template,
    to_python,
    walk,
)

SERVICE_CONFIG_KEYS = ("serviceConfig", "holisticsConfig")
"""The document's name, and the vendor's own spelling, which the service also reads."""
SERVICE_FORMATS = ("serviceFormat", "holisticsFormat")
SIGNAL_LISTS = ("crossFilterSignals", "contextMenuSignals")
_NAME_IN_STRING = re.compile(r"@\{\s*fields\.([A-Za-z_][A-Za-z0-9_]*)\.name\s*\}")


def check_template(entry: Entry, info: DefInfo, rep: Reporter) -> Template | None:
    """Check the template property; return the parsed template when it broke no rule (warnings aside),
    for the schema check, which would only repeat an error found here."""
    value = entry.value
    if not isinstance(value, Heredoc) or value.tag not in TEMPLATE_TAGS:
        shown = f"@{value.tag} block" if isinstance(value, Heredoc) else describe(value)
        offset = value.offset if value is not None and not entry.is_block else entry.offset
        rep.add("CC401", offset, f"template must be a @vgl {{ ... }};; block (Vega-Lite) or @vg {{ ... }};; (Vega), "
                                 f"found {shown}")
        return None
    try:
        tpl = parse_template(value.tag, value.text, value.text_offset, rep.source)
    except TemplateSyntaxError as exc:
        rep.add(exc.code, exc.offset, f"template is not valid JSON: {exc.message}" if exc.code == "CC402" else
                exc.message)
        return None
    if not isinstance(tpl.root, JObject):
        rep.add("CC403", tpl.root.offset, "the template must be one JSON object: start it with {")
        return None
    before = sum(d.is_error for d in rep.items)
    _repeated_keys(tpl.root, rep)
    _undrawable(tpl.root, rep)
    _engine(tpl, rep)
    _placeholders(tpl, info, rep)
    _data(tpl, tpl.root, rep)
    _service_config(tpl, tpl.root, rep)
    _formats(tpl.root, rep)
    _double_aggregation(tpl, info, rep)
    _unused(tpl, info, rep)
    return tpl if sum(d.is_error for d in rep.items) == before else None


def _repeated_keys(root: JObject, rep: Reporter) -> None:
    """A property given twice in one object: JSON readers keep one of them without a word."""
    for node in walk(root):
        if not isinstance(node, JObject):
            continue
        first: dict[str, JString] = {}
        for key in node.keys:
            if key.value in first:
                line = rep.source.line_of(first[key.value].offset)
                rep.add("CC416", key.offset, f'"{key.value}" is already set in this object on line {line}; keep only '
                                             "one (the compiler would silently use the last)")
            else:
                first[key.value] = key


def _undrawable(root: JObject, rep: Reporter) -> None:
    """Strings (keys too) holding a character the compilers abort on."""
    for node in walk(root):
        strings = [node] if isinstance(node, JString) else node.keys if isinstance(node, JObject) else []
        for string in strings:
            at = undrawable(string.value)
            if at >= 0:
                rep.add("CC417", string.offset, f"this string holds {describe_character(string.value[at])}, which "
                                                "charts cannot draw; remove it (tab and line breaks are allowed)")


def _engine(tpl: Template, rep: Reporter) -> None:
    """A ``$schema`` naming the other engine than the tag: the service follows ``$schema``."""
    node, engine = tpl.schema_node, tpl.engine
    tag_kind = "vega-lite" if tpl.tag == "vgl" else "vega"
    if node is not None and engine.kind != tag_kind:
        right = "@vg" if engine.kind == "vega" else "@vgl"
        rep.add("CC415", node.offset, f"the template is tagged @{tpl.tag} but its $schema is {engine.name}, which is "
                                      f"what renders it (and what this check follows); tag it {right}")


def _placeholders(tpl: Template, info: DefInfo, rep: Reporter) -> None:
    for ph in tpl.placeholders:
        if ph.kind == "invalid":
            rep.add("CC405", ph.offset, f"'@{{{ph.text}}}' is not a placeholder{_placeholder_hint(ph.text)}; use "
                                        "@{values}, @{fields.<slot>.name|type|format} or @{options.<option>.value}")
        elif ph.kind == "field" and info.slots_known and ph.name not in info.slots:
            rep.add("CC406", ph.offset, f"'@{{{ph.text}}}' names slot '{ph.name}', which fields does not declare"
                                        f"{did_you_mean(ph.name, list(info.slots))}; declare field {ph.name} "
                                        "{ ... } or fix the name")
        elif ph.kind == "option" and info.options_known and ph.name not in info.options:
            rep.add("CC407", ph.offset, f"'@{{{ph.text}}}' names option '{ph.name}', which options does not declare"
                                        f"{did_you_mean(ph.name, list(info.options))}; declare option {ph.name} "
                                        "{ ... } or fix the name")


def _placeholder_hint(text: str) -> str:
    parts = text.strip().split(".")
    if parts[0] in ("field", "option"):
        return f" ('{parts[0]}' should be '{parts[0]}s')"
    if parts[0] == "fields" and len(parts) == 3:
        return f" (a field has no '{parts[2]}'; use name, type or format)"
    if parts[0] == "options" and len(parts) == 3:
        return f" (an option has no '{parts[2]}'; use value)"
    return ""


def _is_values(node: JNode | None) -> bool:
    return isinstance(node, JPlaceholder) and node.ref.kind == "values"


def _data(tpl: Template, root: JObject, rep: Reporter) -> None:
    data = root.get("data")
    allowed: set[int] = set()
    if tpl.engine.kind == "vega-lite":
        good = isinstance(data, JObject) and [k.value for k in data.keys] == ["values"] and _is_values(data.values[0])
        if data is None:
            rep.add("CC404", root.offset, 'the template has no data: add "data": {"values": @{values}}')
        elif not good:
            rep.add("CC404", data.offset, 'data must be exactly {"values": @{values}}: the service passes the rows '
                                          "through @{values}")
        elif isinstance(data, JObject):
            allowed.add(data.values[0].offset)
    else:
        feeds = [item.get("values") for item in data.items if isinstance(item, JObject)] \
            if isinstance(data, JArray) else []
        allowed = {node.offset for node in feeds if node is not None and _is_values(node)}
        if not allowed:
            offset = data.offset if data is not None else root.offset
            rep.add("CC404", offset, 'a Vega template needs a data set fed by the service: "data": '
                                     '[{"name": "table", "values": @{values}}]')
    for ph in tpl.placeholders:
        if ph.kind == "values" and ph.offset not in allowed and allowed:
            rep.add("CC404", ph.offset, "@{values} may only appear as the values of the data property")


def _declared_names(tpl: Template) -> set[str]:
    """Names of Vega-Lite params (any view) or Vega signals (any level)."""
    key = "params" if tpl.engine.kind == "vega-lite" else "signals"
    names = set()
    for node in walk(tpl.root):
        declared = node.get(key) if isinstance(node, JObject) else None
        if isinstance(declared, JArray):
            for item in declared.items:
                name = item.get("name") if isinstance(item, JObject) else None
                if isinstance(name, JString):
                    names.add(name.value)
    return names


def _service_config(tpl: Template, root: JObject, rep: Reporter) -> None:
    where = "params" if tpl.engine.kind == "vega-lite" else "signals"
    kind = where[:-1]
    declared: set[str] | None = None
    for config_key in SERVICE_CONFIG_KEYS:
        config = root.get(config_key)
        if config is None:
            continue
        if not isinstance(config, JObject):
            rep.add("CC409", config.offset, f"{config_key} must be an object such as "
                                            '{"crossFilterSignals": ["select"]}')
            continue
        for list_key in SIGNAL_LISTS:
            names = config.get(list_key)
            if names is None:
                continue
            if not isinstance(names, JArray):
                rep.add("CC409", names.offset, f"{config_key}.{list_key} must be a list of {kind} names")
                continue
            for item in names.items:
                if not isinstance(item, JString):
                    rep.add("CC409", item.offset, f"{config_key}.{list_key} must list {kind} names as strings")
                    continue
                declared = _declared_names(tpl) if declared is None else declared
                if item.value not in declared:
                    rep.add("CC408", item.offset, f"'{item.value}' in {config_key}.{list_key} is not declared in "
                                                  f"{where}{did_you_mean(item.value, sorted(declared))}; declare a "
                                                  f"selection named '{item.value}' or fix the name")


def _formats(root: JObject, rep: Reporter) -> None:
    for node in walk(root):
        if not isinstance(node, JObject):
            continue
        kind, fmt = node.get("formatType"), node.get("format")
        service = kind.value if isinstance(kind, JString) and kind.value in SERVICE_FORMATS else ""
        is_field_format = isinstance(fmt, JPlaceholder) and fmt.ref.kind == "field" and fmt.ref.attr == "format"
        if service and fmt is None:
            key = node.key_node("formatType")
            rep.add("CC410", key.offset if key else node.offset,
                    f'formatType "{service}" needs "format": @{{fields.<slot>.format}} in the same object')
        elif service and fmt is not None and not is_field_format:
            rep.add("CC410", fmt.offset, f'with formatType "{service}", format must be @{{fields.<slot>.format}}')
        elif is_field_format and not service and fmt is not None:
            rep.add("CC411", fmt.offset, "format @{fields.<slot>.format} is the service's field format: add "
                                         '"formatType": "serviceFormat" next to it')


def _slot_named(node: JNode | None, slots: dict[str, Slot]) -> str | None:
    """The slot a node names (``@{fields.x.name}`` alone or as the whole string), else None."""
    if isinstance(node, JPlaceholder) and node.ref.kind == "field" and node.ref.attr == "name":
        return node.ref.name if node.ref.name in slots else None
    if isinstance(node, JString):
        m = _NAME_IN_STRING.fullmatch(node.value)
        return m.group(1) if m and m.group(1) in slots else None
    return None


def _names(node: JNode | None, slots: dict[str, Slot]) -> set[str] | None:
    """The slots a groupby list names; None when it names anything else (a computed field)."""
    items = node.items if isinstance(node, JArray) else [node] if node is not None else []
    found = {_slot_named(item, slots) for item in items}
    return None if None in found else {name for name in found if name}


def _double_aggregation(tpl: Template, info: DefInfo, rep: Reporter) -> None:
    """Report a measure re-aggregated over exactly the groups the service made (one row per
    combination of the dimension slots): each group holds one row, so the aggregation does nothing
    (or, for a count, gives 1). Aggregations over fewer dimensions (a mean of the groups, a total
    per date), joinaggregate and window transforms are what charts mean, and are left alone."""
    measures = {name: slot for name, slot in info.slots.items() if slot.kind == "measure"}
    groups = {name for name, slot in info.slots.items() if slot.kind == "dimension"}
    if not measures or not groups or len(groups) + len(measures) != len(info.slots):
        return
    found: list[tuple[int, str, str]] = []
    vega_lite = tpl.engine.kind == "vega-lite"
    views = _views(tpl.root, {}) if vega_lite and isinstance(tpl.root, JObject) else iter(())
    for node, inherited in views:
        encoding = {**inherited, **_channels(node.get("encoding"))}
        grouped = set()
        for channel in encoding.values():
            field = channel.get("field")
            if field is not None and all(channel.get(k) is None for k in ("aggregate", "timeUnit", "bin")):
                grouped.add(_slot_named(field, info.slots) or "")
        for channel in encoding.values():
            slot = _slot_named(channel.get("field"), measures)
            key = channel.key_node("aggregate")
            if slot and key is not None and grouped == groups:
                found.append((key.offset, slot, '"aggregate" in its encoding, grouped by'))
    for item_node in walk(tpl.root):
        if not isinstance(item_node, JObject):
            continue
        node = item_node
        ops = node.get("aggregate")
        if vega_lite and isinstance(ops, JArray) and _names(node.get("groupby"), info.slots) == groups:
            for item in ops.items:
                slot = _slot_named(item.get("field"), measures) if isinstance(item, JObject) else None
                if slot:
                    found.append((item.offset, slot, 'the "aggregate" transform, grouped by'))
        vg_type, fields = node.get("type"), node.get("fields")
        if not vega_lite and isinstance(vg_type, JString) and vg_type.value == "aggregate" \
                and isinstance(fields, JArray) and _names(node.get("groupby"), info.slots) == groups:
            for item in fields.items:
                slot = _slot_named(item, measures)
                if slot:
                    found.append((item.offset, slot, 'the "aggregate" transform, grouped by'))
    shown = ", ".join(sorted(groups))
    for offset, slot, how in dict.fromkeys(found):  # a channel inherited by several layers is one finding
        rep.add("CC412", offset, f"slot '{slot}' is a measure: the service already returns one row per {shown}, "
                                 f"and {how} the same slots, aggregates each single row again; remove this "
                                 f"aggregation (the chart stays the same), or declare field {slot} with type: "
                                 "'dimension' if the template needs the unaggregated rows")


def _channels(node: JNode | None) -> dict[str, JObject]:
    """The field channels of an encoding (a list channel such as tooltip gives one entry per item);
    a channel set to null is kept as an empty object, so that it hides the inherited one."""
    if not isinstance(node, JObject):
        return {}
    found: dict[str, JObject] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if isinstance(value, JObject):
            found[key.value] = value
        elif isinstance(value, JArray):
            for i, item in enumerate(value.items):
                if isinstance(item, JObject):
                    found[f"{key.value}[{i}]"] = item
        else:
            found[key.value] = JObject(value.offset)
    return found


def _views(node: JObject, inherited: dict[str, JObject]) -> Iterator[tuple[JObject, dict[str, JObject]]]:
    """Every unit view of a Vega-Lite spec with the encoding it inherits from its layers."""
    here = {**inherited, **_channels(node.get("encoding"))}
    layers = node.get("layer")
    spec = node.get("spec")
    if isinstance(layers, JArray):
        for item in layers.items:
            if isinstance(item, JObject):
                yield from _views(item, here)
    elif isinstance(spec, JObject):
        yield from _views(spec, here)
    elif node.get("mark") is not None:
        yield node, inherited


def _unused(tpl: Template, info: DefInfo, rep: Reporter) -> None:
    used_fields = {ph.name for ph in tpl.placeholders if ph.kind == "field"}
    used_options = {ph.name for ph in tpl.placeholders if ph.kind == "option"}
    for name, slot in info.slots.items():
        if name not in used_fields:
            rep.add("CC413", slot.offset, f"field slot '{name}' is never used by the template; use "
                                          f"@{{fields.{name}.name}} or remove the slot")
    for name, option in info.options.items():
        if name not in used_options:
            rep.add("CC414", option.offset, f"option '{name}' is never used by the template; use "
                                            f"@{{options.{name}.value}} or remove the option")


def filled(tpl: Template, info: DefInfo) -> Any:
    """The template as plain JSON data for the schema check: @{values} becomes an empty list and an
    option the value it starts with; any other placeholder stays as its own text, a value only known
    at run time (the schema check does not hold those against the template)."""
    from analytics_provider.aml.sample import option_value

    def fill(ph: Placeholder) -> Any:
        if ph.kind == "values":
            return []
        option = info.options.get(ph.name) if ph.kind == "option" else None
        if option is not None and option.default is not None and option.type:
            return option_value(option)
        return f"@{{{ph.text}}}"

    return to_python(tpl.root, fill)
