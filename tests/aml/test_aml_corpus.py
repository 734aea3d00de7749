"""The corpus: valid definitions raise nothing; each invalid one raises exactly what it expects."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from analytics_provider.aml import CODES, lint_paths

from .helpers import expected, expected_codes, files_of, units


@pytest.mark.parametrize("unit", units("valid"), ids=lambda p: p.name)
@pytest.mark.parametrize(("schema", "compiler"), [(True, True), (False, False)], ids=["all-checks", "no-optional"])
def test_valid_unit_raises_nothing(unit: Path, schema: bool, compiler: bool) -> None:
    assert not expected(unit), "valid units carry no expectations"
    assert [d.format() for d in lint_paths([unit], schema=schema, compiler=compiler)] == []


@pytest.mark.parametrize("unit", units("invalid"), ids=lambda p: p.name)
def test_invalid_unit_raises_exactly_what_it_expects(unit: Path) -> None:
    assert expected(unit, schema_on=True, compile_on=True), f"{unit} has no '// expect:' line"
    want = expected(unit)  # without the optional checks installed, what they would find is not expected
    got = Counter((d.path, d.code, d.line, d.column) for d in lint_paths([unit]))
    assert got == want, "\n".join(d.format() for d in lint_paths([unit]))


@pytest.mark.parametrize("unit", units("invalid"), ids=lambda p: p.name)
def test_invalid_unit_without_optional_checks_drops_only_their_findings(unit: Path) -> None:
    got = Counter((d.path, d.code, d.line, d.column) for d in lint_paths([unit], schema=False, compiler=False))
    assert got == expected(unit, schema_on=False, compile_on=False)


def test_every_rule_has_an_invalid_case() -> None:
    # CC002 (a file that is not UTF-8) cannot carry an expect comment: test_aml_api covers it; CC000 (an
    # internal error) is a bug of the linter: test_aml_hostile makes one; CC422 (a compile past its time limit)
    # costs the limit's seconds at each run of the corpus: test_aml_time_limit makes one, and one of CC423 (a
    # compile past its memory limit, hundreds of MB each run); CC006 (a FIFO, a device, a file past 16 MiB) is
    # no file of a corpus: test_aml_hostile makes them.
    assert set(CODES) - expected_codes() == {"CC000", "CC002", "CC006", "CC422", "CC423"}


def test_severity_follows_the_code_table() -> None:
    for unit in units("invalid"):
        for diagnostic in lint_paths([unit]):
            assert diagnostic.severity == CODES[diagnostic.code].severity
            assert diagnostic.is_error == (diagnostic.severity == "error")


def test_corpus_files_are_aml() -> None:
    for kind in ("valid", "invalid"):
        for unit in units(kind):
            assert files_of(unit), unit
