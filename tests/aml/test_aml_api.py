"""The Python API the publish operator calls: lint_paths and Diagnostic."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analytics_provider.aml import CODES, Diagnostic, lint_paths, lint_text

from .helpers import CORPUS

GOOD = CORPUS / "valid" / "simple_bar.chart.aml"


def test_diagnostic_fields_and_format() -> None:
    d = Diagnostic("charts/a.chart.aml", 3, 7, "CC202", "type is wrong", "error")
    assert (d.path, d.line, d.column, d.code, d.message, d.severity) == ("charts/a.chart.aml", 3, 7, "CC202",
                                                                          "type is wrong", "error")
    assert d.is_error
    assert d.format() == "charts/a.chart.aml:3:7: CC202 type is wrong"
    assert not Diagnostic("a", 1, 1, "CC413", "unused", "warning").is_error


def test_lint_paths_takes_strings_paths_and_any_iterable() -> None:
    bad = CORPUS / "invalid" / "field_bad_type.chart.aml"
    as_paths = lint_paths([GOOD, bad])
    as_strings = lint_paths(str(p) for p in (GOOD, bad))
    assert as_paths == as_strings
    assert [d.code for d in as_paths] == ["CC202", "CC202"]
    assert all(d.path == str(bad) for d in as_paths)


def test_results_are_sorted_and_repeatable() -> None:
    first = lint_paths([CORPUS / "invalid"])
    assert first == sorted(first)
    assert first == lint_paths([CORPUS / "invalid"])


def test_a_path_given_twice_is_linted_once() -> None:
    assert lint_paths([GOOD, str(GOOD), GOOD.parent]) == []


def test_missing_path_raises() -> None:
    with pytest.raises(FileNotFoundError):
        lint_paths([CORPUS / "nothing-here"])


def test_file_that_is_not_utf8_is_a_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "latin1.chart.aml"
    path.write_bytes("CustomChartDef caf\xe9 { label: '\xe9' }".encode("latin-1"))
    [d] = lint_paths([path])
    assert (d.code, d.line, d.column, d.severity) == ("CC002", 1, 1, "error")


def test_names_unique_across_files_linted_together() -> None:
    folder = CORPUS / "invalid" / "duplicate_chart_name"
    assert lint_paths([folder / "first.chart.aml"]) == []
    assert lint_paths([folder / "second.chart.aml"]) == []
    [d] = lint_paths([folder / "first.chart.aml", folder / "second.chart.aml"])
    assert d.code == "CC103" and d.path.endswith("second.chart.aml")
    assert "first.chart.aml:2:16" in d.message


def test_lint_text_uses_the_path_suffix() -> None:
    text = GOOD.read_text()
    assert lint_text(text, "x.chart.aml") == []
    assert [d.code for d in lint_text(text, "x.aml")] == ["CC004"]


def test_every_message_says_how_to_fix() -> None:
    for d in lint_paths([CORPUS / "invalid"]):
        assert len(d.message) > 20, d.format()
    for code in CODES.values():
        assert code.meaning and code.fix


def test_import_is_cheap() -> None:
    code = (
        "import sys, analytics_provider.aml as a\n"
        "a.lint_paths([sys.argv[1]], schema=False)\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('airflow', 'jsonschema', 'altair')]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(GOOD)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_docs_table_lists_every_code() -> None:
    docs = (CORPUS.parents[2] / "docs" / "custom_charts.rst").read_text(encoding="utf-8")
    for code, info in CODES.items():
        assert f"``{code}``" in docs, code
        row = next(line for line in docs.splitlines() if f"``{code}``" in line)
        assert info.severity in row, code


def test_docs_examples_lint_as_the_docs_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = (CORPUS.parents[2] / "docs" / "custom_charts.rst").read_text(encoding="utf-8")
    definition, use = (textwrap.dedent(b) for b in re.findall(r"\.\. code-block:: text\n\n((?:   .*\n|\n)+)", docs))
    console = docs[docs.index(".. code-block:: console"):].splitlines()
    shown = [line.strip() for line in console if line.strip().startswith(("dashboards/", "library/"))]
    summary = next(line.strip() for line in console if "files checked" in line)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "library" / "custom_charts").mkdir(parents=True)
    (tmp_path / "dashboards").mkdir()
    chart = tmp_path / "library" / "custom_charts" / "revenue_bars.chart.aml"
    page = tmp_path / "dashboards" / "sales.page.aml"
    chart.write_text(definition)
    page.write_text("Dashboard sales {\n  title: 'Sales'\n" + textwrap.indent(use, "  ") + "}\n")
    assert lint_paths(["library/custom_charts", "dashboards"]) == []
    chart.write_text(definition.replace("type: 'measure'", "type: 'metric'"))
    page.write_text(page.read_text().replace("field revenue:", "field colour:"))
    assert [d.format() for d in lint_paths(["library/custom_charts", "dashboards"])] == shown
    assert summary == "2 files checked: 2 errors, 0 warnings in 2 files."
