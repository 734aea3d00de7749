"""The compile step (vl-convert) and the rules that follow the template's engine and version."""

from __future__ import annotations

import pytest

from analytics_provider.aml import compiler, lint_text
from analytics_provider.aml.template import Engine

needs_compiler = pytest.mark.skipif(
    not compiler.available(), reason="vl-convert-python is not installed (the 'charts' extra)"
)

CHART = """CustomChartDef c {
  label: 'c'
  fields {
    field category { type: 'dimension' }
    field amount { type: 'measure' }
  }
  options {
    option show { type: 'toggle' default_value: true }
    option colour { type: 'color-picker' default_value: 'green' }
    option size { type: 'number-input' default_value: '25' }
  }
  template: @vgl {
    %s
    "data": {"values": @{values}},
    %s
  };;
}
"""


def findings(body: str, schema_line: str = "", **kwargs: bool) -> list[str]:
    """What linting the template body finds, unused slots and options aside."""
    text = CHART % (schema_line, body)
    return [f"{d.code} {d.line}:{d.column} {d.message}" for d in lint_text(text, "c.chart.aml", **kwargs)
            if d.code not in ("CC413", "CC414")]


V5 = '"$schema": "https://vega.github.io/schema/vega-lite/v5.json",'
V6 = '"$schema": "https://vega.github.io/schema/vega-lite/v6.json",'
# Each compiles with the real Vega-Lite 5 and 6 though a strict reading of the schema rejects it.
ACCEPTED = {
    "null drops an inherited channel": '"encoding": {"x": {"field": @{fields.category.name}, "type": "nominal"}},'
    ' "layer": [{"mark": "bar", "encoding": {"y": {"field": @{fields.amount.name}, "type": "quantitative"}}},'
    ' {"mark": "rule", "encoding": {"x": null, "y": {"datum": 40}}}]',
    "tooltip on a boxplot": '"mark": {"type": "boxplot", "tooltip": true}, "encoding": {"x": {"field":'
    ' @{fields.category.name}, "type": "nominal"}, "y": {"field": @{fields.amount.name}, "type": "quantitative"}}',
    "type on theta2": '"mark": "arc", "encoding": {"theta": {"field": @{fields.amount.name}, "type": "quantitative"},'
    ' "theta2": {"field": @{fields.amount.name}, "type": "quantitative"}}',
    "height inside a layer": '"layer": [{"height": 120, "width": 200, "mark": "bar", "encoding": {"x": {"field":'
    ' @{fields.category.name}, "type": "nominal"}, "y": {"field": @{fields.amount.name}, "type": "quantitative"}}}]',
    "null background": '"mark": {"type": "bar", "color": @{options.colour.value}, "size": @{options.size.value},'
    ' "tooltip": @{options.show.value}}, "encoding": {"x": {"field": @{fields.category.name}, "type": "nominal"},'
    ' "y": {"field": @{fields.amount.name}, "type": "quantitative"}}, "config": {"background": null}',
}


@pytest.mark.parametrize("schema_line", ["", V5, V6], ids=["default", "v5", "v6"])
@pytest.mark.parametrize("body", ACCEPTED.values(), ids=list(ACCEPTED))
def test_what_the_compiler_accepts_is_no_error(body: str, schema_line: str) -> None:
    assert findings(body, schema_line) == []
    assert findings(body, schema_line, compiler=False) == []


@needs_compiler
@pytest.mark.parametrize(("schema_line", "major"), [("", "5."), (V5, "5."), (V6, "6.")])
def test_the_declared_version_compiles(schema_line: str, major: str) -> None:
    broken = ('"transform": [{"calculate": "datum.x +* 2", "as": "y"}], "mark": "point", "encoding":'
              ' {"x": {"field": @{fields.category.name}, "type": "nominal"}, "size": {"field": @{fields.amount.name}}}')
    [finding] = findings(broken, schema_line)
    assert finding.startswith("CC421 15:33 the chart cannot render (Vega-Lite " + major), finding
    assert "Unexpected token *" in finding


@needs_compiler
def test_version_rule_picks_the_newest_shipped_not_newer_than_declared() -> None:
    shipped = [tuple(int(n) for n in v.lstrip("v").split(".")) for v in compiler._versions()]
    for major, minor in {(5, None), (6, None), (5, 15), (5, 18), (6, 1), (5, 99)}:
        chosen = compiler.vega_lite_version(Engine("vega-lite", (major, minor)))
        assert chosen is not None
        picked = tuple(int(n) for n in chosen.lstrip("v").split("."))
        fitting = [v for v in shipped if v[0] == major and (minor is None or v[1] <= minor)]
        assert picked == max(fitting)
    assert compiler.vega_lite_version(Engine("vega-lite", (4, None))) is None
    assert compiler.vega_lite_version(Engine("vega-lite")).startswith("5.")


@needs_compiler
def test_an_undeclared_param_is_found_by_vega_at_its_name() -> None:
    body = '"mark": "bar", "encoding": {"x": {"field": @{fields.category.name}, "type": "nominal"},' \
           ' "opacity": {"condition": {"param": "hovr", "value": 1}, "value": 0.3}}'
    [finding] = findings(body)
    assert finding.startswith("CC421 15:128 "), finding
    assert "hovr" in finding


def test_without_the_compiler_nothing_is_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiler, "available", lambda: False)
    body = '"transform": [{"calculate": "datum.x +* 2", "as": "y"}], "mark": "point"'
    assert findings(body) == []


def test_a_vega_spec_follows_vega_rules_whatever_the_tag() -> None:
    text = (CHART % ('"$schema": "https://vega.github.io/schema/vega/v5.json",', '"signals": [{"name": "pick",'
            ' "value": @{fields.category.name}}], "marks": [{"type": "text", "encode": {"update": {"text": {"signal":'
            ' "pick + @{options.size.value}"}, "fill": {"value": @{options.colour.value}}, "opacity": {"signal":'
            ' "@{options.show.value} ? 1 : 0.5"}, "size": {"field": @{fields.amount.name}}}}}],'
            ' "serviceConfig": {"crossFilterSignals": ["pick"]}'))
    text = text.replace('"data": {"values": @{values}}', '"data": [{"name": "t", "values": @{values}}]')
    assert [d.code for d in lint_text(text, "c.chart.aml")] == ["CC415"]
    assert [d.code for d in lint_text(text.replace("@vgl", "@vg"), "c.chart.aml")] == []
    assert "CC404" in [d.code for d in lint_text(text.replace('"$schema"', '"$comment"'), "c.chart.aml")]


@pytest.mark.parametrize("default", ["'green'", "'DarkSlateGray'", "'rgb(4, 4, 4)'", "'#abc'", "'oklch(0.7 0.1 185)'"])
def test_colour_defaults_the_renderer_reads_are_accepted(default: str) -> None:
    text = (CHART % ("", '"mark": {"type": "bar", "color": @{options.colour.value}, "size": @{options.size.value},'
                         ' "tooltip": @{options.show.value}}, "encoding": {"x": {"field": @{fields.category.name}},'
                         ' "y": {"field": @{fields.amount.name}, "type": "quantitative"}}')).replace("'green'", default)
    assert lint_text(text, "c.chart.aml") == []


@pytest.mark.parametrize(("option", "words"), [
    ("option colour { type: 'color-picker' default_value: 'gren' }", "(did you mean 'green'?)"),
    ("option colour { type: 'color-picker' default_value: true }", "not a colour"),
    ("option size { type: 'number-input' default_value: '25px' }", "a number-input gives a number"),
])
def test_defaults_that_are_not_what_the_control_gives_are_errors(option: str, words: str) -> None:
    text = CHART % ("", '"mark": {"type": "bar", "color": @{options.colour.value}, "size": @{options.size.value},'
                        ' "tooltip": @{options.show.value}}, "encoding": {"x": {"field": @{fields.category.name}},'
                        ' "y": {"field": @{fields.amount.name}, "type": "quantitative"}}')
    name = option.split()[1]
    text = "\n".join(option if line.strip().startswith(f"option {name} ") else line for line in text.splitlines())
    found = [d for d in lint_text(text, "c.chart.aml") if d.code == "CC304"]
    assert len(found) == 1 and words in found[0].message


@pytest.mark.parametrize(("body", "fires"), [
    # regrouped by the service's own groups (category alone): each group is one row
    ('"mark": "bar", "encoding": {"x": {"field": @{fields.category.name}, "type": "nominal"},'
     ' "y": {"field": @{fields.amount.name}, "aggregate": "sum", "type": "quantitative"}}', True),
    ('"transform": [{"aggregate": [{"op": "max", "field": @{fields.amount.name}, "as": "m"}],'
     ' "groupby": [@{fields.category.name}]}], "mark": "bar"', True),
    # over fewer groups, or not an aggregation of the groups: what charts mean
    ('"mark": "rule", "encoding": {"y": {"field": @{fields.amount.name}, "aggregate": "mean", "type": "quantitative"}}',
     False),
    ('"transform": [{"joinaggregate": [{"op": "sum", "field": @{fields.amount.name}, "as": "total"}]}], "mark": "bar"',
     False),
    ('"transform": [{"window": [{"op": "mean", "field": @{fields.amount.name}, "as": "m"}], "frame": [-2, 0]}],'
     ' "mark": "bar"', False),
    ('"mark": "rect", "encoding": {"x": {"field": @{fields.category.name}, "timeUnit": "month"},'
     ' "color": {"field": @{fields.amount.name}, "aggregate": "max"}}', False),
])
def test_double_aggregation_only_over_the_service_groups(body: str, fires: bool) -> None:
    found = [f for f in findings(body, compiler=False, schema=False) if f.startswith("CC412")]
    assert bool(found) == fires, found
    if fires:
        assert "remove this aggregation (the chart stays the same)" in found[0]


@needs_compiler
def test_an_unknown_mark_type_is_named_where_it_is_even_without_the_schema() -> None:
    [finding] = findings('"mark": {"type": "barr"}, "encoding": {"x": {"field": @{fields.category.name}}}',
                         schema=False)
    assert finding.startswith("CC421 15:22 "), finding
    assert "'barr' is not a Vega-Lite mark type (did you mean 'bar'?)" in finding
