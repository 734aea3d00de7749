"""The optional Vega-Lite schema check: runs when a package ships the schema, skipped otherwise."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from analytics_provider.aml import lint_text, schema

needs_schema = pytest.mark.skipif(not schema.available(), reason="no Vega-Lite schema installed (pip install altair)")

CHART = """CustomChartDef c {
  label: 'c'
  fields {
    field a { type: 'dimension' }
    field b { type: 'measure' }
  }
  options { option show { type: 'toggle' default_value: true } }
  template: @vgl {
    "data": {"values": @{values}},
    %s
  };;
}
"""


def schema_findings(body: str) -> list[str]:
    text = CHART % body
    return [f"{d.line}:{d.column} {d.message}" for d in lint_text(text, "c.chart.aml") if d.code == "CC420"]


@pytest.fixture
def no_schema(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(schema.SCHEMA_ENV, "/no/such/vega-lite-schema.json")
    schema.clear_cache()
    yield
    monkeypatch.delenv(schema.SCHEMA_ENV)
    schema.clear_cache()


@needs_schema
@pytest.mark.parametrize(
    ("body", "where", "words"),
    [
        ('"mark": "barr", "encoding": {"x": {"field": @{fields.a.name}}}', "10:13", "did you mean 'bar'"),
        ('"mark": "bar", "encodng": {"x": {"field": @{fields.a.name}}}', "10:20", "'encodng' is not a property"),
        ('"mark": "bar", "encoding": {"x": {"field": @{fields.a.name}, "typ": "nominal"}}', "10:66",
         "did you mean 'type'"),
        ('"mark": "bar", "encoding": {"x": {"field": @{fields.a.name}, "type": "nominall"}}', "10:74",
         "expected one of: quantitative, ordinal, temporal, nominal"),
        ('"layer": [{"mark": {"type": "line", "colr": "red"}, "encoding": {"y": {"field": @{fields.b.name}}}}]',
         "10:41", "at layer/0/mark: 'colr'"),
        ('"mark": {"type": "bar", "cornerRadius": "big"}, "encoding": {"x": {"field": @{fields.a.name}}}',
         "10:45", "at mark/cornerRadius"),
    ],
)
def test_typos_are_caught_where_they_are(body: str, where: str, words: str) -> None:
    [finding] = schema_findings(body)
    assert finding.startswith(where + " Vega-Lite 5 schema, at ")
    assert words in finding


@needs_schema
@pytest.mark.parametrize(
    "body",
    [
        # a field's type is only known at run time
        '"mark": "bar", "encoding": {"x": {"field": @{fields.a.name}, "type": @{fields.a.type}}}',
        # options take their default value; the service keys are not Vega-Lite
        '"mark": {"type": "bar", "tooltip": @{options.show.value}}, "serviceConfig": {"crossFilterSignals": []},'
        ' "encoding": {"y": {"field": @{fields.b.name}, "type": "quantitative",'
        ' "axis": {"format": @{fields.b.format}, "formatType": "serviceFormat"}}}',
        '"width": "container", "mark": "bar", "encoding": {"x": {"field": @{fields.a.name}}}',
    ],
)
def test_valid_templates_pass(body: str) -> None:
    assert schema_findings(body) == []


@needs_schema
def test_option_default_is_checked_against_the_schema() -> None:
    body = ('"mark": {"type": "bar", "cornerRadius": @{options.show.value}}, '
            '"encoding": {"x": {"field": @{fields.a.name}}}')
    [finding] = schema_findings(body)
    assert "mark/cornerRadius" in finding


@needs_schema
def test_vega_templates_are_not_checked_against_the_vega_lite_schema() -> None:
    text = (CHART % '"marks": [{"type": "rectt"}], "x": @{fields.a.name}, "y": @{fields.b.name}, '
            '"t": @{options.show.value}').replace("@vgl", "@vg").replace('"data": {"values": @{values}}',
                                                                        '"data": [{"name": "t", "values": @{values}}]')
    assert lint_text(text, "c.chart.aml") == []


@needs_schema
def test_schema_is_loaded_once() -> None:
    first = schema.validator()
    assert first is not None and schema.validator() is first


def test_missing_schema_skips_the_check_silently(no_schema: None) -> None:
    assert not schema.available()
    assert schema_findings('"mark": "barr", "encoding": {"x": {"field": @{fields.a.name}}}') == []


def test_schema_path_prefers_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(schema.SCHEMA_ENV, "/no/such/file.json")
    assert schema.schema_path() is None
