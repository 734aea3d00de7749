"""The lexer, the AML parser and the template reader: structure and positions."""

from __future__ import annotations

import pytest

from analytics_provider.aml import lint_text
from analytics_provider.aml.diagnostics import Source
from analytics_provider.aml.lexer import AmlSyntaxError, tokens
from analytics_provider.aml.model import extract
from analytics_provider.aml.nodes import Bool, Call, Entry, Expr, Heredoc, ListV, Num, Obj, Ref, Str
from analytics_provider.aml.parser import parse, scan_objects
from analytics_provider.aml.template import (
    JArray,
    JObject,
    JPlaceholder,
    JScalar,
    JString,
    TemplateSyntaxError,
    parse_template,
    to_python,
)

DEF = """\
// a comment
CustomChartDef demo {
  label: "Demo"   // trailing comment
  fields {
    field x { type: 'dimension'; sort { apply_order: -2.5 direction: 'asc' } }
  }
  options { option pick { type: 'select' options: ['a', 1,] default_value: 'a' } }
  template: @vg { "a": "x;;y" };;
}
"""


def at(text: str, offset: int) -> tuple[int, int]:
    return Source(text, "t").position(offset)


def test_definition_tree_and_positions() -> None:
    body = parse(DEF)
    [top] = body.entries
    assert (top.key, top.name, top.is_block) == ("CustomChartDef", "demo", True)
    assert at(DEF, top.offset) == (2, 1) and at(DEF, top.name_offset) == (2, 16)
    assert isinstance(top.value, Obj)
    inner = top.value.body
    label = inner.first("label")
    assert isinstance(label, Entry) and isinstance(label.value, Str) and label.value.value == "Demo"
    assert at(DEF, label.offset) == (3, 3) and at(DEF, label.value.offset) == (3, 10)
    fields = inner.first("fields")
    assert fields is not None and isinstance(fields.value, Obj)
    [slot] = fields.value.body.entries
    assert (slot.key, slot.name) == ("field", "x") and at(DEF, slot.name_offset) == (5, 11)
    assert isinstance(slot.value, Obj)
    sort = slot.value.body.first("sort")
    assert sort is not None and isinstance(sort.value, Obj)
    order = sort.value.body.first("apply_order")
    assert order is not None and isinstance(order.value, Num) and order.value.value == -2.5
    options = inner.first("options")
    assert options is not None and isinstance(options.value, Obj)
    pick = options.value.body.entries[0].value
    assert isinstance(pick, Obj)
    choices = pick.body.first("options")
    assert choices is not None and isinstance(choices.value, ListV)
    assert [type(i) for i in choices.value.items] == [Str, Num]
    template = inner.first("template")
    assert template is not None and isinstance(template.value, Heredoc)
    assert template.value.tag == "vg" and template.value.text == ' { "a": "x;;y" }'
    assert at(DEF, template.value.offset) == (8, 13)


def test_values_of_every_kind() -> None:
    body = parse("a: true\nb: r(orders.id)\nc: x.y | z\nd: VizFieldFull { ref: 'q' }\n"
                 "e: CustomChartDef inline { }\nf: [1, 'two']")
    values = {e.key: e.value for e in body.entries}
    assert isinstance(values["a"], Bool) and values["a"].value is True
    assert isinstance(values["b"], Call) and values["b"].name == "r"
    assert isinstance(values["b"].args[0], Ref) and values["b"].args[0].name == "orders.id"
    assert isinstance(values["c"], Expr) and values["c"].op == "|"
    assert isinstance(values["d"], Obj) and values["d"].type_name == "VizFieldFull"
    assert isinstance(values["e"], Obj) and (values["e"].type_name, values["e"].name) == ("CustomChartDef", "inline")
    assert isinstance(values["f"], ListV) and len(values["f"].items) == 2


def test_named_typed_block_needs_its_brace_on_the_same_line() -> None:
    body = parse("dataset: Ecommerce\nfields { }")
    assert [e.key for e in body.entries] == ["dataset", "fields"]
    assert isinstance(body.entries[0].value, Ref)


def test_extract_finds_definitions_and_uses_anywhere() -> None:
    text = "Dashboard d {\n block b: VizBlock { viz: CustomChart { dataset: e } }\n}\nCustomChartDef c { }\n"
    model = extract(parse(text))
    assert [d.name for d in model.defs] == ["c"]
    assert len(model.uses) == 1 and at(text, model.uses[0].offset) == (2, 27)


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("a: 'open", (1, 4), "string is not closed"),
        ("a {\n b: 1\n", (1, 3), "never closed"),
        ("a: [1 2]", (1, 7), "expected ','"),
        ("a: @vgl { }", (1, 4), "not closed: end it with ;;"),
        ("a: #", (1, 4), "unexpected character"),
        ("/* open", (1, 1), "comment is not closed"),
        ("a b c", (1, 5), "expected ':' or '{' after 'a b'"),
    ],
)
def test_syntax_errors_have_positions(text: str, where: tuple[int, int], message: str) -> None:
    with pytest.raises(AmlSyntaxError) as info:
        parse(text)
    assert at(text, info.value.offset) == where
    assert message in info.value.message


def test_syntax_error_becomes_a_diagnostic() -> None:
    [d] = lint_text("CustomChartDef x {\n  label: 'x'\n", "a.chart.aml")
    assert (d.code, d.line, d.column) == ("CC001", 1, 18)


def test_heredoc_end_is_searched_outside_json_strings_and_comments() -> None:
    text = 't: @vgl { "a": ";;", // ;; in a comment\n "b": 1 };; next: 1'
    kinds = [(t.kind, t.value) for t in tokens(text)]
    assert kinds == [("name", "t"), ("punct", ":"), ("heredoc", "vgl"), ("name", "next"), ("punct", ":"),
                     ("number", "1"), ("eof", "")]


def test_scan_finds_chart_blocks_in_unmodelled_aml() -> None:
    text = "Func f(x: Number) {\n  x * 2\n}\n// a CustomChart is used below\nv: CustomChart { dataset: e }\n"
    with pytest.raises(AmlSyntaxError):
        parse(text)
    found = list(scan_objects(text))
    assert len(found) == 1 and isinstance(found[0], Obj) and found[0].type_name == "CustomChart"


TEMPLATE = """{
  // comment
  "data": {"values": @{values}},
  "title": "@{fields.x.name} by @{options.o.value}", /* block */
  "list": [1, -2.5e3, true, null, @{fields.x.name},],
}"""


def test_template_tree_positions_and_placeholders() -> None:
    base = 100
    tpl = parse_template("vgl", TEMPLATE, base)
    root = tpl.root
    assert isinstance(root, JObject)
    assert [k.value for k in root.keys] == ["data", "title", "list"]
    title = root.get("title")
    assert isinstance(title, JString) and title.value == "@{fields.x.name} by @{options.o.value}"
    assert [(p.kind, p.name, p.attr) for p in tpl.placeholders] == [
        ("values", "", ""), ("field", "x", "name"), ("option", "o", "value"), ("field", "x", "name")]
    src = Source(" " * base + TEMPLATE, "t")
    assert src.position(tpl.placeholders[0].offset) == (3, 22)
    assert src.position(tpl.placeholders[2].offset) == (4, 33)
    items = root.get("list")
    assert isinstance(items, JArray) and isinstance(items.items[1], JScalar) and items.items[1].value == -2500.0
    assert isinstance(items.items[4], JPlaceholder)
    data = to_python(root, lambda ph: ph.kind)
    assert data == {"data": {"values": "values"}, "title": "@{fields.x.name} by @{options.o.value}",
                    "list": [1, -2500.0, True, None, "field"]}


@pytest.mark.parametrize(
    ("text", "offset", "message"),
    [
        ('{"a": 1 "b": 2}', 8, "expected ','"),
        ("{'a': 1}", 1, "property names must be double-quoted"),
        ('{"a": tru}', 6, "is not a JSON value"),
        ('{"a": "x\n"}', 6, "string is not closed"),
        ('{"a": 1} extra', 9, "unexpected text"),
        ('{"a": @{values}', 15, "expected ','"),
        ('{@{fields.x.name}: 1}', 1, "inside double quotes"),
        ('{"a": "\\q"}', 7, "invalid escape"),
        ('{"a": 01}', 6, "is not a JSON value"),
    ],
)
def test_template_syntax_errors(text: str, offset: int, message: str) -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        parse_template("vgl", text, 0)
    assert info.value.offset == offset
    assert message in info.value.message


def test_every_node_carries_its_line_and_column() -> None:
    body = parse(DEF)
    top = body.entries[0]
    assert (top.line, top.column) == (2, 1)
    assert isinstance(top.value, Obj)
    label = top.value.body.first("label")
    assert label is not None and isinstance(label.value, Str)
    assert (label.line, label.column, label.value.line, label.value.column) == (3, 3, 3, 10)
    template = top.value.body.first("template")
    assert template is not None and (template.value.line, template.value.column) == (8, 13)  # type: ignore[union-attr]
    tpl = parse_template("vgl", TEMPLATE, 0, Source(TEMPLATE, "t"))
    assert isinstance(tpl.root, JObject)
    title = tpl.root.get("title")
    assert title is not None and (title.line, title.column) == (4, 12)
    assert [(p.line, p.column) for p in tpl.placeholders] == [(3, 22), (4, 13), (4, 33), (5, 35)]
