"""The stable diagnostic codes: one severity, one meaning and one fix per code.

The docs page (docs/custom_charts.rst) has the same table; a test keeps the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Code:
    """One diagnostic code."""

    severity: Severity
    meaning: str
    fix: str


def _e(meaning: str, fix: str) -> Code:
    return Code("error", meaning, fix)


def _w(meaning: str, fix: str) -> Code:
    return Code("warning", meaning, fix)


CODES: dict[str, Code] = {
    # files and syntax
    "CC000": _e("internal error of the linter (a bug): the rest of that file was not checked, the other files were",
                "report it with the file; the command exits 3"),
    "CC001": _e("AML syntax error", "correct the text at the position shown"),
    "CC002": _e("file cannot be read as UTF-8 text", "save the file as UTF-8"),
    "CC003": _w(".chart.aml file defines no CustomChartDef", "add a CustomChartDef or rename the file"),
    "CC004": _e("CustomChartDef outside a .chart.aml file", "move the definition to a file ending in .chart.aml"),
    "CC005": _e("beyond what the linter reads: nesting deeper than 100 levels, an expression of more than 1,000 "
                "terms, a number of more than 500 digits or out of range (1e999)", "simplify the text at the position"),
    "CC006": _e("file not read: not a regular file (a FIFO, a device), or larger than 16 MiB",
                "lint regular files only; split a file past the limit"),
    # CustomChartDef
    "CC101": _e("required property missing (chart_name, label, fields, template)", "add the property"),
    "CC102": _e("chart_name is not a snake_case identifier", "rename it, e.g. my_bar_chart"),
    "CC103": _e("chart_name is not unique in the project", "rename one of the definitions"),
    "CC104": _e("unknown CustomChartDef property", "remove it or correct its spelling"),
    "CC105": _e("property value has the wrong type", "write the value with the type shown in the message"),
    "CC106": _e("property given more than once", "keep one of them"),
    # fields
    "CC201": _e("field slot has no type", "add type: 'dimension' or type: 'measure'"),
    "CC202": _e("field type is not 'dimension' or 'measure'", "use 'dimension' or 'measure'"),
    "CC203": _e("data_type is not 'string', 'number', 'boolean' or 'date'", "use one of those values"),
    "CC204": _e("sort.direction is not 'asc' or 'desc'", "use 'asc' or 'desc'"),
    "CC205": _e("sort.apply_order is not a number", "write a number, lower sorts first"),
    "CC206": _e("field slot declared twice", "rename or remove one slot"),
    "CC207": _e("unknown entry in fields, a field or its sort", "remove it or correct its spelling"),
    "CC208": _w("fields declares no slot", "add at least one field <name> { type: ... } block"),
    # options
    "CC301": _e("option has no type", "add a type such as 'toggle' or 'select'"),
    "CC302": _e("option type is not a known control", "use input, number-input, toggle, radio, select or color-picker"),
    "CC303": _e("radio or select option without its options list", "add options: [choice, ...]"),
    "CC304": _e("default_value does not match the option type", "give a value of the type the control produces"),
    "CC305": _e("options list is malformed", "write a non-empty list of distinct strings or numbers"),
    "CC306": _e("option declared twice", "rename or remove one option"),
    "CC307": _e("unknown entry in options or an option", "remove it or correct its spelling"),
    "CC308": _w("options list on a control that ignores it", "remove the list or use type 'radio' or 'select'"),
    # template
    "CC401": _e("template is not a @vgl or @vg block", "write template: @vgl { ... };; (or @vg for Vega)"),
    "CC402": _e("template is not valid JSON once the placeholders are filled", "correct the JSON at the position"),
    "CC403": _e("template is not a JSON object", "start the template body with {"),
    "CC404": _e("data is not { values: @{values} }", 'write "data": {"values": @{values}}'),
    "CC405": _e("malformed or unknown @{...} placeholder", "use @{values}, @{fields.<slot>.name|type|format} "
                "or @{options.<option>.value}"),
    "CC406": _e("placeholder names an undeclared field slot", "declare the slot in fields or fix the name"),
    "CC407": _e("placeholder names an undeclared option", "declare the option in options or fix the name"),
    "CC408": _e("cross-filter or context-menu signal not declared", "declare it in params (Vega: signals) or fix "
                "the name"),
    "CC409": _e("serviceConfig is malformed", "make crossFilterSignals and contextMenuSignals lists of names"),
    "CC410": _e("formatType 'serviceFormat' without format: @{fields.<slot>.format}", "add the format placeholder "
                "next to it"),
    "CC411": _e("field format placeholder without formatType 'serviceFormat'", "add formatType: 'serviceFormat'"),
    "CC412": _w("measure aggregated again over the service's own groups (one row each)", "remove the "
                "aggregation, or declare the slot 'dimension' if the template needs unaggregated rows"),
    "CC413": _w("field slot never used by the template", "use it through @{fields.<slot>.name} or remove it"),
    "CC414": _w("option never used by the template", "use it through @{options.<option>.value} or remove it"),
    "CC415": _w("template tag and $schema name different engines", "tag a Vega spec @vg and a Vega-Lite spec "
                "@vgl"),
    "CC416": _e("template property given twice in one object", "keep one of them (the compiler uses the last)"),
    "CC417": _e("template string or option value holds a character charts cannot draw (a control character other "
                "than tab and line breaks, or a noncharacter such as U+FFFF)", "remove the character"),
    "CC420": _e("template does not match the Vega-Lite schema of its version", "correct the property or value "
                "named"),
    "CC421": _e("the chart cannot render: the compiler rejects the filled template", "correct the template at "
                "the position shown"),
    "CC422": _e("compile took longer than the time limit (--compile-timeout, 20 s by default): the compiler was "
                "stopped", "make the template's data or transforms lighter, or allow more time"),
    "CC423": _e("compile took more than the memory limit (--compile-memory, 1,024 MiB by default): the compiler "
                "was stopped", "make the template's data or transforms lighter, or allow more memory"),
    # CustomChart
    "CC501": _e("CustomChart needs exactly one of custom_chart and custom_chart_id", "keep exactly one of them"),
    "CC502": _e("CustomChart has no dataset", "add dataset: <dataset name>"),
    "CC503": _e("field entry for a slot the definition does not declare", "map only the definition's slots"),
    "CC504": _w("custom_chart names a definition not found in the linted files", "lint it together with its "
                ".chart.aml file, or fix the name"),
    "CC505": _e("CustomChart property value has the wrong type", "write the value with the type shown"),
    "CC506": _e("unknown CustomChart property", "remove it or correct its spelling"),
    "CC507": _e("slot mapped twice", "keep one field entry per slot"),
    "CC508": _e("field entry without a slot name", "write field <slot>: <field>"),
    "CC509": _e("legacy chart definition written as CustomChart", "write it as CustomChartDef <name> { ... } in a "
                ".chart.aml file"),
}
