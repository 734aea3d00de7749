"""Rules for a CustomChart (the viz of a VizBlock), inline definitions included."""

from __future__ import annotations

from collections.abc import Callable

from analytics_provider.aml.checks_def import did_you_mean
from analytics_provider.aml.diagnostics import Reporter
from analytics_provider.aml.model import (
    USE_PROPERTIES,
    USE_REPEATABLE,
    ChartDef,
    ChartUse,
    DefInfo,
    block_body,
    properties,
)
from analytics_provider.aml.nodes import DYNAMIC, Bool, Entry, ListV, Num, Obj, Ref, Str, describe

CheckInline = Callable[[ChartDef, Reporter], DefInfo]
"""Checks an inline definition (and its template); returns its slots and options."""


def check_use(use: ChartUse, rep: Reporter, defs: dict[str, DefInfo], check_inline: CheckInline) -> None:
    """Report every rule a CustomChart breaks; ``defs`` are the project's definitions by chart_name."""
    props = properties(use.body, rep, "CustomChart", USE_REPEATABLE)
    legacy = [props[k] for k in ("template", "fields", "options") if k in props]
    if legacy:
        rep.add("CC509", use.offset, "this CustomChart has a template and fields: that is the legacy definition form; "
                                     "write it as CustomChartDef <chart_name> { ... } in a .chart.aml file")
        return
    for key, entry in props.items():
        if key not in USE_PROPERTIES:
            rep.add("CC506", entry.offset, f"'{key}' is not a CustomChart property{did_you_mean(key, USE_PROPERTIES)}")
    info, chart_name = _definition(use, props, rep, defs, check_inline)
    if "dataset" not in props:
        rep.add("CC502", use.offset, "CustomChart has no dataset: add dataset: <dataset name>")
    else:
        _expect(props["dataset"], (Str, Obj, *DYNAMIC), "a dataset name or Dataset", rep)
    _fields(use, info, chart_name, rep)
    for entry in use.body.all("setting"):
        _expect(entry, (Str, Num, Bool, *DYNAMIC), "a boolean, string or number", rep)
    for key in ("conditions", "having_conditions"):
        if key in props and _expect(props[key], (ListV, *DYNAMIC), "a list of strings", rep):
            value = props[key].value
            for item in value.items if isinstance(value, ListV) else []:
                if not isinstance(item, (Str, *DYNAMIC)):
                    rep.add("CC505", item.offset, f"{key} must list strings, found {describe(item)}")
    if "filter_groups" in props:
        _expect(props["filter_groups"], (ListV, *DYNAMIC), "a list of filter groups", rep)
    if "settings" in props:
        _settings(props["settings"], rep)


def _expect(entry: Entry, kinds: tuple[type, ...], what: str, rep: Reporter) -> bool:
    if not entry.is_block and isinstance(entry.value, kinds):
        return True
    offset = entry.value.offset if entry.value is not None and not entry.is_block else entry.offset
    name = f"{entry.key} {entry.name}" if entry.name else entry.key
    rep.add("CC505", offset, f"'{name}' must be {what}, found {describe(entry.value)}")
    return False


def _definition(use: ChartUse, props: dict[str, Entry], rep: Reporter, defs: dict[str, DefInfo],
                check_inline: CheckInline) -> tuple[DefInfo | None, str]:
    """The definition a CustomChart uses, when known, and how to name it in messages."""
    chart, chart_id = props.get("custom_chart"), props.get("custom_chart_id")
    if chart and chart_id:
        rep.add("CC501", chart_id.offset, "set either custom_chart or custom_chart_id, not both")
    elif not chart and not chart_id:
        rep.add("CC501", use.offset, "CustomChart needs custom_chart: <chart_name> (or custom_chart_id of a legacy "
                                     "chart)")
    if chart_id:
        _expect(chart_id, (Num, *DYNAMIC), "a number (the id of a legacy custom chart)", rep)
    if not chart:
        return None, ""
    value = chart.value
    if isinstance(value, Obj) and value.type_name == "CustomChartDef":
        inline = ChartDef(value.name, value.offset, value.name_offset, value.body, inline=True)
        return check_inline(inline, rep), "the inline definition"
    name = value.value if isinstance(value, Str) else value.name if isinstance(value, Ref) else None
    if name is None or chart.is_block:
        rep.add("CC505", chart.offset, "custom_chart must name a CustomChartDef or be an inline CustomChartDef "
                                       f"{{ ... }} block, found {describe(value)}")
        return None, ""
    if name not in defs:
        rep.add("CC504", value.offset if value else chart.offset,
                f"custom_chart '{name}' is not defined in the linted files{did_you_mean(name, list(defs))}; lint "
                "its .chart.aml file too, or fix the name")
        return None, ""
    return defs[name], f"'{name}'"


def _fields(use: ChartUse, info: DefInfo | None, chart_name: str, rep: Reporter) -> None:
    seen: dict[str, int] = {}
    for entry in use.body.all("field"):
        if entry.name is None:
            rep.add("CC508", entry.offset, "field entry has no slot name: write field <slot>: <dataset field>")
            continue
        if entry.name in seen:
            rep.add("CC507", entry.name_offset, f"slot '{entry.name}' is already mapped on line "
                                                f"{rep.source.line_of(seen[entry.name])}; keep one field entry")
            continue
        seen[entry.name] = entry.offset
        if info is not None and info.slots_known and entry.name not in info.slots:
            slots = ", ".join(info.slots) or "none"
            rep.add("CC503", entry.name_offset, f"'{entry.name}' is not a slot of {chart_name}"
                                                f"{did_you_mean(entry.name, list(info.slots))}; its slots: {slots}")


def _settings(entry: Entry, rep: Reporter) -> None:
    body = block_body(entry)
    if body is None:
        _expect(entry, (), "a block: settings { row_limit: 5000 }", rep)
        return
    props = properties(body, rep, "settings")
    for key, item in props.items():
        if key == "row_limit":
            _expect(item, (Num, *DYNAMIC), "a number", rep)
        elif key == "aggregate_awareness":
            inner = block_body(item)
            if inner is None:
                _expect(item, (), "a block: aggregate_awareness { enabled: true }", rep)
                continue
            for flag_key, flag in properties(inner, rep, "aggregate_awareness").items():
                if flag_key in ("enabled", "debug_comments"):
                    _expect(flag, (Bool, *DYNAMIC), "true or false", rep)
                else:
                    rep.add("CC506", flag.offset, f"'{flag_key}' is not an aggregate_awareness setting"
                                                  f"{did_you_mean(flag_key, ('enabled', 'debug_comments'))}")
        else:
            rep.add("CC506", item.offset, f"'{key}' is not a CustomChart setting"
                                          f"{did_you_mean(key, ('row_limit', 'aggregate_awareness'))}")
